//! Extensions for providers and peer libraries (`rdma/fi_ext.h`).
//!
//! Provider-specific code ranges and options, exporting and importing fabric
//! objects between providers (`fi_export_fid`/`fi_import_fid`), the
//! imported memory monitor, the peer-provider interfaces (shared AV, AV set,
//! CQ, domain, EQ, shared receive context and transfers, see `fi_peer(3)`),
//! and replacement logging callbacks imported with `fi_import_log`.
//! These interfaces are developmental and tied to one libfabric version.

use super::*;

/// Base of the EFA provider's private codes: its 12-bit id shifted by 16.
pub const FI_PROV_SPECIFIC_EFA: c_int = 0xefa << 16;
/// Base of the TCP provider's private codes: its 12-bit id shifted by 16.
pub const FI_PROV_SPECIFIC_TCP: c_int = 0x7cb << 16;

c_anon_enum! {
    /// Provider-specific endpoint options: negative option names.
    pub enum fi_opt_efa : c_int {
        /// EFA: retry count for receiver-not-ready errors.
        FI_OPT_EFA_RNR_RETRY = -FI_PROV_SPECIFIC_EFA,
    }
}

/// Argument of `fi_control(FI_EXPORT_FID)`, filled by `fi_export_fid`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_fid_export {
    /// Where the exported object is returned.
    pub fid: *mut *mut fid,
    /// Export flags.
    pub flags: u64,
    /// Context to associate with the exported object.
    pub context: *mut c_void,
}

/// Memory monitor operations a provider calls on an imported monitor.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_mem_monitor {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Starts watching for memory being unmapped or freed.
    pub start: Option<unsafe extern "C" fn(monitor: *mut fid_mem_monitor) -> c_int>,
    /// Stops watching.
    pub stop: Option<unsafe extern "C" fn(monitor: *mut fid_mem_monitor)>,
    /// Asks to be notified about changes to `[addr, addr+len)`.
    pub subscribe: Option<
        unsafe extern "C" fn(
            monitor: *mut fid_mem_monitor,
            addr: *const c_void,
            len: usize,
        ) -> c_int,
    >,
    /// Withdraws a subscription.
    pub unsubscribe: Option<
        unsafe extern "C" fn(monitor: *mut fid_mem_monitor, addr: *const c_void, len: usize),
    >,
    /// True while a cached registration of the range is still usable.
    pub valid: Option<
        unsafe extern "C" fn(
            monitor: *mut fid_mem_monitor,
            addr: *const c_void,
            len: usize,
        ) -> bool,
    >,
}

/// Callback the monitor owner uses to report invalidated memory.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_mem_notify {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Reports that `[addr, addr+len)` changed and must be unregistered.
    pub notify: Option<
        unsafe extern "C" fn(monitor: *mut fid_mem_monitor, addr: *const c_void, len: usize),
    >,
}

/// A memory monitor imported into the registration cache (`mr_cache`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_mem_monitor {
    /// Common object header.
    pub fid: fid,
    /// Operations the importer provides.
    pub export_ops: *mut fi_ops_mem_monitor,
    /// Notification callback the library provides.
    pub import_ops: *mut fi_ops_mem_notify,
}

/// Calls an offload peer makes on the owner of a shared AV.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av_owner {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Reports the AV's current attributes.
    pub query: Option<unsafe extern "C" fn(av: *mut fid_peer_av, attr: *mut fi_av_attr) -> c_int>,
    /// Returns the AV address of local endpoint `ep` (or `FI_ADDR_NOTAVAIL`).
    pub ep_addr: Option<unsafe extern "C" fn(av: *mut fid_peer_av, ep: *mut fid_ep) -> fi_addr_t>,
}

/// An address vector shared with a peer provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_av {
    /// Common object header.
    pub fid: fid,
    /// Owner callbacks.
    pub owner_ops: *mut fi_ops_av_owner,
}

