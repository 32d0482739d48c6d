//! `fid_ep` (active endpoints): the handle, its lifecycle (`fi_ops`,
//! `fi_ops_ep`: open, bind, control, options, close), and the tables of its
//! other interfaces: connection management (`cm.rs`), untagged and tagged
//! messages (`msg.rs`, `tagged.rs`, both written by one macro in
//! `data.rs`), RMA (`rma.rs`) and atomics (`atomic.rs`). Collective slots
//! are an `-FI_ENOSYS` table (`nosys_ep.rs`) until a provider implements
//! them; their caps are not advertised.

mod atomic;
pub(crate) use atomic::query_atomic;
mod cm;
mod data;
mod deferred;
mod msg;
mod rma;
pub mod sep;
pub mod stx;
mod tagged;
mod trigger;
pub(crate) use deferred::domain_control;

use crate::boundary::with_handle;
use crate::domain::domain_handle;
use crate::fabric::info_arg;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::object::{BindRef, Handle};
use oxifabric::ops::{Binding, EndpointOps, IoVec, OptValue};
use oxifabric::service::ep_core;
use oxifabric::{core_trace, core_warn};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The Rust side of an active endpoint.
pub struct EpObj {
    pub ops: Arc<dyn EndpointOps>,
    /// Everything bound to it; dropped (unbound) when it closes.
    binds: Mutex<Vec<BindRef>>,
    /// Default flags of operations without a flags argument.
    tx_flags: AtomicU64,
    rx_flags: AtomicU64,
    /// Most iovec entries a send (receive) may carry: the `iov_limit` of
    /// the endpoint's `fi_info`.
    tx_iov_limit: usize,
    rx_iov_limit: usize,
    /// Most remote pieces an RMA operation may name (`rma_iov_limit`).
    rma_iov_limit: usize,
    /// The `addr_format` of its `fi_info` (how long a peer address is).
    addr_format: u32,
    /// For an alias (`fi_ep_alias`): the bind on the endpoint it aliases.
    /// Closing an alias leaves the endpoint alone.
    alias_of: Option<BindRef>,
    /// The halves (`FI_SEND`, `FI_RECV`) of the provider endpoint this
    /// handle binds and enables: both for an endpoint, one for a scalable
    /// endpoint's transmit or receive context (`sep.rs`).
    halves: u64,
    /// A shared transmit context is bound (at most one, `stx.rs`).
    stx_bound: std::sync::atomic::AtomicBool,
    /// Opened with `FI_TRIGGER`: operations may be posted with that flag.
    trigger_cap: bool,
    /// Opened with `FI_COLLECTIVE`: collectives are offered (`coll.rs`).
    pub(crate) coll_cap: bool,
    /// The EQ bound to it (what a collective join reports on).
    eq: Mutex<Option<Arc<oxifabric::service::eq::EventQueue>>>,
    /// Counters holding triggered operations or deferred work of this
    /// endpoint (shared with its aliases): `fi_cancel` and `fi_close` look
    /// there (`trigger.rs`).
    triggered: Arc<Mutex<Vec<std::sync::Weak<oxifabric::service::cntr::Counter>>>>,
    _domain: BindRef,
}

