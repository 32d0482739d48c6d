//! `fid_pep` (passive endpoints): listening for MSG connections. Slots
//! that are not passive-endpoint operations are the shared `-FI_ENOSYS`
//! stubs.

use crate::boundary::with_handle;
use crate::ep::{bytes, give_addr, give_opt};
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
    cancel: Some(crate::nosys::cancel),
    getopt: Some(pep_getopt),
    setopt: Some(pep_setopt),
    tx_ctx: Some(crate::nosys::tx_ctx),
    rx_ctx: Some(crate::nosys::rx_ctx),
    rx_size_left: Some(crate::nosys::size_left),
    tx_size_left: Some(crate::nosys::size_left),
};

static PEP_CM_OPS: fi_ops_cm = fi_ops_cm {
    size: core::mem::size_of::<fi_ops_cm>(),
    setname: Some(pep_setname),
    getname: Some(pep_getname),
    getpeer: Some(crate::nosys::getpeer),
    connect: Some(crate::nosys::connect),
    listen: Some(pep_listen),
    accept: Some(crate::nosys::accept),
    reject: Some(pep_reject),
    shutdown: Some(crate::nosys::shutdown),
    join: Some(crate::nosys::join),
};

/// `fi_passive_ep`.
///
/// # Safety
/// The crate's pointer contract: `fabric` is NULL or a live fid, `info`
/// NULL or a valid `fi_info`, `pep` NULL or writable.
pub unsafe extern "C" fn fabric_passive_ep(
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    pep: *mut *mut fid_pep,
    context: *mut c_void,
) -> c_int {
    with_handle!(fabric_handle, fabric, "fi_passive_ep", |fh| {
        if pep.is_null() {
            return -FI_EINVAL;
        }
        // SAFETY: `info` is NULL or a valid fi_info (pointer contract).
        let Some(info) = (unsafe { info_arg(info) }) else {
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
                let h = PepHandle::boxed(c, FI_CLASS_PEP, obj);
                // SAFETY: `pep` is not NULL and writable (pointer contract).
                unsafe { *pep = h };
                ops.set_fid(h as usize);
                0
            }
            Err(e) => e.code(),
        }
    })
}

/// Recovers a passive endpoint handle.
///
/// # Safety
/// `f` is NULL or points to a live `struct fid`.
pub(crate) unsafe fn pep_handle<'a>(f: *const fid) -> Option<&'a PepHandle> {
    // SAFETY: forwarded under the same contract.
    unsafe { PepHandle::from_fid(f, FI_CLASS_PEP) }
}

unsafe extern "C" fn pep_close(f: *mut fid) -> c_int {
    with_handle!(pep_handle, f, "fi_close(pep)", |h| {
        h.inner.ops.close();
        // SAFETY: `h` came from PepHandle::boxed; nothing refers to it
        // once fi_close returns.
        unsafe { PepHandle::free(h) };
        0
    })
}

unsafe extern "C" fn pep_bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    with_handle!(pep_handle, f, "fi_pep_bind", |h| {
        // SAFETY: `bfid` is NULL or a live fid; the lookup checks it.
        let Some(eq) = (unsafe { crate::eq::eq_handle(bfid) }) else {
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
    with_handle!(pep_handle, f, "fi_control(pep)", |h| {
        match command {
            // SAFETY: for FI_BACKLOG, `arg` is NULL or an `int *`.
            FI_BACKLOG => match unsafe { (arg as *const c_int).as_ref() } {
                Some(n) => rc(h.inner.ops.set_backlog(*n)),
                None => -FI_EINVAL,
            },
            _ => -FI_ENOSYS,
        }
    })
}

/// `fi_getopt` on a passive endpoint: `FI_OPT_CM_DATA_SIZE` only.
unsafe extern "C" fn pep_getopt(
    f: fid_t,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut usize,
) -> c_int {
    with_handle!(pep_handle, f, "fi_getopt", |h| {
        if optval.is_null() || optlen.is_null() {
            return -FI_EINVAL;
        }
        if level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE {
            return -FI_ENOPROTOOPT;
        }
        let v = oxifabric::ops::OptValue::Size(h.inner.ops.cm_data_size());
        // SAFETY: the caller's buffers (fi_endpoint(3)), checked above.
        unsafe { give_opt(v, optval, optlen) }
    })
}

/// `fi_setopt` on a passive endpoint: nothing is settable.
unsafe extern "C" fn pep_setopt(
    f: fid_t,
    _level: c_int,
    _optname: c_int,
    _optval: *const c_void,
    _optlen: usize,
) -> c_int {
    with_handle!(pep_handle, f, "fi_setopt", |_h| -FI_ENOPROTOOPT)
}

/// `fi_setname` on a passive endpoint.
unsafe extern "C" fn pep_setname(f: fid_t, addr: *mut c_void, addrlen: usize) -> c_int {
    with_handle!(pep_handle, f, "fi_setname", |h| {
        if addr.is_null() || addrlen == 0 {
            return -FI_EINVAL;
        }
        // SAFETY: `addr` is readable for `addrlen` bytes (fi_cm(3)).
        rc(h.inner.ops.setname(unsafe { bytes(addr, addrlen) }))
    })
}

/// `fi_getname` on a passive endpoint.
unsafe extern "C" fn pep_getname(f: fid_t, addr: *mut c_void, addrlen: *mut usize) -> c_int {
    with_handle!(pep_handle, f, "fi_getname", |h| {
        match h.inner.ops.getname() {
            // SAFETY: the caller's buffers, NULL-checked by give_addr.
            Ok(a) => unsafe { give_addr(&a, addr, addrlen) },
            Err(e) => e.code(),
        }
    })
}

unsafe extern "C" fn pep_listen(pep: *mut fid_pep) -> c_int {
    with_handle!(pep_handle, pep, "fi_listen", |h| rc(h.inner.ops.listen()))
}

unsafe extern "C" fn pep_reject(
    pep: *mut fid_pep,
    handle: fid_t,
    param: *const c_void,
    paramlen: usize,
) -> c_int {
    with_handle!(pep_handle, pep, "fi_reject", |h| {
        if handle.is_null() || (param.is_null() && paramlen > 0) {
            return -FI_EINVAL;
        }
        // SAFETY: `param` is readable for `paramlen` bytes (fi_cm(3)).
        let data = unsafe { bytes(param, paramlen) };
        rc(h.inner.ops.reject(handle as usize, data))
    })
}
