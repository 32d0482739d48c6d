//! Mirror of `rdma/fi_tagged.h`.

use super::*;

/// `struct fi_msg_tagged`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_tagged {
    /// `msg_iov`.
    pub msg_iov: *const iovec,
    /// `desc`.
    pub desc: *mut *mut c_void,
    /// `iov_count`.
    pub iov_count: usize,
    /// `addr`.
    pub addr: fi_addr_t,
    /// `tag`.
    pub tag: u64,
    /// `ignore`.
    pub ignore: u64,
    /// `context`.
    pub context: *mut c_void,
    /// `data`.
    pub data: u64,
}

/// `struct fi_ops_tagged`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_tagged {
    /// `size`.
    pub size: usize,
    /// `recv`.
    pub recv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut c_void,
            len: usize,
            desc: *mut c_void,
            src_addr: fi_addr_t,
            tag: u64,
            ignore: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `recvv`.
    pub recvv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: usize,
            src_addr: fi_addr_t,
            tag: u64,
            ignore: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `recvmsg`.
    pub recvmsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_tagged, flags: u64) -> isize,
    >,
    /// `send`.
    pub send: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            desc: *mut c_void,
            dest_addr: fi_addr_t,
            tag: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `sendv`.
    pub sendv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: usize,
            dest_addr: fi_addr_t,
            tag: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `sendmsg`.
    pub sendmsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_tagged, flags: u64) -> isize,
    >,
    /// `inject`.
    pub inject: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            dest_addr: fi_addr_t,
            tag: u64,
        ) -> isize,
    >,
    /// `senddata`.
    pub senddata: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            desc: *mut c_void,
            data: u64,
            dest_addr: fi_addr_t,
            tag: u64,
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
            tag: u64,
        ) -> isize,
    >,
}
