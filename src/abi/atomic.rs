//! Mirror of `rdma/fi_atomic.h`.

use super::*;

/// `FI_FETCH_ATOMIC`.
pub const FI_FETCH_ATOMIC: u64 = 1 << 58;

/// `FI_COMPARE_ATOMIC`.
pub const FI_COMPARE_ATOMIC: u64 = 1 << 59;

/// `struct fi_atomic_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_atomic_attr {
    /// `count`.
    pub count: usize,
    /// `size`.
    pub size: usize,
}

/// `struct fi_msg_atomic`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_atomic {
    /// `msg_iov`.
    pub msg_iov: *const fi_ioc,
    /// `desc`.
    pub desc: *mut *mut c_void,
    /// `iov_count`.
    pub iov_count: usize,
    /// `addr`.
    pub addr: fi_addr_t,
    /// `rma_iov`.
    pub rma_iov: *const fi_rma_ioc,
    /// `rma_iov_count`.
    pub rma_iov_count: usize,
    /// `datatype`.
    pub datatype: fi_datatype,
    /// `op`.
    pub op: fi_op,
    /// `context`.
    pub context: *mut c_void,
    /// `data`.
    pub data: u64,
}

/// `struct fi_msg_fetch`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_fetch {
    /// `msg_iov`.
    pub msg_iov: *mut fi_ioc,
    /// `desc`.
    pub desc: *mut *mut c_void,
    /// `iov_count`.
    pub iov_count: usize,
}

/// `struct fi_msg_compare`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_compare {
    /// `msg_iov`.
    pub msg_iov: *const fi_ioc,
    /// `desc`.
    pub desc: *mut *mut c_void,
    /// `iov_count`.
    pub iov_count: usize,
}

/// `struct fi_ops_atomic`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_atomic {
    /// `size`.
    pub size: usize,
    /// `write`.
    pub write: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            desc: *mut c_void,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            datatype: fi_datatype,
            op: fi_op,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `writev`.
    pub writev: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const fi_ioc,
            desc: *mut *mut c_void,
            count: usize,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            datatype: fi_datatype,
            op: fi_op,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `writemsg`.
    pub writemsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_atomic, flags: u64) -> isize,
    >,
    /// `inject`.
    pub inject: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            datatype: fi_datatype,
            op: fi_op,
        ) -> isize,
    >,
    /// `readwrite`.
    pub readwrite: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            desc: *mut c_void,
            result: *mut c_void,
            result_desc: *mut c_void,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            datatype: fi_datatype,
            op: fi_op,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `readwritev`.
    pub readwritev: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const fi_ioc,
            desc: *mut *mut c_void,
            count: usize,
            resultv: *mut fi_ioc,
            result_desc: *mut *mut c_void,
            result_count: usize,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            datatype: fi_datatype,
            op: fi_op,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `readwritemsg`.
    pub readwritemsg: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            msg: *const fi_msg_atomic,
            resultv: *mut fi_ioc,
            result_desc: *mut *mut c_void,
            result_count: usize,
            flags: u64,
        ) -> isize,
    >,
    /// `compwrite`.
    pub compwrite: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            desc: *mut c_void,
            compare: *const c_void,
            compare_desc: *mut c_void,
            result: *mut c_void,
            result_desc: *mut c_void,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            datatype: fi_datatype,
            op: fi_op,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `compwritev`.
    pub compwritev: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const fi_ioc,
            desc: *mut *mut c_void,
            count: usize,
            comparev: *const fi_ioc,
            compare_desc: *mut *mut c_void,
            compare_count: usize,
            resultv: *mut fi_ioc,
            result_desc: *mut *mut c_void,
            result_count: usize,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            datatype: fi_datatype,
            op: fi_op,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `compwritemsg`.
    pub compwritemsg: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            msg: *const fi_msg_atomic,
            comparev: *const fi_ioc,
            compare_desc: *mut *mut c_void,
            compare_count: usize,
            resultv: *mut fi_ioc,
            result_desc: *mut *mut c_void,
            result_count: usize,
            flags: u64,
        ) -> isize,
    >,
    /// `writevalid`.
    pub writevalid: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            datatype: fi_datatype,
            op: fi_op,
            count: *mut usize,
        ) -> c_int,
    >,
    /// `readwritevalid`.
    pub readwritevalid: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            datatype: fi_datatype,
            op: fi_op,
            count: *mut usize,
        ) -> c_int,
    >,
    /// `compwritevalid`.
    pub compwritevalid: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            datatype: fi_datatype,
            op: fi_op,
            count: *mut usize,
        ) -> c_int,
    >,
}
