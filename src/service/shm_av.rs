//! The table behind a named (shared) address vector: a POSIX shared-memory
//! segment that every process opening an AV of that name on this host maps
//! (fi_av(3): `name`, `FI_READ`, `map_addr`).
//!
//! Layout (native byte order; processes sharing it run the same library):
//! a 64-byte header, then `capacity` slots of 64 bytes. An `fi_addr_t` is
//! a slot index, the same in every process, whatever `map_addr` each one
//! passes.
//!
//! ```text
//! header: magic u64 | capacity u64 | next u64 | generation u64 | 32 bytes unused
//! slot:   state u32 | len u32 | address (up to 56 bytes)
//!         (state 0: not published yet, 1: live, 2: removed)
//! ```
//!
//! Writers claim a slot by incrementing `next`, fill it, then publish it by
//! storing `LIVE` into its state (release); readers load the state
//! (acquire) before the bytes. Removed slots are never reused, so a reader
//! never sees a slot change under it while live. `generation` is bumped by
//! every insert and remove, for cached reverse lookups. The process that
//! created the segment unlinks the name when it closes the AV; mappings
//! other processes hold stay valid until they close theirs.

use crate::error::{Error, Result};
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const MAGIC: u64 = u64::from_le_bytes(*b"oxiav001");
const HEADER: usize = 64;
const SLOT: usize = 64;
/// The longest address a slot holds (a `sockaddr_in6` is 28 bytes).
pub const MAX_ADDR: usize = SLOT - 8;
/// Slots of a table whose creator gave no `count`.
const DEFAULT_CAPACITY: usize = 1024;
/// A table never grows past this many slots (its segment is sized once).
const MAX_CAPACITY: usize = 1 << 20;

const LIVE: u32 = 1;
const REMOVED: u32 = 2;

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
// (header counters, slot states) and through slot bytes that are written
// once before their state is published and never written again.
unsafe impl Send for ShmTable {}
// SAFETY: as for Send.
unsafe impl Sync for ShmTable {}

impl ShmTable {
    /// Opens the table `name` (a POSIX shm name such as `/job.av`):
    /// creates it with `count` slots when it does not exist and
    /// `read_only` is false; `NoEnt` when it does not exist and
    /// `read_only` is set.
    pub fn open(name: &str, count: usize, read_only: bool) -> Result<ShmTable> {
        let shm_name = shm_name(name)?;
        let capacity = if count == 0 { DEFAULT_CAPACITY } else { count }.min(MAX_CAPACITY);
        let len = HEADER + capacity * SLOT;
        let mut owner = None;
        let fd = if read_only {
            open_fd(&shm_name, libc::O_RDWR)?
        } else {
            match open_fd(&shm_name, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL) {
                Ok(fd) => {
                    // SAFETY: fd is ours; ftruncate only sizes the segment.
                    if unsafe { libc::ftruncate(fd.0, len as libc::off_t) } != 0 {
                        let e = std::io::Error::last_os_error();
                        // SAFETY: shm_name is a valid C string.
                        unsafe { libc::shm_unlink(shm_name.as_ptr()) };
                        return Err(Error::os(crate::abi::FI_ENOMEM, &e));
                    }
                    owner = Some(shm_name.clone());
                    fd
                }
                // It exists: share it.
                Err(Error::Busy) => open_fd(&shm_name, libc::O_RDWR)?,
                Err(e) => return Err(e),
            }
        };
        // An existing segment's size says its capacity (its creator may
        // still be sizing it: wait for that, bounded).
        let mut size = 0usize;
        for _ in 0..1000 {
            size = fd.size()?;
            if size >= HEADER + SLOT || owner.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if owner.is_none() && size < HEADER + SLOT {
            return Err(Error::Inval);
        }
        let len = if owner.is_some() { len } else { size };
        // SAFETY: maps `len` bytes of the segment (its size) shared; the
        // result is checked before use.
        let base = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.0,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            return Err(Error::os(crate::abi::FI_ENOMEM, &e));
        }
        let mut t = ShmTable {
            base: base as *mut u8,
            len,
            capacity: (len - HEADER) / SLOT,
            read_only,
            owner,
            unlinked: std::sync::atomic::AtomicBool::new(false),
        };
        if t.owner.is_some() {
            t.header(1).store(t.capacity as u64, Ordering::Relaxed);
            t.header(0).store(MAGIC, Ordering::Release);
        } else {
            // The creator publishes the magic last: wait for it, bounded.
            let mut ok = false;
            for _ in 0..1000 {
                if t.header(0).load(Ordering::Acquire) == MAGIC {
                    ok = true;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if !ok {
                return Err(Error::Inval);
            }
            let cap = t.header(1).load(Ordering::Relaxed) as usize;
            t.capacity = t.capacity.min(cap);
        }
        Ok(t)
    }

    /// The address the table is mapped at in this process (reported as
    /// `map_addr`).
    pub fn map_addr(&self) -> usize {
        self.base as usize
    }

    /// Whether the AV was opened with `FI_READ`.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Header word `i` (0 magic, 1 capacity, 2 next, 3 generation).
    fn header(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < HEADER / 8);
        // SAFETY: the header lies inside the mapping, 8-byte aligned (mmap
        // returns page-aligned memory), and is only accessed atomically.
        unsafe { &*(self.base.add(i * 8) as *const AtomicU64) }
    }

    fn state(&self, idx: usize) -> &AtomicU32 {
        // SAFETY: idx < capacity (callers check), so the slot lies inside
        // the mapping; its first word is 4-byte aligned and only accessed
        // atomically.
        unsafe { &*(self.base.add(HEADER + idx * SLOT) as *const AtomicU32) }
    }

    /// Slots claimed so far (live, removed, or being filled).
    fn claimed(&self) -> usize {
        (self.header(2).load(Ordering::Acquire) as usize).min(self.capacity)
    }

    /// Changes with every insert and remove.
    pub fn generation(&self) -> u64 {
        self.header(3).load(Ordering::Acquire)
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
        let idx = self.header(2).fetch_add(1, Ordering::AcqRel) as usize;
        if idx >= self.capacity {
            return Err(Error::Other(crate::abi::FI_ENOSPC));
        }
        // SAFETY: the slot is inside the mapping (idx < capacity) and ours
        // alone: the fetch_add above handed it to no one else, and nobody
        // reads its bytes before its state says LIVE.
        unsafe {
            let slot = self.base.add(HEADER + idx * SLOT);
            core::ptr::write_unaligned(slot.add(4) as *mut u32, raw.len() as u32);
            core::ptr::copy_nonoverlapping(raw.as_ptr(), slot.add(8), raw.len());
        }
        self.state(idx).store(LIVE, Ordering::Release);
        self.header(3).fetch_add(1, Ordering::AcqRel);
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
        self.header(3).fetch_add(1, Ordering::AcqRel);
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
            let slot = self.base.add(HEADER + idx * SLOT);
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
    fn size(&self) -> Result<usize> {
        // SAFETY: all-zero is a valid stat; fstat fills it.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: self.0 is an open descriptor and st is writable.
        if unsafe { libc::fstat(self.0, &mut st) } != 0 {
            return Err(Error::Inval);
        }
        Ok(st.st_size as usize)
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
}
