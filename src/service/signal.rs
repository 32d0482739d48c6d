//! A wake-up primitive that both threads and file-descriptor pollers can
//! wait on: a condition variable for `fi_cq_sread`-style blocking, plus an
//! eventfd that becomes readable when signalled (for `FI_WAIT_FD`, epoll,
//! `fi_trywait`).

use std::ops::ControlFlow;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{
    AtomicBool, AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest a blocked [`Signal::wait_for`] sleeps before it looks again.
const WAKE_SLICE: Duration = Duration::from_millis(100);

/// A level-triggered signal: `set` wakes waiters and makes the fd readable
/// until `clear`.
///
/// A lazy signal ([`Signal::lazy`], a completion queue's) records nothing
/// until its descriptor is first asked for: before that nobody can be
/// waiting on it (its owner's blocking waits go through the descriptor),
/// so `set` and `clear` are two plain loads instead of a locked exchange
/// each, which a busy-polling reader would pay twice per completion. Its
/// owner makes it exact with [`Signal::go_live`], saying under its own
/// lock whether something is pending.
///
/// Setting and clearing are on every completion's path, so they cost an
/// atomic store and nothing else while nobody can be waiting: the
/// condition variable is notified only when a thread sleeps on it, and the
/// eventfd is written only once its descriptor was handed out (`fd`).
/// The flag is stored before the waiter count or the fd's liveness is
/// read, and the waiters and `fd` do the opposite (all sequentially
/// consistent), so either side sees the other and no wake-up is lost.
#[derive(Debug)]
pub struct Signal {
    /// See [`Signal::lazy`].
    lazy: bool,
    flag: AtomicBool,
    waiters: AtomicUsize,
    fd_live: AtomicBool,
    /// Whether the eventfd is readable now; reconciled with `flag` under
    /// the lock, which the condition variable uses too.
    fd_set: Mutex<bool>,
    cond: Condvar,
    fd: OwnedFd,
}

impl Signal {
    /// Creates an unset signal. Fails only when the process is out of fds.
    pub fn new() -> std::io::Result<Signal> {
        Self::make(false)
    }

    /// Creates an unset lazy signal (see the type's documentation).
    pub fn lazy() -> std::io::Result<Signal> {
        Self::make(true)
    }

    fn make(lazy: bool) -> std::io::Result<Signal> {
        // SAFETY: eventfd has no pointer arguments; the fd is owned below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Signal {
            lazy,
            flag: AtomicBool::new(false),
            waiters: AtomicUsize::new(0),
            fd_live: AtomicBool::new(false),
            fd_set: Mutex::new(false),
            cond: Condvar::new(),
            // SAFETY: fd is a fresh descriptor nobody else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Makes the eventfd's readability match the flag.
    fn reconcile(&self, fd_set: &mut bool) {
        let want = self.flag.load(SeqCst);
        if want == *fd_set {
            return;
        }
        let mut v: u64 = 1;
        // SAFETY: reads or writes 8 bytes of a live u64; a failed read
        // (EAGAIN) leaves nothing to clear.
        unsafe {
            let p = &mut v as *mut u64 as *mut libc::c_void;
            if want {
                libc::write(self.fd.as_raw_fd(), p, 8);
            } else {
                libc::read(self.fd.as_raw_fd(), p, 8);
            }
        }
        *fd_set = want;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, bool> {
        self.fd_set.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the signal and wakes every waiter.
    pub fn set(&self) {
        if self.asleep() {
            return;
        }
        let was_set = self.flag.swap(true, SeqCst);
        let live = self.fd_live.load(SeqCst);
        if was_set && !live {
            // Already set: waiters were woken by whoever set it.
            return;
        }
        if live || self.waiters.load(SeqCst) > 0 {
            let mut g = self.lock();
            if live {
                self.reconcile(&mut g);
            }
            self.cond.notify_all();
        }
    }

    /// Clears the signal (the fd stops being readable).
    #[inline]
    pub fn clear(&self) {
        // A busy-polling reader clears an already clear signal on every
        // empty read: a load costs less than the swap's locked exchange,
        // and, inlined, less than a call.
        if !self.asleep() && self.flag.load(SeqCst) {
            self.clear_set();
        }
    }

    /// [`Signal::clear`] of a signal that was set.
    fn clear_set(&self) {
        if self.flag.swap(false, SeqCst) && self.fd_live.load(SeqCst) {
            let mut g = self.lock();
            self.reconcile(&mut g);
        }
    }

    /// A lazy signal whose descriptor nobody asked for yet: nothing to
    /// record. Relaxed: the owner's lock orders a set that reads `false`
    /// here before [`Signal::go_live`]'s look at what is pending (see
    /// there).
    #[inline]
    fn asleep(&self) -> bool {
        self.lazy && !self.fd_live.load(Relaxed)
    }

    /// Makes a lazy signal exact from now on, set if `pending` says so.
    /// The owner answers `pending` under the lock it queues under before
    /// it sets the signal. A set that still found the signal asleep took
    /// that lock before `pending` did (had it come after, it would have
    /// seen `fd_live`, stored before `pending` runs), so `pending` sees
    /// its item; a set that found it awake is exact. The flag is only
    /// raised here, never lowered, so a set between `pending`'s look and
    /// the raise is kept too.
    pub fn go_live(&self, pending: impl FnOnce() -> bool) {
        // The first caller marks it live, then looks (without our lock:
        // the owner's read path clears us while it holds its own lock, so
        // `pending` must not run under ours). A second caller may return
        // before the first has raised the flag: the raise reconciles the
        // descriptor, which wakes whoever polls it by then.
        if self.fd_live.load(SeqCst) || self.fd_live.swap(true, SeqCst) {
            return;
        }
        if pending() {
            self.flag.store(true, SeqCst);
        }
        let mut g = self.lock();
        self.reconcile(&mut g);
    }

    /// Whether the signal is set.
    pub fn is_set(&self) -> bool {
        self.flag.load(SeqCst)
    }

    /// Waits until set or until `deadline` (None: forever). True if set.
    /// Not for lazy signals, which record nothing for it (their owners
    /// wait through the descriptor, [`Signal::wait_for`]).
    pub fn wait_until(&self, deadline: Option<Instant>) -> bool {
        debug_assert!(!self.lazy, "wait_until on a lazy signal");
        let mut g = self.lock();
        self.waiters.fetch_add(1, SeqCst);
        let set = loop {
            if self.flag.load(SeqCst) {
                break true;
            }
            match deadline {
                None => g = self.cond.wait(g).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break false;
                    }
                    g = self
                        .cond
                        .wait_timeout(g, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        };
        self.waiters.fetch_sub(1, SeqCst);
        drop(g);
        set
    }

    /// The blocking wait that `fi_cq_sread`, `fi_eq_sread`, `fi_cntr_wait`
    /// and `fi_wait` share. `step` drives progress and either ends the wait
    /// (`Break` with the answer) or names the descriptors of the sources
    /// that can bring news (`Continue`). Between steps the thread sleeps
    /// until one of those or this signal's own fd is readable, waking at
    /// least every 100 ms so that a source added meanwhile or a missed edge
    /// cannot block it for long. `None` once `deadline` (None: never) has
    /// passed without an answer; the caller turns that into its call's
    /// timeout code.
    pub fn wait_for<T>(
        &self,
        deadline: Option<Instant>,
        mut step: impl FnMut() -> ControlFlow<T, Vec<RawFd>>,
    ) -> Option<T> {
        loop {
            let mut fds = match step() {
                ControlFlow::Break(answer) => return Some(answer),
                ControlFlow::Continue(fds) => fds,
            };
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return None;
            }
            fds.push(self.fd());
            let slice = Instant::now() + WAKE_SLICE;
            poll_readable(&fds, Some(deadline.map_or(slice, |d| d.min(slice))));
        }
    }

    /// The eventfd, readable while the signal is set. From the first call
    /// on, every set and clear keeps it up to date.
    /// A lazy signal not yet live goes live set: the caller did not say
    /// what is pending, and a spurious wake-up costs a look, a lost one a
    /// hang ([`Signal::go_live`] is the exact way).
    pub fn fd(&self) -> RawFd {
        if !self.fd_live.load(SeqCst) {
            if self.lazy {
                self.go_live(|| true);
                return self.fd.as_raw_fd();
            }
            let mut g = self.lock();
            self.fd_live.store(true, SeqCst);
            self.reconcile(&mut g);
        }
        self.fd.as_raw_fd()
    }
}

/// A deadline from a libfabric timeout in milliseconds (negative: none).
pub fn deadline(timeout_ms: i32) -> Option<Instant> {
    (timeout_ms >= 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64))
}

/// Polls `fds` for readability until `deadline`; true if any is readable.
pub fn poll_readable(fds: &[RawFd], deadline: Option<Instant>) -> bool {
    poll_for(fds, libc::POLLIN, deadline)
}

/// Polls `fds` for `events` (`POLLIN`, `POLLOUT`) until `deadline`; true
/// if any is ready (or failed).
pub fn poll_for(fds: &[RawFd], events: libc::c_short, deadline: Option<Instant>) -> bool {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events,
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

    #[test]
    fn fd_handed_out_late_reflects_the_state() {
        let s = Signal::new().unwrap();
        s.set();
        s.clear();
        s.set();
        // Nobody held the fd while it changed; it must still say "set".
        assert!(poll_readable(&[s.fd()], deadline(0)));
        s.clear();
        assert!(!poll_readable(&[s.fd()], deadline(0)));
        s.set();
        s.set();
        assert!(poll_readable(&[s.fd()], deadline(0)));
        s.clear();
        assert!(!poll_readable(&[s.fd()], deadline(0)));
    }

    #[test]
    fn wait_for_answers_times_out_and_wakes_on_set() {
        let s = Arc::new(Signal::new().unwrap());
        let mut steps = 0;
        let r = s.wait_for(None, || {
            steps += 1;
            if steps == 3 {
                ControlFlow::Break(steps)
            } else {
                ControlFlow::Continue(Vec::new())
            }
        });
        assert_eq!(r, Some(3));
        let r: Option<()> = s.wait_for(deadline(20), || ControlFlow::Continue(Vec::new()));
        assert_eq!(r, None, "a wait with nothing to report must time out");
        // A set from another thread ends the sleep; the step sees the flag.
        let s2 = s.clone();
        let t = std::thread::spawn(move || {
            s2.wait_for(deadline(10_000), || {
                if s2.is_set() {
                    ControlFlow::Break(true)
                } else {
                    ControlFlow::Continue(Vec::new())
                }
            })
        });
        s.set();
        assert_eq!(t.join().unwrap(), Some(true), "the set was missed");
    }

    #[test]
    fn lazy_signal_records_nothing_until_live_then_is_exact() {
        let s = Signal::lazy().unwrap();
        s.set();
        assert!(!s.is_set(), "asleep: a set records nothing");
        s.go_live(|| false);
        assert!(!poll_readable(&[s.fd()], deadline(0)), "nothing pending");
        s.set();
        assert!(poll_readable(&[s.fd()], deadline(0)));
        s.clear();
        assert!(!poll_readable(&[s.fd()], deadline(0)));
        let s = Signal::lazy().unwrap();
        s.go_live(|| true);
        assert!(poll_readable(&[s.fd()], deadline(0)), "pending at go_live");
        let s = Signal::lazy().unwrap();
        assert!(
            poll_readable(&[s.fd()], deadline(0)),
            "a descriptor asked for without go_live starts readable"
        );
    }

    #[test]
    fn no_lost_wakeup_under_races() {
        let s = Arc::new(Signal::new().unwrap());
        for _ in 0..2000 {
            s.clear();
            let s2 = s.clone();
            let t = std::thread::spawn(move || s2.wait_until(deadline(10_000)));
            s.set();
            assert!(t.join().unwrap(), "a waiter missed a set");
        }
    }
}
