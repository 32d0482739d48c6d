//! `-FI_ENOSYS` vtables for the endpoint interfaces no provider implements
//! yet (RMA, atomics, collectives). An endpoint must still point at real
//! tables: the inline wrappers call through them unconditionally.

use core::ffi::{c_int, c_void};
use oxifabric::abi::*;

macro_rules! nosys {
    ($($name:ident -> $ret:ty : ($($t:ty),*);)*) => {
        $(
            unsafe extern "C" fn $name($(_: $t),*) -> $ret {
                -(FI_ENOSYS as $ret)
            }
        )*
    };
}

type Ep = *mut fid_ep;
type Buf = *mut c_void;
type CBuf = *const c_void;
type Desc = *mut *mut c_void;

nosys! {
    rma_read -> isize: (Ep, Buf, usize, Buf, fi_addr_t, u64, u64, Buf);
    rma_readv -> isize: (Ep, *const iovec, Desc, usize, fi_addr_t, u64, u64, Buf);
    rma_readmsg -> isize: (Ep, *const fi_msg_rma, u64);
    rma_write -> isize: (Ep, CBuf, usize, Buf, fi_addr_t, u64, u64, Buf);
    rma_writev -> isize: (Ep, *const iovec, Desc, usize, fi_addr_t, u64, u64, Buf);
    rma_writemsg -> isize: (Ep, *const fi_msg_rma, u64);
    rma_inject -> isize: (Ep, CBuf, usize, fi_addr_t, u64, u64);
    rma_writedata -> isize: (Ep, CBuf, usize, Buf, u64, fi_addr_t, u64, u64, Buf);
    rma_injectdata -> isize: (Ep, CBuf, usize, u64, fi_addr_t, u64, u64);

    at_write -> isize: (Ep, CBuf, usize, Buf, fi_addr_t, u64, u64, fi_datatype, fi_op, Buf);
    at_writev -> isize: (Ep, *const fi_ioc, Desc, usize, fi_addr_t, u64, u64, fi_datatype, fi_op, Buf);
    at_writemsg -> isize: (Ep, *const fi_msg_atomic, u64);
    at_inject -> isize: (Ep, CBuf, usize, fi_addr_t, u64, u64, fi_datatype, fi_op);
    at_readwrite -> isize: (Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, u64, u64, fi_datatype, fi_op, Buf);
    at_readwritev -> isize: (Ep, *const fi_ioc, Desc, usize, *mut fi_ioc, Desc, usize, fi_addr_t, u64, u64, fi_datatype, fi_op, Buf);
    at_readwritemsg -> isize: (Ep, *const fi_msg_atomic, *mut fi_ioc, Desc, usize, u64);
    at_compwrite -> isize: (Ep, CBuf, usize, Buf, CBuf, Buf, Buf, Buf, fi_addr_t, u64, u64, fi_datatype, fi_op, Buf);
    at_compwritev -> isize: (Ep, *const fi_ioc, Desc, usize, *const fi_ioc, Desc, usize, *mut fi_ioc, Desc, usize, fi_addr_t, u64, u64, fi_datatype, fi_op, Buf);
    at_compwritemsg -> isize: (Ep, *const fi_msg_atomic, *const fi_ioc, Desc, usize, *mut fi_ioc, Desc, usize, u64);
    at_writevalid -> c_int: (Ep, fi_datatype, fi_op, *mut usize);
    at_readwritevalid -> c_int: (Ep, fi_datatype, fi_op, *mut usize);
    at_compwritevalid -> c_int: (Ep, fi_datatype, fi_op, *mut usize);

    co_barrier -> isize: (Ep, fi_addr_t, Buf);
    co_broadcast -> isize: (Ep, Buf, usize, Buf, fi_addr_t, fi_addr_t, fi_datatype, u64, Buf);
    co_alltoall -> isize: (Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_datatype, u64, Buf);
    co_allreduce -> isize: (Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_datatype, fi_op, u64, Buf);
    co_allgather -> isize: (Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_datatype, u64, Buf);
    co_reduce_scatter -> isize: (Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_datatype, fi_op, u64, Buf);
    co_reduce -> isize: (Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_addr_t, fi_datatype, fi_op, u64, Buf);
    co_scatter -> isize: (Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_addr_t, fi_datatype, u64, Buf);
    co_gather -> isize: (Ep, CBuf, usize, Buf, Buf, Buf, fi_addr_t, fi_addr_t, fi_datatype, u64, Buf);
    co_msg -> isize: (Ep, *const fi_msg_collective, *mut fi_ioc, Desc, usize, u64);
    co_barrier2 -> isize: (Ep, fi_addr_t, u64, Buf);
}

/// RMA: not implemented.
pub static RMA_OPS: fi_ops_rma = fi_ops_rma {
    size: core::mem::size_of::<fi_ops_rma>(),
    read: Some(rma_read),
    readv: Some(rma_readv),
    readmsg: Some(rma_readmsg),
    write: Some(rma_write),
    writev: Some(rma_writev),
    writemsg: Some(rma_writemsg),
    inject: Some(rma_inject),
    writedata: Some(rma_writedata),
    injectdata: Some(rma_injectdata),
};

/// Atomics: not implemented.
pub static ATOMIC_OPS: fi_ops_atomic = fi_ops_atomic {
    size: core::mem::size_of::<fi_ops_atomic>(),
    write: Some(at_write),
    writev: Some(at_writev),
    writemsg: Some(at_writemsg),
    inject: Some(at_inject),
    readwrite: Some(at_readwrite),
    readwritev: Some(at_readwritev),
    readwritemsg: Some(at_readwritemsg),
    compwrite: Some(at_compwrite),
    compwritev: Some(at_compwritev),
    compwritemsg: Some(at_compwritemsg),
    writevalid: Some(at_writevalid),
    readwritevalid: Some(at_readwritevalid),
    compwritevalid: Some(at_compwritevalid),
};

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
