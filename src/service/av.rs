//! Address vectors, shared by every provider: a table from `fi_addr_t` to
//! the raw address bytes the provider understands (for the socket providers,
//! `sockaddr_in`/`sockaddr_in6`), with the reverse lookup `FI_SOURCE` needs.
//!
//! Both `FI_AV_MAP` and `FI_AV_TABLE` hand out table indices as `fi_addr_t`:
//! a map may return any value, and an index is the fastest to resolve.
//! Removed slots are reused only by later inserts.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::service::addr_format::AddrFormat;
use crate::service::shm_av::ShmTable;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::RwLock;

/// The most addresses an AV may be opened for (`fi_av_open` refuses more
/// with `-FI_ENOMEM`): as many as fit the index bits of an `fi_addr_t`
/// with room for receive-context bits, and far beyond any real job.
pub const MAX_AV_COUNT: usize = 1 << 32;

/// One entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvEntry {
    pub raw: Vec<u8>,
    /// The decoded socket address, when the bytes are one.
    pub sa: Option<SocketAddr>,
}

#[derive(Default)]
struct Table {
    slots: Vec<Option<AvEntry>>,
    free: Vec<usize>,
    by_addr: HashMap<Vec<u8>, fi_addr_t>,
}

/// One answer an endpoint got from its AV, kept until the AV changes:
/// the last key looked up and what it gave, with the AV's generation
/// ([`AddressVector::generation`]) read before the lookup, so that a
/// change during the lookup makes the next use look again. For lookups
/// an endpoint repeats on every operation (a ping-pong's destination, a
/// connection's `FI_SOURCE` name): each lookup takes the AV's read lock.
#[derive(Clone, Copy, Debug, Default)]
pub struct AvMemo<K, V> {
    last: Option<(u64, K, V)>,
}

impl<K: Copy + PartialEq, V: Copy> AvMemo<K, V> {
    /// What `look` gives for `key` in `av`, from the memo while the AV has
    /// not changed since it was looked up.
    #[inline]
    pub fn get(&mut self, av: &AddressVector, key: K, look: impl FnOnce(&AddressVector) -> V) -> V {
        let generation = av.generation();
        if let Some((g, k, v)) = self.last {
            if g == generation && k == key {
                return v;
            }
        }
        let v = look(av);
        self.last = Some((generation, key, v));
        v
    }
}

/// An address vector.
pub struct AddressVector {
    pub av_type: fi_av_type,
    /// Bits of an `fi_addr_t` that select a receive context (`fi_rx_addr`).
    pub rx_ctx_bits: u32,
    /// Expected address length, or 0 for any.
    pub addrlen: usize,
    /// The domain's address format: entries must be valid addresses of
    /// it (`FI_FORMAT_UNSPEC` accepts any bytes).
    pub format: AddrFormat,
    table: RwLock<Table>,
    /// A named AV's table, shared with the other processes that opened
    /// that name (`table` then stays empty).
    shared: Option<ShmTable>,
    /// Bumped by every insert and remove, so that whoever caches a
    /// reverse lookup (a connection's source `fi_addr_t`) knows to redo it.
    generation: std::sync::atomic::AtomicU64,
}

/// Normalises an address for reverse lookups: socket addresses are keyed by
/// family, port and IP only (sin_zero and IPv6 flow info ignored).
fn key(raw: &[u8], sa: &Option<SocketAddr>) -> Vec<u8> {
    match sa {
        Some(s) => crate::addr::to_sockaddr(&match s {
            SocketAddr::V6(v6) => SocketAddr::V6(std::net::SocketAddrV6::new(
                *v6.ip(),
                v6.port(),
                0,
                v6.scope_id(),
            )),
            v4 => *v4,
        }),
        None => raw.to_vec(),
    }
}

