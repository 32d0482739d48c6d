//! The hook through which completion queues, counters and event queues
//! drive their providers' progress (manual progress, blocking waits).

use std::os::fd::RawFd;
use std::sync::{Mutex, Weak};

/// Something that moves data when asked: an endpoint or a domain.
pub trait Progress: Send + Sync {
    /// Does whatever I/O is ready, without blocking.
    fn progress(&self);
    /// A descriptor that is readable when [`Progress::progress`] has work
    /// (an epoll set of the provider's sockets), if there is one.
    fn wait_fd(&self) -> Option<RawFd>;
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
