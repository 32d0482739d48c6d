//! Scalable endpoints (`fi_scalable_ep`, fi_endpoint(3) "SCALABLE
//! ENDPOINTS"): the handle, `fi_scalable_ep_bind`, `fi_enable`, its name,
//! and its transmit and receive contexts (`fi_tx_context`,
//! `fi_rx_context`).
//!
//! The provider opens one endpoint per context pair
//! (`DomainOps::scalable_ep`); a context is an ordinary endpoint handle of
//! class `FI_CLASS_TX_CTX` or `FI_CLASS_RX_CTX` over endpoint `k`, so data
//! transfers, CQ and counter binds and options go through the endpoint
//! tables unchanged. The two contexts of a pair are independent objects
//! all the same: each owns one half of the endpoint (`EpObj::halves`),
//! binds only that half's CQs and counters and enables only that half,
//! so a receive context still binds after its transmit context is
//! enabled (MPICH's ch4:ofi does exactly that). The scalable endpoint's own data slots are those
//! tables too, which refuse its class (`-FI_EINVAL`): data moves through
//! the contexts only.

use super::{ep_cancel, ep_getopt, ep_setopt, give_addr, new_handle};
use crate::boundary::with_handle;
use crate::domain::domain_handle;
use crate::fabric::info_arg;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::info::Info;
use oxifabric::object::{BindRef, Handle};
use oxifabric::ops::{Binding, EndpointOps};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The Rust side of a scalable endpoint.
pub struct SepObj {
    /// One provider endpoint per context pair; endpoint 0's address is
    /// the scalable endpoint's.
    eps: Vec<Arc<dyn EndpointOps>>,
    /// Transmit and receive contexts it was opened with.
    ntx: usize,
    nrx: usize,
    /// Per endpoint, the halves whose context is open (`FI_SEND` for the
    /// transmit context, `FI_RECV` for the receive one): `fi_enable`
    /// enables those.
    used: Mutex<Vec<u64>>,
    enabled: AtomicBool,
    info: Info,
    /// The AV and EQ bound to it.
    binds: Mutex<Vec<BindRef>>,
    domain: BindRef,
}

pub type SepHandle = Handle<fid_ep, SepObj>;

