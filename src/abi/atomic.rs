//! Remote atomic operations (`rdma/fi_atomic.h`).
//!
//! The vtable behind `fi_atomic`, `fi_fetch_atomic` and `fi_compare_atomic`
//! (each with vector, msg and validity-query variants, plus
//! `fi_inject_atomic`), the message descriptors they take, the per-datatype
//! limits `fi_query_atomic` reports and the two atomic operation flags.

use super::*;

/// Operation flag: the atomic returns the target's previous value.
pub const FI_FETCH_ATOMIC: u64 = 1 << 58;
/// Operation flag: the atomic compares before it updates the target.
pub const FI_COMPARE_ATOMIC: u64 = 1 << 59;

/// Limits for one (datatype, op) pair, filled by `fi_query_atomic`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_atomic_attr {
    /// Largest number of elements one operation may carry.
    pub count: usize,
    /// Size in bytes of one element of the datatype.
    pub size: usize,
}

/// Describes one atomic operation for the `*msg` calls.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_atomic {
    /// Local operand buffers, counted in datatype elements.
    pub msg_iov: *const fi_ioc,
    /// Memory descriptors, one per `msg_iov` entry (or NULL).
    pub desc: *mut *mut c_void,
    /// Number of entries in `msg_iov` and `desc`.
    pub iov_count: usize,
    /// Target peer.
    pub addr: fi_addr_t,
    /// Remote target buffers.
    pub rma_iov: *const fi_rma_ioc,
    /// Number of entries in `rma_iov`.
    pub rma_iov_count: usize,
    /// Element type of every buffer.
    pub datatype: fi_datatype,
    /// Operation applied at the target.
    pub op: fi_op,
    /// Caller's context, returned in the completion.
    pub context: *mut c_void,
    /// Remote CQ data sent with `FI_REMOTE_CQ_DATA`.
    pub data: u64,
}

/// Result buffers of a fetching atomic (`fi_op_fetch_atomic` in triggers).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_fetch {
    /// Local buffers that receive the target's previous values.
    pub msg_iov: *mut fi_ioc,
    /// Memory descriptors, one per `msg_iov` entry (or NULL).
    pub desc: *mut *mut c_void,
    /// Number of entries in `msg_iov` and `desc`.
    pub iov_count: usize,
}

/// Compare operands of a compare-atomic (`fi_op_compare_atomic` in triggers).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_compare {
    /// Local buffers holding the values to compare against.
    pub msg_iov: *const fi_ioc,
    /// Memory descriptors, one per `msg_iov` entry (or NULL).
    pub desc: *mut *mut c_void,
    /// Number of entries in `msg_iov` and `desc`.
    pub iov_count: usize,
}

/// Atomic operations (`ep->atomic`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_atomic {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Applies `op` with one local operand buffer (`fi_atomic`).
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
    /// Applies `op` with a vector of operands (`fi_atomicv`).
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
    /// Applies the atomic described by an `fi_msg_atomic` (`fi_atomicmsg`).
    pub writemsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_atomic, flags: u64) -> isize,
    >,
    /// Small atomic, buffer reusable on return, no completion (`fi_inject_atomic`).
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
    /// Applies `op` and returns the previous target value (`fi_fetch_atomic`).
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
    /// Vector form of the fetching atomic (`fi_fetch_atomicv`).
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
    /// Message form of the fetching atomic (`fi_fetch_atomicmsg`).
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
    /// Compares, conditionally updates, returns the old value (`fi_compare_atomic`).
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
    /// Vector form of the compare atomic (`fi_compare_atomicv`).
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
    /// Message form of the compare atomic (`fi_compare_atomicmsg`).
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
    /// Reports whether a plain atomic is supported, and its element limit.
    pub writevalid: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            datatype: fi_datatype,
            op: fi_op,
            count: *mut usize,
        ) -> c_int,
    >,
    /// Reports whether a fetching atomic is supported, and its element limit.
    pub readwritevalid: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            datatype: fi_datatype,
            op: fi_op,
            count: *mut usize,
        ) -> c_int,
    >,
    /// Reports whether a compare atomic is supported, and its element limit.
    pub compwritevalid: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            datatype: fi_datatype,
            op: fi_op,
            count: *mut usize,
        ) -> c_int,
    >,
}
