//! The domain's registration cache, for applications that post buffers
//! without descriptors (entries with `mr_mode` 0, no `FI_MR_LOCAL`).
//!
//! - **Entries** are registrations of whole pages (`ibv_reg_mr` over the
//!   page-aligned range holding a buffer) with their verbs access bits. A
//!   lookup by (range, access) reuses an entry whose pages cover the
//!   buffer and whose access includes what the operation needs.
//! - **Bounds**: `FI_MR_CACHE_MAX_COUNT` entries (default 1024; 0 turns
//!   the cache off) and `FI_MR_CACHE_MAX_SIZE` bytes (default physical
//!   memory / online CPUs / 2), upstream's parameters and defaults. Over
//!   either, the least recently used entries that no operation in flight
//!   holds are deregistered; an entry an operation holds stays registered
//!   until that operation completes (operations hold an `Arc` of it), so
//!   the cache may exceed its bounds by what is in flight.
//! - **Invalidation**: every cached range is registered with a
//!   userfaultfd (`uffd.rs`, whose contract says what that obliges us
//!   to) asking for the unmap, remove (`MADV_DONTNEED`, what `free`
//!   does to large blocks and trimmed heaps) and remap events. A monitor
//!   thread reads them, as the kernel needs (the unmapping thread sleeps
//!   until its event is read), and records each range in a fixed-size
//!   list under a lock it holds from before the read until the range is
//!   recorded. Every lookup first takes that list and drops the entries
//!   overlapping its ranges from the index. So once `munmap` or `free`
//!   has returned, the next operation on the address cannot find the
//!   old registration: a buffer mapped anew at the same address is
//!   registered anew. The monitor never takes the cache's lock, never
//!   allocates or frees, and unregisters a removed range at once, so
//!   nothing it waits for can wait for it.
//! - **Not cached** (registered for the one operation and released at its
//!   completion, as without a cache): ranges the userfaultfd refuses (file
//!   mappings, a range another userfaultfd watches), and everything when
//!   the process may not open one (`vm.unprivileged_userfaultfd=0` on a
//!   kernel without user-mode-only descriptors and no `CAP_SYS_PTRACE`)
//!   or `FI_MR_CACHE_MONITOR=disabled`.
//! - **Limits**: memory whose mapping changes without an unmap, remove or
//!   remap event is not noticed (none of the ways the C library and the
//!   kernel free anonymous memory do that); a range freed by another
//!   thread between the registration of its pages and their registration
//!   with the userfaultfd stays cached (the application freed memory an
//!   operation was being posted from); an overflow of the event list
//!   (64 ranges between two lookups) empties the whole cache.

use crate::ibv::owned::{Mr, Pd};
use crate::ibv::{VerbsError, IBV_ACCESS_LOCAL_WRITE};
use crate::info::NAME;
use crate::uffd::{self, Event, Stop, Uffd};
use oxifabric::abi::*;
use oxifabric::ops::IoBuf;
use oxifabric::param::{self, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;

/// An entry's key: page-aligned start, length, verbs access bits.
type Key = (usize, usize, i32);

/// What an operation holds for one of its buffers until it completes.
pub enum Hold {
    /// A registration for this operation alone.
    Op(Mr),
    /// A cache entry (kept registered while held).
    Cached(Arc<Mr>),
}

impl Hold {
    /// The local key work requests name the buffer by.
    pub fn lkey(&self) -> u32 {
        match self {
            Hold::Op(m) => m.lkey(),
            Hold::Cached(m) => m.lkey(),
        }
    }

    /// The remote key peers' RDMA names the buffer by (meaningful when it
    /// was asked for with remote access: a rendezvous send's buffers).
    pub fn rkey(&self) -> u32 {
        match self {
            Hold::Op(m) => m.rkey(),
            Hold::Cached(m) => m.rkey(),
        }
    }
}

/// The cache's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most entries.
    pub count: usize,
    /// Most bytes of the entries' ranges.
    pub bytes: usize,
}

impl Limits {
    /// From `FI_MR_CACHE_MAX_COUNT` and `FI_MR_CACHE_MAX_SIZE`, with
    /// upstream's defaults; a count of 0 (or `FI_MR_CACHE_MONITOR=disabled`)
    /// turns the cache off.
    pub fn from_env() -> Limits {
        let size = |name, def| match param::get("core", name) {
            Ok(Value::Size(n)) => n,
            _ => def,
        };
        let off = matches!(param::get("core", "mr_cache_monitor"),
            Ok(Value::Str(s)) if s.eq_ignore_ascii_case("disabled"));
        let count = if off {
            0
        } else {
            size("mr_cache_max_count", 1024)
        };
        let bytes = match size("mr_cache_max_size", 0) {
            0 => uffd::mem_per_cpu() / 2,
            n => n,
        };
        Limits { count, bytes }
    }
}

