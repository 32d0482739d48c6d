//! `fid_ep` (active endpoints): vtables and thunks for `fi_ops`,
//! `fi_ops_ep`, `fi_ops_cm`, `fi_ops_msg` and `fi_ops_tagged`. RMA, atomic
//! and collective slots are `-FI_ENOSYS` tables (`nosys_ep.rs`) until a
//! provider implements them; their caps are not advertised.

use crate::boundary::guard;
use crate::domain::domain_handle;
use crate::fabric::info_arg;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::ops::{Binding, EndpointOps, IoBuf, OptValue, RecvOp, SendOp};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Most iovec entries one call may carry (providers advertise no more).
pub const IOV_MAX: usize = 8;

/// The Rust side of an active endpoint.
pub struct EpObj {
    pub ops: Arc<dyn EndpointOps>,
    /// Everything bound to it; dropped (unbound) when it closes.
    binds: Mutex<Vec<BindRef>>,
    /// Default flags of operations without a flags argument.
    tx_flags: AtomicU64,
    rx_flags: AtomicU64,
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

static EP_CM_OPS: fi_ops_cm = fi_ops_cm {
    size: core::mem::size_of::<fi_ops_cm>(),
    setname: Some(ep_setname),
    getname: Some(ep_getname),
    getpeer: Some(ep_getpeer),
    connect: Some(ep_connect),
    listen: Some(ep_listen),
    accept: Some(ep_accept),
    reject: Some(ep_reject),
    shutdown: Some(ep_shutdown),
    join: Some(ep_join),
};

static EP_MSG_OPS: fi_ops_msg = fi_ops_msg {
    size: core::mem::size_of::<fi_ops_msg>(),
    recv: Some(msg_recv),
    recvv: Some(msg_recvv),
    recvmsg: Some(msg_recvmsg),
    send: Some(msg_send),
    sendv: Some(msg_sendv),
    sendmsg: Some(msg_sendmsg),
    inject: Some(msg_inject),
    senddata: Some(msg_senddata),
    injectdata: Some(msg_injectdata),
};

static EP_TAGGED_OPS: fi_ops_tagged = fi_ops_tagged {
    size: core::mem::size_of::<fi_ops_tagged>(),
    recv: Some(tagged_recv),
    recvv: Some(tagged_recvv),
    recvmsg: Some(tagged_recvmsg),
    send: Some(tagged_send),
    sendv: Some(tagged_sendv),
    sendmsg: Some(tagged_sendmsg),
    inject: Some(tagged_inject),
    senddata: Some(tagged_senddata),
    injectdata: Some(tagged_injectdata),
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
        cm: &EP_CM_OPS as *const _ as *mut _,
        msg: &EP_MSG_OPS as *const _ as *mut _,
        rma: &crate::nosys_ep::RMA_OPS as *const _ as *mut _,
        tagged: &EP_TAGGED_OPS as *const _ as *mut _,
        atomic: &crate::nosys_ep::ATOMIC_OPS as *const _ as *mut _,
        collective: &crate::nosys_ep::COLLECTIVE_OPS as *const _ as *mut _,
    };
    let obj = EpObj {
        ops,
        binds: Mutex::new(Vec::new()),
        tx_flags: AtomicU64::new(info.tx.op_flags),
        rx_flags: AtomicU64::new(info.rx.op_flags),
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

unsafe extern "C" fn ep_setname(f: fid_t, addr: *mut c_void, addrlen: usize) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = ep_handle(f) else {
            return crate::pep::pep_setname(f, addr, addrlen);
        };
        if addr.is_null() || addrlen == 0 {
            return -FI_EINVAL;
        }
        rc(h.inner.ops.setname(bytes(addr, addrlen)))
    })
}

unsafe extern "C" fn ep_getname(f: fid_t, addr: *mut c_void, addrlen: *mut usize) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = ep_handle(f) else {
            return crate::pep::pep_getname(f, addr, addrlen);
        };
        match h.inner.ops.getname() {
            Ok(a) => give_addr(&a, addr, addrlen),
            Err(e) => e.code(),
        }
    })
}

unsafe extern "C" fn ep_getpeer(ep: *mut fid_ep, addr: *mut c_void, addrlen: *mut usize) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = ep_handle(ep as *const fid) else {
            return bad_fid("fi_getpeer");
        };
        match h.inner.ops.getpeer() {
            Ok(a) => give_addr(&a, addr, addrlen),
            Err(e) => e.code(),
        }
    })
}

