//! A wake-up primitive that both threads and file-descriptor pollers can
//! wait on: a condition variable for `fi_cq_sread`-style blocking, plus an
//! eventfd that becomes readable when signalled (for `FI_WAIT_FD`, epoll,
//! `fi_trywait`).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A level-triggered signal: `set` wakes waiters and makes the fd readable
/// until `clear`.
#[derive(Debug)]
pub struct Signal {
    state: Mutex<bool>,
    cond: Condvar,
    fd: OwnedFd,
}

impl Signal {
    /// Creates an unset signal. Fails only when the process is out of fds.
    pub fn new() -> std::io::Result<Signal> {
        // SAFETY: eventfd has no pointer arguments; the fd is owned below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Signal {
            state: Mutex::new(false),
            cond: Condvar::new(),
            // SAFETY: fd is a fresh descriptor nobody else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Sets the signal and wakes every waiter.
    pub fn set(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if !*s {
            *s = true;
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64.
            unsafe {
                libc::write(
                    self.fd.as_raw_fd(),
                    &one as *const u64 as *const libc::c_void,
                    8,
                )
            };
        }
        self.cond.notify_all();
    }

    /// Clears the signal (the fd stops being readable).
    pub fn clear(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if *s {
            *s = false;
            let mut v: u64 = 0;
            // SAFETY: reads 8 bytes into a live u64; EAGAIN is fine.
            unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    &mut v as *mut u64 as *mut libc::c_void,
                    8,
                )
            };
        }
    }

    /// Whether the signal is set.
    pub fn is_set(&self) -> bool {
        *self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until set or until `deadline` (None: forever). True if set.
    pub fn wait_until(&self, deadline: Option<Instant>) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while !*s {
            match deadline {
                None => s = self.cond.wait(s).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    s = self
                        .cond
                        .wait_timeout(s, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        }
        true
    }

    /// The eventfd, readable while the signal is set.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A deadline from a libfabric timeout in milliseconds (negative: none).
pub fn deadline(timeout_ms: i32) -> Option<Instant> {
    (timeout_ms >= 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64))
}

/// Polls `fds` for readability until `deadline`; true if any is readable.
pub fn poll_readable(fds: &[RawFd], deadline: Option<Instant>) -> bool {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = match deadline {
        None => -1,
        Some(d) => d
            .saturating_duration_since(Instant::now())
            .as_millis()
            .min(i32::MAX as u128) as i32,
    };
    // SAFETY: pfds is a live array of pfds.len() pollfd structs.
    let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
    n > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn set_wakes_waiter_and_fd() {
        let s = Arc::new(Signal::new().unwrap());
        assert!(!poll_readable(&[s.fd()], deadline(0)));
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.wait_until(deadline(10_000)));
        s.set();
        assert!(t.join().unwrap());
        assert!(poll_readable(&[s.fd()], deadline(0)));
        s.clear();
        assert!(!poll_readable(&[s.fd()], deadline(0)));
        assert!(!s.wait_until(deadline(1)));
    }
}