/// One entry of the index.
struct Slot<T> {
    val: T,
    tick: u64,
}

/// The index: entries by key, their use order, and their total size.
/// Generic over what an entry holds, so that its rules are tested
/// without a device.
struct Index<T> {
    map: BTreeMap<Key, Slot<T>>,
    /// Use order: tick of the last lookup → key.
    lru: BTreeMap<u64, Key>,
    tick: u64,
    bytes: usize,
    /// The longest range ever inserted (bounds the covering search).
    max_len: usize,
}

impl<T> Default for Index<T> {
    fn default() -> Self {
        Index {
            map: BTreeMap::new(),
            lru: BTreeMap::new(),
            tick: 0,
            bytes: 0,
            max_len: 0,
        }
    }
}

impl<T> Index<T> {
    /// The key of an entry covering `[start, end)` with at least `access`,
    /// marked as just used.
    fn find(&mut self, start: usize, end: usize, access: i32) -> Option<&T> {
        let mut hit = None;
        for (k, _) in self.map.range(..=(start, usize::MAX, i32::MAX)).rev() {
            if k.0.saturating_add(self.max_len) < end {
                break;
            }
            if k.0 + k.1 >= end && k.2 & access == access {
                hit = Some(*k);
                break;
            }
        }
        let k = hit?;
        self.tick += 1;
        let slot = self.map.get_mut(&k)?;
        self.lru.remove(&slot.tick);
        slot.tick = self.tick;
        self.lru.insert(self.tick, k);
        Some(&slot.val)
    }

    fn insert(&mut self, k: Key, val: T) {
        self.tick += 1;
        self.lru.insert(self.tick, k);
        self.bytes += k.1;
        self.max_len = self.max_len.max(k.1);
        if let Some(old) = self.map.insert(
            k,
            Slot {
                val,
                tick: self.tick,
            },
        ) {
            self.lru.remove(&old.tick);
            self.bytes -= k.1;
        }
    }

    fn remove(&mut self, k: &Key) -> Option<T> {
        let slot = self.map.remove(k)?;
        self.lru.remove(&slot.tick);
        self.bytes -= k.1;
        Some(slot.val)
    }

    /// Keys of the entries overlapping `[start, end)`.
    fn overlapping(&self, start: usize, end: usize) -> Vec<Key> {
        let mut out = Vec::new();
        for (k, _) in self.map.range(..(end, 0, 0)).rev() {
            if k.0.saturating_add(self.max_len) <= start {
                break;
            }
            if k.0 + k.1 > start {
                out.push(*k);
            }
        }
        out
    }

    /// The least recently used entries to drop so that the index is within
    /// `lim`, skipping `keep` and entries `busy` says are in use.
    fn victims(&self, lim: Limits, keep: &Key, busy: impl Fn(&T) -> bool) -> Vec<Key> {
        let (mut n, mut bytes) = (self.map.len(), self.bytes);
        let mut out = Vec::new();
        for k in self.lru.values() {
            if n <= lim.count && bytes <= lim.bytes {
                break;
            }
            if k == keep || self.map.get(k).is_none_or(|s| busy(&s.val)) {
                continue;
            }
            out.push(*k);
            n -= 1;
            bytes -= k.1;
        }
        out
    }

    /// The pieces of `[start, end)` no entry covers (what may be
    /// unregistered from the userfaultfd when an entry leaves).
    fn uncovered(&self, start: usize, end: usize) -> Vec<(usize, usize)> {
        let mut covered: Vec<(usize, usize)> = self
            .overlapping(start, end)
            .into_iter()
            .map(|k| (k.0.max(start), (k.0 + k.1).min(end)))
            .collect();
        covered.sort_unstable();
        let mut out = Vec::new();
        let mut at = start;
        for (s, e) in covered {
            if s > at {
                out.push((at, s));
            }
            at = at.max(e);
        }
        if at < end {
            out.push((at, end));
        }
        out
    }
}

/// Ranges the monitor saw change, waiting for the next lookup. Fixed
/// size: the monitor must not allocate (`uffd.rs` contract).
struct Dead {
    ranges: [(usize, usize); 64],
    n: usize,
    /// More ranges came than fit: the next lookup empties the cache.
    overflow: bool,
}

impl Dead {
    fn push(&mut self, start: usize, end: usize) {
        if self.n == self.ranges.len() {
            self.overflow = true;
        } else {
            self.ranges[self.n] = (start, end);
            self.n += 1;
        }
    }
}

