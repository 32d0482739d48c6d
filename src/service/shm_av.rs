//! The table behind a named (shared) address vector: a POSIX shared-memory
//! segment that every process opening an AV of that name on this host maps
//! (fi_av(3): `name`, `FI_READ`, `map_addr`).
//!
//! Layout (native byte order; processes sharing it run the same library):
//! a 64-byte header, the address map (`capacity` `fi_addr_t`s), then
//! `capacity` slots of 64 bytes. An `fi_addr_t` is a slot index, the same
//! in every process, whatever `map_addr` each one passes.
//!
//! ```text
//! header: magic u64 | capacity u64 | next u64 | generation u64 |
//!         creator pid u64 | 24 bytes unused
//! map:    fi_addr_t of the i-th insertion, FI_ADDR_NOTAVAIL until then
//!         (and once it is removed)
//! slot:   state u32 | len u32 | address (up to 56 bytes)
//!         (state 0: not published yet, 1: live, 2: removed)
//! ```
//!
//! `map_addr` points at the map, as upstream's providers report it: a
//! process that opened the AV with `FI_READ` reads the `fi_addr_t` of the
//! i-th address another process inserted at `map_addr[i]`.
//!
//! Writers claim a slot by incrementing `next`, fill it and its map entry,
//! then publish it by storing `LIVE` into its state (release); readers load
//! the state (acquire) before the bytes. Removed slots are never reused, so
//! a reader never sees a slot change under it while live, and the i-th
//! insertion is slot i. `generation` is bumped by every insert and remove,
//! for cached reverse lookups. The process that created the segment
//! unlinks the name when it closes the AV; mappings other processes hold
//! stay valid until they close theirs.
//!
//! Names are global on the host and outlive a killed creator: a segment
//! under the name that is not a table of this layout (another library's,
//! an older build's) or whose creator is gone is stale. A writer replaces
//! it; a reader finds no AV there (`NoEnt`).

use crate::error::{Error, Result};
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const MAGIC: u64 = u64::from_le_bytes(*b"oxiav002");
const HEADER: usize = 64;
const SLOT: usize = 64;
/// Bytes per entry: its map word and its slot.
const ENTRY: usize = 8 + SLOT;
/// The longest address a slot holds (a `sockaddr_in6` is 28 bytes).
pub const MAX_ADDR: usize = SLOT - 8;
/// Slots of a table whose creator gave no `count`.
const DEFAULT_CAPACITY: usize = 1024;
/// A table never grows past this many slots (its segment is sized once).
const MAX_CAPACITY: usize = 1 << 20;
/// A map entry with no address behind it (`FI_ADDR_NOTAVAIL`).
const NO_ADDR: u64 = u64::MAX;

const LIVE: u32 = 1;
const REMOVED: u32 = 2;

/// Header words.
const H_MAGIC: usize = 0;
const H_CAPACITY: usize = 1;
const H_NEXT: usize = 2;
const H_GENERATION: usize = 3;
const H_CREATOR: usize = 4;

/// How long an opener waits for a creator that is still setting the
/// segment up (sizing it, writing its header) before calling it stale.
const SETUP_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// A mapped shared table.
pub struct ShmTable {
    base: *mut u8,
    len: usize,
    capacity: usize,
    read_only: bool,
    /// Set in the process that created the segment: it unlinks the name
    /// (once: taken by [`ShmTable::unlink`]).
    owner: Option<CString>,
    unlinked: std::sync::atomic::AtomicBool,
}

// SAFETY: the mapping is process-wide memory accessed only through atomics
// (header counters, map words, slot states) and through slot bytes that
// are written once before their state is published and never written
// again.
unsafe impl Send for ShmTable {}
// SAFETY: as for Send.
unsafe impl Sync for ShmTable {}

