//! A process's life page: one page of shared memory whose first word the
//! kernel itself marks when the process dies, so that a peer learns of
//! the death with a memory load instead of a system call (`crate::alive`
//! says how the word is used; this file is the unsafe part).
//!
//! # How the kernel marks it
//!
//! The page holds a process-shared robust `pthread_mutex_t` that one of
//! the process's threads locks and never unlocks. glibc puts every robust
//! mutex a thread holds on that thread's robust list, which it registers
//! with the kernel (`set_robust_list`); when the thread ends, by `SIGKILL`
//! too, the kernel walks the list and rewrites each held mutex's lock
//! word from the owner's thread id to `FUTEX_OWNER_DIED`. It does so
//! while tearing the thread down, before the process is reported exited
//! (`waitpid`, its pidfd) and before its descriptors are closed. In
//! glibc's `pthread_mutex_t` (every Linux target) that lock word is the
//! first `int`: [`LifePage::owner_word`] reads it.
//!
//! # Contract
//!
//! - **Only the owner can write the page.** It is sealed with
//!   `F_SEAL_FUTURE_WRITE` after the owner mapped it writable: peers can
//!   map it read-only and nothing else. This matters beyond the word: the
//!   mutex holds the links of the owner's robust list, which glibc and the
//!   kernel follow as pointers in the owner's process, so a peer able to
//!   write them could make the owner write anywhere.
//! - **The owner's page is never unmapped.** A held robust mutex must stay
//!   mapped for as long as its thread's robust list names it, which is the
//!   thread's whole life: [`LifePage::create`] leaks the mapping on
//!   purpose (one page per process, see `crate::alive`).
//! - **A peer's page is only read, word by word, atomically**, after
//!   checking that it is a memfd of exactly one page that cannot shrink
//!   and is closed to writers; its contents are a hint, never trusted for
//!   anything but the decision to look at the process's liveness the slow
//!   way.
//! - On targets other than glibc the mutex is not taken (its lock word
//!   may live elsewhere): the word reads 0, "no owner", and peers always
//!   take the slow way.

use super::{file_size, last_os, sealable_memfd, SEALS};
use oxifabric::abi::{FI_EINVAL, FI_ENOMEM};
use oxifabric::error::{Error, Result};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// The page's size.
pub const LIFE_LEN: usize = 4096;

/// One process's life page: its own (writable, leaked) or a peer's
/// (read-only).
pub struct LifePage {
    base: NonNull<u8>,
    fd: OwnedFd,
    /// Whether the mapping is ours to leak (the owner's page).
    own: bool,
}

// SAFETY: the mapping is process-wide memory; from a shared reference it
// is only read atomically (a peer's page) or handed to pthread calls that
// are themselves thread-safe (the owner's).
unsafe impl Send for LifePage {}
// SAFETY: as for Send.
unsafe impl Sync for LifePage {}