unsafe extern "C" fn ep_connect(
    ep: *mut fid_ep,
    addr: *const c_void,
    param: *const c_void,
    paramlen: usize,
) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = ep_handle(ep as *const fid) else {
            return bad_fid("fi_connect");
        };
        if addr.is_null() || (param.is_null() && paramlen > 0) {
            return -FI_EINVAL;
        }
        let len = match core::ptr::read_unaligned(addr as *const libc::sa_family_t) as i32 {
            libc::AF_INET => core::mem::size_of::<libc::sockaddr_in>(),
            libc::AF_INET6 => core::mem::size_of::<libc::sockaddr_in6>(),
            _ => {
                core_warn!(FI_LOG_EP_CTRL, "fi_connect: unsupported address family");
                return -FI_EINVAL;
            }
        };
        rc(h.inner
            .ops
            .connect(bytes(addr, len), bytes(param, paramlen)))
    })
}

unsafe extern "C" fn ep_listen(_pep: *mut fid_pep) -> c_int {
    -FI_ENOSYS
}

unsafe extern "C" fn ep_accept(ep: *mut fid_ep, param: *const c_void, paramlen: usize) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = ep_handle(ep as *const fid) else {
            return bad_fid("fi_accept");
        };
        if param.is_null() && paramlen > 0 {
            return -FI_EINVAL;
        }
        rc(h.inner.ops.accept(bytes(param, paramlen)))
    })
}

unsafe extern "C" fn ep_reject(
    _pep: *mut fid_pep,
    _handle: fid_t,
    _param: *const c_void,
    _paramlen: usize,
) -> c_int {
    -FI_ENOSYS
}

unsafe extern "C" fn ep_shutdown(ep: *mut fid_ep, flags: u64) -> c_int {
    guard(-FI_EOTHER, || match ep_handle(ep as *const fid) {
        Some(h) => rc(h.inner.ops.shutdown(flags)),
        None => bad_fid("fi_shutdown"),
    })
}

unsafe extern "C" fn ep_join(
    _ep: *mut fid_ep,
    _addr: *const c_void,
    _flags: u64,
    _mc: *mut *mut fid_mc,
    _context: *mut c_void,
) -> c_int {
    -FI_ENOSYS
}

// ---- data transfer -------------------------------------------------------

/// An iovec list converted at the boundary, without allocating.
struct Iov {
    bufs: [IoBuf; IOV_MAX],
    n: usize,
}

impl Iov {
    unsafe fn one(buf: *const c_void, len: usize) -> Result<Iov, c_int> {
        if buf.is_null() && len > 0 {
            core_warn!(FI_LOG_EP_DATA, "NULL buffer with length {len}");
            return Err(-FI_EINVAL);
        }
        let mut v = Iov {
            bufs: [IoBuf::new(core::ptr::null_mut(), 0); IOV_MAX],
            n: 1,
        };
        v.bufs[0] = IoBuf::new(buf as *mut u8, len);
        Ok(v)
    }

    unsafe fn many(iov: *const iovec, count: usize) -> Result<Iov, c_int> {
        if count > IOV_MAX {
            core_warn!(
                FI_LOG_EP_DATA,
                "iov count {count} exceeds the limit {IOV_MAX}"
            );
            return Err(-FI_EINVAL);
        }
        if iov.is_null() && count > 0 {
            core_warn!(FI_LOG_EP_DATA, "NULL iov with count {count}");
            return Err(-FI_EINVAL);
        }
        let mut v = Iov {
            bufs: [IoBuf::new(core::ptr::null_mut(), 0); IOV_MAX],
            n: count,
        };
        for i in 0..count {
            let e = &*iov.add(i);
            if e.iov_base.is_null() && e.iov_len > 0 {
                core_warn!(FI_LOG_EP_DATA, "NULL iov_base with length {}", e.iov_len);
                return Err(-FI_EINVAL);
            }
            v.bufs[i] = IoBuf::new(e.iov_base as *mut u8, e.iov_len);
        }
        Ok(v)
    }

    fn as_slice(&self) -> &[IoBuf] {
        &self.bufs[..self.n]
    }
}

const SEND_FLAGS: u64 = FI_COMPLETION
    | FI_INJECT
    | FI_INJECT_COMPLETE
    | FI_TRANSMIT_COMPLETE
    | FI_DELIVERY_COMPLETE
    | FI_REMOTE_CQ_DATA
    | FI_MORE
    | FI_FENCE
    | FI_MULTICAST
    | FI_MATCH_COMPLETE;
const RECV_FLAGS: u64 = FI_COMPLETION | FI_MULTI_RECV | FI_MORE | FI_PEEK | FI_CLAIM | FI_DISCARD;

