//! Completion counters, shared by every provider.

use super::progress::{Progress, Sources};
use super::signal::{deadline, Signal};
use super::trigger::TriggerList;
use crate::abi::*;
use crate::error::{Error, Result};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Weak;

/// A counter of successful and failed operations.
pub struct Counter {
    pub events: fi_cntr_events,
    pub wait_obj: fi_wait_obj,
    value: AtomicU64,
    errs: AtomicU64,
    /// Value plus errors when a wait set last looked.
    last_seen: AtomicU64,
    signal: Signal,
    sources: Sources,
    /// Triggered operations and deferred work waiting on this counter.
    triggers: TriggerList,
}

impl Counter {
    /// Opens a counter. Only `FI_CNTR_EVENTS_COMP` exists in this API.
    pub fn new(events: fi_cntr_events, wait_obj: fi_wait_obj) -> Result<Counter> {
        if events != FI_CNTR_EVENTS_COMP {
            return Err(Error::Inval);
        }
        match wait_obj {
            FI_WAIT_NONE | FI_WAIT_UNSPEC | FI_WAIT_FD | FI_WAIT_MUTEX_COND | FI_WAIT_SET => {}
            FI_WAIT_POLLFD | FI_WAIT_YIELD => return Err(Error::NoSys),
            _ => return Err(Error::Inval),
        }
        Ok(Counter {
            events,
            wait_obj,
            value: AtomicU64::new(0),
            errs: AtomicU64::new(0),
            last_seen: AtomicU64::new(0),
            signal: Signal::new().map_err(|e| Error::os(FI_EMFILE, &e))?,
            sources: Sources::default(),
            triggers: TriggerList::default(),
        })
    }

    /// Registers a progress source.
    pub fn add_source(&self, s: Weak<dyn Progress>) {
        self.sources.add(s);
    }

    /// Registers every progress source of `other` too: reads and waits
    /// of this counter then drive what drives `other` (deferred work
    /// triggered by `other` updates this one).
    pub fn add_sources_of(&self, other: &Counter) {
        self.sources.add_all_of(&other.sources);
    }

    /// Registers every source of `s` too (a counter bound to a memory
    /// region counts what any endpoint of the domain serves: reading or
    /// waiting on it must drive them, or a manual-progress provider never
    /// serves the access it waits for).
    pub fn add_sources(&self, s: &Sources) {
        self.sources.add_all_of(s);
    }

    /// Forgets a progress source.
    pub fn remove_source(&self, s: &Weak<dyn Progress>) {
        self.sources.remove(s);
    }

    /// Asks the next read to drive sources holding work that no descriptor
    /// reports (sends held for coalescing); see `Sources::kick`.
    pub fn kick_progress(&self) {
        self.sources.kick();
    }

    /// Counts one success (provider side: work it makes due runs on the
    /// trigger thread, never under the provider's lock).
    pub fn inc(&self) {
        self.value.fetch_add(1, Ordering::SeqCst);
        self.updated(false);
    }

    /// Counts one failure (provider side, as `inc`).
    pub fn inc_err(&self) {
        self.errs.fetch_add(1, Ordering::SeqCst);
        self.updated(false);
    }

    /// `fi_trywait`: every bound endpoint's pass runs to its end first, so
    /// what input is pending is counted (and the counter's descriptor set)
    /// before the caller sleeps. Always safe to wait afterwards: the
    /// threshold is the caller's, and a count that moved left the
    /// descriptor readable.
    pub fn trywait(&self) {
        self.sources.progress_settled();
    }

    /// `fi_cntr_read`.
    pub fn read(&self) -> u64 {
        self.sources.progress();
        self.value.load(Ordering::Acquire)
    }

    /// `fi_cntr_readerr`.
    pub fn readerr(&self) -> u64 {
        self.sources.progress();
        self.errs.load(Ordering::Acquire)
    }

    /// `fi_cntr_add` (the application's call: work it makes due is issued
    /// before it returns).
    pub fn add(&self, v: u64) {
        self.value.fetch_add(v, Ordering::SeqCst);
        self.updated(true);
    }

    /// `fi_cntr_set`.
    pub fn set(&self, v: u64) {
        self.value.store(v, Ordering::SeqCst);
        self.updated(true);
    }

    /// `fi_cntr_adderr`.
    pub fn adderr(&self, v: u64) {
        self.errs.fetch_add(v, Ordering::SeqCst);
        self.updated(true);
    }

    /// `fi_cntr_seterr`.
    pub fn seterr(&self, v: u64) {
        self.errs.store(v, Ordering::SeqCst);
        self.updated(true);
    }

