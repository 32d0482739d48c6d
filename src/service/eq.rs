//! Event queues: connection-management and asynchronous control events,
//! shared by every provider.

use super::progress::{Progress, Sources};
use super::signal::{deadline, Signal};
use crate::abi::*;
use crate::error::{Error, Result};
use crate::info::Info;
use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::{Mutex, Weak};

/// The payload of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventData {
    /// A plain `fi_eq_entry`: fid, context, data.
    Entry {
        fid: usize,
        context: usize,
        data: u64,
    },
    /// A connection event (`fi_eq_cm_entry`): fid, an info for
    /// `FI_CONNREQ` (the application frees it), and private data.
    Cm {
        fid: usize,
        info: Option<Box<Info>>,
        data: Vec<u8>,
    },
    /// Bytes the application wrote with `fi_eq_write`, returned verbatim.
    Raw(Vec<u8>),
}

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event: u32,
    pub data: EventData,
}

/// An error event (`fi_eq_err_entry`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EqError {
    pub fid: usize,
    pub context: usize,
    pub data: u64,
    /// Positive `FI_E*` code.
    pub err: c_int,
    pub prov_errno: c_int,
    pub err_data: Vec<u8>,
}

#[derive(Debug)]
enum Item {
    Ev(Event),
    Err(EqError),
}

/// An event queue.
pub struct EventQueue {
    pub size: usize,
    pub wait_obj: fi_wait_obj,
    queue: Mutex<VecDeque<Item>>,
    signal: Signal,
    sources: Sources,
}

