//! `fid_pep` (passive endpoints): listening for MSG connections.

use crate::boundary::guard;
use crate::ep::{bytes, give_addr};
use crate::fabric::{fabric_handle, info_arg};
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::ops::PassiveEpOps;
use std::sync::{Arc, Mutex};

/// The Rust side of a passive endpoint.
pub struct PepObj {
    pub ops: Arc<dyn PassiveEpOps>,
    eq: Mutex<Option<BindRef>>,
    _fabric: BindRef,
}

pub type PepHandle = Handle<fid_pep, PepObj>;

static PEP_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(pep_close),
    bind: Some(pep_bind),
    control: Some(pep_control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static PEP_OPS: fi_ops_ep = fi_ops_ep {
    size: core::mem::size_of::<fi_ops_ep>(),
    cancel: Some(pep_cancel),
    getopt: Some(pep_getopt),
    setopt: Some(pep_setopt),
    tx_ctx: Some(pep_tx_ctx),
    rx_ctx: Some(pep_rx_ctx),
    rx_size_left: Some(pep_size_left),
    tx_size_left: Some(pep_size_left),
};

static PEP_CM_OPS: fi_ops_cm = fi_ops_cm {
    size: core::mem::size_of::<fi_ops_cm>(),
    setname: Some(pep_setname),
    getname: Some(pep_getname),
    getpeer: Some(pep_getpeer),
    connect: Some(pep_connect),
    listen: Some(pep_listen),
    accept: Some(pep_accept),
    reject: Some(pep_reject),
    shutdown: Some(pep_shutdown),
    join: Some(pep_join),
};

pub unsafe extern "C" fn fabric_passive_ep(
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    pep: *mut *mut fid_pep,
    context: *mut c_void,
) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(fh) = fabric_handle(fabric) else {
            return bad_fid("fi_passive_ep");
        };
        if pep.is_null() {
            return -FI_EINVAL;
        }
        let Some(info) = info_arg(info) else {
            core_warn!(FI_LOG_EP_CTRL, "fi_passive_ep: info is NULL");
            return -FI_EINVAL;
        };
        match fh.inner.ops.passive_ep(&info) {
            Ok(ops) => {
                let c = fid_pep {
                    fid: fid {
                        fclass: FI_CLASS_PEP as usize,
                        context,
                        ops: &PEP_FI_OPS as *const _ as *mut _,
                    },
                    ops: &PEP_OPS as *const _ as *mut _,
                    cm: &PEP_CM_OPS as *const _ as *mut _,
                };
                let obj = PepObj {
                    ops,
                    eq: Mutex::new(None),
                    _fabric: BindRef::new(&fh.binds),
                };
                let ops = obj.ops.clone();
                *pep = PepHandle::boxed(c, FI_CLASS_PEP, obj);
                ops.set_fid(*pep as usize);
                0
            }
            Err(e) => e.code(),
        }
    })
}

unsafe fn pep_handle<'a>(f: *const fid) -> Option<&'a PepHandle> {
    PepHandle::from_fid(f, FI_CLASS_PEP)
}

unsafe extern "C" fn pep_close(f: *mut fid) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = pep_handle(f) else {
            return bad_fid("fi_close(pep)");
        };
        h.inner.ops.close();
        PepHandle::free(h);
        0
    })
}

unsafe extern "C" fn pep_bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = pep_handle(f) else {
            return bad_fid("fi_pep_bind");
        };
        let Some(eq) = crate::eq::eq_handle(bfid) else {
            return bad_fid("fi_pep_bind (a passive endpoint binds only to an EQ)");
        };
        if flags != 0 {
            return -FI_EBADFLAGS;
        }
        match h.inner.ops.bind_eq(eq.inner.eq.clone()) {
            Ok(()) => {
                *h.inner.eq.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(BindRef::new(&eq.binds));
                0
            }
            Err(e) => e.code(),
        }
    })
}

unsafe extern "C" fn pep_control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = pep_handle(f) else {
            return bad_fid("fi_control(pep)");
        };
        match command {
            FI_BACKLOG => match (arg as *const c_int).as_ref() {
                Some(n) => rc(h.inner.ops.set_backlog(*n)),
                None => -FI_EINVAL,
            },
            _ => -FI_ENOSYS,
        }
    })
}

unsafe extern "C" fn pep_cancel(_f: fid_t, _context: *mut c_void) -> isize {
    -FI_ENOSYS as isize
}

