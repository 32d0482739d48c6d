//! The Linux calls the registration cache's memory monitor makes:
//! `userfaultfd(2)` and its ioctls, an eventfd to stop the monitor thread,
//! `poll(2)`. Besides `ibv.rs` this is the crate's only unsafe code.
//!
//! # Contract
//!
//! - A [`Uffd`] asks for `UFFD_FEATURE_EVENT_UNMAP | EVENT_REMOVE |
//!   EVENT_REMAP`: the kernel then reports `munmap`, `mremap` and
//!   `madvise(MADV_DONTNEED/REMOVE)` (what `free` does to large blocks and
//!   trimmed heaps) of any range registered with it.
//! - **Those events are synchronous.** The thread that unmaps sleeps until
//!   the event has been *read* from the descriptor. So a process that
//!   registers ranges must have a thread reading the descriptor at all
//!   times (the monitor, `mr_cache.rs`), and that thread must never unmap,
//!   free or otherwise touch registered memory itself, nor wait for a lock
//!   that a thread which may unmap holds: it would wait for itself.
//! - **Registration is in MISSING mode** (the only mode that works on
//!   every anonymous mapping), so a fault on a page of a registered range
//!   that is not present (after `MADV_DONTNEED`, say) would sleep until
//!   someone resolves it. The monitor never resolves faults: on a REMOVE
//!   event it unregisters the removed range at once (which wakes anyone
//!   waiting there, their fault then handled as usual), and a
//!   `PAGEFAULT` message, should one come, is answered the same way. A
//!   range is registered only after `ibv_reg_mr` has made its pages
//!   present (and pinned them), so faults do not happen in normal use.
//! - Where the kernel allows it the descriptor is opened with
//!   `UFFD_USER_MODE_ONLY`, so that faults taken inside the kernel (by
//!   `ibv_reg_mr`'s page pinning or a `read(2)` into the buffer) are never
//!   held for the monitor; that is also what unprivileged processes may
//!   open when `vm.unprivileged_userfaultfd` is 0.
//! - Closing the descriptor drops every registration made with it and
//!   wakes every thread waiting on it.
//!
//! Nothing here dereferences memory: the calls take addresses as numbers,
//! and the kernel checks them.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

// linux/userfaultfd.h (stable ABI).
const UFFD_API: u64 = 0xaa;
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
const UFFD_FEATURE_EVENT_REMAP: u64 = 1 << 2;
const UFFD_FEATURE_EVENT_REMOVE: u64 = 1 << 3;
const UFFD_FEATURE_EVENT_UNMAP: u64 = 1 << 6;
const UFFDIO_REGISTER_MODE_MISSING: u64 = 1;
/// `_IOWR(0xAA, 0x3F, struct uffdio_api)`.
const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;
/// `_IOWR(0xAA, 0x00, struct uffdio_register)`.
const UFFDIO_REGISTER: libc::c_ulong = 0xc020_aa00;
/// `_IOR(0xAA, 0x01, struct uffdio_range)`.
const UFFDIO_UNREGISTER: libc::c_ulong = 0x8010_aa01;
const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
const UFFD_EVENT_REMAP: u8 = 0x14;
const UFFD_EVENT_REMOVE: u8 = 0x15;
const UFFD_EVENT_UNMAP: u8 = 0x16;

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioRange {
    start: u64,
    len: u64,
}

#[repr(C)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

/// `struct uffd_msg`: an event byte, padding, then a 24-byte union.
#[repr(C)]
#[derive(Default)]
struct UffdMsg {
    event: u8,
    _reserved: [u8; 7],
    arg: [u64; 3],
}

const _: () = assert!(std::mem::size_of::<UffdMsg>() == 32);
const _: () = assert!(std::mem::size_of::<UffdioApi>() == 24);
const _: () = assert!(std::mem::size_of::<UffdioRegister>() == 32);

/// What the kernel reported about registered memory: the range `[start,
/// end)` no longer maps what it mapped when it was registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `munmap` (or `mmap(MAP_FIXED)` over it, or `brk` shrinking).
    Unmap { start: usize, end: usize },
    /// `madvise(MADV_DONTNEED/MADV_REMOVE)`: the pages are gone, the
    /// mapping (and its registration) stays.
    Remove { start: usize, end: usize },
    /// `mremap`: the pages moved away from `[start, end)`.
    Remap { start: usize, end: usize },
    /// A fault on a missing page at `addr` (not expected: see the
    /// contract).
    PageFault { addr: usize },
    /// An event this monitor did not ask for.
    Other(u8),
}

/// The system's page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf reads a constant.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|n| *n > 0).unwrap_or(4096)
}

/// A userfaultfd with the unmap/remove/remap events enabled.
pub struct Uffd(OwnedFd);

