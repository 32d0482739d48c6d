//! Mirror of `rdma/fi_cm.h`.

use super::*;

/// `struct fid_mc`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_mc {
    /// `fid`.
    pub fid: fid,
    /// `fi_addr`.
    pub fi_addr: fi_addr_t,
}

/// `struct fi_ops_cm`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cm {
    /// `size`.
    pub size: usize,
    /// `setname`.
    pub setname:
        Option<unsafe extern "C" fn(fid: fid_t, addr: *mut c_void, addrlen: usize) -> c_int>,
    /// `getname`.
    pub getname:
        Option<unsafe extern "C" fn(fid: fid_t, addr: *mut c_void, addrlen: *mut usize) -> c_int>,
    /// `getpeer`.
    pub getpeer: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, addr: *mut c_void, addrlen: *mut usize) -> c_int,
    >,
    /// `connect`.
    pub connect: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            addr: *const c_void,
            param: *const c_void,
            paramlen: usize,
        ) -> c_int,
    >,
    /// `listen`.
    pub listen: Option<unsafe extern "C" fn(pep: *mut fid_pep) -> c_int>,
    /// `accept`.
    pub accept: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, param: *const c_void, paramlen: usize) -> c_int,
    >,
    /// `reject`.
    pub reject: Option<
        unsafe extern "C" fn(
            pep: *mut fid_pep,
            handle: fid_t,
            param: *const c_void,
            paramlen: usize,
        ) -> c_int,
    >,
    /// `shutdown`.
    pub shutdown: Option<unsafe extern "C" fn(ep: *mut fid_ep, flags: u64) -> c_int>,
    /// `join`.
    pub join: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            addr: *const c_void,
            flags: u64,
            mc: *mut *mut fid_mc,
            context: *mut c_void,
        ) -> c_int,
    >,
}