/// Tag that `fi_peer_av_context.av` names; never defined (incomplete type).
#[repr(C)]
pub struct fi_peer_av {
    _opaque: [u8; 0],
}

/// Context passed to a peer's `fi_av_open` with `FI_PEER`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_av_context {
    /// Size of this structure in bytes.
    pub size: usize,
    /// The shared AV.
    pub av: *mut fi_peer_av,
}

/// Calls an offload peer makes on the owner of a shared AV set.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av_set_owner {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Copies the set's member addresses; `count` is in/out.
    pub members: Option<
        unsafe extern "C" fn(
            av: *mut fid_peer_av_set,
            addr: *mut fi_addr_t,
            count: *mut usize,
        ) -> c_int,
    >,
}

/// An AV set shared with a peer provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_av_set {
    /// Common object header.
    pub fid: fid,
    /// Owner callbacks.
    pub owner_ops: *mut fi_ops_av_set_owner,
}

/// Tag that `fi_peer_av_set_context.av_set` names; never defined
/// (incomplete type).
#[repr(C)]
pub struct fi_peer_av_set {
    _opaque: [u8; 0],
}

/// Context passed to a peer's `fi_av_set` with `FI_PEER`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_av_set_context {
    /// Size of this structure in bytes.
    pub size: usize,
    /// The shared AV set.
    pub av_set: *mut fi_peer_av_set,
}

/// Calls a peer makes to post completions into the owner's CQ.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cq_owner {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Inserts one successful completion; fields the CQ format lacks are ignored.
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
    /// Inserts one error completion.
    pub writeerr: Option<
        unsafe extern "C" fn(cq: *mut fid_peer_cq, err_entry: *const fi_cq_err_entry) -> isize,
    >,
}

/// A completion queue shared with a peer provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_cq {
    /// Common object header.
    pub fid: fid,
    /// Owner callbacks.
    pub owner_ops: *mut fi_ops_cq_owner,
}

/// Context passed to a peer's `fi_cq_open` with `FI_PEER`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_cq_context {
    /// Size of this structure in bytes.
    pub size: usize,
    /// The shared CQ.
    pub cq: *mut fid_peer_cq,
}

/// Context passed to a peer's `fi_domain2` with `FI_PEER`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_domain_context {
    /// Size of this structure in bytes.
    pub size: usize,
    /// The owner's domain.
    pub domain: *mut fid_domain,
}

/// Context passed to a peer's `fi_eq_open` with `FI_PEER`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_eq_context {
    /// Size of this structure in bytes.
    pub size: usize,
    /// The owner's EQ.
    pub eq: *mut fid_eq,
}

/// One receive handed between the owner of a shared receive context and a
/// peer; starts with list links so it can sit on a doubly linked list.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_rx_entry {
    /// Next entry on the list it is queued on.
    pub next: *mut fi_peer_rx_entry,
    /// Previous entry on that list.
    pub prev: *mut fi_peer_rx_entry,
    /// Shared receive context it belongs to.
    pub srx: *mut fid_peer_srx,
    /// Source address of the message.
    pub addr: fi_addr_t,
    /// Size of the incoming message.
    pub size: usize,
    /// Tag of the incoming message (tagged receives).
    pub tag: u64,
    /// Receive flags.
    pub flags: u64,
    /// Application context of the matched receive.
    pub context: *mut c_void,
    /// Number of entries in `iov` and `desc`.
    pub count: usize,
    /// Memory descriptors of the receive buffers.
    pub desc: *mut *mut c_void,
    /// Peer's private state for this entry.
    pub peer_context: *mut c_void,
    /// Owner's private state for this entry.
    pub owner_context: *mut c_void,
    /// Receive buffers.
    pub iov: *mut iovec,
}