impl Uffd {
    /// Opens one (non-blocking, close-on-exec), user-mode faults only
    /// where the kernel knows that flag. `EPERM` when the process may not
    /// (`vm.unprivileged_userfaultfd=0` on a kernel without
    /// `UFFD_USER_MODE_ONLY`, and no `CAP_SYS_PTRACE`), `ENOSYS` without
    /// the syscall.
    pub fn open() -> io::Result<Uffd> {
        let flags = libc::O_CLOEXEC | libc::O_NONBLOCK;
        // SAFETY: the syscall takes flags and returns a new descriptor.
        let mut fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY) };
        if fd < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
            // Kernels before 5.11 do not know UFFD_USER_MODE_ONLY.
            // SAFETY: as above.
            fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
        }
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned to us and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let mut api = UffdioApi {
            api: UFFD_API,
            features: UFFD_FEATURE_EVENT_UNMAP
                | UFFD_FEATURE_EVENT_REMOVE
                | UFFD_FEATURE_EVENT_REMAP,
            ioctls: 0,
        };
        // SAFETY: fd is a userfaultfd; api is a live uffdio_api the kernel
        // reads and writes during the call.
        if unsafe { libc::ioctl(fd.as_raw_fd(), UFFDIO_API, &mut api) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Uffd(fd))
    }

    /// The descriptor (readable when an event waits).
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Registers `[start, start + len)` (page-aligned) in MISSING mode:
    /// from now on its unmapping waits for the monitor (contract above).
    /// `EINVAL`/`EPERM`/`EBUSY` where the kernel refuses the range (a file
    /// mapping, a range registered with another userfaultfd, a hole).
    pub fn register(&self, start: usize, len: usize) -> io::Result<()> {
        let mut reg = UffdioRegister {
            range: UffdioRange {
                start: start as u64,
                len: len as u64,
            },
            mode: UFFDIO_REGISTER_MODE_MISSING,
            ioctls: 0,
        };
        // SAFETY: fd is a userfaultfd; reg is live during the call; the
        // range is a number the kernel checks against the process's maps.
        if unsafe { libc::ioctl(self.fd(), UFFDIO_REGISTER, &mut reg) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Unregisters `[start, start + len)` (page-aligned), waking anyone
    /// whose fault there waits. Errors (the range is gone already) are
    /// the kernel's way of saying there is nothing left to undo.
    pub fn unregister(&self, start: usize, len: usize) -> io::Result<()> {
        let mut range = UffdioRange {
            start: start as u64,
            len: len as u64,
        };
        // SAFETY: as for register.
        if unsafe { libc::ioctl(self.fd(), UFFDIO_UNREGISTER, &mut range) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The next event, or None when none waits. Reading is what lets an
    /// unmapping thread go on.
    pub fn read(&self) -> io::Result<Option<Event>> {
        let mut m = UffdMsg::default();
        let sz = std::mem::size_of::<UffdMsg>();
        // SAFETY: m is a live, writable buffer of sz bytes.
        let n = unsafe { libc::read(self.fd(), (&mut m as *mut UffdMsg).cast(), sz) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) => Ok(None),
                _ => Err(e),
            };
        }
        if n as usize != sz {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        let [a, b, c] = m.arg.map(|v| v as usize);
        Ok(Some(match m.event {
            // pagefault: flags, address, thread id.
            UFFD_EVENT_PAGEFAULT => Event::PageFault { addr: b },
            // remap: from, to, len.
            UFFD_EVENT_REMAP => Event::Remap {
                start: a,
                end: a.saturating_add(c),
            },
            // remove and unmap: start, end.
            UFFD_EVENT_REMOVE => Event::Remove { start: a, end: b },
            UFFD_EVENT_UNMAP => Event::Unmap { start: a, end: b },
            e => Event::Other(e),
        }))
    }
}

/// An eventfd that stops the monitor thread.
pub struct Stop(OwnedFd);

impl Stop {
    /// A new one, not yet signalled.
    pub fn new() -> io::Result<Stop> {
        // SAFETY: eventfd takes an initial value and flags.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned to us.
        Ok(Stop(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Signals it (the monitor's next poll returns).
    pub fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

/// Sleeps until the userfaultfd has an event (true) or `stop` is
/// signalled (false). Nothing else ends the wait: while ranges are
/// registered a monitor that stopped reading would leave every `munmap`
/// of them asleep, so a failing `poll` is retried after a short pause.
pub fn wait(uffd: &Uffd, stop: &Stop) -> bool {
    loop {
        let mut fds = [
            libc::pollfd {
                fd: uffd.fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.0.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: fds is a live array of two pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n > 0 && fds[1].revents != 0 {
            return false;
        }
        if n > 0 && fds[0].revents & libc::POLLIN != 0 {
            return true;
        }
        if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Physical memory in bytes, divided by the online processors: what
/// upstream's cache allows by default is half of that.
pub fn mem_per_cpu() -> usize {
    // SAFETY: sysconf reads constants.
    let (pages, cpus) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_NPROCESSORS_ONLN),
        )
    };
    match (usize::try_from(pages), usize::try_from(cpus)) {
        (Ok(p), Ok(c)) if c > 0 => p.saturating_mul(page_size()) / c,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's side of the contract, where this host lets us open a
    /// userfaultfd: a registered range's munmap (from another thread)
    /// waits for the read, which reports the range.
    #[test]
    fn a_registered_range_reports_its_unmapping() {
        let Ok(u) = Uffd::open() else {
            eprintln!("no userfaultfd here; skipped");
            return;
        };
        let len = 4 * page_size();
        // SAFETY: a fresh anonymous mapping, touched and unmapped only here.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        // SAFETY: p is len writable bytes.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 1, len) };
        let a = p as usize;
        u.register(a, len).unwrap();
        // SAFETY: unmaps the mapping made above (no references into it).
        let t = std::thread::spawn(move || unsafe { libc::munmap(a as *mut libc::c_void, len) });
        let stop = Stop::new().unwrap();
        assert!(wait(&u, &stop));
        assert_eq!(
            u.read().unwrap(),
            Some(Event::Unmap {
                start: a,
                end: a + len
            })
        );
        assert_eq!(t.join().unwrap(), 0);
    }
}
