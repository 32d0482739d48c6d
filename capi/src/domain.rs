//! `fid_domain`: its vtables and the thunks behind them.

use crate::boundary::with_handle;
use crate::fabric::{fabric_handle, info_arg};
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::info::Info;
use oxifabric::object::{BindRef, Handle};
use oxifabric::ops::DomainOps;
use std::sync::Arc;

/// The Rust side of a domain.
pub struct DomainObj {
    pub ops: Arc<dyn DomainOps>,
    /// The entry it was opened with (endpoints default to its attributes).
    pub info: Info,
    pub api_version: u32,
    _fabric: BindRef,
    /// The EQ bound with `fi_domain_bind` (held so it cannot close first).
    eq: std::sync::Mutex<Option<BindRef>>,
    /// Counters that deferred work of this domain was queued on
    /// (`FI_FLUSH_WORK` looks there).
    pub deferred_cntrs: std::sync::Mutex<Vec<std::sync::Weak<oxifabric::service::cntr::Counter>>>,
    /// Every endpoint opened on it (dropped ones forgotten lazily): what a
    /// counter bound to one of its memory regions drives.
    pub endpoints: Arc<oxifabric::service::progress::Sources>,
}

pub type DomainHandle = Handle<fid_domain, DomainObj>;

static DOMAIN_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(domain_close),
    bind: Some(domain_bind),
    control: Some(crate::ep::domain_control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static DOMAIN_OPS: fi_ops_domain = fi_ops_domain {
    size: core::mem::size_of::<fi_ops_domain>(),
    av_open: Some(crate::av::domain_av_open),
    cq_open: Some(crate::cq::domain_cq_open),
    endpoint: Some(crate::ep::domain_endpoint),
    scalable_ep: Some(crate::ep::sep::domain_scalable_ep),
    cntr_open: Some(crate::cntr::domain_cntr_open),
    poll_open: Some(crate::poll::domain_poll_open),
    stx_ctx: Some(crate::ep::stx::domain_stx_ctx),
    srx_ctx: Some(crate::ep::stx::domain_srx_ctx),
    query_atomic: Some(crate::ep::query_atomic),
    query_collective: Some(crate::coll::query_collective),
    endpoint2: Some(crate::ep::domain_endpoint2),
};

static DOMAIN_MR_OPS: fi_ops_mr = fi_ops_mr {
    size: core::mem::size_of::<fi_ops_mr>(),
    reg: Some(crate::mr::mr_reg),
    regv: Some(crate::mr::mr_regv),
    regattr: Some(crate::mr::mr_regattr),
};

/// `fi_domain`.
pub(crate) extern "C" fn fabric_domain(
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    dom: *mut *mut fid_domain,
    context: *mut c_void,
) -> c_int {
    fabric_domain2(fabric, info, dom, 0, context)
}

/// `fi_domain2`.
pub(crate) extern "C" fn fabric_domain2(
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    dom: *mut *mut fid_domain,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    with_handle!(fabric_handle, fabric, "fi_domain", |fh| {
        if dom.is_null() {
            core_warn!(
                FI_LOG_DOMAIN,
                "fi_domain: domain (the result pointer) is NULL"
            );
            return -FI_EINVAL;
        }
        if flags != 0 {
            core_warn!(FI_LOG_DOMAIN, "fi_domain2: unsupported flags {flags:#x}");
            return -FI_EBADFLAGS;
        }
        // SAFETY: rule 2, info is NULL or a readable fi_info list.
        let Some(info) = (unsafe { info_arg(info) }) else {
            core_warn!(FI_LOG_DOMAIN, "fi_domain: info is NULL");
            return -FI_EINVAL;
        };
        match fh.inner.ops.domain(&info) {
            Ok(ops) => {
                let c = fid_domain {
                    fid: fid {
                        fclass: FI_CLASS_DOMAIN as usize,
                        context,
                        ops: &DOMAIN_FI_OPS as *const _ as *mut _,
                    },
                    ops: &DOMAIN_OPS as *const _ as *mut _,
                    mr: &DOMAIN_MR_OPS as *const _ as *mut _,
                };
                let obj = DomainObj {
                    ops,
                    info,
                    api_version: fh.c.api_version,
                    _fabric: BindRef::new(&fh.binds),
                    eq: std::sync::Mutex::new(None),
                    deferred_cntrs: Default::default(),
                    endpoints: Default::default(),
                };
                // SAFETY: rule 3, dom is not NULL (checked above).
                unsafe { *dom = DomainHandle::boxed(c, FI_CLASS_DOMAIN, obj) };
                0
            }
            Err(e) => e.code(),
        }
    })
}

/// Recovers a domain handle.
///
/// # Safety
/// Rule 1 of the pointer contract (crate docs): `d` is NULL or a fid.
pub unsafe fn domain_handle<'a>(d: *mut fid_domain) -> Option<&'a DomainHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { DomainHandle::from_fid(d as *mut fid, FI_CLASS_DOMAIN) }
}

/// `fi_domain_bind`: an EQ for the domain's asynchronous events. Nothing
/// the domain does reports asynchronously yet (memory registration is
/// synchronous), so the bind only ties the EQ's lifetime to the domain;
/// `FI_REG_MR` (asynchronous registration) is not supported.
extern "C" fn domain_bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    with_handle!(domain_handle, f, "fi_domain_bind", |h| {
        // SAFETY: rule 1, bfid is NULL or a fid.
        let Some(eq) = (unsafe { crate::eq::eq_handle(bfid) }) else {
            core_warn!(
                FI_LOG_DOMAIN,
                "fi_domain_bind: only an EQ can be bound to a domain"
            );
            return -FI_EINVAL;
        };
        if flags & FI_REG_MR != 0 {
            core_warn!(
                FI_LOG_DOMAIN,
                "fi_domain_bind: FI_REG_MR (asynchronous registration) is not supported"
            );
            return -FI_ENOSYS;
        }
        if flags != 0 {
            core_warn!(FI_LOG_DOMAIN, "fi_domain_bind: unknown flags {flags:#x}");
            return -FI_EBADFLAGS;
        }
        let mut slot = h.inner.eq.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            core_warn!(
                FI_LOG_DOMAIN,
                "fi_domain_bind: the domain already has an EQ"
            );
            return -FI_EINVAL;
        }
        *slot = Some(BindRef::new(&eq.binds));
        0
    })
}

extern "C" fn domain_close(f: *mut fid) -> c_int {
    with_handle!(domain_handle, f, "fi_close(domain)", |h| {
        if h.busy() {
            core_warn!(
                FI_LOG_DOMAIN,
                "fi_close: domain still has open endpoints, queues, counters or AVs"
            );
            return -FI_EBUSY;
        }
        // SAFETY: h is ours (class and magic checked), nothing is bound to
        // it, and by rule 1 the application does not use it after close.
        unsafe { DomainHandle::free(h) };
        0
    })
}
