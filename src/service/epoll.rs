//! An epoll set: the readiness source of socket providers, and of
//! progress over many endpoints (`progress::Sources` nests their sets in
//! one, so a queue bound to hundreds of endpoints asks the kernel once).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// An epoll set, level-triggered.
pub struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: no pointers; the fd is owned right away.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll {
            // SAFETY: fresh descriptor.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    fn ctl(&self, op: i32, fd: RawFd, token: u64, input: bool, out: bool) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: if input {
                (libc::EPOLLIN | libc::EPOLLRDHUP) as u32
            } else {
                0
            } | if out { libc::EPOLLOUT as u32 } else { 0 },
            u64: token,
        };
        // SAFETY: ev is a live epoll_event.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Watches `fd` for input (and output when `out`).
    pub fn add(&self, fd: RawFd, token: u64, out: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, true, out)
    }

    /// Changes whether input and output readiness are watched (errors and
    /// hang-ups are always reported).
    pub fn set(&self, fd: RawFd, token: u64, input: bool, out: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, input, out)
    }

    /// Stops watching `fd`.
    pub fn remove(&self, fd: RawFd) {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: ev is live; errors (already closed) do not matter.
        unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
    }

    /// Ready tokens with their event bits, waiting up to `timeout_ms`.
    pub fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> usize {
        let n = if timeout_ms == 0 {
            // A poll that cannot block is no cancellation point: the raw
            // system call skips libc's cancellation bookkeeping around it
            // (two calls that cost about 7% of a busy-polling loop).
            // SAFETY: events is a live array of events.len() entries; a
            // null signal mask means "unchanged" (plain epoll_wait).
            unsafe {
                libc::syscall(
                    libc::SYS_epoll_pwait,
                    self.fd.as_raw_fd(),
                    events.as_mut_ptr(),
                    events.len() as libc::c_int,
                    0 as libc::c_int,
                    std::ptr::null::<libc::sigset_t>(),
                    8 as libc::size_t,
                ) as i32
            }
        } else {
            // SAFETY: events is a live array.
            unsafe {
                libc::epoll_wait(
                    self.fd.as_raw_fd(),
                    events.as_mut_ptr(),
                    events.len() as i32,
                    timeout_ms,
                )
            }
        };
        n.max(0) as usize
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