/// What the monitor thread shares with the cache.
struct Monitor {
    uffd: Uffd,
    stop: Stop,
    dead: Mutex<Dead>,
    page: usize,
}

impl Monitor {
    fn dead(&self) -> MutexGuard<'_, Dead> {
        self.dead.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The thread: reads every event, with the list locked from before
    /// the read until the range is in it (so that a lookup after the
    /// unmapping call returned sees it).
    fn run(&self) {
        while uffd::wait(&self.uffd, &self.stop) {
            let mut d = self.dead();
            loop {
                match self.uffd.read() {
                    Ok(Some(ev)) => self.note(ev, &mut d),
                    Ok(None) => break,
                    Err(_) => {
                        // Not expected; whatever was lost, the next lookup
                        // empties the cache. Paced, in case it repeats.
                        d.overflow = true;
                        drop(d);
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        break;
                    }
                }
            }
        }
    }

    fn note(&self, ev: Event, d: &mut Dead) {
        match ev {
            Event::Unmap { start, end } | Event::Remap { start, end } => d.push(start, end),
            Event::Remove { start, end } => {
                // The pages are gone but the range stays registered: a
                // touch there would wait for us. Unregistering wakes it.
                let _ = self.uffd.unregister(start, end - start);
                d.push(start, end);
            }
            Event::PageFault { addr } => {
                let page = addr & !(self.page - 1);
                let _ = self.uffd.unregister(page, self.page);
                d.push(page, page + self.page);
            }
            Event::Other(_) => {}
        }
    }
}

