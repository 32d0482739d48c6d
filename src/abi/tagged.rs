//! Tagged messaging (`rdma/fi_tagged.h`).
//!
//! The vtable behind `fi_tsend`/`fi_trecv` and their vector, msg, inject and
//! remote-data variants: sends carry a 64-bit tag and receives match on
//! `tag` under a mask of `ignore` bits.

use super::*;

/// `FI_MPI_IGNORE_TAG` (2.0): with `fi_tag_mpi` tags, ignore the MPI tag.
pub const FI_MPI_IGNORE_TAG: u64 = 0xffff_ffff;

/// `FI_MPI_IGNORE_PAYLOAD` (2.0): ignore the payload id.
pub const FI_MPI_IGNORE_PAYLOAD: u64 = 0xff << 32;

/// Describes one tagged send or receive for `fi_tsendmsg`/`fi_trecvmsg`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_tagged {
    /// Scatter-gather list of local buffers.
    pub msg_iov: *const iovec,
    /// Memory descriptors, one per `msg_iov` entry (or NULL).
    pub desc: *mut *mut c_void,
    /// Number of entries in `msg_iov` and `desc`.
    pub iov_count: usize,
    /// Peer address: destination for sends, source filter for receives.
    pub addr: fi_addr_t,
    /// Tag sent, or tag to match on receive.
    pub tag: u64,
    /// Receive only: tag bits that do not take part in matching.
    pub ignore: u64,
    /// Caller's context, returned in the completion.
    pub context: *mut c_void,
    /// Remote CQ data sent with `FI_REMOTE_CQ_DATA`.
    pub data: u64,
}

/// Tagged message operations (`ep->tagged`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_tagged {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Posts a tagged receive into one buffer (`fi_trecv`).
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
    /// Posts a tagged receive into an iovec (`fi_trecvv`).
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
    /// Posts a tagged receive described by an `fi_msg_tagged` (`fi_trecvmsg`).
    pub recvmsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_tagged, flags: u64) -> isize,
    >,
    /// Sends one buffer with a tag (`fi_tsend`).
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
    /// Sends an iovec with a tag (`fi_tsendv`).
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
    /// Sends a message described by an `fi_msg_tagged` (`fi_tsendmsg`).
    pub sendmsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_tagged, flags: u64) -> isize,
    >,
    /// Sends a small tagged buffer, reusable on return, no completion (`fi_tinject`).
    pub inject: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            dest_addr: fi_addr_t,
            tag: u64,
        ) -> isize,
    >,
    /// Sends one tagged buffer with remote CQ data (`fi_tsenddata`).
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
    /// Injects a small tagged buffer with remote CQ data (`fi_tinjectdata`).
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
