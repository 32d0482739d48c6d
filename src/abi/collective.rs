//! Mirror of `rdma/fi_collective.h`.

use super::*;

/// `struct fi_ops_av_set`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av_set {
    /// `size`.
    pub size: usize,
    /// `set_union`.
    pub set_union:
        Option<unsafe extern "C" fn(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int>,
    /// `intersect`.
    pub intersect:
        Option<unsafe extern "C" fn(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int>,
    /// `diff`.
    pub diff: Option<unsafe extern "C" fn(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int>,
    /// `insert`.
    pub insert: Option<unsafe extern "C" fn(set: *mut fid_av_set, addr: fi_addr_t) -> c_int>,
    /// `remove`.
    pub remove: Option<unsafe extern "C" fn(set: *mut fid_av_set, addr: fi_addr_t) -> c_int>,
    /// `addr`.
    pub addr:
        Option<unsafe extern "C" fn(set: *mut fid_av_set, coll_addr: *mut fi_addr_t) -> c_int>,
}

/// `struct fid_av_set`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_av_set {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_av_set,
}

/// `struct fi_collective_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_collective_attr {
    /// `op`.
    pub op: fi_op,
    /// `datatype`.
    pub datatype: fi_datatype,
    /// `datatype_attr`.
    pub datatype_attr: fi_atomic_attr,
    /// `max_members`.
    pub max_members: usize,
    /// `mode`.
    pub mode: u64,
}

/// `struct fi_collective_addr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_collective_addr {
    /// `set`.
    pub set: *const fid_av_set,
    /// `coll_addr`.
    pub coll_addr: fi_addr_t,
}

/// `struct fi_msg_collective`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_collective {
    /// `msg_iov`.
    pub msg_iov: *const fi_ioc,
    /// `desc`.
    pub desc: *mut *mut c_void,
    /// `iov_count`.
    pub iov_count: usize,
    /// `coll_addr`.
    pub coll_addr: fi_addr_t,
    /// `root_addr`.
    pub root_addr: fi_addr_t,
    /// `coll`.
    pub coll: fi_collective_op,
    /// `datatype`.
    pub datatype: fi_datatype,
    /// `op`.
    pub op: fi_op,
    /// `context`.
    pub context: *mut c_void,
}

/// `struct fi_ops_collective`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_collective {
    /// `size`.
    pub size: usize,
    /// `barrier`.
    pub barrier: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, coll_addr: fi_addr_t, context: *mut c_void) -> isize,
    >,
    /// `broadcast`.
    pub broadcast: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut c_void,
            count: usize,
            desc: *mut c_void,
            coll_addr: fi_addr_t,
            root_addr: fi_addr_t,
            datatype: fi_datatype,
            flags: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `alltoall`.
    pub alltoall: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            desc: *mut c_void,
            result: *mut c_void,
            result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            datatype: fi_datatype,
            flags: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `allreduce`.
    pub allreduce: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            desc: *mut c_void,
            result: *mut c_void,
            result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            datatype: fi_datatype,
            op: fi_op,
            flags: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `allgather`.
    pub allgather: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            desc: *mut c_void,
            result: *mut c_void,
            result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            datatype: fi_datatype,
            flags: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `reduce_scatter`.
    pub reduce_scatter: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            desc: *mut c_void,
            result: *mut c_void,
            result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            datatype: fi_datatype,
            op: fi_op,
            flags: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `reduce`.
    pub reduce: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            desc: *mut c_void,
            result: *mut c_void,
            result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            root_addr: fi_addr_t,
            datatype: fi_datatype,
            op: fi_op,
            flags: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `scatter`.
    pub scatter: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            desc: *mut c_void,
            result: *mut c_void,
            result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            root_addr: fi_addr_t,
            datatype: fi_datatype,
            flags: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `gather`.
    pub gather: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            desc: *mut c_void,
            result: *mut c_void,
            result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            root_addr: fi_addr_t,
            datatype: fi_datatype,
            flags: u64,
            context: *mut c_void,
        ) -> isize,
    >,
    /// `msg`.
    pub msg: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            msg: *const fi_msg_collective,
            resultv: *mut fi_ioc,
            result_desc: *mut *mut c_void,
            result_count: usize,
            flags: u64,
        ) -> isize,
    >,
    /// `barrier2`.
    pub barrier2: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            coll_addr: fi_addr_t,
            flags: u64,
            context: *mut c_void,
        ) -> isize,
    >,
}