/// Calls a peer makes on the owner of a shared receive context.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_srx_owner {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Gets the receive matching an untagged message; `-FI_ENOENT` if none yet.
    pub get_msg: Option<
        unsafe extern "C" fn(
            srx: *mut fid_peer_srx,
            addr: fi_addr_t,
            size: usize,
            entry: *mut *mut fi_peer_rx_entry,
        ) -> c_int,
    >,
    /// Gets the receive matching a tagged message; `-FI_ENOENT` if none yet.
    pub get_tag: Option<
        unsafe extern "C" fn(
            srx: *mut fid_peer_srx,
            addr: fi_addr_t,
            tag: u64,
            entry: *mut *mut fi_peer_rx_entry,
        ) -> c_int,
    >,
    /// Queues an unexpected untagged message until a receive is posted.
    pub queue_msg: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// Queues an unexpected tagged message until a receive is posted.
    pub queue_tag: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// Returns a finished entry to the owner.
    pub free_entry: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry)>,
}

/// Calls the owner makes on a peer sharing its receive context.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_srx_peer {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// A receive now matches a queued untagged message: deliver it.
    pub start_msg: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// A receive now matches a queued tagged message: deliver it.
    pub start_tag: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// Drop a queued untagged message without a completion.
    pub discard_msg: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// Drop a queued tagged message without a completion.
    pub discard_tag: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
}

/// A shared receive context shared with a peer provider.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_srx {
    /// Endpoint header of the receive context.
    pub ep_fid: fid_ep,
    /// Owner callbacks.
    pub owner_ops: *mut fi_ops_srx_owner,
    /// Peer callbacks, filled in by the peer.
    pub peer_ops: *mut fi_ops_srx_peer,
}

/// Context passed to a peer's `fi_srx_context` with `FI_PEER`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_srx_context {
    /// Size of this structure in bytes.
    pub size: usize,
    /// The shared receive context.
    pub srx: *mut fid_peer_srx,
}

/// Calls through which a peer reports completed transfers.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_transfer_peer {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Reports a successful transfer on `ep`.
    pub complete: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut fi_cq_tagged_entry,
            src_addr: *mut fi_addr_t,
        ) -> isize,
    >,
    /// Reports a failed transfer on `ep`.
    pub comperr: Option<unsafe extern "C" fn(ep: *mut fid_ep, buf: *mut fi_cq_err_entry) -> isize>,
}

/// Context linking an endpoint to a peer for transfer completions.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_transfer_context {
    /// Size of this structure in bytes.
    pub size: usize,
    /// Description of the endpoint.
    pub info: *mut fi_info,
    /// The endpoint.
    pub ep: *mut fid_ep,
    /// Peer callbacks.
    pub peer_ops: *mut fi_ops_transfer_peer,
}

/// Flag to `fi_ops_log` callbacks: the line passed provider filtering.
pub const FI_LOG_PROV_FILTERED: u64 = 1 << 0;

/// Replacement logging callbacks, installed with `fi_import_log`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_log {
    /// Size of this table in bytes; set by `fi_import_log`.
    pub size: usize,
    /// Decides whether a line at `level` in `subsys` is wanted.
    pub enabled: Option<
        unsafe extern "C" fn(
            prov: *const fi_provider,
            level: fi_log_level,
            subsys: fi_log_subsys,
            flags: u64,
        ) -> c_int,
    >,
    /// Like `enabled`, with per-call-site rate limiting through `showtime`.
    pub ready: Option<
        unsafe extern "C" fn(
            prov: *const fi_provider,
            level: fi_log_level,
            subsys: fi_log_subsys,
            flags: u64,
            showtime: *mut u64,
        ) -> c_int,
    >,
    /// Emits one already formatted line.
    pub log: Option<
        unsafe extern "C" fn(
            prov: *const fi_provider,
            level: fi_log_level,
            subsys: fi_log_subsys,
            func: *const c_char,
            line: c_int,
            msg: *const c_char,
        ),
    >,
}

/// A logging object owned by the application, imported into the library.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_logging {
    /// Common object header (`FI_CLASS_LOG`).
    pub fid: fid,
    /// The callbacks.
    pub ops: *mut fi_ops_log,
}