/// What opening an existing segment found.
enum Found {
    Table(ShmTable),
    /// Not a live table of ours; the segment's inode and why.
    Stale(u64, &'static str),
}

impl ShmTable {
    /// Opens the table `name` (a POSIX shm name such as `/job.av`):
    /// creates it with `count` slots when it does not exist (or what is
    /// there is stale) and `read_only` is false; `NoEnt` when it does not
    /// exist and `read_only` is set.
    pub fn open(name: &str, count: usize, read_only: bool) -> Result<ShmTable> {
        let shm_name = shm_name(name)?;
        let capacity = if count == 0 { DEFAULT_CAPACITY } else { count }.min(MAX_CAPACITY);
        // A stale segment is replaced, a few times at most (another
        // writer may be replacing it at the same moment).
        for _ in 0..4 {
            if !read_only {
                match Self::create(&shm_name, capacity) {
                    Err(Error::Busy) => {}
                    other => return other,
                }
            }
            let fd = match open_fd(&shm_name, libc::O_RDWR) {
                // Unlinked since: create it (a writer) or there is none.
                Err(Error::NoEnt) if !read_only => continue,
                other => other?,
            };
            match Self::attach(fd, read_only)? {
                Found::Table(t) => return Ok(t),
                Found::Stale(..) if read_only => return Err(Error::NoEnt),
                Found::Stale(ino, why) => {
                    crate::core_warn!(
                        crate::abi::FI_LOG_AV,
                        "fi_av_open: replacing the stale shared AV {name:?} ({why})"
                    );
                    unlink_if_same(&shm_name, ino);
                }
            }
        }
        Err(Error::Busy)
    }

    /// Creates the segment: `Busy` when the name exists.
    fn create(shm_name: &CString, capacity: usize) -> Result<ShmTable> {
        let fd = open_fd(shm_name, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL)?;
        let len = HEADER + capacity * ENTRY;
        // SAFETY: fd is ours; ftruncate only sizes the segment.
        if unsafe { libc::ftruncate(fd.0, len as libc::off_t) } != 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: shm_name is a valid C string.
            unsafe { libc::shm_unlink(shm_name.as_ptr()) };
            return Err(Error::os(crate::abi::FI_ENOMEM, &e));
        }
        let t = match map_shared(fd.as_fd(), len) {
            Ok(base) => ShmTable {
                base,
                len,
                capacity,
                read_only: false,
                owner: Some(shm_name.clone()),
                unlinked: std::sync::atomic::AtomicBool::new(false),
            },
            Err(e) => {
                // SAFETY: shm_name is a valid C string.
                unsafe { libc::shm_unlink(shm_name.as_ptr()) };
                return Err(e);
            }
        };
        for i in 0..capacity {
            t.map_word(i).store(NO_ADDR, Ordering::Relaxed);
        }
        t.header(H_CAPACITY)
            .store(capacity as u64, Ordering::Relaxed);
        t.header(H_CREATOR)
            .store(u64::from(std::process::id()), Ordering::Relaxed);
        // Published last: an opener that sees the magic sees the rest.
        t.header(H_MAGIC).store(MAGIC, Ordering::Release);
        Ok(t)
    }

