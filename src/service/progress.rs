//! The hook through which completion queues, counters and event queues
//! drive their providers' progress (manual progress, blocking waits).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Something that moves data when asked: an endpoint or a domain.
pub trait Progress: Send + Sync {
    /// Does whatever I/O is ready, without blocking.
    fn progress(&self);
    /// A descriptor that is readable when [`Progress::progress`] has work
    /// (an epoll set of the provider's sockets), if there is one.
    fn wait_fd(&self) -> Option<RawFd>;
    /// Whether the application drove this source itself a moment ago: the
    /// auto-progress thread then leaves it alone.
    fn app_polling(&self) -> bool {
        false
    }
    /// Whether the source holds work (coalesced sends) that only a
    /// progress call writes: the thread then looks again within about a
    /// millisecond instead of its usual slices.
    fn flush_pending(&self) -> bool {
        false
    }
    /// Progress run by the auto-progress thread; false when skipped.
    fn progress_background(&self) -> bool {
        self.progress();
        true
    }
}

/// The progress sources bound to a queue or counter.
#[derive(Default)]
pub struct Sources {
    list: Mutex<Vec<Weak<dyn Progress>>>,
}

impl Sources {
    /// Adds a source; dropped ones are forgotten lazily.
    pub fn add(&self, s: Weak<dyn Progress>) {
        let mut l = self.list.lock().unwrap_or_else(|p| p.into_inner());
        l.retain(|w| w.strong_count() > 0);
        if !l.iter().any(|w| w.ptr_eq(&s)) {
            l.push(s);
        }
    }

    /// Removes a source (when its endpoint is closed).
    pub fn remove(&self, s: &Weak<dyn Progress>) {
        let mut l = self.list.lock().unwrap_or_else(|p| p.into_inner());
        l.retain(|w| !w.ptr_eq(s) && w.strong_count() > 0);
    }

    /// Runs every live source's progress once.
    pub fn progress(&self) {
        // Clone the (few) handles out so that progress runs without our lock.
        let mut buf: [Option<std::sync::Arc<dyn Progress>>; 8] = Default::default();
        let n = {
            let l = self.list.lock().unwrap_or_else(|p| p.into_inner());
            if l.len() > buf.len() {
                let all: Vec<_> = l.iter().filter_map(Weak::upgrade).collect();
                drop(l);
                for s in all {
                    s.progress();
                }
                return;
            }
            let mut n = 0;
            for w in l.iter() {
                if let Some(s) = w.upgrade() {
                    buf[n] = Some(s);
                    n += 1;
                }
            }
            n
        };
        for s in buf.iter().take(n).flatten() {
            s.progress();
        }
    }

    /// The wait descriptors of every live source.
    pub fn wait_fds(&self) -> Vec<RawFd> {
        let l = self.list.lock().unwrap_or_else(|p| p.into_inner());
        l.iter()
            .filter_map(Weak::upgrade)
            .filter_map(|s| s.wait_fd())
            .collect()
    }
}

/// The auto-progress thread of a domain (`FI_PROGRESS_AUTO`): it waits for
/// activity on every registered source and drives it, so transfers complete
/// while the application computes. It starts with the first source and
/// stops when the domain drops it.
pub struct AutoProgress {
    shared: Arc<AutoShared>,
    name: &'static str,
    started: AtomicBool,
}

#[derive(Default)]
struct AutoShared {
    sources: Mutex<Vec<Weak<dyn Progress>>>,
    stop: AtomicBool,
}

impl AutoProgress {
    /// A thread named `name`, not started yet.
    pub fn new(name: &'static str) -> AutoProgress {
        AutoProgress {
            shared: Arc::default(),
            name,
            started: AtomicBool::new(false),
        }
    }

    /// Adds a source (an enabled endpoint) and starts the thread with the
    /// first one.
    pub fn register(&self, s: Weak<dyn Progress>) {
        {
            let mut l = self
                .shared
                .sources
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            l.retain(|w| w.strong_count() > 0);
            l.push(s);
        }
        if !self.started.swap(true, Ordering::AcqRel) {
            let shared = self.shared.clone();
            let _ = std::thread::Builder::new()
                .name(self.name.into())
                .spawn(move || shared.run());
        }
    }
}

impl Drop for AutoProgress {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
    }
}

impl AutoShared {
    fn snapshot(&self) -> Vec<Arc<dyn Progress>> {
        let l = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        l.iter().filter_map(Weak::upgrade).collect()
    }

    fn run(&self) {
        while !self.stop.load(Ordering::Acquire) {
            let srcs = self.snapshot();
            if srcs.is_empty() {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            // Held sends shorten every wait to about a millisecond.
            let pending = srcs.iter().any(|s| s.flush_pending());
            let (slice, wait) = if pending {
                (Duration::from_millis(1), Duration::from_millis(1))
            } else {
                (Duration::from_millis(10), Duration::from_millis(50))
            };
            if srcs.iter().all(|s| s.app_polling()) {
                // The application drives everything itself: do not even
                // wake on its traffic (each wake-up takes a core it is
                // spinning on).
                std::thread::sleep(slice);
                continue;
            }
            let fds: Vec<_> = srcs.iter().filter_map(|s| s.wait_fd()).collect();
            crate::service::signal::poll_readable(&fds, Some(Instant::now() + wait));
            let mut worked = false;
            for s in &srcs {
                worked |= s.progress_background();
            }
            drop(srcs);
            if !worked {
                // The application is polling: look again shortly instead
                // of spinning on descriptors it is about to drain.
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}
