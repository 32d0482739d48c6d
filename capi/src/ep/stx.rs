//! Shared contexts (fi_endpoint(3) "SHARED CONTEXTS"): receive contexts
//! (`fi_srx_context`, at the end: a handle over the provider's context)
//! and transmit contexts (`fi_stx_context`). The man page makes a shared transmit context "mostly
//! opaque to an application": operations are posted to the endpoints,
//! completions go to the endpoints' CQs, and the context has no CQ of its
//! own. What the application can observe are the binding rules, which are
//! enforced here: an endpoint binds one at most and uses a subset of its
//! attributes (`iov_limit`); the context cannot be closed while endpoints
//! are bound to it. As with upstream's sockets provider, an endpoint
//! opened with `tx_ctx_cnt` = `FI_SHARED_CONTEXT` that binds none still
//! transmits. Transmission itself stays with each endpoint (the sockets
//! provider's connections are per endpoint, so there is no transmit ring
//! to share).

use crate::boundary::with_handle;
use crate::domain::domain_handle;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};

/// The Rust side of a shared transmit context.
pub struct StxObj {
    /// Most iovec entries its operations may carry: the endpoints bound to
    /// it must not allow more.
    pub iov_limit: usize,
    _domain: BindRef,
}

pub type StxHandle = Handle<fid_stx, StxObj>;