/// `fi_getopt` on a passive endpoint (also reached from the active
/// endpoint thunk, which shares the vtable slot type).
pub unsafe extern "C" fn pep_getopt(
    f: fid_t,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut usize,
) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = pep_handle(f) else {
            return bad_fid("fi_getopt");
        };
        if optval.is_null() || optlen.is_null() {
            return -FI_EINVAL;
        }
        if level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE {
            return -FI_ENOPROTOOPT;
        }
        if *optlen < core::mem::size_of::<usize>() {
            *optlen = core::mem::size_of::<usize>();
            return -FI_ETOOSMALL;
        }
        *(optval as *mut usize) = h.inner.ops.cm_data_size();
        *optlen = core::mem::size_of::<usize>();
        0
    })
}

/// `fi_setopt` on a passive endpoint: nothing is settable.
pub unsafe extern "C" fn pep_setopt(
    f: fid_t,
    _level: c_int,
    _optname: c_int,
    _optval: *const c_void,
    _optlen: usize,
) -> c_int {
    guard(-FI_EOTHER, || match pep_handle(f) {
        Some(_) => -FI_ENOPROTOOPT,
        None => bad_fid("fi_setopt"),
    })
}

unsafe extern "C" fn pep_tx_ctx(
    _s: *mut fid_ep,
    _i: c_int,
    _a: *mut fi_tx_attr,
    _e: *mut *mut fid_ep,
    _c: *mut c_void,
) -> c_int {
    -FI_ENOSYS
}
unsafe extern "C" fn pep_rx_ctx(
    _s: *mut fid_ep,
    _i: c_int,
    _a: *mut fi_rx_attr,
    _e: *mut *mut fid_ep,
    _c: *mut c_void,
) -> c_int {
    -FI_ENOSYS
}
unsafe extern "C" fn pep_size_left(_ep: *mut fid_ep) -> isize {
    -FI_ENOSYS as isize
}

/// `fi_setname` on a passive endpoint.
pub unsafe extern "C" fn pep_setname(f: fid_t, addr: *mut c_void, addrlen: usize) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = pep_handle(f) else {
            return bad_fid("fi_setname");
        };
        if addr.is_null() || addrlen == 0 {
            return -FI_EINVAL;
        }
        rc(h.inner.ops.setname(bytes(addr, addrlen)))
    })
}

/// `fi_getname` on a passive endpoint.
pub unsafe extern "C" fn pep_getname(f: fid_t, addr: *mut c_void, addrlen: *mut usize) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = pep_handle(f) else {
            return bad_fid("fi_getname");
        };
        match h.inner.ops.getname() {
            Ok(a) => give_addr(&a, addr, addrlen),
            Err(e) => e.code(),
        }
    })
}

unsafe extern "C" fn pep_getpeer(
    _ep: *mut fid_ep,
    _addr: *mut c_void,
    _addrlen: *mut usize,
) -> c_int {
    -FI_ENOSYS
}
unsafe extern "C" fn pep_connect(
    _ep: *mut fid_ep,
    _addr: *const c_void,
    _param: *const c_void,
    _len: usize,
) -> c_int {
    -FI_ENOSYS
}

unsafe extern "C" fn pep_listen(pep: *mut fid_pep) -> c_int {
    guard(-FI_EOTHER, || match pep_handle(pep as *const fid) {
        Some(h) => rc(h.inner.ops.listen()),
        None => bad_fid("fi_listen"),
    })
}

unsafe extern "C" fn pep_accept(_ep: *mut fid_ep, _param: *const c_void, _len: usize) -> c_int {
    -FI_ENOSYS
}

unsafe extern "C" fn pep_reject(
    pep: *mut fid_pep,
    handle: fid_t,
    param: *const c_void,
    paramlen: usize,
) -> c_int {
    guard(-FI_EOTHER, || {
        let Some(h) = pep_handle(pep as *const fid) else {
            return bad_fid("fi_reject");
        };
        if handle.is_null() || (param.is_null() && paramlen > 0) {
            return -FI_EINVAL;
        }
        rc(h.inner.ops.reject(handle as usize, bytes(param, paramlen)))
    })
}

unsafe extern "C" fn pep_shutdown(_ep: *mut fid_ep, _flags: u64) -> c_int {
    -FI_ENOSYS
}
unsafe extern "C" fn pep_join(
    _ep: *mut fid_ep,
    _a: *const c_void,
    _f: u64,
    _mc: *mut *mut fid_mc,
    _c: *mut c_void,
) -> c_int {
    -FI_ENOSYS
}