    /// After every update: wake waiters, run triggered work now due.
    fn updated(&self, inline: bool) {
        self.signal.set();
        self.check_triggers(inline);
    }

    /// The triggered work waiting on this counter (`service::trigger`).
    pub fn triggers(&self) -> &TriggerList {
        &self.triggers
    }

    /// Issues the triggered work that is due: on this thread when
    /// `inline` (no provider lock is held), else on the trigger thread.
    /// One atomic load when nothing waits.
    pub fn check_triggers(&self, inline: bool) {
        if !self.triggers.has_work() {
            return;
        }
        let due = self.triggers.take_due(
            self.value.load(Ordering::SeqCst),
            self.errs.load(Ordering::SeqCst),
        );
        super::trigger::run_due(due, inline);
    }

    /// `fi_cntr_wait`: until the value reaches `threshold` (Ok), the error
    /// count changes (`Other(FI_EAVAIL)`), or the timeout passes
    /// (`Other(FI_ETIMEDOUT)`).
    pub fn wait(&self, threshold: u64, timeout_ms: i32) -> Result<()> {
        let errs0 = self.errs.load(Ordering::Acquire);
        self.signal
            .wait_for(deadline(timeout_ms), || {
                self.signal.clear();
                self.sources.progress();
                if self.value.load(Ordering::Acquire) >= threshold {
                    return ControlFlow::Break(Ok(()));
                }
                if self.errs.load(Ordering::Acquire) != errs0 {
                    return ControlFlow::Break(Err(Error::Other(FI_EAVAIL)));
                }
                ControlFlow::Continue(self.sources.wait_fds())
            })
            .unwrap_or(Err(Error::Other(FI_ETIMEDOUT)))
    }

    /// The wait descriptors of the bound endpoints.
    pub fn source_fds(&self) -> Vec<std::os::fd::RawFd> {
        self.sources.wait_fds()
    }

    /// Drives progress and reports (once) whether the counter moved since
    /// the last call: what a wait set waits for.
    pub fn take_changed(&self) -> bool {
        self.sources.progress();
        let v = self.value.load(Ordering::Acquire) + self.errs.load(Ordering::Acquire);
        self.last_seen.swap(v, Ordering::AcqRel) != v
    }

    /// The descriptor for `FI_GETWAIT`.
    pub fn wait_fd(&self) -> std::os::fd::RawFd {
        self.signal.fd()
    }

    /// The descriptor `fi_control(FI_GETWAIT)` hands out: readable when
    /// [`Self::wait_fd`] is, and when a bound endpoint has input to drive
    /// (`service::getwait`).
    pub fn getwait_fd(&self) -> std::os::fd::RawFd {
        self.sources.getwait_fd(self.wait_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::progress::OnSettle;
    use std::sync::Arc;

    #[test]
    fn trywait_settles_the_sources_first() {
        let c = Arc::new(Counter::new(FI_CNTR_EVENTS_COMP, FI_WAIT_UNSPEC).unwrap());
        let c2 = Arc::downgrade(&c);
        let src: Arc<dyn Progress> = Arc::new(OnSettle(Box::new(move || {
            if let Some(c) = c2.upgrade() {
                c.inc();
            }
        })));
        c.add_source(Arc::downgrade(&src));
        c.trywait();
        assert_eq!(c.value.load(Ordering::Acquire), 1, "counted before a sleep");
    }

    #[test]
    fn counts_and_waits() {
        let c = std::sync::Arc::new(Counter::new(FI_CNTR_EVENTS_COMP, FI_WAIT_UNSPEC).unwrap());
        assert_eq!(c.wait(1, 5), Err(Error::Other(FI_ETIMEDOUT)));
        let c2 = c.clone();
        let h = std::thread::spawn(move || c2.wait(3, 10_000));
        c.add(2);
        c.inc();
        assert_eq!(h.join().unwrap(), Ok(()));
        assert_eq!(c.read(), 3);
        c.set(0);
        let c2 = c.clone();
        let h = std::thread::spawn(move || c2.wait(1, 10_000));
        // The waiter reports errors counted after it started; keep counting
        // until it has seen one (bounded).
        for _ in 0..5000 {
            if h.is_finished() {
                break;
            }
            c.inc_err();
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(h.join().unwrap(), Err(Error::Other(FI_EAVAIL)));
        assert!(c.readerr() >= 1);
        assert!(Counter::new(7, FI_WAIT_NONE).is_err());
    }
}
