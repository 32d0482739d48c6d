//! `fid_ep` (active endpoints): the handle, its lifecycle (`fi_ops`,
//! `fi_ops_ep`: open, bind, control, options, close), and the tables of its
//! other interfaces: connection management (`cm.rs`), untagged and tagged
//! messages (`msg.rs`, `tagged.rs`, both written by one macro in
//! `data.rs`). RMA, atomic and collective slots are `-FI_ENOSYS` tables
//! (`nosys_ep.rs`) until a provider implements them; their caps are not
//! advertised.

mod cm;
mod data;
mod msg;
mod tagged;

use crate::boundary::guard;
use crate::domain::domain_handle;
use crate::fabric::info_arg;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::ops::{Binding, EndpointOps, IoVec, OptValue};
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
    /// The `addr_format` of its `fi_info` (how long a peer address is).
    addr_format: u32,
    /// For an alias (`fi_ep_alias`): the bind on the endpoint it aliases.
    /// Closing an alias leaves the endpoint alone.
    alias_of: Option<BindRef>,
    _domain: BindRef,
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
    tx_ctx: Some(ep_tx_ctx),
    rx_ctx: Some(ep_rx_ctx),
    rx_size_left: Some(ep_rx_size_left),
    tx_size_left: Some(ep_tx_size_left),
};

pub unsafe extern "C" fn domain_endpoint(
    domain: *mut fid_domain,
    info: *mut fi_info,
    ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    domain_endpoint2(domain, info, ep, 0, context)
}

pub unsafe extern "C" fn domain_endpoint2(
    domain: *mut fid_domain,
    info: *mut fi_info,
    ep: *mut *mut fid_ep,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(d) = domain_handle(domain) else {
            return bad_fid("fi_endpoint");
        };
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
        let Some(info) = info_arg(info) else {
            core_warn!(FI_LOG_EP_CTRL, "fi_endpoint: info is NULL");
            return -FI_EINVAL;
        };
        match d.inner.ops.endpoint(&info) {
            Ok(ops) => {
                *ep = new_ep(ops, &info, BindRef::new(&d.binds), context);
                0
            }
            Err(e) => e.code(),
        }
    })
}

/// Wraps a provider endpoint in a C handle.
pub fn new_ep(
    ops: Arc<dyn EndpointOps>,
    info: &oxifabric::info::Info,
    domain: BindRef,
    context: *mut c_void,
) -> *mut fid_ep {
    let c = fid_ep {
        fid: fid {
            fclass: FI_CLASS_EP as usize,
            context,
            ops: &EP_FI_OPS as *const _ as *mut _,
        },
        ops: &EP_OPS as *const _ as *mut _,
        cm: &cm::EP_CM_OPS as *const _ as *mut _,
        msg: &msg::EP_MSG_OPS as *const _ as *mut _,
        rma: &crate::nosys_ep::RMA_OPS as *const _ as *mut _,
        tagged: &tagged::EP_TAGGED_OPS as *const _ as *mut _,
        atomic: &crate::nosys_ep::ATOMIC_OPS as *const _ as *mut _,
        collective: &crate::nosys_ep::COLLECTIVE_OPS as *const _ as *mut _,
    };
    let obj = EpObj {
        ops,
        binds: Mutex::new(Vec::new()),
        tx_flags: AtomicU64::new(info.tx.op_flags),
        rx_flags: AtomicU64::new(info.rx.op_flags),
        tx_iov_limit: info.tx.iov_limit.min(IoVec::CAP),
        rx_iov_limit: info.rx.iov_limit.min(IoVec::CAP),
        addr_format: info.addr_format,
        alias_of: None,
        _domain: domain,
    };
    let ops = obj.ops.clone();
    let p = EpHandle::boxed(c, FI_CLASS_EP, obj);
    ops.set_fid(p as usize);
    p
}

/// Recovers an endpoint handle.
pub unsafe fn ep_handle<'a>(f: *const fid) -> Option<&'a EpHandle> {
    EpHandle::from_fid(f, FI_CLASS_EP)
}

unsafe extern "C" fn ep_close(f: *mut fid) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = ep_handle(f) else {
            return bad_fid("fi_close(ep)");
        };
        if h.busy() {
            return -FI_EBUSY;
        }
        if h.inner.alias_of.is_none() {
            h.inner.ops.close();
        }
        EpHandle::free(h);
        0
    })
}

const CQ_BIND_FLAGS: u64 = FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION;
const CNTR_BIND_FLAGS: u64 =
    FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