static SEP_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(sep_close),
    bind: Some(sep_bind),
    control: Some(sep_control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static SEP_OPS: fi_ops_ep = fi_ops_ep {
    size: core::mem::size_of::<fi_ops_ep>(),
    cancel: Some(ep_cancel),
    getopt: Some(ep_getopt),
    setopt: Some(ep_setopt),
    tx_ctx: Some(sep_tx_ctx),
    rx_ctx: Some(sep_rx_ctx),
    rx_size_left: Some(crate::nosys::size_left),
    tx_size_left: Some(crate::nosys::size_left),
};

crate::nosys::nosys! {
    /// `fi_setname` on a scalable endpoint: its contexts' ports follow
    /// from the one the provider chose at open.
    fn sep_setname(fid_t, *mut c_void, usize) -> c_int = "fi_setname(scalable endpoint)", FI_LOG_EP_CTRL;
}

static SEP_CM_OPS: fi_ops_cm = fi_ops_cm {
    size: core::mem::size_of::<fi_ops_cm>(),
    setname: Some(sep_setname),
    getname: Some(sep_getname),
    getpeer: Some(crate::nosys::getpeer),
    connect: Some(crate::nosys::connect),
    listen: Some(crate::nosys::listen),
    accept: Some(crate::nosys::accept),
    reject: Some(crate::nosys::reject),
    shutdown: Some(crate::nosys::shutdown),
    join: Some(crate::nosys::join),
};

/// `fi_scalable_ep`.
///
/// # Safety
/// The crate's pointer contract: `domain` is NULL or a live fid, `info` is
/// NULL or a valid `fi_info`, `sep` is NULL or writable.
pub unsafe extern "C" fn domain_scalable_ep(
    domain: *mut fid_domain,
    info: *mut fi_info,
    sep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    with_handle!(domain_handle, domain, "fi_scalable_ep", |d| {
        if sep.is_null() {
            core_warn!(FI_LOG_EP_CTRL, "fi_scalable_ep: sep is NULL");
            return -FI_EINVAL;
        }
        // SAFETY: `info` is NULL or a valid fi_info (pointer contract).
        let Some(info) = (unsafe { info_arg(info) }) else {
            core_warn!(FI_LOG_EP_CTRL, "fi_scalable_ep: info is NULL");
            return -FI_EINVAL;
        };
        let eps = match d.inner.ops.scalable_ep(&info) {
            Ok(eps) => eps,
            Err(e) => return e.code(),
        };
        for p in eps.iter().filter_map(|e| e.as_progress()) {
            d.inner.endpoints.add(p);
        }
        let count = |c: usize| if c == 0 { 1 } else { c };
        let c = fid_ep {
            fid: fid {
                fclass: FI_CLASS_SEP as usize,
                context,
                ops: &SEP_FI_OPS as *const _ as *mut _,
            },
            ops: &SEP_OPS as *const _ as *mut _,
            cm: &SEP_CM_OPS as *const _ as *mut _,
            msg: &super::msg::EP_MSG_OPS as *const _ as *mut _,
            rma: &super::rma::EP_RMA_OPS as *const _ as *mut _,
            tagged: &super::tagged::EP_TAGGED_OPS as *const _ as *mut _,
            atomic: &super::atomic::EP_ATOMIC_OPS as *const _ as *mut _,
            collective: &crate::nosys_ep::COLLECTIVE_OPS as *const _ as *mut _,
        };
        let obj = SepObj {
            used: Mutex::new(vec![0; eps.len()]),
            eps,
            ntx: count(info.ep.tx_ctx_cnt),
            nrx: count(info.ep.rx_ctx_cnt),
            enabled: AtomicBool::new(false),
            info,
            binds: Mutex::new(Vec::new()),
            domain: BindRef::new(&d.binds),
        };
        // SAFETY: `sep` is not NULL and writable (pointer contract).
        unsafe { *sep = SepHandle::boxed(c, FI_CLASS_SEP, obj) };
        0
    })
}

/// Recovers a scalable endpoint handle.
///
/// # Safety
/// `f` is NULL or points to a live `struct fid` (the crate's pointer
/// contract); class and magic are checked before anything else is read.
pub unsafe fn sep_handle<'a>(f: *const fid) -> Option<&'a SepHandle> {
    // SAFETY: forwarded under the same contract.
    unsafe { SepHandle::from_fid(f, FI_CLASS_SEP) }
}

unsafe extern "C" fn sep_close(f: *mut fid) -> c_int {
    with_handle!(sep_handle, f, "fi_close(scalable endpoint)", |h| {
        if h.busy() {
            core_warn!(
                FI_LOG_EP_CTRL,
                "fi_close: the scalable endpoint still has contexts open"
            );
            return -FI_EBUSY;
        }
        for ep in &h.inner.eps {
            ep.close();
        }
        // SAFETY: `h` came from SepHandle::boxed and, with no context left,
        // is no longer referenced once fi_close returns.
        unsafe { SepHandle::free(h) };
        0
    })
}

unsafe extern "C" fn sep_bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    with_handle!(sep_handle, f, "fi_scalable_ep_bind", |h| {
        if flags != 0 {
            return -FI_EBADFLAGS;
        }
        // For both lookups: `bfid` is NULL or a live fid (the crate's
        // pointer contract); each lookup checks class and magic.
        // SAFETY: as said above.
        let (binding, bind) = if let Some(av) = unsafe { crate::av::av_handle(bfid) } {
            (Binding::Av(av.inner.av.clone()), BindRef::new(&av.binds))
        // SAFETY: as for the AV lookup.
        } else if let Some(eq) = unsafe { crate::eq::eq_handle(bfid) } {
            (Binding::Eq(eq.inner.eq.clone()), BindRef::new(&eq.binds))
        } else {
            // CQs and counters bind to the contexts.
            return bad_fid("fi_scalable_ep_bind (an AV or EQ)");
        };
        for ep in &h.inner.eps {
            let b = match &binding {
                Binding::Av(av) => Binding::Av(av.clone()),
                Binding::Eq(eq) => Binding::Eq(eq.clone()),
                _ => unreachable!("only AVs and EQs are looked up above"),
            };
            if let Err(e) = ep.bind(b) {
                return e.code();
            }
        }
        h.inner
            .binds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(bind);
        0
    })
}

