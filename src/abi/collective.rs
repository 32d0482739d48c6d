//! Collective operations (`rdma/fi_collective.h`).
//!
//! Address-vector sets (groups of peers built with union, intersection,
//! difference, insert and remove), the attributes `fi_query_collective`
//! reports, the message form of a collective, and the vtable behind
//! `fi_barrier`, `fi_broadcast`, `fi_alltoall`, `fi_allreduce`,
//! `fi_allgather`, `fi_reduce_scatter`, `fi_reduce`, `fi_scatter` and
//! `fi_gather`.

use super::*;

/// Operations on an AV set (`set->ops`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av_set {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Adds every member of `src` to `dst` (`fi_av_set_union`).
    pub set_union:
        Option<unsafe extern "C" fn(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int>,
    /// Keeps in `dst` only members also in `src` (`fi_av_set_intersect`).
    pub intersect:
        Option<unsafe extern "C" fn(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int>,
    /// Removes from `dst` every member of `src` (`fi_av_set_diff`).
    pub diff: Option<unsafe extern "C" fn(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int>,
    /// Adds one address (`fi_av_set_insert`).
    pub insert: Option<unsafe extern "C" fn(set: *mut fid_av_set, addr: fi_addr_t) -> c_int>,
    /// Removes one address (`fi_av_set_remove`).
    pub remove: Option<unsafe extern "C" fn(set: *mut fid_av_set, addr: fi_addr_t) -> c_int>,
    /// Returns the collective address of the set (`fi_av_set_addr`).
    pub addr:
        Option<unsafe extern "C" fn(set: *mut fid_av_set, coll_addr: *mut fi_addr_t) -> c_int>,
}

/// A set of peers from one address vector, the members of a collective.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_av_set {
    /// Common object header (`FI_CLASS_AV_SET`).
    pub fid: fid,
    /// Set operations.
    pub ops: *mut fi_ops_av_set,
}

/// What a provider supports for one collective, from `fi_query_collective`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_collective_attr {
    /// Reduction operation asked about.
    pub op: fi_op,
    /// Datatype asked about.
    pub datatype: fi_datatype,
    /// Element limits for the datatype.
    pub datatype_attr: fi_atomic_attr,
    /// Largest group supported.
    pub max_members: usize,
    /// Mode bits the application must honour for this collective.
    pub mode: u64,
}

/// Address argument `fi_join_collective` passes to `fi_join`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_collective_addr {
    /// Members of the new group.
    pub set: *const fid_av_set,
    /// Collective address of the parent group.
    pub coll_addr: fi_addr_t,
}

/// Describes one collective for the `msg` slot.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_collective {
    /// Local input buffers, counted in datatype elements.
    pub msg_iov: *const fi_ioc,
    /// Memory descriptors, one per `msg_iov` entry (or NULL).
    pub desc: *mut *mut c_void,
    /// Number of entries in `msg_iov` and `desc`.
    pub iov_count: usize,
    /// Group the collective runs over.
    pub coll_addr: fi_addr_t,
    /// Root member, for rooted collectives.
    pub root_addr: fi_addr_t,
    /// Which collective.
    pub coll: fi_collective_op,
    /// Element type.
    pub datatype: fi_datatype,
    /// Reduction operation, where one applies.
    pub op: fi_op,
    /// Caller's context, returned in the completion.
    pub context: *mut c_void,
}

/// Collective operations (`ep->collective`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_collective {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Completes once every member has entered (`fi_barrier`).
    pub barrier: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, coll_addr: fi_addr_t, context: *mut c_void) -> isize,
    >,
    /// Copies the root's buffer to every member (`fi_broadcast`).
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
    /// Every member sends a distinct block to every other (`fi_alltoall`).
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
    /// Reduces across members; every member gets the result (`fi_allreduce`).
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
    /// Concatenates every member's buffer at every member (`fi_allgather`).
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
    /// Reduces, then scatters blocks of the result (`fi_reduce_scatter`).
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
    /// Reduces across members into the root (`fi_reduce`).
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
    /// Distributes blocks of the root's buffer to members (`fi_scatter`).
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
    /// Collects every member's buffer at the root (`fi_gather`).
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
    /// Runs the collective described by an `fi_msg_collective`.
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
    /// Barrier with flags (`fi_barrier2`); newer slot.
    pub barrier2: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            coll_addr: fi_addr_t,
            flags: u64,
            context: *mut c_void,
        ) -> isize,
    >,
}
