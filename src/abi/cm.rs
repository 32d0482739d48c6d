//! Connection management (`rdma/fi_cm.h`).
//!
//! The vtable behind endpoint naming (`fi_getname`/`fi_setname`/`fi_getpeer`),
//! connection setup and teardown on connection-oriented endpoints
//! (`fi_connect`, `fi_listen`, `fi_accept`, `fi_reject`, `fi_shutdown`) and
//! multicast or collective group joins (`fi_join`), plus the multicast
//! group object that a join returns.

use super::*;

/// A joined multicast (or collective) group.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_mc {
    /// Common object header (`FI_CLASS_MC`).
    pub fid: fid,
    /// Address to send to the group with; returned by `fi_mc_addr`.
    pub fi_addr: fi_addr_t,
}

/// Connection-management operations (`ep->cm`, `pep->cm`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cm {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Sets the local address of an endpoint (`fi_setname`).
    pub setname:
        Option<unsafe extern "C" fn(fid: fid_t, addr: *mut c_void, addrlen: usize) -> c_int>,
    /// Reads the local address; `addrlen` is in/out (`fi_getname`).
    pub getname:
        Option<unsafe extern "C" fn(fid: fid_t, addr: *mut c_void, addrlen: *mut usize) -> c_int>,
    /// Reads the connected peer's address (`fi_getpeer`).
    pub getpeer: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, addr: *mut c_void, addrlen: *mut usize) -> c_int,
    >,
    /// Starts a connection to `addr` with optional private data (`fi_connect`).
    pub connect: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            addr: *const c_void,
            param: *const c_void,
            paramlen: usize,
        ) -> c_int,
    >,
    /// Starts listening for connection requests (`fi_listen`).
    pub listen: Option<unsafe extern "C" fn(pep: *mut fid_pep) -> c_int>,
    /// Accepts a connection request on a new endpoint (`fi_accept`).
    pub accept: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, param: *const c_void, paramlen: usize) -> c_int,
    >,
    /// Refuses the connection request identified by `handle` (`fi_reject`).
    pub reject: Option<
        unsafe extern "C" fn(
            pep: *mut fid_pep,
            handle: fid_t,
            param: *const c_void,
            paramlen: usize,
        ) -> c_int,
    >,
    /// Tears down a connection (`fi_shutdown`).
    pub shutdown: Option<unsafe extern "C" fn(ep: *mut fid_ep, flags: u64) -> c_int>,
    /// Joins a multicast or collective group (`fi_join`); newer slot.
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
