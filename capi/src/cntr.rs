//! `fid_cntr`: thunks onto the engine's counter.

use crate::boundary::with_handle;
use crate::domain::domain_handle;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::service::cntr::Counter;
use std::sync::Arc;

/// The Rust side of a counter.
pub struct CntrObj {
    pub cntr: Arc<Counter>,
    _wait: Option<BindRef>,
    _domain: BindRef,
}

impl CntrObj {
    /// The bind on the domain it was opened on (endpoints check that
    /// what they bind comes from their own domain).
    pub(crate) fn domain_ref(&self) -> &BindRef {
        &self._domain
    }
}

pub type CntrHandle = Handle<fid_cntr, CntrObj>;

static CNTR_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(cntr_close),
    bind: Some(crate::nosys::bind),
    control: Some(cntr_control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static CNTR_OPS: fi_ops_cntr = fi_ops_cntr {
    size: core::mem::size_of::<fi_ops_cntr>(),
    read: Some(cntr_read),
    readerr: Some(cntr_readerr),
    add: Some(cntr_add),
    set: Some(cntr_set),
    wait: Some(cntr_wait),
    adderr: Some(cntr_adderr),
    seterr: Some(cntr_seterr),
};

/// `fi_cntr_open`.
pub(crate) extern "C" fn domain_cntr_open(
    domain: *mut fid_domain,
    attr: *mut fi_cntr_attr,
    cntr: *mut *mut fid_cntr,
    context: *mut c_void,
) -> c_int {
    with_handle!(domain_handle, domain, "fi_cntr_open", |d| {
        if cntr.is_null() {
            return -FI_EINVAL;
        }
        // A NULL attr means defaults.
        // SAFETY: rule 2, attr is NULL or a readable fi_cntr_attr.
        let (events, wait_obj, flags, wait_set) = match unsafe { attr.as_ref() } {
            Some(a) => (a.events, a.wait_obj, a.flags, a.wait_set),
            None => (
                FI_CNTR_EVENTS_COMP,
                FI_WAIT_UNSPEC,
                0,
                core::ptr::null_mut(),
            ),
        };
        if flags != 0 {
            core_warn!(FI_LOG_CNTR, "fi_cntr_open: unsupported flags {flags:#x}");
            return -FI_EBADFLAGS;
        }
        let c = match Counter::new(events, wait_obj) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                core_warn!(
                    FI_LOG_CNTR,
                    "fi_cntr_open: unsupported events {events} or wait_obj {wait_obj}"
                );
                return e.code();
            }
        };
        if let Some(p) = d.inner.ops.progress() {
            c.add_source(Arc::downgrade(&p));
        }
        let member: std::sync::Weak<dyn oxifabric::service::waitset::Waitable> =
            Arc::downgrade(&c) as _;
        // SAFETY: rule 1, wait_set is NULL or a fid.
        let wait_bind = match unsafe { crate::wait::join(wait_obj, wait_set, member) } {
            Ok(b) => b,
            Err(e) => return e,
        };
        let cf = fid_cntr {
            fid: fid {
                fclass: FI_CLASS_CNTR as usize,
                context,
                ops: &CNTR_FI_OPS as *const _ as *mut _,
            },
            ops: &CNTR_OPS as *const _ as *mut _,
        };
        let obj = CntrObj {
            cntr: c,
            _wait: wait_bind,
            _domain: BindRef::new(&d.binds),
        };
        // SAFETY: rule 3, cntr is not NULL (checked above).
        unsafe { *cntr = CntrHandle::boxed(cf, FI_CLASS_CNTR, obj) };
        0
    })
}

/// Recovers a counter handle.
///
/// # Safety
/// Rule 1 of the pointer contract (crate docs): `f` is NULL or a fid.
pub unsafe fn cntr_handle<'a>(f: *const fid) -> Option<&'a CntrHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { CntrHandle::from_fid(f, FI_CLASS_CNTR) }
}

extern "C" fn cntr_close(f: *mut fid) -> c_int {
    with_handle!(cntr_handle, f, "fi_close(cntr)", |h| {
        if h.busy() {
            core_warn!(
                FI_LOG_CNTR,
                "fi_close: counter is still bound to an endpoint"
            );
            return -FI_EBUSY;
        }
        // SAFETY: h is ours (class and magic checked), nothing is bound to
        // it, and by rule 1 the application does not use it after close.
        unsafe { CntrHandle::free(h) };
        0
    })
}

extern "C" fn cntr_control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    with_handle!(cntr_handle, f, "fi_control(cntr)", |h| {
        let q = &h.inner.cntr;
        // SAFETY: rules 2 and 3, arg is what the command documents.
        unsafe { wait_control(command, arg, q.wait_obj, || q.getwait_fd()) }
    })
}

extern "C" fn cntr_read(c: *mut fid_cntr) -> u64 {
    with_handle!(cntr_handle, c, "fi_cntr_read", |h| h.inner.cntr.read())
}
extern "C" fn cntr_readerr(c: *mut fid_cntr) -> u64 {
    with_handle!(cntr_handle, c, "fi_cntr_readerr", |h| h
        .inner
        .cntr
        .readerr())
}
extern "C" fn cntr_add(c: *mut fid_cntr, value: u64) -> c_int {
    with_handle!(cntr_handle, c, "fi_cntr_add", |h| {
        h.inner.cntr.add(value);
        0
    })
}
extern "C" fn cntr_set(c: *mut fid_cntr, value: u64) -> c_int {
    with_handle!(cntr_handle, c, "fi_cntr_set", |h| {
        h.inner.cntr.set(value);
        0
    })
}
extern "C" fn cntr_adderr(c: *mut fid_cntr, value: u64) -> c_int {
    with_handle!(cntr_handle, c, "fi_cntr_adderr", |h| {
        h.inner.cntr.adderr(value);
        0
    })
}
extern "C" fn cntr_seterr(c: *mut fid_cntr, value: u64) -> c_int {
    with_handle!(cntr_handle, c, "fi_cntr_seterr", |h| {
        h.inner.cntr.seterr(value);
        0
    })
}
extern "C" fn cntr_wait(c: *mut fid_cntr, threshold: u64, timeout: c_int) -> c_int {
    // fi_cntr(3) calls waiting on an FI_WAIT_NONE counter invalid, but
    // upstream's providers wait (driving progress, with the timeout), and
    // programs rely on it: so does this one. Every counter has a signal.
    with_handle!(cntr_handle, c, "fi_cntr_wait", |h| {
        rc(h.inner.cntr.wait(threshold, timeout))
    })
}

/// `fi_trywait` for one fid, if it is a counter.
///
/// # Safety
/// Rule 1: `f` is NULL or a fid.
pub unsafe fn trywait_one(f: *mut fid) -> Option<c_int> {
    // SAFETY: the caller's promise.
    unsafe { cntr_handle(f) }.map(|h| {
        h.inner.cntr.trywait();
        0
    })
}
