//! Domains: the unit that owns the auto-progress thread.

use crate::ep::SockEp;
use oxifabric::abi::*;
use oxifabric::error::Result;
use oxifabric::info::Info;
use oxifabric::ops::{DomainOps, EndpointOps};
use oxifabric::service::progress::Progress;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// A sockets domain.
pub struct SockDomain {
    me: Weak<SockDomain>,
    eps: Mutex<Vec<Weak<SockEp>>>,
    auto: bool,
    started: AtomicBool,
    stop: Arc<AtomicBool>,
}

impl SockDomain {
    pub fn new(info: &Info) -> Arc<SockDomain> {
        let auto = info.domain.data_progress != FI_PROGRESS_MANUAL;
        Arc::new_cyclic(|me| SockDomain {
            me: me.clone(),
            eps: Mutex::new(Vec::new()),
            auto,
            started: AtomicBool::new(false),
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Adds an enabled endpoint to the set the progress thread drives, and
    /// starts the thread with the first one (auto progress only).
    pub fn register(&self, ep: Weak<SockEp>) {
        {
            let mut l = self.eps.lock().unwrap_or_else(|p| p.into_inner());
            l.retain(|w| w.strong_count() > 0);
            l.push(ep);
        }
        if self.auto && !self.started.swap(true, Ordering::AcqRel) {
            let me = self.me.clone();
            let stop = self.stop.clone();
            let _ = std::thread::Builder::new()
                .name("oxifabric-sockets-progress".into())
                .spawn(move || progress_thread(me, stop));
        }
    }

    fn snapshot(&self) -> Vec<Arc<SockEp>> {
        let l = self.eps.lock().unwrap_or_else(|p| p.into_inner());
        l.iter().filter_map(Weak::upgrade).collect()
    }
}

/// Waits for socket activity on every endpoint and drives it, so that
/// transfers complete even while the application computes.
fn progress_thread(domain: Weak<SockDomain>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Acquire) {
        let Some(d) = domain.upgrade() else { return };
        let eps = d.snapshot();
        drop(d);
        if eps.is_empty() {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        if eps.iter().all(|e| e.app_polling()) {
            // The application drives everything itself: do not even wake
            // on its traffic (each wake-up takes a core it is spinning on).
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        let fds: Vec<_> = eps.iter().filter_map(|e| e.wait_fd()).collect();
        oxifabric::service::signal::poll_readable(
            &fds,
            Some(std::time::Instant::now() + Duration::from_millis(50)),
        );
        let mut worked = false;
        for e in &eps {
            worked |= e.progress_background();
        }
        if !worked {
            // The application is polling: look again shortly instead of
            // spinning on descriptors it is about to drain.
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for SockDomain {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

impl DomainOps for SockDomain {
    fn endpoint(&self, info: &Info) -> Result<Arc<dyn EndpointOps>> {
        let me = self.me.upgrade().ok_or(oxifabric::error::Error::Inval)?;
        let ep: Arc<dyn EndpointOps> = SockEp::new(me, info)?;
        Ok(ep)
    }
}