/// The registration cache of one domain.
pub struct MrCache {
    pd: Arc<Pd>,
    page: usize,
    lim: Limits,
    idx: Mutex<Index<Arc<Mr>>>,
    /// The monitor, started with the first entry (None: no userfaultfd
    /// here, so nothing is cached).
    mon: OnceLock<Option<Arc<Monitor>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl MrCache {
    /// A cache registering in `pd`, bounded by `lim`.
    pub fn new(pd: Arc<Pd>, lim: Limits) -> MrCache {
        MrCache {
            pd,
            page: uffd::page_size(),
            lim,
            idx: Mutex::new(Index::default()),
            mon: OnceLock::new(),
            thread: Mutex::new(None),
        }
    }

    fn monitor(&self) -> Option<&Arc<Monitor>> {
        self.mon
            .get_or_init(|| {
                let started = Uffd::open().and_then(|uffd| {
                    let m = Arc::new(Monitor {
                        uffd,
                        stop: Stop::new()?,
                        dead: Mutex::new(Dead {
                            ranges: [(0, 0); 64],
                            n: 0,
                            overflow: false,
                        }),
                        page: self.page,
                    });
                    let t = m.clone();
                    let h = std::thread::Builder::new()
                        .name("oxifabric-verbs-mr-monitor".into())
                        .spawn(move || t.run())?;
                    *self.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
                    Ok(m)
                });
                match started {
                    Ok(m) => Some(m),
                    Err(e) => {
                        oxifabric::prov_log!(
                            NAME,
                            FI_LOG_INFO,
                            FI_LOG_MR,
                            "no registration cache (userfaultfd: {e}): buffers without descriptors are registered per operation"
                        );
                        None
                    }
                }
            })
            .as_ref()
    }

    fn lock(&self) -> MutexGuard<'_, Index<Arc<Mr>>> {
        self.idx.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes an entry out of the index; the pages no other entry covers
    /// leave the userfaultfd. Its registration goes when the last
    /// operation holding it completes.
    fn drop_entry(idx: &mut Index<Arc<Mr>>, mon: &Monitor, k: &Key) {
        if idx.remove(k).is_some() {
            for (s, e) in idx.uncovered(k.0, k.0 + k.1) {
                let _ = mon.uffd.unregister(s, e - s);
            }
        }
    }

    /// Applies what the monitor saw since the last lookup.
    fn invalidate(idx: &mut Index<Arc<Mr>>, mon: &Monitor) {
        let (ranges, n, overflow) = {
            let mut d = mon.dead();
            let out = (d.ranges, d.n, d.overflow);
            d.n = 0;
            d.overflow = false;
            out
        };
        if overflow {
            let all: Vec<Key> = idx.map.keys().copied().collect();
            for k in &all {
                Self::drop_entry(idx, mon, k);
            }
            return;
        }
        for &(s, e) in &ranges[..n] {
            for k in idx.overlapping(s, e) {
                Self::drop_entry(idx, mon, &k);
            }
        }
    }

    /// The local key for `buf` with verbs access `access`: a cached
    /// registration covering it, a new one put in the cache, or, where
    /// nothing may be cached, a registration for this operation alone.
    pub fn get(&self, buf: IoBuf, access: i32) -> Result<Hold, VerbsError> {
        let mon = match self.lim.count {
            0 => None,
            _ => self.monitor(),
        };
        let Some(mon) = mon else {
            // As the cache would: local write too where the memory allows.
            return match self.pd.register(buf, access | IBV_ACCESS_LOCAL_WRITE) {
                Err(_) if access & IBV_ACCESS_LOCAL_WRITE == 0 => self.pd.register(buf, access),
                r => r,
            }
            .map(Hold::Op);
        };
        let mut idx = self.lock();
        Self::invalidate(&mut idx, mon);
        let end = buf.addr().saturating_add(buf.len());
        if let Some(m) = idx.find(buf.addr() & !(self.page - 1), end, access) {
            return Ok(Hold::Cached(m.clone()));
        }
        // Local write too where the memory allows it, so that the entry
        // serves receives as well as sends.
        let (mr, start, len, got) =
            match self
                .pd
                .register_pages(buf, self.page, access | IBV_ACCESS_LOCAL_WRITE)
            {
                Ok((m, s, l)) => (m, s, l, access | IBV_ACCESS_LOCAL_WRITE),
                Err(_) if access & IBV_ACCESS_LOCAL_WRITE == 0 => {
                    let (m, s, l) = self.pd.register_pages(buf, self.page, access)?;
                    (m, s, l, access)
                }
                Err(e) => return Err(e),
            };
        if mon.uffd.register(start, len).is_err() {
            // Not watchable (a file mapping, another monitor's range): this
            // operation's alone.
            return Ok(Hold::Op(mr));
        }
        let k = (start, len, got);
        let mr = Arc::new(mr);
        idx.insert(k, mr.clone());
        for v in idx.victims(self.lim, &k, |m| Arc::strong_count(m) > 1) {
            Self::drop_entry(&mut idx, mon, &v);
        }
        Ok(Hold::Cached(mr))
    }
}

impl Drop for MrCache {
    fn drop(&mut self) {
        if let Some(Some(m)) = self.mon.get() {
            m.stop.signal();
        }
        if let Some(h) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: usize = 4096;

    fn idx(keys: &[Key]) -> Index<Arc<()>> {
        let mut i = Index::default();
        for k in keys {
            i.insert(*k, Arc::new(()));
        }
        i
    }

    #[test]
    fn a_lookup_reuses_a_covering_entry_with_enough_access() {
        let mut i = idx(&[(P, 4 * P, 1), (8 * P, P, 0)]);
        assert!(i.find(2 * P, 3 * P + 10, 1).is_some(), "inside the first");
        assert!(
            i.find(2 * P, 3 * P + 10, 0).is_some(),
            "less access is fine"
        );
        assert!(i.find(8 * P, 9 * P, 1).is_none(), "the second lacks access");
        assert!(i.find(4 * P, 6 * P, 0).is_none(), "runs past the first");
        assert!(i.find(0, P, 0).is_none());
    }

    #[test]
    fn overlapping_and_uncovered_ranges() {
        let i = idx(&[(P, 2 * P, 1), (2 * P, 2 * P, 1), (10 * P, P, 1)]);
        let mut o = i.overlapping(3 * P, 5 * P);
        o.sort_unstable();
        assert_eq!(o, vec![(2 * P, 2 * P, 1)]);
        assert_eq!(i.overlapping(5 * P, 10 * P), vec![]);
        assert_eq!(
            i.uncovered(0, 12 * P),
            vec![(0, P), (4 * P, 10 * P), (11 * P, 12 * P)]
        );
    }

    #[test]
    fn the_least_recently_used_idle_entries_go_first() {
        let mut i = idx(&[(P, P, 1), (3 * P, P, 1), (5 * P, P, 1), (7 * P, P, 1)]);
        assert!(i.find(P, 2 * P, 1).is_some(), "the oldest is used again");
        let busy = i.map[&(3 * P, P, 1)].val.clone();
        let lim = Limits {
            count: 2,
            bytes: usize::MAX,
        };
        let keep = (7 * P, P, 1);
        let v = i.victims(lim, &keep, |m| Arc::strong_count(m) > 1);
        assert_eq!(
            v,
            vec![(5 * P, P, 1), (P, P, 1)],
            "in use and just inserted stay"
        );
        drop(busy);
        let lim = Limits {
            count: 10,
            bytes: 2 * P,
        };
        assert_eq!(i.victims(lim, &keep, |_| false).len(), 2, "bytes bound too");
        for k in v {
            i.remove(&k);
        }
        assert_eq!((i.map.len(), i.lru.len(), i.bytes), (2, 2, 2 * P));
    }
}
