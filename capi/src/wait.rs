//! `fid_wait` (wait sets): thunks onto the engine's wait set.

use crate::boundary::with_handle;
use crate::fabric::fabric_handle;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::service::waitset::{WaitSet, Waitable};
use std::sync::{Arc, Weak};

/// The Rust side of a wait set.
pub struct WaitObj {
    pub set: Arc<WaitSet>,
    _fabric: BindRef,
}

pub type WaitHandle = Handle<fid_wait, WaitObj>;

static WAIT_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(wait_close),
    bind: Some(crate::nosys::bind),
    control: Some(wait_control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static WAIT_OPS: fi_ops_wait = fi_ops_wait {
    size: core::mem::size_of::<fi_ops_wait>(),
    wait: Some(wait_wait),
};

/// `fi_wait_open`.
pub(crate) extern "C" fn fabric_wait_open(
    fabric: *mut fid_fabric,
    attr: *mut fi_wait_attr,
    waitset: *mut *mut fid_wait,
) -> c_int {
    with_handle!(fabric_handle, fabric, "fi_wait_open", |fh| {
        // SAFETY: rule 2, attr is NULL or a readable fi_wait_attr.
        let (Some(a), false) = (unsafe { attr.as_ref() }, waitset.is_null()) else {
            return -FI_EINVAL;
        };
        if a.flags != 0 {
            return -FI_EBADFLAGS;
        }
        let set = match WaitSet::new(a.wait_obj) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                core_warn!(
                    FI_LOG_FABRIC,
                    "fi_wait_open: unsupported wait_obj {}",
                    a.wait_obj
                );
                return e.code();
            }
        };
        let c = fid_wait {
            fid: fid {
                fclass: FI_CLASS_WAIT as usize,
                context: core::ptr::null_mut(),
                ops: &WAIT_FI_OPS as *const _ as *mut _,
            },
            ops: &WAIT_OPS as *const _ as *mut _,
        };
        let obj = WaitObj {
            set,
            _fabric: BindRef::new(&fh.binds),
        };
        // SAFETY: rule 3, waitset is not NULL (checked above).
        unsafe { *waitset = WaitHandle::boxed(c, FI_CLASS_WAIT, obj) };
        0
    })
}

/// Recovers a wait set handle.
///
/// # Safety
/// Rule 1 of the pointer contract (crate docs): `f` is NULL or a fid.
pub unsafe fn wait_handle<'a>(f: *const fid) -> Option<&'a WaitHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { WaitHandle::from_fid(f, FI_CLASS_WAIT) }
}

/// For objects opened with `FI_WAIT_SET`: validates the set and adds the
/// new member; returns the bind that keeps the set open, or an error code.
///
/// # Safety
/// Rule 1: `set` is NULL or a fid.
pub unsafe fn join(
    wait_obj: fi_wait_obj,
    set: *mut fid_wait,
    member: Weak<dyn Waitable>,
) -> Result<Option<BindRef>, c_int> {
    if wait_obj != FI_WAIT_SET {
        return Ok(None);
    }
    // SAFETY: the caller's promise.
    let Some(h) = (unsafe { wait_handle(set as *const fid) }) else {
        core_warn!(FI_LOG_CORE, "FI_WAIT_SET without a valid wait_set");
        return Err(-FI_EINVAL);
    };
    h.inner.set.add(member);
    Ok(Some(BindRef::new(&h.binds)))
}

extern "C" fn wait_close(f: *mut fid) -> c_int {
    with_handle!(wait_handle, f, "fi_close(wait)", |h| {
        if h.busy() {
            core_warn!(FI_LOG_CORE, "fi_close: wait set still has members");
            return -FI_EBUSY;
        }
        // SAFETY: h is ours (class and magic checked), nothing is bound to
        // it, and by rule 1 the application does not use it after close.
        unsafe { WaitHandle::free(h) };
        0
    })
}

extern "C" fn wait_control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    with_handle!(wait_handle, f, "fi_control(wait)", |h| {
        match command {
            FI_GETWAIT if !arg.is_null() => {
                let fd = h.inner.set.fd();
                // SAFETY: rule 3, FI_GETWAIT's arg is an int to write.
                unsafe { *(arg as *mut c_int) = fd };
                0
            }
            FI_GETWAIT => -FI_EINVAL,
            _ => -FI_ENOSYS,
        }
    })
}

extern "C" fn wait_wait(waitset: *mut fid_wait, timeout: c_int) -> c_int {
    with_handle!(wait_handle, waitset, "fi_wait", |h| rc(h
        .inner
        .set
        .wait(timeout)))
}

/// `fi_trywait` for one fid, if it is a wait set.
///
/// # Safety
/// Rule 1: `f` is NULL or a fid.
pub unsafe fn trywait_one(f: *mut fid) -> Option<c_int> {
    // SAFETY: the caller's promise.
    let h = unsafe { wait_handle(f) }?;
    Some(if h.inner.set.any_ready() {
        -FI_EAGAIN
    } else {
        0
    })
}