impl EventQueue {
    /// Opens a queue (`size` 0 picks a default).
    pub fn new(size: usize, wait_obj: fi_wait_obj) -> Result<EventQueue> {
        match wait_obj {
            FI_WAIT_NONE | FI_WAIT_UNSPEC | FI_WAIT_FD | FI_WAIT_MUTEX_COND | FI_WAIT_SET => {}
            FI_WAIT_POLLFD | FI_WAIT_YIELD => return Err(Error::NoSys),
            _ => return Err(Error::Inval),
        }
        Ok(EventQueue {
            size: if size == 0 { 256 } else { size },
            wait_obj,
            queue: Mutex::new(VecDeque::new()),
            signal: Signal::new().map_err(|e| Error::os(FI_EMFILE, &e))?,
            sources: Sources::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Item>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues an event; `Again` when the queue is full.
    pub fn push(&self, ev: Event) -> Result<()> {
        let mut q = self.lock();
        if q.len() >= self.size {
            return Err(Error::Again);
        }
        q.push_back(Item::Ev(ev));
        self.signal.set();
        Ok(())
    }

    /// Queues an event that reports work already done (an `FI_EVENT` AV
    /// insert's `FI_AV_COMPLETE`): like errors, never dropped for lack of
    /// room, since the application has no other way to learn of it.
    pub fn push_always(&self, ev: Event) {
        self.lock().push_back(Item::Ev(ev));
        self.signal.set();
    }

    /// Queues an error event. Errors are never dropped for lack of room.
    pub fn push_err(&self, e: EqError) {
        self.lock().push_back(Item::Err(e));
        self.signal.set();
    }

    /// Registers a progress source (a passive or connecting endpoint).
    pub fn add_source(&self, s: Weak<dyn Progress>) {
        self.sources.add(s);
    }

    /// Forgets a progress source.
    pub fn remove_source(&self, s: &Weak<dyn Progress>) {
        self.sources.remove(s);
    }

    /// Reads (or with `peek`, looks at) the first event. `Again` when
    /// empty, `Avail` when an error is first.
    pub fn read(&self, peek: bool) -> Result<Event> {
        self.read_fitting(peek, |_| true)
    }

    /// [`Self::read`] for a caller whose buffer takes only events `fits`
    /// accepts: one that does not fit stays queued (`TooSmall`).
    pub fn read_fitting(&self, peek: bool, fits: impl Fn(&Event) -> bool) -> Result<Event> {
        self.sources.progress();
        let mut q = self.lock();
        let r = match q.front() {
            None => Err(Error::Again),
            Some(Item::Err(_)) => Err(Error::Avail),
            Some(Item::Ev(e)) if !fits(e) => Err(Error::TooSmall),
            Some(Item::Ev(e)) if peek => Ok(e.clone()),
            Some(Item::Ev(_)) => match q.pop_front() {
                Some(Item::Ev(e)) => Ok(e),
                _ => unreachable!(),
            },
        };
        if q.is_empty() {
            self.signal.clear();
        }
        r
    }

    /// Reads the first error event; `Again` when the head is not one.
    pub fn readerr(&self, peek: bool) -> Result<EqError> {
        self.sources.progress();
        let mut q = self.lock();
        let r = match q.front() {
            Some(Item::Err(e)) if peek => Ok(e.clone()),
            Some(Item::Err(_)) => match q.pop_front() {
                Some(Item::Err(e)) => Ok(e),
                _ => unreachable!(),
            },
            _ => Err(Error::Again),
        };
        if q.is_empty() {
            self.signal.clear();
        }
        r
    }

    /// Blocking read with a timeout in ms (negative = forever).
    pub fn sread(&self, peek: bool, timeout_ms: i32) -> Result<Event> {
        self.sread_fitting(peek, timeout_ms, |_| true)
    }

    /// [`Self::sread`] with [`Self::read_fitting`]'s size check.
    pub fn sread_fitting(
        &self,
        peek: bool,
        timeout_ms: i32,
        fits: impl Fn(&Event) -> bool,
    ) -> Result<Event> {
        self.signal
            .wait_for(deadline(timeout_ms), || {
                match self.read_fitting(peek, &fits) {
                    Err(Error::Again) => ControlFlow::Continue(self.sources.wait_fds()),
                    other => ControlFlow::Break(other),
                }
            })
            .unwrap_or(Err(Error::Again))
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

    /// The wait descriptors of the bound endpoints.
    pub fn source_fds(&self) -> Vec<std::os::fd::RawFd> {
        self.sources.wait_fds()
    }

    /// Drives progress, then says whether nothing is queued.
    pub fn is_empty_after_progress(&self) -> bool {
        self.sources.progress();
        self.is_empty()
    }

    /// `fi_trywait`: every bound endpoint's pass runs to its end first
    /// (as for a CQ), so an event on its way in is queued and reported
    /// with `Again` instead of the caller going to sleep over it.
    pub fn trywait(&self) -> Result<()> {
        self.sources.trywait(|| self.is_empty())
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::progress::OnSettle;
    use std::sync::Arc;

    #[test]
    fn trywait_settles_the_sources_first() {
        let q = Arc::new(EventQueue::new(4, FI_WAIT_UNSPEC).unwrap());
        assert_eq!(q.trywait(), Ok(()));
        let q2 = Arc::downgrade(&q);
        let src: Arc<dyn Progress> = Arc::new(OnSettle(Box::new(move || {
            if let Some(q) = q2.upgrade() {
                q.push_always(Event {
                    event: FI_CONNECTED as u32,
                    data: EventData::Raw(vec![]),
                });
            }
        })));
        q.add_source(Arc::downgrade(&src));
        assert_eq!(q.trywait(), Err(Error::Again), "the event a pass delivers");
        assert!(q.read(false).is_ok());
    }

    #[test]
    fn events_errors_peek_and_full() {
        let q = EventQueue::new(2, FI_WAIT_UNSPEC).unwrap();
        assert_eq!(q.read(false), Err(Error::Again));
        let ev = Event {
            event: FI_NOTIFY as u32,
            data: EventData::Raw(vec![1, 2]),
        };
        q.push(ev.clone()).unwrap();
        q.push(ev.clone()).unwrap();
        assert_eq!(q.push(ev.clone()), Err(Error::Again));
        assert_eq!(q.read(true), Ok(ev.clone()));
        assert_eq!(q.read(false), Ok(ev.clone()));
        assert_eq!(q.read(false), Ok(ev.clone()));
        q.push_err(EqError {
            err: FI_ECONNREFUSED,
            ..Default::default()
        });
        assert_eq!(q.read(false), Err(Error::Avail));
        assert_eq!(q.readerr(false).unwrap().err, FI_ECONNREFUSED);
        assert_eq!(q.sread(false, 10), Err(Error::Again));
    }
}
