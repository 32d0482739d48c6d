//! `fid_poll` (poll sets): one call that reports which of several CQs and
//! counters have something new, driving their progress first.

use crate::boundary::with_handle;
use crate::domain::domain_handle;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::service::cntr::Counter;
use oxifabric::service::cq::CompletionQueue;
use std::sync::{Arc, Mutex};

/// A member of a poll set.
enum Member {
    Cq(Arc<CompletionQueue>),
    /// A counter and the value last reported.
    Cntr(Arc<Counter>, u64),
}

struct Entry {
    fid: usize,
    context: usize,
    member: Member,
    _bind: BindRef,
}

/// The Rust side of a poll set.
pub struct PollObj {
    members: Mutex<Vec<Entry>>,
    _domain: BindRef,
}

pub type PollHandle = Handle<fid_poll, PollObj>;

static POLL_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(poll_close),
    bind: Some(crate::nosys::bind),
    control: Some(crate::nosys::control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static POLL_OPS: fi_ops_poll = fi_ops_poll {
    size: core::mem::size_of::<fi_ops_poll>(),
    poll: Some(poll_poll),
    poll_add: Some(poll_add),
    poll_del: Some(poll_del),
};

/// `fi_poll_open`.
pub(crate) extern "C" fn domain_poll_open(
    domain: *mut fid_domain,
    attr: *mut fi_poll_attr,
    pollset: *mut *mut fid_poll,
) -> c_int {
    with_handle!(domain_handle, domain, "fi_poll_open", |d| {
        if pollset.is_null() {
            return -FI_EINVAL;
        }
        // SAFETY: rule 2, attr is NULL or a readable fi_poll_attr.
        if unsafe { attr.as_ref() }.is_some_and(|a| a.flags != 0) {
            core_warn!(FI_LOG_DOMAIN, "fi_poll_open: unsupported flags");
            return -FI_EBADFLAGS;
        }
        let c = fid_poll {
            fid: fid {
                fclass: FI_CLASS_POLL as usize,
                context: core::ptr::null_mut(),
                ops: &POLL_FI_OPS as *const _ as *mut _,
            },
            ops: &POLL_OPS as *const _ as *mut _,
        };
        let obj = PollObj {
            members: Mutex::new(Vec::new()),
            _domain: BindRef::new(&d.binds),
        };
        // SAFETY: rule 3, pollset is not NULL (checked above).
        unsafe { *pollset = PollHandle::boxed(c, FI_CLASS_POLL, obj) };
        0
    })
}

/// Recovers a poll set handle.
///
/// # Safety
/// Rule 1 of the pointer contract (crate docs): `f` is NULL or a fid.
unsafe fn poll_handle<'a>(f: *const fid) -> Option<&'a PollHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { PollHandle::from_fid(f, FI_CLASS_POLL) }
}

extern "C" fn poll_close(f: *mut fid) -> c_int {
    with_handle!(poll_handle, f, "fi_close(poll)", |h| {
        // SAFETY: h is ours (class and magic checked), and by rule 1 the
        // application does not use it after close.
        unsafe { PollHandle::free(h) };
        0
    })
}

extern "C" fn poll_add(pollset: *mut fid_poll, event_fid: *mut fid, flags: u64) -> c_int {
    with_handle!(poll_handle, pollset, "fi_poll_add", |h| {
        if flags != 0 {
            return -FI_EBADFLAGS;
        }
        // SAFETY: rule 1, event_fid is NULL or a fid.
        let cq = unsafe { crate::cq::cq_handle(event_fid) };
        // SAFETY: as above.
        let cntr = unsafe { crate::cntr::cntr_handle(event_fid) };
        let entry = if let Some(cq) = cq {
            Entry {
                fid: event_fid as usize,
                context: cq.c.fid.context as usize,
                member: Member::Cq(cq.inner.cq.clone()),
                _bind: BindRef::new(&cq.binds),
            }
        } else if let Some(c) = cntr {
            Entry {
                fid: event_fid as usize,
                context: c.c.fid.context as usize,
                member: Member::Cntr(c.inner.cntr.clone(), 0),
                _bind: BindRef::new(&c.binds),
            }
        } else {
            return bad_fid("fi_poll_add (only CQs and counters)");
        };
        h.inner
            .members
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(entry);
        0
    })
}

extern "C" fn poll_del(pollset: *mut fid_poll, event_fid: *mut fid, flags: u64) -> c_int {
    with_handle!(poll_handle, pollset, "fi_poll_del", |h| {
        if flags != 0 {
            return -FI_EBADFLAGS;
        }
        let mut m = h.inner.members.lock().unwrap_or_else(|p| p.into_inner());
        let before = m.len();
        m.retain(|e| e.fid != event_fid as usize);
        if m.len() == before {
            -FI_EINVAL
        } else {
            0
        }
    })
}

/// Fills `context` with the contexts of members that have new events
/// (queued completions, a counter that moved); returns how many.
extern "C" fn poll_poll(pollset: *mut fid_poll, context: *mut *mut c_void, count: c_int) -> c_int {
    with_handle!(poll_handle, pollset, "fi_poll", |h| {
        if count < 0 || (context.is_null() && count > 0) {
            return -FI_EINVAL;
        }
        let mut m = h.inner.members.lock().unwrap_or_else(|p| p.into_inner());
        let mut n = 0usize;
        for e in m.iter_mut() {
            if n as c_int >= count {
                break;
            }
            let ready = match &mut e.member {
                Member::Cq(cq) => {
                    cq.progress();
                    !cq.is_empty()
                }
                Member::Cntr(c, last) => {
                    let v = c.read() + c.readerr();
                    let moved = v != *last;
                    *last = v;
                    moved
                }
            };
            if ready {
                // SAFETY: rule 3, context has room for count entries and
                // n < count.
                unsafe { *context.add(n) = e.context as *mut c_void };
                n += 1;
            }
        }
        n as c_int
    })
}