impl AddressVector {
    /// Opens an address vector. `FI_AV_UNSPEC` becomes `FI_AV_MAP`.
    pub fn new(
        av_type: fi_av_type,
        rx_ctx_bits: c_int,
        count: usize,
        addrlen: usize,
    ) -> Result<AddressVector> {
        let av_type = match av_type {
            FI_AV_UNSPEC => FI_AV_MAP,
            t @ (FI_AV_MAP | FI_AV_TABLE) => t,
            _ => return Err(Error::Inval),
        };
        if !(0..=64).contains(&rx_ctx_bits) {
            return Err(Error::Inval);
        }
        if count > MAX_AV_COUNT {
            return Err(Error::NoMem);
        }
        Ok(AddressVector {
            av_type,
            rx_ctx_bits: rx_ctx_bits as u32,
            addrlen,
            format: AddrFormat(FI_FORMAT_UNSPEC as u32),
            table: RwLock::new(Table {
                slots: Vec::with_capacity(count.min(1 << 16)),
                ..Default::default()
            }),
            shared: None,
            generation: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Opens the named AV `name`, shared by every process of this host
    /// that opens it: created (with room for `count` addresses) unless it
    /// exists or `read_only` (`FI_READ`) is set; a read-only open of a
    /// name that does not exist is `NoEnt`.
    pub fn new_shared(
        av_type: fi_av_type,
        rx_ctx_bits: c_int,
        count: usize,
        name: &str,
        read_only: bool,
    ) -> Result<AddressVector> {
        if count > MAX_AV_COUNT {
            return Err(Error::NoMem);
        }
        let mut av = AddressVector::new(av_type, rx_ctx_bits, 0, 0)?;
        av.shared = Some(ShmTable::open(name, count, read_only)?);
        Ok(av)
    }

    /// Opened with `FI_READ`: inserts and removals are refused.
    pub fn read_only(&self) -> bool {
        self.shared.as_ref().is_some_and(ShmTable::read_only)
    }

    /// `fi_close` of the AV: a named AV's creator removes the name now,
    /// even if endpoints still hold the table.
    pub fn close(&self) {
        if let Some(t) = &self.shared {
            t.unlink();
        }
    }

    /// Where a named AV's table is mapped in this process (`map_addr`).
    pub fn map_addr(&self) -> Option<usize> {
        self.shared.as_ref().map(ShmTable::map_addr)
    }

    /// Inserts one address; `Inval` when it is not a valid address of the
    /// expected length.
    pub fn insert(&self, raw: &[u8]) -> Result<fi_addr_t> {
        if raw.is_empty() || (self.addrlen != 0 && raw.len() < self.addrlen) {
            return Err(Error::Inval);
        }
        let raw = if self.addrlen != 0 {
            &raw[..self.addrlen]
        } else {
            raw
        };
        if self.format.0 != FI_FORMAT_UNSPEC as u32 && !self.format.valid(raw) {
            return Err(Error::Inval);
        }
        let sa = self.format.socket_addr(raw);
        if let Some(t) = &self.shared {
            let idx = t.insert(raw)?;
            crate::core_debug!(FI_LOG_AV, "insert {:?} as {idx} (shared)", sa);
            return Ok(idx as fi_addr_t);
        }
        let mut t = self.table.write().unwrap_or_else(|p| p.into_inner());
        let idx = match t.free.pop() {
            Some(i) => i,
            None => {
                t.slots.push(None);
                t.slots.len() - 1
            }
        };
        let k = key(raw, &sa);
        t.by_addr.entry(k).or_insert(idx as fi_addr_t);
        crate::core_debug!(FI_LOG_AV, "insert {:?} as {idx}", sa);
        t.slots[idx] = Some(AvEntry {
            raw: raw.to_vec(),
            sa,
        });
        self.bump();
        Ok(idx as fi_addr_t)
    }

    /// Removes an entry; `Inval` for an unknown address.
    pub fn remove(&self, addr: fi_addr_t) -> Result<()> {
        let idx = usize::try_from(addr).map_err(|_| Error::Inval)?;
        if let Some(t) = &self.shared {
            return t.remove(idx);
        }
        let mut t = self.table.write().unwrap_or_else(|p| p.into_inner());
        let Some(e) = t.slots.get_mut(idx).and_then(Option::take) else {
            return Err(Error::Inval);
        };
        let k = key(&e.raw, &e.sa);
        if t.by_addr.get(&k) == Some(&addr) {
            t.by_addr.remove(&k);
        }
        t.free.push(idx);
        self.bump();
        Ok(())
    }

    fn bump(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// Changes with every insert and remove (see `reverse`).
    pub fn generation(&self) -> u64 {
        match &self.shared {
            Some(t) => t.generation(),
            None => self.generation.load(std::sync::atomic::Ordering::Acquire),
        }
    }

    /// The entry behind an address (receive-context bits ignored).
    pub fn lookup(&self, addr: fi_addr_t) -> Option<AvEntry> {
        let idx = self.base(addr)?;
        if let Some(t) = &self.shared {
            let raw = t.get(idx)?;
            let sa = self.format.socket_addr(&raw);
            return Some(AvEntry { raw, sa });
        }
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        t.slots.get(idx).and_then(|e| e.clone())
    }

    /// The socket address behind an `fi_addr_t`, if any.
    pub fn sockaddr(&self, addr: fi_addr_t) -> Option<SocketAddr> {
        if self.shared.is_some() {
            return self.lookup(addr).and_then(|e| e.sa);
        }
        let idx = self.base(addr)?;
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        t.slots.get(idx).and_then(|e| e.as_ref()).and_then(|e| e.sa)
    }

    /// Reverse lookup for `FI_SOURCE`: `FI_ADDR_NOTAVAIL` when unknown.
    /// In an AV with receive-context bits, a sender that is context `k` of
    /// a scalable endpoint (the sockets provider puts context `k` at the
    /// scalable endpoint's port + `k`) is named by the scalable endpoint's
    /// entry.
    pub fn reverse(&self, sa: &SocketAddr) -> fi_addr_t {
        let found = self.reverse_exact(sa);
        if found != FI_ADDR_NOTAVAIL || self.rx_ctx_bits == 0 {
            return found;
        }
        let contexts = 1u32 << self.rx_ctx_bits.min(8);
        for k in 1..contexts {
            let Some(port) = sa.port().checked_sub(k as u16) else {
                break;
            };
            let base = self.reverse_exact(&SocketAddr::new(sa.ip(), port));
            if base != FI_ADDR_NOTAVAIL {
                return base;
            }
        }
        FI_ADDR_NOTAVAIL
    }

    fn reverse_exact(&self, sa: &SocketAddr) -> fi_addr_t {
        let k = key(&[], &Some(*sa));
        if let Some(t) = &self.shared {
            return t
                .find(|raw| key(raw, &self.format.socket_addr(raw)) == k)
                .map_or(FI_ADDR_NOTAVAIL, |i| i as fi_addr_t);
        }
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        t.by_addr.get(&k).copied().unwrap_or(FI_ADDR_NOTAVAIL)
    }

    /// Reverse lookup of an address that is not a socket address (an
    /// `FI_ADDR_STR` name), by its bytes as inserted: `FI_ADDR_NOTAVAIL`
    /// when unknown.
    pub fn reverse_raw(&self, raw: &[u8]) -> fi_addr_t {
        if let Some(t) = &self.shared {
            return t
                .find(|r| r == raw)
                .map_or(FI_ADDR_NOTAVAIL, |i| i as fi_addr_t);
        }
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        t.by_addr.get(raw).copied().unwrap_or(FI_ADDR_NOTAVAIL)
    }

    /// The receive context an address selects (its `fi_rx_addr` bits; 0
    /// when the AV has none).
    pub fn rx_ctx(&self, addr: fi_addr_t) -> usize {
        if self.rx_ctx_bits == 0 || addr == FI_ADDR_NOTAVAIL {
            return 0;
        }
        (addr >> (64 - self.rx_ctx_bits)) as usize
    }

    /// The table index an address selects, without receive-context bits.
    fn base(&self, addr: fi_addr_t) -> Option<usize> {
        if addr == FI_ADDR_NOTAVAIL {
            return None;
        }
        let shift = 64 - self.rx_ctx_bits;
        let a = if self.rx_ctx_bits == 0 || shift >= 64 {
            addr
        } else {
            addr & ((1u64 << shift) - 1)
        };
        usize::try_from(a).ok()
    }

    /// The addresses of the live entries, in table order (an AV set of
    /// `FI_UNIVERSE`).
    pub fn addrs(&self) -> Vec<fi_addr_t> {
        if let Some(t) = &self.shared {
            let (want, mut v) = (t.count(), Vec::new());
            let mut idx = 0usize;
            // Entries are numbered from 0; a removed one leaves a hole.
            while v.len() < want && idx < want.saturating_mul(2).saturating_add(1024) {
                if t.get(idx).is_some() {
                    v.push(idx as fi_addr_t);
                }
                idx += 1;
            }
            return v;
        }
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        t.slots
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_some())
            .map(|(i, _)| i as fi_addr_t)
            .collect()
    }

    /// Number of live entries.
    pub fn count(&self) -> usize {
        if let Some(t) = &self.shared {
            return t.count();
        }
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        t.slots.iter().filter(|e| e.is_some()).count()
    }
}

/// `fi_av_straddr` text of an address whose format is not known (see
/// [`AddrFormat::to_text`]).
pub fn straddr(raw: &[u8]) -> String {
    AddrFormat(FI_FORMAT_UNSPEC as u32).to_text(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> Vec<u8> {
        crate::addr::to_sockaddr(&s.parse().unwrap())
    }

    #[test]
    fn memo_answers_until_the_av_changes() {
        let av = AddressVector::new(FI_AV_TABLE, 0, 4, 0).unwrap();
        let a = av.insert(&sa("127.0.0.1:10")).unwrap();
        let mut memo = AvMemo::default();
        let mut looks = 0;
        let mut get = |memo: &mut AvMemo<fi_addr_t, Option<SocketAddr>>, key| {
            memo.get(&av, key, |av| {
                looks += 1;
                av.sockaddr(key)
            })
        };
        assert_eq!(get(&mut memo, a), Some("127.0.0.1:10".parse().unwrap()));
        assert_eq!(get(&mut memo, a), Some("127.0.0.1:10".parse().unwrap()));
        av.remove(a).unwrap();
        assert_eq!(get(&mut memo, a), None, "a removal is seen");
        let b = av.insert(&sa("127.0.0.1:11")).unwrap();
        assert_eq!(get(&mut memo, b), Some("127.0.0.1:11".parse().unwrap()));
        assert_eq!(looks, 3, "one look per AV change or new key");
    }

    #[test]
    fn insert_lookup_remove_reverse() {
        let av = AddressVector::new(FI_AV_TABLE, 0, 4, 0).unwrap();
        let a = av.insert(&sa("127.0.0.1:10")).unwrap();
        let b = av.insert(&sa("[::1]:11")).unwrap();
        assert_eq!((a, b), (0, 1));
        assert_eq!(av.sockaddr(b), Some("[::1]:11".parse().unwrap()));
        assert_eq!(av.reverse(&"127.0.0.1:10".parse().unwrap()), a);
        assert_eq!(
            av.reverse(&"127.0.0.1:12".parse().unwrap()),
            FI_ADDR_NOTAVAIL
        );
        av.remove(a).unwrap();
        assert_eq!(av.remove(a), Err(Error::Inval));
        assert!(av.lookup(a).is_none());
        assert_eq!(
            av.reverse(&"127.0.0.1:10".parse().unwrap()),
            FI_ADDR_NOTAVAIL
        );
        assert_eq!(av.insert(&[]), Err(Error::Inval));
        assert_eq!(av.count(), 1);
    }

    #[test]
    fn rx_ctx_bits_are_masked() {
        let av = AddressVector::new(FI_AV_MAP, 4, 0, 0).unwrap();
        let a = av.insert(&sa("127.0.0.1:10")).unwrap();
        assert!(av.lookup(a | (3u64 << 60)).is_some());
        assert!(AddressVector::new(FI_AV_MAP, 65, 0, 0).is_err());
    }

    #[test]
    fn contexts_of_a_scalable_peer_resolve_to_its_entry() {
        let av = AddressVector::new(FI_AV_TABLE, 2, 0, 0).unwrap();
        let a = av.insert(&sa("127.0.0.1:5000")).unwrap();
        assert_eq!(av.rx_ctx(a | (3u64 << 62)), 3);
        assert_eq!(av.rx_ctx(a), 0);
        // Contexts 1..3 sit at the ports after the scalable endpoint's.
        assert_eq!(av.reverse(&"127.0.0.1:5003".parse().unwrap()), a);
        assert_eq!(
            av.reverse(&"127.0.0.1:5004".parse().unwrap()),
            FI_ADDR_NOTAVAIL,
            "beyond 2^rx_ctx_bits contexts"
        );
        let plain = AddressVector::new(FI_AV_TABLE, 0, 0, 0).unwrap();
        plain.insert(&sa("127.0.0.1:5000")).unwrap();
        assert_eq!(
            plain.reverse(&"127.0.0.1:5001".parse().unwrap()),
            FI_ADDR_NOTAVAIL,
            "no context bits: exact matches only"
        );
    }

    #[test]
    fn straddr_formats() {
        assert_eq!(
            straddr(&sa("127.0.0.1:4000")),
            "fi_sockaddr_in://127.0.0.1:4000"
        );
        assert_eq!(straddr(&sa("[::1]:5")), "fi_sockaddr_in6://[::1]:5");
    }
}
