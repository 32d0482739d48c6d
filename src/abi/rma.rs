//! Mirror of `rdma/fi_rma.h`.

use super::*;

/// `struct fi_rma_iov`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_rma_iov {
    /// `addr`.
    pub addr: u64,
    /// `len`.
    pub len: usize,
    /// `key`.
    pub key: u64,
}

/// `struct fi_rma_ioc`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_rma_ioc {
    /// `addr`.
    pub addr: u64,
    /// `count`.
    pub count: usize,
    /// `key`.
    pub key: u64,
}

/// `struct fi_msg_rma`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_rma {
    /// `msg_iov`.
    pub msg_iov: *const iovec,
    /// `desc`.
    pub desc: *mut *mut c_void,
    /// `iov_count`.
    pub iov_count: usize,
    /// `addr`.
    pub addr: fi_addr_t,
    /// `rma_iov`.
    pub rma_iov: *const fi_rma_iov,
    /// `rma_iov_count`.
    pub rma_iov_count: usize,
    /// `context`.
    pub context: *mut c_void,
    /// `data`.
    pub data: u64,
}

/// `struct fi_ops_rma`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_rma {
    /// `size`.
    pub size: usize,
    /// `read`.
    pub read: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut c_void,
            len: usize,
            desc: *mut c_void,
            src_addr: fi_addr_t,
            addr: u64,
            key: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `readv`.
    pub readv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: usize,
            src_addr: fi_addr_t,
            addr: u64,
            key: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `readmsg`.
    pub readmsg:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize>,
    /// `write`.
    pub write: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            desc: *mut c_void,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `writev`.
    pub writev: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: usize,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `writemsg`.
    pub writemsg:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize>,
    /// `inject`.
    pub inject: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
        ) -> isize,
    >,
    /// `writedata`.
    pub writedata: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            desc: *mut c_void,
            data: u64,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `injectdata`.
    pub injectdata: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            data: u64,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
        ) -> isize,
    >,
}
