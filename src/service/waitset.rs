//! Wait sets (`fi_wait_open`, `fi_wait`): block until any of several CQs,
//! EQs or counters has something, driving their progress meanwhile.

use super::cntr::Counter;
use super::cq::CompletionQueue;
use super::eq::EventQueue;
use super::signal::{deadline, Signal};
use crate::abi::*;
use crate::error::{Error, Result};
use std::ops::ControlFlow;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, Weak};

/// Something a wait set can wait for.
pub trait Waitable: Send + Sync {
    /// Drives progress and says whether an event is waiting.
    fn ready(&self) -> bool;
    /// Descriptors readable when it may have become ready.
    fn fds(&self) -> Vec<RawFd>;
}

impl Waitable for CompletionQueue {
    fn ready(&self) -> bool {
        self.progress();
        !self.is_empty()
    }
    fn fds(&self) -> Vec<RawFd> {
        let mut v = self.source_fds();
        v.push(self.wait_fd());
        v
    }
}

impl Waitable for EventQueue {
    fn ready(&self) -> bool {
        !self.is_empty_after_progress()
    }
    fn fds(&self) -> Vec<RawFd> {
        let mut v = self.source_fds();
        v.push(self.wait_fd());
        v
    }
}

impl Waitable for Counter {
    fn ready(&self) -> bool {
        self.take_changed()
    }
    fn fds(&self) -> Vec<RawFd> {
        let mut v = self.source_fds();
        v.push(self.wait_fd());
        v
    }
}

/// A wait set.
pub struct WaitSet {
    pub wait_obj: fi_wait_obj,
    members: Mutex<Vec<Weak<dyn Waitable>>>,
    signal: Signal,
}

impl WaitSet {
    /// Opens a wait set (`FI_WAIT_UNSPEC`, `FI_WAIT_FD` or `FI_WAIT_MUTEX_COND`).
    pub fn new(wait_obj: fi_wait_obj) -> Result<WaitSet> {
        match wait_obj {
            FI_WAIT_UNSPEC | FI_WAIT_FD | FI_WAIT_MUTEX_COND => {}
            FI_WAIT_NONE | FI_WAIT_SET => return Err(Error::Inval),
            FI_WAIT_POLLFD | FI_WAIT_YIELD => return Err(Error::NoSys),
            _ => return Err(Error::Inval),
        }
        Ok(WaitSet {
            wait_obj,
            members: Mutex::new(Vec::new()),
            signal: Signal::new().map_err(|e| Error::os(FI_EMFILE, &e))?,
        })
    }

    /// Adds a member (a CQ, EQ or counter opened with this set).
    pub fn add(&self, m: Weak<dyn Waitable>) {
        let mut l = self.members.lock().unwrap_or_else(|p| p.into_inner());
        l.retain(|w| w.strong_count() > 0);
        l.push(m);
    }

    fn live(&self) -> Vec<Arc<dyn Waitable>> {
        let l = self.members.lock().unwrap_or_else(|p| p.into_inner());
        l.iter().filter_map(Weak::upgrade).collect()
    }

    /// Whether a member has an event now (for `fi_trywait`).
    pub fn any_ready(&self) -> bool {
        self.live().iter().any(|m| m.ready())
    }

    /// `fi_wait`: Ok when a member has an event, `FI_ETIMEDOUT` after
    /// `timeout_ms` (negative: forever), `FI_EAGAIN`... never.
    pub fn wait(&self, timeout_ms: i32) -> Result<()> {
        self.signal
            .wait_for(deadline(timeout_ms), || {
                let members = self.live();
                if members.iter().any(|m| m.ready()) || self.signal.is_set() {
                    self.signal.clear();
                    return ControlFlow::Break(Ok(()));
                }
                ControlFlow::Continue(members.iter().flat_map(|m| m.fds()).collect())
            })
            .unwrap_or(Err(Error::Other(FI_ETIMEDOUT)))
    }

    /// The set's own descriptor (signalled by [`WaitSet::wake`]).
    pub fn fd(&self) -> RawFd {
        self.signal.fd()
    }

    /// Wakes a waiter.
    pub fn wake(&self) {
        self.signal.set();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::cq::{Completion, CqAttr};

    #[test]
    fn waits_for_members_and_times_out() {
        let ws = WaitSet::new(FI_WAIT_UNSPEC).unwrap();
        let cq = Arc::new(
            CompletionQueue::new(CqAttr {
                size: 4,
                format: FI_CQ_FORMAT_CONTEXT,
                wait_obj: FI_WAIT_SET,
                wait_cond: FI_CQ_COND_NONE,
            })
            .unwrap(),
        );
        let w: Weak<dyn Waitable> = Arc::downgrade(&cq) as Weak<dyn Waitable>;
        ws.add(w);
        assert_eq!(ws.wait(10), Err(Error::Other(FI_ETIMEDOUT)));
        let cq2 = cq.clone();
        let t = std::thread::spawn(move || cq2.push(Completion::default()));
        assert_eq!(ws.wait(10_000), Ok(()));
        t.join().unwrap();
        let c = Arc::new(Counter::new(FI_CNTR_EVENTS_COMP, FI_WAIT_SET).unwrap());
        ws.add(Arc::downgrade(&c) as Weak<dyn Waitable>);
        assert!(WaitSet::new(FI_WAIT_NONE).is_err());
    }
}
