//! `fi_ops_cm` of active endpoints: names, `fi_connect`, `fi_accept`,
//! `fi_shutdown`, and joining a collective group (`coll.rs`). Listening
//! and rejecting are not active-endpoint operations (passive endpoints
//! have their own table, `pep.rs`); their slots here are the shared
//! `-FI_ENOSYS` stubs.

use super::{bytes, ep_handle, give_addr};
use crate::boundary::with_handle;
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
    listen: Some(crate::nosys::listen),
    accept: Some(ep_accept),
    reject: Some(crate::nosys::reject),
    shutdown: Some(ep_shutdown),
    join: Some(crate::coll::ep_join),
};

unsafe extern "C" fn ep_setname(f: fid_t, addr: *mut c_void, addrlen: usize) -> c_int {
    with_handle!(ep_handle, f, "fi_setname", |h| {
        if addr.is_null() || addrlen == 0 {
            return -FI_EINVAL;
        }
        // SAFETY: `addr` is readable for `addrlen` bytes (fi_cm(3)).
        rc(h.inner.ops.setname(unsafe { bytes(addr, addrlen) }))
    })
}

unsafe extern "C" fn ep_getname(f: fid_t, addr: *mut c_void, addrlen: *mut usize) -> c_int {
    with_handle!(ep_handle, f, "fi_getname", |h| {
        match h.inner.ops.getname() {
            // SAFETY: the caller's buffers, NULL-checked by give_addr.
            Ok(a) => unsafe { give_addr(&a, addr, addrlen) },
            Err(e) => e.code(),
        }
    })
}

unsafe extern "C" fn ep_getpeer(ep: *mut fid_ep, addr: *mut c_void, addrlen: *mut usize) -> c_int {
    with_handle!(ep_handle, ep, "fi_getpeer", |h| {
        match h.inner.ops.getpeer() {
            // SAFETY: the caller's buffers, NULL-checked by give_addr.
            Ok(a) => unsafe { give_addr(&a, addr, addrlen) },
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
    with_handle!(ep_handle, ep, "fi_connect", |h| {
        if addr.is_null() || (param.is_null() && paramlen > 0) {
            return -FI_EINVAL;
        }
        let format = AddrFormat(h.inner.addr_format);
        // SAFETY: `addr` is a whole address of the endpoint's format
        // (fi_cm(3)); `len_at` reads no further than that format needs.
        let Some(len) = (unsafe { format.len_at(addr as *const u8) }) else {
            core_warn!(
                FI_LOG_EP_CTRL,
                "fi_connect: not an address of the endpoint's format {}",
                h.inner.addr_format
            );
            return -FI_EINVAL;
        };
        // SAFETY: `addr` holds `len` bytes (above); `param` is readable
        // for `paramlen` bytes (fi_cm(3)).
        let (a, p) = unsafe { (bytes(addr, len), bytes(param, paramlen)) };
        rc(h.inner.ops.connect(a, p))
    })
}

unsafe extern "C" fn ep_accept(ep: *mut fid_ep, param: *const c_void, paramlen: usize) -> c_int {
    with_handle!(ep_handle, ep, "fi_accept", |h| {
        if param.is_null() && paramlen > 0 {
            return -FI_EINVAL;
        }
        // SAFETY: `param` is readable for `paramlen` bytes (fi_cm(3)).
        rc(h.inner.ops.accept(unsafe { bytes(param, paramlen) }))
    })
}

unsafe extern "C" fn ep_shutdown(ep: *mut fid_ep, flags: u64) -> c_int {
    with_handle!(ep_handle, ep, "fi_shutdown", |h| rc(h
        .inner
        .ops
        .shutdown(flags)))
}
