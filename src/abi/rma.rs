//! One-sided RMA (`rdma/fi_rma.h`).
//!
//! Remote buffer descriptors and the vtable behind `fi_read`/`fi_write` and
//! their vector, msg, inject and remote-data variants, which move data to or
//! from a peer's registered memory without the peer posting a receive.

use super::*;

/// One remote buffer: address, length in bytes and protection key.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_rma_iov {
    /// Remote address (virtual or offset, per the domain's `mr_mode`).
    pub addr: u64,
    /// Length in bytes.
    pub len: usize,
    /// Remote protection key of the memory region.
    pub key: u64,
}

/// One remote buffer counted in elements of an atomic datatype.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_rma_ioc {
    /// Remote address (virtual or offset, per the domain's `mr_mode`).
    pub addr: u64,
    /// Number of datatype elements.
    pub count: usize,
    /// Remote protection key of the memory region.
    pub key: u64,
}

/// Describes one RMA transfer for `fi_readmsg`/`fi_writemsg`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_rma {
    /// Scatter-gather list of local buffers.
    pub msg_iov: *const iovec,
    /// Memory descriptors, one per `msg_iov` entry (or NULL).
    pub desc: *mut *mut c_void,
    /// Number of entries in `msg_iov` and `desc`.
    pub iov_count: usize,
    /// Target peer.
    pub addr: fi_addr_t,
    /// Remote buffers, in order.
    pub rma_iov: *const fi_rma_iov,
    /// Number of entries in `rma_iov`.
    pub rma_iov_count: usize,
    /// Caller's context, returned in the completion.
    pub context: *mut c_void,
    /// Remote CQ data for writes with `FI_REMOTE_CQ_DATA`.
    pub data: u64,
}

/// RMA operations (`ep->rma`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_rma {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Reads remote memory into one local buffer (`fi_read`).
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
    /// Reads remote memory into an iovec (`fi_readv`).
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
    /// Reads as described by an `fi_msg_rma` (`fi_readmsg`).
    pub readmsg:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize>,
    /// Writes one local buffer to remote memory (`fi_write`).
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
    /// Writes an iovec to remote memory (`fi_writev`).
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
    /// Writes as described by an `fi_msg_rma` (`fi_writemsg`).
    pub writemsg:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize>,
    /// Writes a small buffer, reusable on return, no completion (`fi_inject_write`).
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
    /// Writes one buffer and delivers remote CQ data (`fi_writedata`).
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
    /// Injects a small write with remote CQ data (`fi_inject_writedata`).
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
