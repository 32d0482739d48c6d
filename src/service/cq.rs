//! Completion queues, shared by every provider.
//!
//! Providers push [`Completion`]s and [`CqError`]s; the C boundary reads
//! them out in the application's `fi_cq_format`. Entries and errors keep
//! their order: reading stops at an error, which `fi_cq_readerr` then
//! returns (`-FI_EAVAIL` tells the application so). Reading drives the
//! progress of every bound endpoint, so manual progress needs nothing else.

use super::progress::{Progress, Sources};
use super::signal::{deadline, Signal};
use crate::abi::*;
use crate::error::{Error, Result};
use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Weak;

/// One successful completion; which fields the application sees depends on
/// the CQ format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Completion {
    pub op_context: usize,
    pub flags: u64,
    pub len: usize,
    pub buf: usize,
    pub data: u64,
    pub tag: u64,
    /// Source address for `fi_cq_readfrom` (`FI_ADDR_NOTAVAIL` if unknown).
    pub src: fi_addr_t,
}

/// A failed operation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CqError {
    pub comp: Completion,
    /// Bytes that did not fit (truncation).
    pub olen: usize,
    /// Positive `FI_E*` code.
    pub err: c_int,
    pub prov_errno: c_int,
    pub err_data: Vec<u8>,
}

#[derive(Debug)]
enum Entry {
    Ok(Completion),
    Err(Box<CqError>),
}

/// The most entries a completion queue may be opened with (`fi_cq_open`
/// refuses more with `-FI_EINVAL`): far beyond any real use, and small
/// enough that the queue's memory, filled, can be addressed.
pub const MAX_CQ_SIZE: usize = 1 << 30;

/// A completion queue.
pub struct CompletionQueue {
    pub format: fi_cq_format,
    pub size: usize,
    pub wait_obj: fi_wait_obj,
    pub wait_cond: fi_cq_wait_cond,
    queue: crate::service::quicklock::QuickLock<VecDeque<Entry>>,
    /// Entries queued, readable without the lock (see `is_full`).
    queued: AtomicUsize,
    signal: Signal,
    interrupted: AtomicBool,
    sources: Sources,
}

/// Validated `fi_cq_attr`.
#[derive(Debug, Clone, Copy)]
pub struct CqAttr {
    pub size: usize,
    pub format: fi_cq_format,
    pub wait_obj: fi_wait_obj,
    pub wait_cond: fi_cq_wait_cond,
}

impl CompletionQueue {
    /// Opens a queue. Unknown formats, wait objects or conditions, and a
    /// size above [`MAX_CQ_SIZE`], are `Inval`; `FI_WAIT_SET` is `NoSys`.
    pub fn new(attr: CqAttr) -> Result<CompletionQueue> {
        let format = match attr.format {
            FI_CQ_FORMAT_UNSPEC => FI_CQ_FORMAT_CONTEXT,
            f @ (FI_CQ_FORMAT_CONTEXT | FI_CQ_FORMAT_MSG | FI_CQ_FORMAT_DATA
            | FI_CQ_FORMAT_TAGGED) => f,
            _ => return Err(Error::Inval),
        };
        match attr.wait_obj {
            FI_WAIT_NONE | FI_WAIT_UNSPEC | FI_WAIT_FD | FI_WAIT_MUTEX_COND | FI_WAIT_SET => {}
            FI_WAIT_POLLFD | FI_WAIT_YIELD => return Err(Error::NoSys),
            _ => return Err(Error::Inval),
        }
        if attr.wait_cond != FI_CQ_COND_NONE && attr.wait_cond != FI_CQ_COND_THRESHOLD {
            return Err(Error::Inval);
        }
        if attr.size > MAX_CQ_SIZE {
            return Err(Error::Inval);
        }
        let size = if attr.size == 0 { 1024 } else { attr.size };
        Ok(CompletionQueue {
            format,
            size,
            wait_obj: attr.wait_obj,
            wait_cond: attr.wait_cond,
            queue: crate::service::quicklock::QuickLock::new(VecDeque::with_capacity(
                size.min(1 << 16),
            )),
            queued: AtomicUsize::new(0),
            signal: Signal::lazy().map_err(|e| Error::os(FI_EMFILE, &e))?,
            interrupted: AtomicBool::new(false),
            sources: Sources::default(),
        })
    }

