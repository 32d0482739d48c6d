//! `-FI_ENOSYS` vtables for the endpoint interfaces no provider implements
//! yet (collectives). An endpoint must still point at real
//! tables: the inline wrappers call through them unconditionally. The
//! stubs come from the shared `nosys!` macro, so each call is logged at
//! trace level.

use core::ffi::c_void;
use oxifabric::abi::*;

type Ep = *mut fid_ep;
type Buf = *mut c_void;
type CBuf = *const c_void;
type Desc = *mut *mut c_void;

crate::nosys::nosys! {
    fn co_barrier(Ep, fi_addr_t, Buf) -> isize = "fi_barrier", FI_LOG_EP_DATA;
    fn co_broadcast(Ep, Buf, usize, Buf, fi_addr_t, fi_addr_t, fi_datatype, u64, Buf) -> isize = "fi_broadcast", FI_LOG_EP_DATA;
    fn co_alltoall(Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_datatype, u64, Buf) -> isize = "fi_alltoall", FI_LOG_EP_DATA;
    fn co_allreduce(Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_datatype, fi_op, u64, Buf) -> isize = "fi_allreduce", FI_LOG_EP_DATA;
    fn co_allgather(Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_datatype, u64, Buf) -> isize = "fi_allgather", FI_LOG_EP_DATA;
    fn co_reduce_scatter(Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_datatype, fi_op, u64, Buf) -> isize = "fi_reduce_scatter", FI_LOG_EP_DATA;
    fn co_reduce(Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_addr_t, fi_datatype, fi_op, u64, Buf) -> isize = "fi_reduce", FI_LOG_EP_DATA;
    fn co_scatter(Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_addr_t, fi_datatype, u64, Buf) -> isize = "fi_scatter", FI_LOG_EP_DATA;
    fn co_gather(Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_addr_t, fi_datatype, u64, Buf) -> isize = "fi_gather", FI_LOG_EP_DATA;
    fn co_msg(Ep, *const fi_msg_collective, *mut fi_ioc, Desc, usize, u64) -> isize = "fi_ops_collective.msg", FI_LOG_EP_DATA;
    fn co_barrier2(Ep, fi_addr_t, u64, Buf) -> isize = "fi_barrier2", FI_LOG_EP_DATA;
}

/// Collectives: not implemented.
pub static COLLECTIVE_OPS: fi_ops_collective = fi_ops_collective {
    size: core::mem::size_of::<fi_ops_collective>(),
    barrier: Some(co_barrier),
    broadcast: Some(co_broadcast),
    alltoall: Some(co_alltoall),
    allreduce: Some(co_allreduce),
    allgather: Some(co_allgather),
    reduce_scatter: Some(co_reduce_scatter),
    reduce: Some(co_reduce),
    scatter: Some(co_scatter),
    gather: Some(co_gather),
    msg: Some(co_msg),
    barrier2: Some(co_barrier2),
};