unsafe fn do_send(
    ep: *mut fid_ep,
    iov: Result<Iov, c_int>,
    dest: fi_addr_t,
    context: *mut c_void,
    flags: Option<u64>,
    data: Option<u64>,
    tag: Option<u64>,
) -> isize {
    let Some(h) = ep_handle(ep as *const fid) else {
        return bad_fid("send") as isize;
    };
    let iov = match iov {
        Ok(v) => v,
        Err(e) => return e as isize,
    };
    let flags = match flags {
        Some(f) => {
            if f & !(SEND_FLAGS | oxifabric::ops::OP_NO_COMPLETION) != 0 {
                core_warn!(
                    FI_LOG_EP_DATA,
                    "send: unsupported flags {:#x}",
                    f & !SEND_FLAGS
                );
                return -FI_EBADFLAGS as isize;
            }
            f
        }
        None => h.inner.tx_flags.load(Ordering::Relaxed),
    };
    let op = SendOp {
        iov: iov.as_slice(),
        dest,
        context: context as usize,
        flags,
        data,
        tag,
    };
    rc(h.inner.ops.send(&op)) as isize
}

unsafe fn do_recv(
    ep: *mut fid_ep,
    iov: Result<Iov, c_int>,
    src: fi_addr_t,
    context: *mut c_void,
    flags: Option<u64>,
    tag: Option<(u64, u64)>,
) -> isize {
    let Some(h) = ep_handle(ep as *const fid) else {
        return bad_fid("recv") as isize;
    };
    let iov = match iov {
        Ok(v) => v,
        Err(e) => return e as isize,
    };
    let flags = match flags {
        Some(f) => {
            if f & !RECV_FLAGS != 0 {
                core_warn!(
                    FI_LOG_EP_DATA,
                    "recv: unsupported flags {:#x}",
                    f & !RECV_FLAGS
                );
                return -FI_EBADFLAGS as isize;
            }
            f
        }
        None => h.inner.rx_flags.load(Ordering::Relaxed),
    };
    let op = RecvOp {
        iov: iov.as_slice(),
        src,
        context: context as usize,
        flags,
        tag,
    };
    rc(h.inner.ops.recv(&op)) as isize
}

unsafe extern "C" fn msg_recv(
    ep: *mut fid_ep,
    buf: *mut c_void,
    len: usize,
    _desc: *mut c_void,
    src: fi_addr_t,
    context: *mut c_void,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_recv(ep, Iov::one(buf, len), src, context, None, None)
    })
}

unsafe extern "C" fn msg_recvv(
    ep: *mut fid_ep,
    iov: *const iovec,
    _desc: *mut *mut c_void,
    count: usize,
    src: fi_addr_t,
    context: *mut c_void,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_recv(ep, Iov::many(iov, count), src, context, None, None)
    })
}

unsafe extern "C" fn msg_recvmsg(ep: *mut fid_ep, msg: *const fi_msg, flags: u64) -> isize {
    guard(-FI_EOTHER as isize, || {
        let Some(m) = msg.as_ref() else {
            return -FI_EINVAL as isize;
        };
        do_recv(
            ep,
            Iov::many(m.msg_iov, m.iov_count),
            m.addr,
            m.context,
            Some(flags),
            None,
        )
    })
}

unsafe extern "C" fn msg_send(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    _desc: *mut c_void,
    dest: fi_addr_t,
    context: *mut c_void,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_send(ep, Iov::one(buf, len), dest, context, None, None, None)
    })
}

unsafe extern "C" fn msg_sendv(
    ep: *mut fid_ep,
    iov: *const iovec,
    _desc: *mut *mut c_void,
    count: usize,
    dest: fi_addr_t,
    context: *mut c_void,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_send(ep, Iov::many(iov, count), dest, context, None, None, None)
    })
}

unsafe extern "C" fn msg_sendmsg(ep: *mut fid_ep, msg: *const fi_msg, flags: u64) -> isize {
    guard(-FI_EOTHER as isize, || {
        let Some(m) = msg.as_ref() else {
            return -FI_EINVAL as isize;
        };
        let data = (flags & FI_REMOTE_CQ_DATA != 0).then_some(m.data);
        do_send(
            ep,
            Iov::many(m.msg_iov, m.iov_count),
            m.addr,
            m.context,
            Some(flags & !oxifabric::ops::OP_NO_COMPLETION),
            data,
            None,
        )
    })
}

unsafe extern "C" fn msg_inject(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    dest: fi_addr_t,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_send(
            ep,
            Iov::one(buf, len),
            dest,
            core::ptr::null_mut(),
            Some(FI_INJECT | oxifabric::ops::OP_NO_COMPLETION),
            None,
            None,
        )
    })
}

