//! `fi_ops_cm` of active endpoints: names, `fi_connect`, `fi_accept`,
//! `fi_shutdown`. Listening and rejecting belong to passive endpoints
//! (`pep.rs`); their slots here answer `-FI_ENOSYS`.

use super::{bytes, ep_handle, give_addr};
use crate::boundary::guard;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::service::addr_format::AddrFormat;

pub(super) static EP_CM_OPS: fi_ops_cm = fi_ops_cm {
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
        let Some(len) = AddrFormat(h.inner.addr_format).len_at(addr as *const u8) else {
            core_warn!(
                FI_LOG_EP_CTRL,
                "fi_connect: not an address of the endpoint's format {}",
                h.inner.addr_format
            );
            return -FI_EINVAL;
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
