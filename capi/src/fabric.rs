//! `fid_fabric`: its vtables and the thunks behind them.

use crate::boundary::guard;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::info::Info;
use oxifabric::object::{BindRef, Handle};
use oxifabric::ops::FabricOps;
use oxifabric::service::eq::EventQueue;
use std::sync::Arc;

/// The Rust side of a fabric.
pub struct FabricObj {
    pub ops: Arc<dyn FabricOps>,
}

pub type FabricHandle = Handle<fid_fabric, FabricObj>;

static FABRIC_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(fabric_close),
    bind: Some(crate::nosys::bind),
    control: Some(crate::nosys::control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static FABRIC_OPS: fi_ops_fabric = fi_ops_fabric {
    size: core::mem::size_of::<fi_ops_fabric>(),
    domain: Some(crate::domain::fabric_domain),
    passive_ep: Some(crate::pep::fabric_passive_ep),
    eq_open: Some(fabric_eq_open),
    wait_open: Some(crate::wait::fabric_wait_open),
    trywait: Some(fabric_trywait),
    domain2: Some(crate::domain::fabric_domain2),
};

/// Wraps a provider's fabric in a C handle.
pub fn new_fabric(
    ops: Arc<dyn FabricOps>,
    api_version: u32,
    context: *mut c_void,
) -> *mut fid_fabric {
    let c = fid_fabric {
        fid: fid {
            fclass: FI_CLASS_FABRIC as usize,
            context,
            ops: &FABRIC_FI_OPS as *const fi_ops as *mut fi_ops,
        },
        ops: &FABRIC_OPS as *const fi_ops_fabric as *mut fi_ops_fabric,
        api_version,
    };
    FabricHandle::boxed(c, FI_CLASS_FABRIC, FabricObj { ops })
}

unsafe extern "C" fn fabric_close(f: *mut fid) -> c_int {
    guard(-FI_EOTHER, || {
        // SAFETY: rule 1 of the pointer contract (crate docs).
        let Some(h) = (unsafe { FabricHandle::from_fid(f, FI_CLASS_FABRIC) }) else {
            return bad_fid("fi_close(fabric)");
        };
        if h.busy() {
            core_warn!(
                FI_LOG_FABRIC,
                "fi_close: fabric still has open domains, endpoints or event queues"
            );
            return -FI_EBUSY;
        }
        // SAFETY: h is ours (class and magic checked), nothing is bound to
        // it, and by rule 1 the application does not use it after close.
        unsafe { FabricHandle::free(h) };
        0
    })
}

unsafe extern "C" fn fabric_eq_open(
    fabric: *mut fid_fabric,
    attr: *mut fi_eq_attr,
    eq: *mut *mut fid_eq,
    context: *mut c_void,
) -> c_int {
    guard(-FI_EOTHER, || {
        // SAFETY: rule 1.
        let Some(h) = (unsafe { FabricHandle::from_fid(fabric as *mut fid, FI_CLASS_FABRIC) })
        else {
            return bad_fid("fi_eq_open");
        };
        // SAFETY: rule 2, attr is NULL or a readable fi_eq_attr.
        let (Some(a), false) = (unsafe { attr.as_ref() }, eq.is_null()) else {
            core_warn!(FI_LOG_EQ, "fi_eq_open: attr or eq is NULL");
            return -FI_EINVAL;
        };
        if a.flags & !FI_WRITE != 0 {
            core_warn!(FI_LOG_EQ, "fi_eq_open: unsupported flags {:#x}", a.flags);
            return -FI_EBADFLAGS;
        }
        match EventQueue::new(a.size, a.wait_obj) {
            Ok(q) => {
                let q = Arc::new(q);
                let member: std::sync::Weak<dyn oxifabric::service::waitset::Waitable> =
                    Arc::downgrade(&q) as _;
                // SAFETY: rule 1, wait_set is NULL or a fid.
                let wait = match unsafe { crate::wait::join(a.wait_obj, a.wait_set, member) } {
                    Ok(b) => b,
                    Err(e) => return e,
                };
                let q =
                    crate::eq::new_eq(q, h.c.api_version, BindRef::new(&h.binds), wait, context);
                // SAFETY: rule 3, eq is not NULL (checked above).
                unsafe { *eq = q };
                0
            }
            Err(e) => {
                core_warn!(
                    FI_LOG_EQ,
                    "fi_eq_open: invalid attributes (wait_obj {})",
                    a.wait_obj
                );
                e.code()
            }
        }
    })
}

unsafe extern "C" fn fabric_trywait(
    _fabric: *mut fid_fabric,
    fids: *mut *mut fid,
    count: c_int,
) -> c_int {
    guard(-FI_EOTHER, || {
        if fids.is_null() || count < 0 {
            return -FI_EINVAL;
        }
        for i in 0..count as usize {
            // SAFETY: rule 2, fids holds count fids, each NULL or a fid
            // (rule 1), which is what each trywait_one needs.
            let r = unsafe {
                let f = *fids.add(i);
                crate::cq::trywait_one(f)
                    .or_else(|| crate::eq::trywait_one(f))
                    .or_else(|| crate::cntr::trywait_one(f))
                    .or_else(|| crate::wait::trywait_one(f))
            };
            match r {
                Some(0) => {}
                Some(e) => return e,
                None => return bad_fid("fi_trywait"),
            }
        }
        0
    })
}

/// The fabric's info-independent part for `fi_domain`: recovers the handle.
///
/// # Safety
/// Rule 1 of the pointer contract (crate docs): `f` is NULL or a fid.
pub unsafe fn fabric_handle<'a>(f: *mut fid_fabric) -> Option<&'a FabricHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { FabricHandle::from_fid(f as *mut fid, FI_CLASS_FABRIC) }
}

/// Reads an `fi_info` argument (current layout) for `fi_domain`/`fi_endpoint`.
///
/// # Safety
/// Rule 2: `info` is NULL or a readable current-layout `fi_info`.
pub unsafe fn info_arg(info: *mut fi_info) -> Option<Info> {
    // SAFETY: the caller's promise.
    unsafe { Info::from_c(info) }
}