impl EpObj {
    /// The EQ bound to the endpoint, if any.
    pub(crate) fn eq(&self) -> Option<Arc<oxifabric::service::eq::EventQueue>> {
        self.eq.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

pub type EpHandle = Handle<fid_ep, EpObj>;

static EP_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(ep_close),
    bind: Some(ep_bind),
    control: Some(ep_control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static EP_OPS: fi_ops_ep = fi_ops_ep {
    size: core::mem::size_of::<fi_ops_ep>(),
    cancel: Some(ep_cancel),
    getopt: Some(ep_getopt),
    setopt: Some(ep_setopt),
    tx_ctx: Some(crate::nosys::tx_ctx),
    rx_ctx: Some(crate::nosys::rx_ctx),
    rx_size_left: Some(ep_rx_size_left),
    tx_size_left: Some(ep_tx_size_left),
};

/// `fi_endpoint`.
///
/// # Safety
/// The crate's pointer contract: `domain` is NULL or a live fid, `info` is
/// NULL or a valid `fi_info`, `ep` is NULL or writable.
pub unsafe extern "C" fn domain_endpoint(
    domain: *mut fid_domain,
    info: *mut fi_info,
    ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    // SAFETY: forwarded under the same contract.
    unsafe { domain_endpoint2(domain, info, ep, 0, context) }
}

/// `fi_endpoint2`.
///
/// # Safety
/// As for [`domain_endpoint`].
pub unsafe extern "C" fn domain_endpoint2(
    domain: *mut fid_domain,
    info: *mut fi_info,
    ep: *mut *mut fid_ep,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    with_handle!(domain_handle, domain, "fi_endpoint", |d| {
        if ep.is_null() {
            core_warn!(
                FI_LOG_EP_CTRL,
                "fi_endpoint: ep (the result pointer) is NULL"
            );
            return -FI_EINVAL;
        }
        if flags != 0 {
            return -FI_EBADFLAGS;
        }
        // SAFETY: `info` is NULL or a valid fi_info (pointer contract).
        let Some(info) = (unsafe { info_arg(info) }) else {
            core_warn!(FI_LOG_EP_CTRL, "fi_endpoint: info is NULL");
            return -FI_EINVAL;
        };
        match d.inner.ops.endpoint(&info) {
            Ok(ops) => {
                // SAFETY: `info->handle` is NULL or a live fid (pointer
                // contract).
                if let Err(e) = unsafe { inherit_pep_addr(&*ops, &info) } {
                    return e.code();
                }
                if let Some(p) = ops.as_progress() {
                    d.inner.endpoints.add(p);
                }
                let h = new_ep(ops, &info, BindRef::new(&d.binds), context);
                // SAFETY: `ep` is not NULL and writable (pointer contract).
                unsafe { *ep = h };
                0
            }
            Err(e) => e.code(),
        }
    })
}

/// An MSG entry whose `handle` is a passive endpoint (fi_getinfo copies
/// one given in the hints) gives the new endpoint that passive endpoint's
/// address (set by `fi_setname` or `fi_listen`): `fi_getname` reports it
/// and the connection leaves from it, as with upstream's providers. The
/// address is copied now, so the passive endpoint may close before the
/// endpoint connects.
///
/// # Safety
/// `info.handle` is 0 or the address of a live `struct fid`.
unsafe fn inherit_pep_addr(
    ops: &dyn EndpointOps,
    info: &oxifabric::info::Info,
) -> oxifabric::error::Result<()> {
    if info.ep.ep_type != FI_EP_MSG {
        return Ok(());
    }
    // SAFETY: the caller's contract; a handle of another class (a
    // connection request) is None.
    let Some(pep) = (unsafe { crate::pep::pep_handle(info.handle as *const fid) }) else {
        return Ok(());
    };
    ops.setname(&pep.inner.ops.getname()?)
}

/// Wraps a provider endpoint in a C handle.
pub fn new_ep(
    ops: Arc<dyn EndpointOps>,
    info: &oxifabric::info::Info,
    domain: BindRef,
    context: *mut c_void,
) -> *mut fid_ep {
    new_handle(ops, info, domain, context, FI_CLASS_EP, None)
}

/// [`new_ep`] of class `class`: `FI_CLASS_EP`, or a scalable endpoint's
/// `FI_CLASS_TX_CTX`/`FI_CLASS_RX_CTX` (`sep.rs`), whose `alias_of` holds
/// the scalable endpoint (closing the context leaves the provider
/// endpoint to it).
fn new_handle(
    ops: Arc<dyn EndpointOps>,
    info: &oxifabric::info::Info,
    domain: BindRef,
    context: *mut c_void,
    class: c_int,
    alias_of: Option<BindRef>,
) -> *mut fid_ep {
    let c = fid_ep {
        fid: fid {
            fclass: class as usize,
            context,
            ops: &EP_FI_OPS as *const _ as *mut _,
        },
        ops: &EP_OPS as *const _ as *mut _,
        cm: &cm::EP_CM_OPS as *const _ as *mut _,
        msg: &msg::EP_MSG_OPS as *const _ as *mut _,
        rma: &rma::EP_RMA_OPS as *const _ as *mut _,
        tagged: &tagged::EP_TAGGED_OPS as *const _ as *mut _,
        atomic: &atomic::EP_ATOMIC_OPS as *const _ as *mut _,
        collective: &crate::coll::COLLECTIVE_OPS as *const _ as *mut _,
    };
    let obj = EpObj {
        ops,
        binds: Mutex::new(Vec::new()),
        tx_flags: AtomicU64::new(info.tx.op_flags),
        rx_flags: AtomicU64::new(info.rx.op_flags),
        tx_iov_limit: info.tx.iov_limit.min(IoVec::CAP),
        rx_iov_limit: info.rx.iov_limit.min(IoVec::CAP),
        rma_iov_limit: info.tx.rma_iov_limit.min(IoVec::CAP),
        addr_format: info.addr_format,
        halves: match class {
            FI_CLASS_TX_CTX => FI_SEND,
            FI_CLASS_RX_CTX => FI_RECV,
            _ => ep_core::BOTH,
        },
        alias_of,
        stx_bound: Default::default(),
        trigger_cap: info.caps & FI_TRIGGER != 0,
        coll_cap: info.caps & FI_COLLECTIVE != 0,
        eq: Mutex::new(None),
        triggered: Default::default(),
        _domain: domain,
    };
    let ops = obj.ops.clone();
    let p = EpHandle::boxed(c, class, obj);
    if class == FI_CLASS_EP {
        ops.set_fid(p as usize);
    }
    p
}

/// Recovers an endpoint handle.
///
/// # Safety
/// `f` is NULL or points to a live `struct fid` (the crate's pointer
/// contract); class and magic are checked before anything else is read.
pub unsafe fn ep_handle<'a>(f: *const fid) -> Option<&'a EpHandle> {
    // Endpoints, the contexts of scalable endpoints and shared receive
    // contexts are one Rust type.
    [
        FI_CLASS_EP,
        FI_CLASS_TX_CTX,
        FI_CLASS_RX_CTX,
        FI_CLASS_SRX_CTX,
    ]
    .into_iter()
    // SAFETY: forwarded under the same contract.
    .find_map(|class| unsafe { EpHandle::from_fid(f, class) })
}

unsafe extern "C" fn ep_close(f: *mut fid) -> c_int {
    with_handle!(ep_handle, f, "fi_close(ep)", |h| {
        if h.busy() {
            return -FI_EBUSY;
        }
        if h.inner.alias_of.is_none() {
            trigger::close(h);
            h.inner.ops.close();
            // After the provider dropped the receives posted into the
            // collectives' contribution buffers.
            oxifabric::service::coll::drop_ep(oxifabric::service::coll::ep_key(&h.inner.ops));
        }
        // SAFETY: `h` came from EpHandle::boxed and, not busy, is no longer
        // referenced once fi_close returns.
        unsafe { EpHandle::free(h) };
        0
    })
}

const CQ_BIND_FLAGS: u64 = FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION;
const CNTR_BIND_FLAGS: u64 =
    FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

unsafe extern "C" fn ep_bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    with_handle!(ep_handle, f, "fi_ep_bind", |h| {
        // SAFETY: `bfid` is NULL or a live fid (the crate's pointer
        // contract); the lookup checks class and magic.
        if let Some(s) = unsafe { stx::stx_handle(bfid) } {
            return stx::bind(h, s, flags);
        }
        // SAFETY: as for the lookup above.
        let srx = unsafe { EpHandle::from_fid(bfid, FI_CLASS_SRX_CTX) };
        // CQs, counters, AVs and shared receive contexts must come from the
        // endpoint's own domain (fi_endpoint(3)); EQs belong to the fabric.
        // For the four lookups: `bfid` is NULL or a live fid (the crate's
        // pointer contract); each lookup checks class and magic.
        // SAFETY: as said above.
        let (binding, bind, domain) = if let Some(s) = srx {
            if flags != 0 {
                return -FI_EBADFLAGS;
            }
            (
                Binding::Srx(s.inner.ops.clone()),
                BindRef::new(&s.binds),
                Some(&s.inner._domain),
            )
        // SAFETY: as said above.
        } else if let Some(cq) = unsafe { crate::cq::cq_handle(bfid) } {
            if flags & !CQ_BIND_FLAGS != 0 {
                core_warn!(FI_LOG_EP_CTRL, "fi_ep_bind: invalid CQ flags {flags:#x}");
                return -FI_EBADFLAGS;
            }
            (
                Binding::Cq(cq.inner.cq.clone(), flags),
                BindRef::new(&cq.binds),
                Some(cq.inner.domain_ref()),
            )
        // SAFETY: as for the CQ lookup.
        } else if let Some(c) = unsafe { crate::cntr::cntr_handle(bfid) } {
            if flags & !CNTR_BIND_FLAGS != 0 {
                core_warn!(
                    FI_LOG_EP_CTRL,
                    "fi_ep_bind: invalid counter flags {flags:#x}"
                );
                return -FI_EBADFLAGS;
            }
            (
                Binding::Cntr(c.inner.cntr.clone(), flags),
                BindRef::new(&c.binds),
                Some(c.inner.domain_ref()),
            )
        // SAFETY: as for the CQ lookup.
        } else if let Some(eq) = unsafe { crate::eq::eq_handle(bfid) } {
            (
                Binding::Eq(eq.inner.eq.clone()),
                BindRef::new(&eq.binds),
                None,
            )
        // SAFETY: as for the CQ lookup.
        } else if let Some(av) = unsafe { crate::av::av_handle(bfid) } {
            (
                Binding::Av(av.inner.av.clone()),
                BindRef::new(&av.binds),
                Some(av.inner.domain_ref()),
            )
        } else {
            return bad_fid("fi_ep_bind (object to bind)");
        };
        if domain.is_some_and(|d| !d.same_object(&h.inner._domain)) {
            core_warn!(
                FI_LOG_EP_CTRL,
                "fi_ep_bind: the object belongs to another domain"
            );
            return -FI_EINVAL;
        }
        let Some(binding) = ep_core::for_halves(binding, h.inner.halves) else {
            core_warn!(
                FI_LOG_EP_CTRL,
                "fi_ep_bind: flags {flags:#x} name only the other half of this context: nothing bound"
            );
            return 0;
        };
        let eq = match &binding {
            Binding::Eq(q) => Some(q.clone()),
            _ => None,
        };
        match h.inner.ops.bind(binding) {
            Ok(()) => {
                if eq.is_some() {
                    *h.inner.eq.lock().unwrap_or_else(|p| p.into_inner()) = eq;
                }
                h.inner
                    .binds
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(bind);
                0
            }
            Err(e) => e.code(),
        }
    })
}

unsafe extern "C" fn ep_control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    with_handle!(ep_handle, f, "fi_control(ep)", |h| {
        match command {
            FI_ENABLE if h.inner.halves == ep_core::BOTH => rc(h.inner.ops.enable()),
            FI_ENABLE => rc(h.inner.ops.enable_halves(h.inner.halves)),
            FI_ALIAS => {
                // SAFETY: for FI_ALIAS, `arg` is NULL or a `struct fi_alias`
                // (fi_endpoint(3)).
                let Some(a) = (unsafe { (arg as *mut fi_alias).as_mut() }) else {
                    return -FI_EINVAL;
                };
                if a.fid.is_null() {
                    return -FI_EINVAL;
                }
                let dir = a.flags & (FI_TRANSMIT | FI_RECV);
                if dir == 0 {
                    core_warn!(
                        FI_LOG_EP_CTRL,
                        "fi_ep_alias: flags need FI_TRANSMIT and/or FI_RECV"
                    );
                    return -FI_EINVAL;
                }
                let ops_flags = a.flags & !(FI_TRANSMIT | FI_RECV);
                // SAFETY: `f` is our endpoint (checked above), so it is a
                // whole `fid_ep`.
                let this = unsafe { *(f as *const fid_ep) };
                let c = fid_ep {
                    fid: fid {
                        fclass: FI_CLASS_EP as usize,
                        context: this.fid.context,
                        ops: &EP_FI_OPS as *const _ as *mut _,
                    },
                    ..this
                };
                let obj = EpObj {
                    ops: h.inner.ops.clone(),
                    binds: Mutex::new(Vec::new()),
                    tx_flags: AtomicU64::new(if dir & FI_TRANSMIT != 0 {
                        ops_flags
                    } else {
                        h.inner.tx_flags.load(Ordering::Relaxed)
                    }),
                    rx_flags: AtomicU64::new(if dir & FI_RECV != 0 {
                        ops_flags
                    } else {
                        h.inner.rx_flags.load(Ordering::Relaxed)
                    }),
                    tx_iov_limit: h.inner.tx_iov_limit,
                    rx_iov_limit: h.inner.rx_iov_limit,
                    rma_iov_limit: h.inner.rma_iov_limit,
                    addr_format: h.inner.addr_format,
                    halves: h.inner.halves,
                    alias_of: Some(BindRef::new(&h.binds)),
                    stx_bound: Default::default(),
                    trigger_cap: h.inner.trigger_cap,
                    coll_cap: h.inner.coll_cap,
                    eq: Mutex::new(h.inner.eq()),
                    triggered: h.inner.triggered.clone(),
                    _domain: h.inner._domain.again(),
                };
                // SAFETY: `a.fid` is not NULL and points to the caller's
                // result slot (fi_endpoint(3)).
                unsafe { *a.fid = EpHandle::boxed(c, FI_CLASS_EP, obj) as *mut fid };
                0
            }
            FI_GET_FD => {
                // SAFETY: for FI_GET_FD, `arg` is NULL or an `int *` (2.2's
                // fi_control(3)).
                let Some(out) = (unsafe { (arg as *mut c_int).as_mut() }) else {
                    core_warn!(FI_LOG_EP_CTRL, "fi_control(FI_GET_FD): arg is NULL");
                    return -FI_EINVAL;
                };
                match h.inner.ops.socket_fd() {
                    Ok(fd) => {
                        *out = fd;
                        0
                    }
                    Err(oxifabric::error::Error::NoSys) => -FI_ENOSYS,
                    Err(e) => {
                        core_warn!(
                            FI_LOG_EP_CTRL,
                            "fi_control(FI_GET_FD): the endpoint has no connected socket"
                        );
                        e.code()
                    }
                }
            }
            FI_GETOPSFLAG | FI_SETOPSFLAG => {
                // SAFETY: for these commands `arg` is NULL or a `uint64_t *`.
                let Some(flags) = (unsafe { (arg as *mut u64).as_mut() }) else {
                    return -FI_EINVAL;
                };
                let target = match *flags & (FI_TRANSMIT | FI_RECV) {
                    FI_TRANSMIT => &h.inner.tx_flags,
                    FI_RECV => &h.inner.rx_flags,
                    _ => {
                        core_warn!(
                            FI_LOG_EP_CTRL,
                            "fi_control: ops flags need exactly one of FI_TRANSMIT, FI_RECV"
                        );
                        return -FI_EINVAL;
                    }
                };
                let dir = *flags & (FI_TRANSMIT | FI_RECV);
                if command == FI_GETOPSFLAG {
                    *flags = target.load(Ordering::Relaxed) | dir;
                } else {
                    target.store(*flags & !dir, Ordering::Relaxed);
                }
                0
            }
            _ => -FI_ENOSYS,
        }
    })
}

unsafe extern "C" fn ep_cancel(f: fid_t, context: *mut c_void) -> isize {
    with_handle!(ep_handle, f, "fi_cancel", |h| {
        match h.inner.ops.cancel(context as usize) {
            Err(_) if trigger::cancel(h, context as usize) => 0,
            r => rc(r) as isize,
        }
    })
}

unsafe extern "C" fn ep_getopt(
    f: fid_t,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut usize,
) -> c_int {
    with_handle!(ep_handle, f, "fi_getopt", |h| {
        match h.inner.ops.getopt(level, optname) {
            // SAFETY: `optval` and `optlen` are NULL or the caller's
            // buffers (fi_endpoint(3)); `give_opt` checks for NULL.
            Ok(v) => unsafe { give_opt(v, optval, optlen) },
            Err(e) => e.code(),
        }
    })
}

unsafe extern "C" fn ep_setopt(
    f: fid_t,
    level: c_int,
    optname: c_int,
    optval: *const c_void,
    optlen: usize,
) -> c_int {
    with_handle!(ep_handle, f, "fi_setopt", |h| {
        if !OptValue::is_size_option(level, optname) {
            core_trace!(
                FI_LOG_EP_CTRL,
                "fi_setopt: option {optname} of level {level} is not supported"
            );
            return -FI_ENOPROTOOPT;
        }
        if optval.is_null() || optlen < core::mem::size_of::<usize>() {
            return -FI_EINVAL;
        }
        // SAFETY: not NULL and at least a size_t long (checked above).
        let v = unsafe { core::ptr::read_unaligned(optval as *const usize) };
        rc(h.inner.ops.setopt(level, optname, OptValue::Size(v)))
    })
}

unsafe extern "C" fn ep_rx_size_left(ep: *mut fid_ep) -> isize {
    with_handle!(ep_handle, ep, "fi_rx_size_left", |h| rcs(h
        .inner
        .ops
        .rx_size_left()))
}

unsafe extern "C" fn ep_tx_size_left(ep: *mut fid_ep) -> isize {
    with_handle!(ep_handle, ep, "fi_tx_size_left", |h| rcs(h
        .inner
        .ops
        .tx_size_left()))
}

/// Writes an option value for `fi_getopt`, `-FI_ETOOSMALL` (with the size
/// needed in `optlen`) when it does not fit.
///
/// # Safety
/// `optval` is NULL or writable for `*optlen` bytes; `optlen` is NULL or
/// a valid `size_t`.
pub unsafe fn give_opt(v: OptValue, optval: *mut c_void, optlen: *mut usize) -> c_int {
    if optval.is_null() || optlen.is_null() {
        return -FI_EINVAL;
    }
    let OptValue::Size(v) = v;
    let need = core::mem::size_of::<usize>();
    // SAFETY: `optlen` is not NULL and valid (caller's contract).
    let room = unsafe { core::mem::replace(&mut *optlen, need) };
    if room < need {
        return -FI_ETOOSMALL;
    }
    // SAFETY: `optval` has room for a size_t (checked), maybe unaligned.
    unsafe { core::ptr::write_unaligned(optval as *mut usize, v) };
    0
}

/// Copies an address the provider produced to the caller, `-FI_ETOOSMALL`
/// (with the needed size) when it does not fit.
///
/// # Safety
/// `addrlen` is NULL or a valid `size_t`; `addr` is NULL or writable for
/// `*addrlen` bytes.
pub unsafe fn give_addr(a: &[u8], addr: *mut c_void, addrlen: *mut usize) -> c_int {
    if addrlen.is_null() {
        return -FI_EINVAL;
    }
    // SAFETY: not NULL and valid (caller's contract).
    let room = unsafe { core::mem::replace(&mut *addrlen, a.len()) };
    let fits = room >= a.len() && !addr.is_null();
    let n = room.min(a.len());
    if !addr.is_null() && n > 0 {
        // SAFETY: `addr` is writable for `room >= n` bytes (caller's
        // contract); `a` is ours, so the ranges do not overlap.
        unsafe { core::ptr::copy_nonoverlapping(a.as_ptr(), addr as *mut u8, n) };
    }
    if fits {
        0
    } else {
        -FI_ETOOSMALL
    }
}

/// A C byte range as a slice (NULL or empty gives an empty slice).
///
/// # Safety
/// `p` is NULL or readable for `len` bytes that stay unchanged while the
/// slice lives.
pub unsafe fn bytes<'a>(p: *const c_void, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: readable for `len` bytes (caller's contract).
        unsafe { core::slice::from_raw_parts(p as *const u8, len) }
    }
}