unsafe extern "C" fn msg_senddata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    _desc: *mut c_void,
    data: u64,
    dest: fi_addr_t,
    context: *mut c_void,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        let Some(h) = ep_handle(ep as *const fid) else {
            return bad_fid("fi_senddata") as isize;
        };
        let flags = h.inner.tx_flags.load(Ordering::Relaxed) | FI_REMOTE_CQ_DATA;
        do_send(
            ep,
            Iov::one(buf, len),
            dest,
            context,
            Some(flags),
            Some(data),
            None,
        )
    })
}

unsafe extern "C" fn msg_injectdata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    data: u64,
    dest: fi_addr_t,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_send(
            ep,
            Iov::one(buf, len),
            dest,
            core::ptr::null_mut(),
            Some(FI_INJECT | FI_REMOTE_CQ_DATA | oxifabric::ops::OP_NO_COMPLETION),
            Some(data),
            None,
        )
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn tagged_recv(
    ep: *mut fid_ep,
    buf: *mut c_void,
    len: usize,
    _desc: *mut c_void,
    src: fi_addr_t,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_recv(
            ep,
            Iov::one(buf, len),
            src,
            context,
            None,
            Some((tag, ignore)),
        )
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn tagged_recvv(
    ep: *mut fid_ep,
    iov: *const iovec,
    _desc: *mut *mut c_void,
    count: usize,
    src: fi_addr_t,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_recv(
            ep,
            Iov::many(iov, count),
            src,
            context,
            None,
            Some((tag, ignore)),
        )
    })
}

unsafe extern "C" fn tagged_recvmsg(
    ep: *mut fid_ep,
    msg: *const fi_msg_tagged,
    flags: u64,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        let Some(m) = msg.as_ref() else {
            return -FI_EINVAL as isize;
        };
        // FI_PEEK may come without buffers; FI_CLAIM reuses the peeked context.
        do_recv(
            ep,
            Iov::many(m.msg_iov, m.iov_count),
            m.addr,
            m.context,
            Some(flags),
            Some((m.tag, m.ignore)),
        )
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn tagged_send(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    _desc: *mut c_void,
    dest: fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_send(ep, Iov::one(buf, len), dest, context, None, None, Some(tag))
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn tagged_sendv(
    ep: *mut fid_ep,
    iov: *const iovec,
    _desc: *mut *mut c_void,
    count: usize,
    dest: fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_send(
            ep,
            Iov::many(iov, count),
            dest,
            context,
            None,
            None,
            Some(tag),
        )
    })
}

unsafe extern "C" fn tagged_sendmsg(
    ep: *mut fid_ep,
    msg: *const fi_msg_tagged,
    flags: u64,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        let Some(m) = msg.as_ref() else {
            return -FI_EINVAL as isize;
        };
        let data = (flags & FI_REMOTE_CQ_DATA != 0).then_some(m.data);
        do_send(
            ep,
            Iov::many(m.msg_iov, m.iov_count),
            m.addr,
            m.context,
            Some(flags & !oxifabric::ops::OP_NO_COMPLETION),
            data,
            Some(m.tag),
        )
    })
}

unsafe extern "C" fn tagged_inject(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    dest: fi_addr_t,
    tag: u64,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_send(
            ep,
            Iov::one(buf, len),
            dest,
            core::ptr::null_mut(),
            Some(FI_INJECT | oxifabric::ops::OP_NO_COMPLETION),
            None,
            Some(tag),
        )
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn tagged_senddata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    _desc: *mut c_void,
    data: u64,
    dest: fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        let Some(h) = ep_handle(ep as *const fid) else {
            return bad_fid("fi_tsenddata") as isize;
        };
        let flags = h.inner.tx_flags.load(Ordering::Relaxed) | FI_REMOTE_CQ_DATA;
        do_send(
            ep,
            Iov::one(buf, len),
            dest,
            context,
            Some(flags),
            Some(data),
            Some(tag),
        )
    })
}

unsafe extern "C" fn tagged_injectdata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    data: u64,
    dest: fi_addr_t,
    tag: u64,
) -> isize {
    guard(-FI_EOTHER as isize, || {
        do_send(
            ep,
            Iov::one(buf, len),
            dest,
            core::ptr::null_mut(),
            Some(FI_INJECT | FI_REMOTE_CQ_DATA | oxifabric::ops::OP_NO_COMPLETION),
            Some(data),
            Some(tag),
        )
    })
}
