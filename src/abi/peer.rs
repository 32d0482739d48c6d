//! The peer-provider interfaces (`rdma/providers/fi_peer.h`; in
//! `rdma/fi_ext.h` before 2.0).
//!
//! Two providers share one object when one of them (the owner) creates it
//! and hands it to the other (the peer) in a `fi_peer_*_context` passed as
//! the open call's context with the `FI_PEER` flag: the owner's AV, AV set,
//! CQ, counter, domain, EQ or shared receive context, each with the
//! operations the peer calls back into (`owner_ops`) and, for shared receive
//! contexts, the ones the owner calls on the peer (`peer_ops`). Transfer
//! contexts let a peer hand completed transfers back to the owner.
//! These interfaces are developmental and tied to one libfabric version;
//! the layouts are 2.3's and later (the receive entry lost its list links).

use super::*;

/// Operations of an AV owned by another provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av_owner {
    /// Size of this table in bytes.
    pub size: usize,
    /// Reports the AV's attributes.
    pub query: Option<unsafe extern "C" fn(av: *mut fid_peer_av, attr: *mut fi_av_attr) -> c_int>,
    /// The address under which `ep` is known in this AV.
    pub ep_addr: Option<unsafe extern "C" fn(av: *mut fid_peer_av, ep: *mut fid_ep) -> fi_addr_t>,
}

/// An AV shared by its owner with a peer provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_av {
    /// Common object header.
    pub fid: fid,
    /// What the peer calls on the owner.
    pub owner_ops: *mut fi_ops_av_owner,
}

/// Context of `fi_av_open` with `FI_PEER`: the owner's AV.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_av_context {
    /// Size of this struct in bytes.
    pub size: usize,
    /// The shared AV.
    pub av: *mut fid_peer_av,
}

/// Operations of an AV set owned by another provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av_set_owner {
    /// Size of this table in bytes.
    pub size: usize,
    /// Copies up to `*count` member addresses into `addr`; sets `*count`.
    pub members: Option<
        unsafe extern "C" fn(
            av: *mut fid_peer_av_set,
            addr: *mut fi_addr_t,
            count: *mut usize,
        ) -> c_int,
    >,
}

/// An AV set shared by its owner with a peer provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_av_set {
    /// Common object header.
    pub fid: fid,
    /// What the peer calls on the owner.
    pub owner_ops: *mut fi_ops_av_set_owner,
}

/// The type upstream's AV set context points to: never defined there (its
/// name differs from `fid_peer_av_set`), so it is incomplete here too.
#[repr(C)]
pub struct fi_peer_av_set {
    _opaque: [u8; 0],
}

/// Context of `fi_av_set` with `FI_PEER`: the owner's AV set.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_av_set_context {
    /// Size of this struct in bytes.
    pub size: usize,
    /// The shared AV set (declared with the incomplete type, as upstream).
    pub av_set: *mut fi_peer_av_set,
}

/// Operations of a CQ owned by another provider: the peer writes its
/// completions through them.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cq_owner {
    /// Size of this table in bytes.
    pub size: usize,
    /// Writes one completion.
    pub write: Option<
        unsafe extern "C" fn(
            cq: *mut fid_peer_cq,
            context: *mut c_void,
            flags: u64,
            len: usize,
            buf: *mut c_void,
            data: u64,
            tag: u64,
            src: fi_addr_t,
        ) -> isize,
    >,
    /// Writes one error completion.
    pub writeerr: Option<
        unsafe extern "C" fn(cq: *mut fid_peer_cq, err_entry: *const fi_cq_err_entry) -> isize,
    >,
}

/// A CQ shared by its owner with a peer provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_cq {
    /// Common object header.
    pub fid: fid,
    /// What the peer calls on the owner.
    pub owner_ops: *mut fi_ops_cq_owner,
}

/// Context of `fi_cq_open` with `FI_PEER`: the owner's CQ.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_cq_context {
    /// Size of this struct in bytes.
    pub size: usize,
    /// The shared CQ.
    pub cq: *mut fid_peer_cq,
}

/// Operations of a counter owned by another provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cntr_owner {
    /// Size of this table in bytes.
    pub size: usize,
    /// Counts one success.
    pub inc: Option<unsafe extern "C" fn(cntr: *mut fid_peer_cntr)>,
    /// Counts one error.
    pub incerr: Option<unsafe extern "C" fn(cntr: *mut fid_peer_cntr)>,
}

/// A counter shared by its owner with a peer provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_cntr {
    /// Common object header.
    pub fid: fid,
    /// What the peer calls on the owner.
    pub owner_ops: *mut fi_ops_cntr_owner,
}

/// Context of `fi_cntr_open` with `FI_PEER`: the owner's counter.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_cntr_context {
    /// Size of this struct in bytes.
    pub size: usize,
    /// The shared counter.
    pub cntr: *mut fid_peer_cntr,
}

/// Context of `fi_domain2` with `FI_PEER`: the owner's domain.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_domain_context {
    /// Size of this struct in bytes.
    pub size: usize,
    /// The owner's domain.
    pub domain: *mut fid_domain,
}