/// `fi_enable` of the scalable endpoint enables the contexts open at that
/// time (as upstream's sockets provider does); a context opened after it
/// is enabled by its own `fi_enable`. Each context is one half of the
/// endpoint serving its pair, so the other half still binds.
fn enable_used(h: &SepHandle) -> c_int {
    let used = h.inner.used.lock().unwrap_or_else(|p| p.into_inner());
    for (ep, &halves) in h
        .inner
        .eps
        .iter()
        .zip(used.iter())
        .filter(|(_, u)| **u != 0)
    {
        if let Err(e) = ep.enable_halves(halves) {
            return e.code();
        }
    }
    0
}

unsafe extern "C" fn sep_control(f: *mut fid, command: c_int, _arg: *mut c_void) -> c_int {
    with_handle!(sep_handle, f, "fi_control(scalable endpoint)", |h| {
        match command {
            FI_ENABLE => {
                h.inner.enabled.store(true, Ordering::Release);
                enable_used(h)
            }
            _ => -FI_ENOSYS,
        }
    })
}

unsafe extern "C" fn sep_getname(f: fid_t, addr: *mut c_void, addrlen: *mut usize) -> c_int {
    with_handle!(sep_handle, f, "fi_getname(scalable endpoint)", |h| {
        match h.inner.eps[0].getname() {
            // SAFETY: the caller's buffers, NULL-checked by give_addr.
            Ok(a) => unsafe { give_addr(&a, addr, addrlen) },
            Err(e) => e.code(),
        }
    })
}

/// Opens transmit (`FI_CLASS_TX_CTX`) or receive context `index`.
///
/// # Safety
/// The crate's pointer contract for `sep` and `out`; `op_flags` is the
/// context attribute's `op_flags` when the application gave one.
unsafe fn open_ctx(
    sep: *mut fid_ep,
    index: c_int,
    op_flags: Option<u64>,
    out: *mut *mut fid_ep,
    context: *mut c_void,
    class: c_int,
) -> c_int {
    let what = if class == FI_CLASS_TX_CTX {
        "fi_tx_context"
    } else {
        "fi_rx_context"
    };
    with_handle!(sep_handle, sep, what, |h| {
        let n = if class == FI_CLASS_TX_CTX {
            h.inner.ntx
        } else {
            h.inner.nrx
        };
        let Some(k) = usize::try_from(index).ok().filter(|&k| k < n) else {
            core_warn!(
                FI_LOG_EP_CTRL,
                "{what}: index {index}, the scalable endpoint has {n}"
            );
            return -FI_EINVAL;
        };
        if out.is_null() {
            return -FI_EINVAL;
        }
        let mut info = h.inner.info.clone();
        if let Some(f) = op_flags {
            if class == FI_CLASS_TX_CTX {
                info.tx.op_flags = f;
            } else {
                info.rx.op_flags = f;
            }
        }
        let p = new_handle(
            h.inner.eps[k].clone(),
            &info,
            h.inner.domain.again(),
            context,
            class,
            Some(BindRef::new(&h.binds)),
        );
        h.inner.used.lock().unwrap_or_else(|p| p.into_inner())[k] |= if class == FI_CLASS_TX_CTX {
            FI_SEND
        } else {
            FI_RECV
        };
        h.inner.eps[k].serve_context_pair();
        // SAFETY: `out` is not NULL and writable (pointer contract).
        unsafe { *out = p };
        0
    })
}

unsafe extern "C" fn sep_tx_ctx(
    sep: *mut fid_ep,
    index: c_int,
    attr: *mut fi_tx_attr,
    tx_ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    // SAFETY: `attr` is NULL or a readable fi_tx_attr (pointer contract).
    let flags = unsafe { attr.as_ref() }.map(|a| a.op_flags);
    // SAFETY: the caller's contract, forwarded.
    unsafe { open_ctx(sep, index, flags, tx_ep, context, FI_CLASS_TX_CTX) }
}

unsafe extern "C" fn sep_rx_ctx(
    sep: *mut fid_ep,
    index: c_int,
    attr: *mut fi_rx_attr,
    rx_ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    // SAFETY: `attr` is NULL or a readable fi_rx_attr (pointer contract).
    let flags = unsafe { attr.as_ref() }.map(|a| a.op_flags);
    // SAFETY: the caller's contract, forwarded.
    unsafe { open_ctx(sep, index, flags, rx_ep, context, FI_CLASS_RX_CTX) }
}