    /// Maps an existing segment and checks it is a live table of this
    /// layout. Everything read from the header is copied out once and
    /// checked against the segment's own size before use.
    fn attach(fd: Fd, read_only: bool) -> Result<Found> {
        let deadline = std::time::Instant::now() + SETUP_WAIT;
        // A creator may still be sizing it.
        let (ino, size) = loop {
            let (ino, size) = fd.stat()?;
            if size >= HEADER + ENTRY || std::time::Instant::now() >= deadline {
                break (ino, size);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        if size < HEADER + ENTRY {
            return Ok(Found::Stale(ino, "too small for a table"));
        }
        let base = map_shared(fd.as_fd(), size)?;
        let mut t = ShmTable {
            base,
            len: size,
            capacity: (size - HEADER) / ENTRY,
            read_only,
            owner: None,
            unlinked: std::sync::atomic::AtomicBool::new(false),
        };
        // The creator publishes the magic last: wait for it, bounded.
        let magic = loop {
            let m = t.header(H_MAGIC).load(Ordering::Acquire);
            if m != 0 || std::time::Instant::now() >= deadline {
                break m;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        if magic != MAGIC {
            return Ok(Found::Stale(ino, "not a table of this library's layout"));
        }
        let cap = t.header(H_CAPACITY).load(Ordering::Relaxed);
        if usize::try_from(cap).ok() != Some(t.capacity) || size != HEADER + t.capacity * ENTRY {
            return Ok(Found::Stale(ino, "its capacity does not match its size"));
        }
        let creator = t.header(H_CREATOR).load(Ordering::Relaxed);
        if !alive(creator) {
            return Ok(Found::Stale(ino, "the process that created it is gone"));
        }
        t.capacity = cap as usize;
        Ok(Found::Table(t))
    }

    /// The address of the map in this process (reported as `map_addr`):
    /// `fi_addr_t` entries, the i-th insertion's at index i.
    pub fn map_addr(&self) -> usize {
        self.base as usize + HEADER
    }

    /// Whether the AV was opened with `FI_READ`.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Header word `i` (`H_*`).
    fn header(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < HEADER / 8);
        // SAFETY: the header lies inside the mapping, 8-byte aligned (mmap
        // returns page-aligned memory), and is only accessed atomically.
        unsafe { &*(self.base.add(i * 8) as *const AtomicU64) }
    }

    /// The map word of entry `idx`.
    fn map_word(&self, idx: usize) -> &AtomicU64 {
        debug_assert!(idx < self.capacity);
        // SAFETY: idx < capacity (callers check), so the word lies inside
        // the mapping, 8-byte aligned after the 64-byte header; it is only
        // accessed atomically here (the application only reads it).
        unsafe { &*(self.base.add(HEADER + idx * 8) as *const AtomicU64) }
    }

    /// Slot `idx`'s first byte.
    fn slot(&self, idx: usize) -> *mut u8 {
        debug_assert!(idx < self.capacity);
        // SAFETY: idx < capacity (callers check): the slot lies inside the
        // mapping, after the header and the map.
        unsafe { self.base.add(HEADER + self.capacity * 8 + idx * SLOT) }
    }

    fn state(&self, idx: usize) -> &AtomicU32 {
        // SAFETY: the slot is inside the mapping (see `slot`); its first
        // word is 4-byte aligned and only accessed atomically.
        unsafe { &*(self.slot(idx) as *const AtomicU32) }
    }

    /// Slots claimed so far (live, removed, or being filled).
    fn claimed(&self) -> usize {
        (self.header(H_NEXT).load(Ordering::Acquire) as usize).min(self.capacity)
    }

    /// Changes with every insert and remove.
    pub fn generation(&self) -> u64 {
        self.header(H_GENERATION).load(Ordering::Acquire)
    }

    /// Adds an address; `FI_ENOSPC` when the table is full, `FI_EACCES`
    /// when opened read-only.
    pub fn insert(&self, raw: &[u8]) -> Result<usize> {
        if self.read_only {
            return Err(Error::Other(crate::abi::FI_EACCES));
        }
        if raw.is_empty() || raw.len() > MAX_ADDR {
            return Err(Error::Inval);
        }
        let idx = self.header(H_NEXT).fetch_add(1, Ordering::AcqRel) as usize;
        if idx >= self.capacity {
            return Err(Error::Other(crate::abi::FI_ENOSPC));
        }
        // SAFETY: the slot is inside the mapping (idx < capacity) and ours
        // alone: the fetch_add above handed it to no one else, and nobody
        // reads its bytes before its state says LIVE.
        unsafe {
            let slot = self.slot(idx);
            core::ptr::write_unaligned(slot.add(4) as *mut u32, raw.len() as u32);
            core::ptr::copy_nonoverlapping(raw.as_ptr(), slot.add(8), raw.len());
        }
        self.map_word(idx).store(idx as u64, Ordering::Release);
        self.state(idx).store(LIVE, Ordering::Release);
        self.header(H_GENERATION).fetch_add(1, Ordering::AcqRel);
        Ok(idx)
    }

    /// Removes the entry at `idx`; `Inval` when there is none.
    pub fn remove(&self, idx: usize) -> Result<()> {
        if self.read_only {
            return Err(Error::Other(crate::abi::FI_EACCES));
        }
        if idx >= self.claimed() {
            return Err(Error::Inval);
        }
        self.state(idx)
            .compare_exchange(LIVE, REMOVED, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| Error::Inval)?;
        self.map_word(idx).store(NO_ADDR, Ordering::Release);
        self.header(H_GENERATION).fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// The address at `idx`, if that slot is live.
    pub fn get(&self, idx: usize) -> Option<Vec<u8>> {
        if idx >= self.claimed() || self.state(idx).load(Ordering::Acquire) != LIVE {
            return None;
        }
        // SAFETY: a live slot inside the mapping, written before it was
        // published and never written again.
        unsafe {
            let slot = self.slot(idx);
            let n = (core::ptr::read_unaligned(slot.add(4) as *const u32) as usize).min(MAX_ADDR);
            Some(core::slice::from_raw_parts(slot.add(8), n).to_vec())
        }
    }

    /// The index of the first live slot holding an address for which
    /// `same` is true.
    pub fn find(&self, mut same: impl FnMut(&[u8]) -> bool) -> Option<usize> {
        (0..self.claimed()).find(|&i| self.get(i).is_some_and(|a| same(&a)))
    }

    /// Live entries.
    pub fn count(&self) -> usize {
        (0..self.claimed())
            .filter(|&i| self.state(i).load(Ordering::Acquire) == LIVE)
            .count()
    }
}

impl ShmTable {
    /// In the creating process: removes the name (the application closed
    /// the AV; endpoints may still hold the mapping). Later opens of the
    /// name create a new table.
    pub fn unlink(&self) {
        if let Some(name) = &self.owner {
            if !self.unlinked.swap(true, Ordering::AcqRel) {
                // SAFETY: name is a valid C string.
                unsafe { libc::shm_unlink(name.as_ptr()) };
            }
        }
    }
}

impl Drop for ShmTable {
    fn drop(&mut self) {
        self.unlink();
        // SAFETY: base/len are the mapping made in open, unmapped once.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// A shm name: one leading `/`, no other, at most 255 bytes.
fn shm_name(name: &str) -> Result<CString> {
    let body = name.strip_prefix('/').unwrap_or(name);
    if body.is_empty() || body.contains('/') || body.len() > 254 {
        return Err(Error::Inval);
    }
    CString::new(format!("/{body}")).map_err(|_| Error::Inval)
}

/// A descriptor closed on drop.
struct Fd(libc::c_int);

impl Fd {
    /// The segment's inode and size.
    fn stat(&self) -> Result<(u64, usize)> {
        // SAFETY: all-zero is a valid stat; fstat fills it.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: self.0 is an open descriptor and st is writable.
        if unsafe { libc::fstat(self.0, &mut st) } != 0 {
            return Err(Error::Inval);
        }
        Ok((st.st_ino as u64, st.st_size as usize))
    }
}

impl AsFd for Fd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: self.0 is open for as long as self (closed only on drop).
        unsafe { BorrowedFd::borrow_raw(self.0) }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor; the mapping outlives it.
        unsafe { libc::close(self.0) };
    }
}

fn open_fd(name: &CString, flags: libc::c_int) -> Result<Fd> {
    // SAFETY: name is a valid C string.
    let fd = unsafe { libc::shm_open(name.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOENT) => Error::NoEnt,
            Some(libc::EEXIST) => Error::Busy,
            Some(libc::EACCES) => Error::Other(crate::abi::FI_EACCES),
            _ => Error::os(crate::abi::FI_EINVAL, &e),
        });
    }
    Ok(Fd(fd))
}

/// Maps the first `len` bytes of the shared-memory file `fd` (at most its
/// size), shared, readable and writable. Also used by the shm transport
/// (`oxifabric-shm`'s regions), so there is one mmap call for shared files.
pub fn map_shared(fd: BorrowedFd<'_>, len: usize) -> Result<*mut u8> {
    // SAFETY: maps `len` bytes of the segment (at most its size) shared;
    // the result is checked before use.
    let base = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        let e = std::io::Error::last_os_error();
        return Err(Error::os(crate::abi::FI_ENOMEM, &e));
    }
    Ok(base as *mut u8)
}

/// Whether the process `pid` (a creator's, read from a segment) exists.
/// A pid another user owns exists too (`EPERM`).
fn alive(pid: u64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; it only checks the pid.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes the name if it still names the segment with inode `ino` (the
/// stale one looked at), not one another writer created since.
fn unlink_if_same(name: &CString, ino: u64) {
    let Ok(fd) = open_fd(name, libc::O_RDONLY) else {
        return;
    };
    if fd.stat().is_ok_and(|(i, _)| i == ino) {
        // SAFETY: name is a valid C string.
        unsafe { libc::shm_unlink(name.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique(tag: &str) -> String {
        format!("/oxi-test-{tag}-{}", std::process::id())
    }

    #[test]
    fn creator_writes_reader_sees_and_name_goes_with_the_creator() {
        let name = unique("av");
        assert!(matches!(ShmTable::open(&name, 4, true), Err(Error::NoEnt)));
        let w = ShmTable::open(&name, 4, false).unwrap();
        assert_eq!(w.insert(&[1, 2, 3]).unwrap(), 0);
        let r = ShmTable::open(&name, 0, true).unwrap();
        assert_eq!(r.get(0), Some(vec![1, 2, 3]));
        assert_eq!(r.insert(&[4]), Err(Error::Other(crate::abi::FI_EACCES)));
        let g = r.generation();
        assert_eq!(w.insert(&[5, 6]).unwrap(), 1);
        assert!(r.generation() > g, "readers see inserts");
        assert_eq!(r.find(|a| a == [5, 6]), Some(1));
        w.remove(0).unwrap();
        assert_eq!(r.get(0), None);
        assert_eq!(r.count(), 1);
        // A second writer shares the table.
        let w2 = ShmTable::open(&name, 4, false).unwrap();
        assert_eq!(w2.insert(&[7]).unwrap(), 2);
        assert_eq!(w2.insert(&[8]).unwrap(), 3);
        assert_eq!(w2.insert(&[9]), Err(Error::Other(crate::abi::FI_ENOSPC)));
        drop(w);
        assert!(matches!(ShmTable::open(&name, 4, true), Err(Error::NoEnt)));
        assert_eq!(r.get(1), Some(vec![5, 6]), "the reader's mapping stays");
    }

    #[test]
    fn bad_names_are_refused() {
        assert_eq!(shm_name("/a/b").err(), Some(Error::Inval));
        assert_eq!(shm_name("/").err(), Some(Error::Inval));
        assert_eq!(shm_name("x").unwrap().to_str().unwrap(), "/x");
    }

    /// The map word at `map_addr[i]`, as an application reads it.
    fn mapped(t: &ShmTable, i: usize) -> u64 {
        // SAFETY: i < capacity: the word lies inside t's mapping.
        unsafe { core::ptr::read_volatile((t.map_addr() as *const u64).add(i)) }
    }

    #[test]
    fn map_addr_points_at_the_fi_addr_of_each_insertion() {
        let name = unique("map");
        let w = ShmTable::open(&name, 4, false).unwrap();
        let r = ShmTable::open(&name, 0, true).unwrap();
        assert_eq!(mapped(&r, 0), NO_ADDR, "nothing inserted yet");
        assert_eq!(w.insert(&[1]).unwrap(), 0);
        assert_eq!(w.insert(&[2]).unwrap(), 1);
        assert_eq!((mapped(&r, 0), mapped(&r, 1)), (0, 1));
        assert_ne!(mapped(&r, 0), MAGIC);
        w.remove(0).unwrap();
        assert_eq!(mapped(&r, 0), NO_ADDR);
    }

    /// Leaves a segment named `name` of `len` bytes whose first words
    /// are `words`, as a killed process would.
    fn leave(name: &str, len: usize, words: &[u64]) {
        let n = shm_name(name).unwrap();
        let fd = open_fd(&n, libc::O_RDWR | libc::O_CREAT).unwrap();
        // SAFETY: fd is ours.
        assert_eq!(unsafe { libc::ftruncate(fd.0, len as libc::off_t) }, 0);
        let base = map_shared(fd.as_fd(), len).unwrap();
        for (i, w) in words.iter().enumerate() {
            // SAFETY: inside the fresh mapping, 8-byte aligned.
            unsafe { (base as *mut u64).add(i).write(*w) };
        }
        // SAFETY: unmaps the mapping made above.
        unsafe { libc::munmap(base as *mut libc::c_void, len) };
    }

    #[test]
    fn a_stale_segment_is_replaced_by_a_writer_and_absent_for_a_reader() {
        // Another library's table (no magic), and ours from a creator
        // that is gone (pid 0 is no process).
        let foreign = unique("foreign");
        leave(&foreign, 4096, &[1024, 3]);
        let dead = unique("dead");
        leave(&dead, HEADER + 4 * ENTRY, &[MAGIC, 4, 3, 3, 0]);
        for name in [&foreign, &dead] {
            assert!(matches!(ShmTable::open(name, 4, true), Err(Error::NoEnt)));
            let w = ShmTable::open(name, 4, false).unwrap();
            assert!(w.owner.is_some(), "{name}: created anew");
            assert_eq!(w.insert(&[9]).unwrap(), 0, "{name}: starts empty");
            let r = ShmTable::open(name, 0, true).unwrap();
            assert_eq!((r.get(0), mapped(&r, 0)), (Some(vec![9]), 0));
        }
    }
}