unsafe extern "C" fn ep_bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = ep_handle(f) else {
            return bad_fid("fi_ep_bind");
        };
        let (binding, bind) = if let Some(cq) = crate::cq::cq_handle(bfid) {
            if flags & !CQ_BIND_FLAGS != 0 {
                core_warn!(FI_LOG_EP_CTRL, "fi_ep_bind: invalid CQ flags {flags:#x}");
                return -FI_EBADFLAGS;
            }
            (
                Binding::Cq(cq.inner.cq.clone(), flags),
                BindRef::new(&cq.binds),
            )
        } else if let Some(c) = crate::cntr::cntr_handle(bfid) {
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
            )
        } else if let Some(eq) = crate::eq::eq_handle(bfid) {
            (Binding::Eq(eq.inner.eq.clone()), BindRef::new(&eq.binds))
        } else if let Some(av) = crate::av::av_handle(bfid) {
            (Binding::Av(av.inner.av.clone()), BindRef::new(&av.binds))
        } else {
            return bad_fid("fi_ep_bind (object to bind)");
        };
        match h.inner.ops.bind(binding) {
            Ok(()) => {
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
    guard(-FI_EOTHER, || {
        let Some(h) = ep_handle(f) else {
            return bad_fid("fi_control(ep)");
        };
        match command {
            FI_ENABLE => rc(h.inner.ops.enable()),
            FI_ALIAS => {
                let Some(a) = (arg as *mut fi_alias).as_mut() else {
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
                let c = fid_ep {
                    fid: fid {
                        fclass: FI_CLASS_EP as usize,
                        context: (*f).context,
                        ops: &EP_FI_OPS as *const _ as *mut _,
                    },
                    ..*(f as *const fid_ep)
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
                    addr_format: h.inner.addr_format,
                    alias_of: Some(BindRef::new(&h.binds)),
                    _domain: h.inner._domain.again(),
                };
                *a.fid = EpHandle::boxed(c, FI_CLASS_EP, obj) as *mut fid;
                0
            }
            FI_GETOPSFLAG | FI_SETOPSFLAG => {
                let Some(flags) = (arg as *mut u64).as_mut() else {
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
    guard(-FI_EOTHER as isize, || match ep_handle(f) {
        Some(h) => rc(h.inner.ops.cancel(context as usize)) as isize,
        None => bad_fid("fi_cancel") as isize,
    })
}

unsafe extern "C" fn ep_getopt(
    f: fid_t,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut usize,
) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = ep_handle(f) else {
            return crate::pep::pep_getopt(f, level, optname, optval, optlen);
        };
        if optval.is_null() || optlen.is_null() {
            return -FI_EINVAL;
        }
        match h.inner.ops.getopt(level, optname) {
            Ok(OptValue::Size(v)) => {
                if *optlen < core::mem::size_of::<usize>() {
                    *optlen = core::mem::size_of::<usize>();
                    return -FI_ETOOSMALL;
                }
                *(optval as *mut usize) = v;
                *optlen = core::mem::size_of::<usize>();
                0
            }
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
    guard(-FI_EOTHER, || {
        let Some(h) = ep_handle(f) else {
            return crate::pep::pep_setopt(f, level, optname, optval, optlen);
        };
        if optval.is_null() || optlen < core::mem::size_of::<usize>() {
            return -FI_EINVAL;
        }
        rc(h.inner
            .ops
            .setopt(level, optname, OptValue::Size(*(optval as *const usize))))
    })
}

unsafe extern "C" fn ep_tx_ctx(
    _sep: *mut fid_ep,
    _index: c_int,
    _attr: *mut fi_tx_attr,
    _tx_ep: *mut *mut fid_ep,
    _context: *mut c_void,
) -> c_int {
    -FI_ENOSYS
}

unsafe extern "C" fn ep_rx_ctx(
    _sep: *mut fid_ep,
    _index: c_int,
    _attr: *mut fi_rx_attr,
    _rx_ep: *mut *mut fid_ep,
    _context: *mut c_void,
) -> c_int {
    -FI_ENOSYS
}

unsafe extern "C" fn ep_rx_size_left(ep: *mut fid_ep) -> isize {
    guard(-FI_EOTHER as isize, || match ep_handle(ep as *const fid) {
        Some(h) => rcs(h.inner.ops.rx_size_left()),
        None => bad_fid("fi_rx_size_left") as isize,
    })
}

unsafe extern "C" fn ep_tx_size_left(ep: *mut fid_ep) -> isize {
    guard(-FI_EOTHER as isize, || match ep_handle(ep as *const fid) {
        Some(h) => rcs(h.inner.ops.tx_size_left()),
        None => bad_fid("fi_tx_size_left") as isize,
    })
}

/// Copies an address the provider produced to the caller, `-FI_ETOOSMALL`
/// (with the needed size) when it does not fit.
pub unsafe fn give_addr(a: &[u8], addr: *mut c_void, addrlen: *mut usize) -> c_int {
    if addrlen.is_null() {
        return -FI_EINVAL;
    }
    let room = *addrlen;
    *addrlen = a.len();
    if room < a.len() || addr.is_null() {
        if !addr.is_null() && room > 0 {
            core::ptr::copy_nonoverlapping(a.as_ptr(), addr as *mut u8, room);
        }
        return -FI_ETOOSMALL;
    }
    core::ptr::copy_nonoverlapping(a.as_ptr(), addr as *mut u8, a.len());
    0
}

/// A C byte range as a slice (NULL or empty gives an empty slice).
pub unsafe fn bytes<'a>(p: *const c_void, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        core::slice::from_raw_parts(p as *const u8, len)
    }
}