    fn lock(&self) -> crate::service::quicklock::QuickGuard<'_, VecDeque<Entry>> {
        self.queue.lock()
    }

    /// Queues a completion (provider side).
    pub fn push(&self, c: Completion) {
        self.queue_entry(Entry::Ok(c));
    }

    /// Queues an error completion (provider side).
    pub fn push_err(&self, e: CqError) {
        self.queue_entry(Entry::Err(Box::new(e)));
    }

    /// Queues `e`, counts it and sets the signal. The count is written
    /// under the lock (a plain store of the queue's length: every change
    /// of it is made there), so it costs no locked instruction; it is
    /// written before the signal is set (see `nothing_queued`).
    fn queue_entry(&self, e: Entry) {
        {
            let mut q = self.lock();
            q.push_back(e);
            self.queued.store(q.len(), Ordering::Relaxed);
        }
        self.signal.set();
    }

    /// Registers an endpoint whose progress reading this queue drives.
    pub fn add_source(&self, s: Weak<dyn Progress>) {
        self.sources.add(s);
    }

    /// Forgets an endpoint.
    pub fn remove_source(&self, s: &Weak<dyn Progress>) {
        self.sources.remove(s);
    }

    /// Asks the next read to drive sources holding work that no descriptor
    /// reports (sends held for coalescing); see `Sources::kick`.
    pub fn kick_progress(&self) {
        self.sources.kick();
    }

    /// Drives the progress of every bound endpoint.
    #[inline]
    pub fn progress(&self) {
        self.sources.progress();
    }

    /// Reads up to `max` completions, handing each to `out`. `Again` when
    /// empty, `Avail` when an error is first in line.
    ///
    /// Progress runs only when nothing is queued: entries already here
    /// come back without a pass over the endpoints (a syscall or more),
    /// and what a pass leaves for the application's next call (an RMA
    /// answer waiting to share a writev with its reply) is not sent alone
    /// by a read that had nothing to wait for. Progress cannot starve:
    /// entries only come from it, so a reader reaches an empty queue. A
    /// read of no entries (`max` 0, the idiom for "drive progress") always
    /// progresses.
    pub fn read(&self, max: usize, mut out: impl FnMut(usize, &Completion)) -> Result<usize> {
        if max == 0 || self.queued.load(Ordering::Relaxed) == 0 {
            self.progress();
        }
        // The empty answer without a call (a busy-polling reader's usual
        // case): read_ready checks the same first.
        if self.nothing_queued() {
            return Err(Error::Again);
        }
        self.read_ready(max, &mut out)
    }

    /// Whether nothing is queued, the signal cleared if so. The count is
    /// read again after the clear: a push counts its entry before it sets
    /// the signal, so an entry whose signal the clear may have undone is
    /// seen (and read under the lock by the caller).
    #[inline]
    fn nothing_queued(&self) -> bool {
        if self.queued.load(Ordering::Relaxed) != 0 {
            return false;
        }
        self.signal.clear();
        self.queued.load(Ordering::SeqCst) == 0
    }

    fn read_ready(&self, max: usize, out: &mut impl FnMut(usize, &Completion)) -> Result<usize> {
        // Nothing queued: no lock.
        if self.nothing_queued() {
            return Err(Error::Again);
        }
        let mut q = self.lock();
        let mut n = 0;
        while n < max {
            match q.front() {
                Some(Entry::Ok(c)) => {
                    out(n, c);
                    q.pop_front();
                    n += 1;
                }
                Some(Entry::Err(_)) => {
                    if n == 0 {
                        return Err(Error::Avail);
                    }
                    break;
                }
                None => break,
            }
        }
        self.queued.store(q.len(), Ordering::Relaxed);
        if q.is_empty() {
            self.signal.clear();
        }
        if n == 0 {
            Err(Error::Again)
        } else {
            Ok(n)
        }
    }

    /// Takes the first error entry; `Again` when the head is not an error.
    pub fn readerr(&self) -> Result<CqError> {
        self.progress();
        let mut q = self.lock();
        match q.front() {
            Some(Entry::Err(_)) => {
                let Some(Entry::Err(e)) = q.pop_front() else {
                    unreachable!()
                };
                self.queued.store(q.len(), Ordering::Relaxed);
                if q.is_empty() {
                    self.signal.clear();
                }
                Ok(*e)
            }
            _ => Err(Error::Again),
        }
    }

    /// Whether the queue holds its size in unread entries: providers then
    /// refuse new operations that would complete here with `-FI_EAGAIN`,
    /// so an application that never reads cannot make it grow without
    /// bound (operations already in flight may still add theirs).
    pub fn is_full(&self) -> bool {
        self.queued.load(Ordering::Relaxed) >= self.size
    }

    /// Number of queued entries (completions and errors).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Blocking read: waits until `threshold` entries (or any, without a
    /// threshold condition) are queued, an error is available, the timeout
    /// (ms, negative = forever) passes (`Again`), or [`Self::interrupt`].
    pub fn sread(
        &self,
        max: usize,
        threshold: usize,
        timeout_ms: i32,
        mut out: impl FnMut(usize, &Completion),
    ) -> Result<usize> {
        let dl = deadline(timeout_ms);
        self.wake_signal();
        let want = if self.wait_cond == FI_CQ_COND_THRESHOLD {
            threshold.clamp(1, max.max(1))
        } else {
            1
        };
        self.signal
            .wait_for(dl, || {
                self.progress();
                if self.interrupted.swap(false, Ordering::AcqRel) {
                    return ControlFlow::Break(Err(Error::Again));
                }
                let ready = {
                    let q = self.lock();
                    q.len() >= want || matches!(q.front(), Some(Entry::Err(_)))
                };
                if ready {
                    return ControlFlow::Break(self.read_ready(max, &mut out));
                }
                ControlFlow::Continue(self.sources.wait_fds())
            })
            .unwrap_or(Err(Error::Again))
    }

    /// Makes the (lazy) signal exact before anyone waits on it: set when
    /// something is queued, looked at under the lock pushes take.
    fn wake_signal(&self) {
        self.signal.go_live(|| !self.lock().is_empty());
    }

    /// `fi_cq_signal`: makes a blocked (or the next) `sread` return `Again`.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::Release);
        self.signal.set();
    }

    /// The descriptor for `FI_GETWAIT`: readable while entries are queued.
    pub fn wait_fd(&self) -> std::os::fd::RawFd {
        self.wake_signal();
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

    /// `fi_trywait` helper: `Again` when entries are already queued,
    /// after a progress pass that includes any another thread is running
    /// (one it delivers from comes out queued, not after our answer).
    pub fn trywait(&self) -> Result<()> {
        self.sources.trywait(|| self.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cq(cond: fi_cq_wait_cond) -> CompletionQueue {
        CompletionQueue::new(CqAttr {
            size: 4,
            format: FI_CQ_FORMAT_TAGGED,
            wait_obj: FI_WAIT_UNSPEC,
            wait_cond: cond,
        })
        .unwrap()
    }

    #[test]
    fn order_errors_and_again() {
        let q = cq(FI_CQ_COND_NONE);
        assert_eq!(q.read(8, |_, _| {}), Err(Error::Again));
        q.push(Completion {
            op_context: 1,
            ..Default::default()
        });
        q.push_err(CqError {
            err: FI_ETRUNC,
            olen: 3,
            ..Default::default()
        });
        q.push(Completion {
            op_context: 2,
            ..Default::default()
        });
        let mut seen = vec![];
        assert_eq!(q.read(8, |_, c| seen.push(c.op_context)), Ok(1));
        assert_eq!(seen, vec![1]);
        assert_eq!(q.read(8, |_, _| {}), Err(Error::Avail));
        let e = q.readerr().unwrap();
        assert_eq!((e.err, e.olen), (FI_ETRUNC, 3));
        assert_eq!(q.readerr(), Err(Error::Again));
        assert_eq!(q.read(8, |_, c| seen.push(c.op_context)), Ok(1));
        assert_eq!(seen, vec![1, 2]);
    }

    #[test]
    fn sread_times_out_and_threshold() {
        let q = cq(FI_CQ_COND_THRESHOLD);
        let t = std::time::Instant::now();
        assert_eq!(q.sread(4, 2, 20, |_, _| {}), Err(Error::Again));
        assert!(t.elapsed() >= std::time::Duration::from_millis(20));
        q.push(Completion::default());
        assert_eq!(q.sread(4, 2, 0, |_, _| {}), Err(Error::Again));
        q.push(Completion::default());
        assert_eq!(q.sread(4, 2, 1000, |_, _| {}), Ok(2));
    }

    /// The queue's signal records nothing until its descriptor is asked
    /// for; then the descriptor must say what is queued, including an
    /// entry pushed while it was being handed out.
    #[test]
    fn descriptor_handed_out_late_says_what_is_queued() {
        use crate::service::signal::poll_readable;
        let q = cq(FI_CQ_COND_NONE);
        q.push(Completion::default());
        assert!(poll_readable(&[q.wait_fd()], deadline(0)), "queued before");
        assert_eq!(q.read(8, |_, _| {}), Ok(1));
        assert!(!poll_readable(&[q.wait_fd()], deadline(0)), "drained");
        q.push(Completion::default());
        assert!(poll_readable(&[q.wait_fd()], deadline(0)), "queued after");
        for round in 0..500 {
            let q = std::sync::Arc::new(cq(FI_CQ_COND_NONE));
            let q2 = q.clone();
            let t = std::thread::spawn(move || q2.push(Completion::default()));
            let fd = q.wait_fd();
            t.join().unwrap();
            assert!(
                poll_readable(&[fd], deadline(0)),
                "round {round}: a push racing the first wait_fd was lost"
            );
        }
    }

    #[test]
    fn sread_wakes_on_push_and_signal() {
        let q = std::sync::Arc::new(cq(FI_CQ_COND_NONE));
        let q2 = q.clone();
        let h = std::thread::spawn(move || q2.sread(1, 0, 10_000, |_, _| {}));
        q.push(Completion::default());
        assert_eq!(h.join().unwrap(), Ok(1));
        let q2 = q.clone();
        let h = std::thread::spawn(move || q2.sread(1, 0, 10_000, |_, _| {}));
        q.interrupt();
        assert_eq!(h.join().unwrap(), Err(Error::Again));
    }

    #[test]
    fn bad_attrs() {
        let mut a = CqAttr {
            size: 0,
            format: 99,
            wait_obj: FI_WAIT_NONE,
            wait_cond: FI_CQ_COND_NONE,
        };
        assert!(CompletionQueue::new(a).is_err());
        a.format = FI_CQ_FORMAT_UNSPEC;
        assert_eq!(
            CompletionQueue::new(a).unwrap().format,
            FI_CQ_FORMAT_CONTEXT
        );
        a.wait_obj = FI_WAIT_POLLFD;
        assert_eq!(CompletionQueue::new(a).err(), Some(Error::NoSys));
    }
}