/// Context of `fi_eq_open` with `FI_PEER`: the owner's EQ.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_eq_context {
    /// Size of this struct in bytes.
    pub size: usize,
    /// The owner's EQ.
    pub eq: *mut fid_eq,
}

/// One receive (posted, or a message waiting for one) of a shared receive
/// context, as owner and peer pass it between them.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_rx_entry {
    /// The shared receive context it belongs to.
    pub srx: *mut fid_peer_srx,
    /// Source address (`FI_ADDR_UNSPEC` when not known yet).
    pub addr: fi_addr_t,
    /// Bytes of the message.
    pub msg_size: usize,
    /// Tag of a tagged message.
    pub tag: u64,
    /// Remote CQ data.
    pub cq_data: u64,
    /// Operation flags.
    pub flags: u64,
    /// The application's context of the receive.
    pub context: *mut c_void,
    /// Entries of `iov` and `desc`.
    pub count: usize,
    /// Descriptors of the receive buffers.
    pub desc: *mut *mut c_void,
    /// The peer's own use.
    pub peer_context: *mut c_void,
    /// The owner's own use.
    pub owner_context: *mut c_void,
    /// The receive buffers.
    pub iov: *mut iovec,
}

/// What an arriving message is matched on.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_match_attr {
    /// Source address.
    pub addr: fi_addr_t,
    /// Bytes of the message.
    pub msg_size: usize,
    /// Tag (tagged messages).
    pub tag: u64,
}

/// Operations the owner of a shared receive context offers the peer.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_srx_owner {
    /// Size of this table in bytes.
    pub size: usize,
    /// Finds a posted untagged receive for a message (or allocates an
    /// entry for an unexpected one).
    pub get_msg: Option<
        unsafe extern "C" fn(
            srx: *mut fid_peer_srx,
            attr: *mut fi_peer_match_attr,
            entry: *mut *mut fi_peer_rx_entry,
        ) -> c_int,
    >,
    /// As `get_msg`, for tagged receives.
    pub get_tag: Option<
        unsafe extern "C" fn(
            srx: *mut fid_peer_srx,
            attr: *mut fi_peer_match_attr,
            entry: *mut *mut fi_peer_rx_entry,
        ) -> c_int,
    >,
    /// Queues an unexpected untagged message.
    pub queue_msg: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// Queues an unexpected tagged message.
    pub queue_tag: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// Lets the owner learn the addresses of entries queued without one.
    pub foreach_unspec_addr: Option<
        unsafe extern "C" fn(
            srx: *mut fid_peer_srx,
            get_addr: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> fi_addr_t>,
        ),
    >,
    /// Releases an entry.
    pub free_entry: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry)>,
}

/// Operations the peer offers the owner of a shared receive context.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_srx_peer {
    /// Size of this table in bytes.
    pub size: usize,
    /// Delivers an untagged message now matched to a receive.
    pub start_msg: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// Delivers a tagged message now matched to a receive.
    pub start_tag: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// Drops an untagged message.
    pub discard_msg: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// Drops a tagged message.
    pub discard_tag: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
}

/// A shared receive context shared by its owner with a peer provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_srx {
    /// The endpoint it is.
    pub ep_fid: fid_ep,
    /// What the peer calls on the owner.
    pub owner_ops: *mut fi_ops_srx_owner,
    /// What the owner calls on the peer.
    pub peer_ops: *mut fi_ops_srx_peer,
}

/// Context of `fi_srx_context` with `FI_PEER`: the owner's receive context.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_srx_context {
    /// Size of this struct in bytes.
    pub size: usize,
    /// The shared receive context.
    pub srx: *mut fid_peer_srx,
}

/// Operations a peer offers for transfers it hands back to the owner.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_transfer_peer {
    /// Size of this table in bytes.
    pub size: usize,
    /// Reports a completed transfer.
    pub complete: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut fi_cq_tagged_entry,
            src_addr: fi_addr_t,
        ) -> isize,
    >,
    /// Reports a failed transfer.
    pub comperr: Option<unsafe extern "C" fn(ep: *mut fid_ep, buf: *mut fi_cq_err_entry) -> isize>,
}

/// Context passed with `FI_PEER_TRANSFER`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_transfer_context {
    /// Size of this struct in bytes.
    pub size: usize,
    /// The owner's `fi_info`.
    pub info: *mut fi_info,
    /// The owner's endpoint.
    pub ep: *mut fid_ep,
    /// The peer's operations.
    pub peer_ops: *mut fi_ops_transfer_peer,
}

// 2.3's layout of the receive entry (no list links), which the oracle
// cannot check against Debian 13's 2.1 headers: proved here instead.
const _: () = assert!(core::mem::size_of::<fi_peer_rx_entry>() == 96);
const _: () = assert!(core::mem::offset_of!(fi_peer_rx_entry, srx) == 0);
const _: () = assert!(core::mem::offset_of!(fi_peer_rx_entry, iov) == 88);