impl LifePage {
    /// Creates this process's page, its mutex held by the calling thread
    /// (glibc; see the module's notes), and leaks it: the page lives as
    /// long as the process.
    pub fn create() -> Result<&'static LifePage> {
        let fd = sealable_memfd(c"oxifabric-shm-life", LIFE_LEN)?;
        let base = map(fd.as_fd(), libc::PROT_READ | libc::PROT_WRITE)?;
        // Sealed after our own writable mapping: it stays writable, no
        // later one can be.
        let seals = SEALS | libc::F_SEAL_FUTURE_WRITE;
        // SAFETY: F_ADD_SEALS on our own sealable memfd.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            let e = last_os(FI_EINVAL);
            // SAFETY: the mapping just made, nothing locked in it yet.
            unsafe { libc::munmap(base.as_ptr().cast(), LIFE_LEN) };
            return Err(e);
        }
        let page: &'static LifePage = Box::leak(Box::new(LifePage {
            base,
            fd,
            own: true,
        }));
        page.hold();
        Ok(page)
    }

    /// Maps a peer's page read-only: refused (`Inval`) unless it is a
    /// memfd of exactly one page, sealed against shrinking and against
    /// new writable mappings.
    pub fn from_fd(fd: OwnedFd) -> Result<LifePage> {
        // SAFETY: F_GET_SEALS only reads the descriptor's seals; it fails
        // on anything that is not a sealable shmem file.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        let want = libc::F_SEAL_SHRINK | libc::F_SEAL_FUTURE_WRITE;
        if seals < 0 || seals & want != want {
            return Err(Error::Inval);
        }
        if file_size(fd.as_fd())? != LIFE_LEN {
            return Err(Error::Inval);
        }
        let base = map(fd.as_fd(), libc::PROT_READ)?;
        Ok(LifePage {
            base,
            fd,
            own: false,
        })
    }

    /// The descriptor, to hand to a peer.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The mutex's lock word: the owning thread's id while it lives,
    /// `FUTEX_OWNER_DIED` once it ended, 0 when nobody holds it.
    pub fn owner_word(&self) -> u32 {
        // SAFETY: the first word of a page-aligned mapping of LIFE_LEN
        // bytes that lives as long as &self; only ever read atomically
        // here (the kernel and the owner's glibc write it atomically).
        let w = unsafe { AtomicU32::from_ptr(self.base.as_ptr().cast::<u32>()) };
        w.load(Ordering::Acquire)
    }

    /// Takes the page's mutex over from a thread of ours that ended (its
    /// word then says `FUTEX_OWNER_DIED` and peers would take us for
    /// dead): the calling thread becomes its holder. True when it did.
    pub fn reclaim(&self) -> bool {
        if !self.own || !cfg!(target_env = "gnu") {
            return false;
        }
        let m = self.base.as_ptr().cast::<libc::pthread_mutex_t>();
        // SAFETY: our own page's mutex, initialised by `hold`, mapped for
        // the life of the process. trylock never blocks; on EOWNERDEAD the
        // calling thread holds it and marks it consistent; on EBUSY a live
        // thread (maybe this one) holds it and nothing changes.
        unsafe {
            match libc::pthread_mutex_trylock(m) {
                libc::EOWNERDEAD => {
                    libc::pthread_mutex_consistent(m);
                    true
                }
                0 => true,
                _ => false,
            }
        }
    }

    /// Initialises the page's process-shared robust mutex and locks it
    /// for good in the calling thread (glibc only).
    fn hold(&self) {
        if !cfg!(target_env = "gnu") {
            return;
        }
        let m = self.base.as_ptr().cast::<libc::pthread_mutex_t>();
        // SAFETY: `m` is the start of our own writable, page-aligned
        // mapping (larger than a pthread_mutex_t), never unmapped (see
        // the contract), and not yet seen by any peer; the attribute
        // object is local and destroyed after use.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = core::mem::zeroed();
            libc::pthread_mutexattr_init(&mut attr);
            libc::pthread_mutexattr_setpshared(&mut attr, libc::PTHREAD_PROCESS_SHARED);
            libc::pthread_mutexattr_setrobust(&mut attr, libc::PTHREAD_MUTEX_ROBUST);
            libc::pthread_mutex_init(m, &attr);
            libc::pthread_mutexattr_destroy(&mut attr);
            libc::pthread_mutex_lock(m);
        }
    }
}

impl Drop for LifePage {
    fn drop(&mut self) {
        if self.own {
            // Never reached (the owner's page is leaked), and never to be:
            // see the contract.
            return;
        }
        // SAFETY: a peer's read-only mapping made in `from_fd`, unmapped
        // once; no reference into it outlives &self.
        unsafe { libc::munmap(self.base.as_ptr().cast(), LIFE_LEN) };
    }
}

/// Maps the page shared with protection `prot`.
fn map(fd: BorrowedFd<'_>, prot: libc::c_int) -> Result<NonNull<u8>> {
    // SAFETY: maps LIFE_LEN bytes of a file of that size (checked or
    // made by the caller); the result is checked before use.
    let base = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            LIFE_LEN,
            prot,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(last_os(FI_ENOMEM));
    }
    NonNull::new(base.cast::<u8>()).ok_or(Error::NoMem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_maps_the_page_read_only_and_sees_the_owner() {
        let own = LifePage::create().unwrap();
        let peer = LifePage::from_fd(own.fd().try_clone_to_owned().unwrap()).unwrap();
        let w = peer.owner_word();
        if cfg!(target_env = "gnu") {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() } as u32;
            assert_eq!(w & 0x3fff_ffff, tid, "held by this thread");
        }
        // Nobody can map it writable any more, not even its owner.
        // SAFETY: an mmap that must fail; nothing is mapped on failure.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                LIFE_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                own.fd().as_raw_fd(),
                0,
            )
        };
        assert_eq!(p, libc::MAP_FAILED);
    }

    #[test]
    fn pages_of_the_wrong_shape_are_refused() {
        // A ring's region: writable by peers, so no life page.
        let r = super::super::Region::create(LIFE_LEN).unwrap();
        assert!(LifePage::from_fd(r.fd().try_clone_to_owned().unwrap()).is_err());
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        assert!(LifePage::from_fd(file.into()).is_err());
    }
}