static STX_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(stx_close),
    bind: Some(crate::nosys::bind),
    control: Some(crate::nosys::control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

/// Nothing is posted to a shared transmit context itself: every slot
/// refuses its class.
static STX_OPS: fi_ops_ep = fi_ops_ep {
    size: core::mem::size_of::<fi_ops_ep>(),
    cancel: Some(crate::nosys::cancel),
    getopt: Some(super::ep_getopt),
    setopt: Some(super::ep_setopt),
    tx_ctx: Some(crate::nosys::tx_ctx),
    rx_ctx: Some(crate::nosys::rx_ctx),
    rx_size_left: Some(crate::nosys::size_left),
    tx_size_left: Some(crate::nosys::size_left),
};

/// `fi_stx_context`.
///
/// # Safety
/// The crate's pointer contract: `domain` is NULL or a live fid, `attr` is
/// NULL or a readable `fi_tx_attr`, `stx` is NULL or writable.
pub unsafe extern "C" fn domain_stx_ctx(
    domain: *mut fid_domain,
    attr: *mut fi_tx_attr,
    stx: *mut *mut fid_stx,
    context: *mut c_void,
) -> c_int {
    with_handle!(domain_handle, domain, "fi_stx_context", |d| {
        // SAFETY: `attr` is NULL or readable (pointer contract).
        let given = unsafe { attr.as_ref() }.map(|a| a.iov_limit);
        let iov_limit = match check_open(
            "fi_stx_context",
            stx.is_null(),
            d.inner.info.domain.max_ep_stx_ctx,
            given,
            d.inner.info.tx.iov_limit,
        ) {
            Ok(n) => n,
            Err(e) => return e,
        };
        let c = fid_stx {
            fid: fid {
                fclass: FI_CLASS_STX_CTX as usize,
                context,
                ops: &STX_FI_OPS as *const _ as *mut _,
            },
            ops: &STX_OPS as *const _ as *mut _,
        };
        let obj = StxObj {
            iov_limit,
            _domain: BindRef::new(&d.binds),
        };
        // SAFETY: `stx` is not NULL and writable (pointer contract).
        unsafe { *stx = StxHandle::boxed(c, FI_CLASS_STX_CTX, obj) };
        0
    })
}

/// Recovers a shared transmit context handle.
///
/// # Safety
/// `f` is NULL or points to a live `struct fid` (the crate's pointer
/// contract); class and magic are checked before anything else is read.
pub unsafe fn stx_handle<'a>(f: *const fid) -> Option<&'a StxHandle> {
    // SAFETY: forwarded under the same contract.
    unsafe { StxHandle::from_fid(f, FI_CLASS_STX_CTX) }
}

unsafe extern "C" fn stx_close(f: *mut fid) -> c_int {
    with_handle!(stx_handle, f, "fi_close(stx)", |h| {
        if h.busy() {
            core_warn!(
                FI_LOG_EP_CTRL,
                "fi_close: endpoints are still bound to the shared transmit context"
            );
            return -FI_EBUSY;
        }
        // SAFETY: `h` came from StxHandle::boxed and, with nothing bound,
        // is no longer referenced once fi_close returns.
        unsafe { StxHandle::free(h) };
        0
    })
}

/// `fi_ep_bind` of a shared transmit context to endpoint `h`.
pub(super) fn bind(h: &super::EpHandle, s: &StxHandle, flags: u64) -> c_int {
    if flags != 0 {
        return -FI_EBADFLAGS;
    }
    if h.inner.tx_iov_limit > s.inner.iov_limit {
        core_warn!(
            FI_LOG_EP_CTRL,
            "fi_ep_bind: the endpoint's iov_limit {} exceeds the shared transmit context's {}",
            h.inner.tx_iov_limit,
            s.inner.iov_limit
        );
        return -FI_EINVAL;
    }
    if h.inner
        .stx_bound
        .swap(true, std::sync::atomic::Ordering::AcqRel)
    {
        core_warn!(
            FI_LOG_EP_CTRL,
            "fi_ep_bind: a shared transmit context is already bound"
        );
        return -FI_EINVAL;
    }
    h.inner
        .binds
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(BindRef::new(&s.binds));
    0
}

/// `fi_srx_context`: a shared receive context, an endpoint handle of class
/// `FI_CLASS_SRX_CTX` over the provider's context (`fi_recv` and the other
/// receive calls, `fi_cancel`, options; endpoints bind it with
/// `fi_ep_bind`, and it is not closed while they are bound).
///
/// # Safety
/// The crate's pointer contract: `domain` is NULL or a live fid, `attr` is
/// NULL or a readable `fi_rx_attr`, `rx_ep` is NULL or writable.
pub unsafe extern "C" fn domain_srx_ctx(
    domain: *mut fid_domain,
    attr: *mut fi_rx_attr,
    rx_ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    with_handle!(domain_handle, domain, "fi_srx_context", |d| {
        let mut info = d.inner.info.clone();
        // SAFETY: `attr` is NULL or readable (pointer contract).
        let attr = unsafe { attr.as_ref() };
        info.rx.iov_limit = match check_open(
            "fi_srx_context",
            rx_ep.is_null(),
            d.inner.info.domain.max_ep_srx_ctx,
            attr.map(|a| a.iov_limit),
            info.rx.iov_limit,
        ) {
            Ok(n) => n,
            Err(e) => return e,
        };
        if let Some(a) = attr {
            info.rx.op_flags = a.op_flags;
            // The queue depth asked for (the domain's when 0).
            if a.size != 0 {
                info.rx.size = a.size;
            }
        }
        match d.inner.ops.srx_context(&info.rx) {
            Ok(ops) => {
                let p = super::new_handle(
                    ops,
                    &info,
                    BindRef::new(&d.binds),
                    context,
                    FI_CLASS_SRX_CTX,
                    None,
                );
                // SAFETY: `rx_ep` is not NULL and writable (pointer contract).
                unsafe { *rx_ep = p };
                0
            }
            Err(e) => e.code(),
        }
    })
}

/// What opening a shared context checks: the result pointer (`-FI_EINVAL`
/// when NULL), that the domain offers such contexts (`offered`, its
/// `max_ep_stx_ctx`/`max_ep_srx_ctx`; `-FI_ENOSYS` when 0), and the
/// attribute's `iov_limit` against the domain's `most` (`-FI_EINVAL` above
/// it). Returns the context's iov_limit (the domain's when none is given).
fn check_open(
    what: &str,
    out_null: bool,
    offered: usize,
    given: Option<usize>,
    most: usize,
) -> Result<usize, c_int> {
    if out_null {
        core_warn!(FI_LOG_EP_CTRL, "{what}: the result pointer is NULL");
        return Err(-FI_EINVAL);
    }
    if offered == 0 {
        core_warn!(
            FI_LOG_EP_CTRL,
            "{what}: the domain has no such shared contexts"
        );
        return Err(-FI_ENOSYS);
    }
    match given {
        Some(n) if n > most => {
            core_warn!(
                FI_LOG_EP_CTRL,
                "{what}: iov_limit {n} exceeds the domain's {most}"
            );
            Err(-FI_EINVAL)
        }
        Some(n) if n != 0 => Ok(n),
        _ => Ok(most),
    }
}
