//! Mirror of `rdma/fi_ext.h`.

use super::*;

/// `struct fi_peer_av_set`: named by `fid_peer_av_set` but never defined (incomplete).
#[repr(C)]
pub struct fi_peer_av_set {
    _opaque: [u8; 0],
}

/// `struct fi_peer_av`: named by `fid_peer_av` but never defined (incomplete).
#[repr(C)]
pub struct fi_peer_av {
    _opaque: [u8; 0],
}

/// `FI_PROV_SPECIFIC_EFA`.
pub const FI_PROV_SPECIFIC_EFA: c_int = 0xefa0000;

/// `FI_PROV_SPECIFIC_TCP`.
pub const FI_PROV_SPECIFIC_TCP: c_int = 0x7cb0000;

/// `FI_LOG_PROV_FILTERED`.
pub const FI_LOG_PROV_FILTERED: u64 = 1 << 0;

c_anon_enum! {
    /// Anonymous enum starting at `FI_OPT_EFA_RNR_RETRY`.
    pub enum anon_fi_opt_efa_rnr_retry : c_int {
        /// `FI_OPT_EFA_RNR_RETRY`.
        FI_OPT_EFA_RNR_RETRY = -251265024,
    }
}

/// `struct fi_fid_export`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_fid_export {
    /// `fid`.
    pub fid: *mut *mut fid,
    /// `flags`.
    pub flags: u64,
    /// `context`.
    pub context: *mut c_void,
}

/// `struct fi_ops_mem_monitor`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_mem_monitor {
    /// `size`.
    pub size: usize,
    /// `start`.
    pub start: Option<unsafe extern "C" fn(monitor: *mut fid_mem_monitor) -> c_int>,
    /// `stop`.
    pub stop: Option<unsafe extern "C" fn(monitor: *mut fid_mem_monitor)>,
    /// `subscribe`.
    pub subscribe: Option<
        unsafe extern "C" fn(
            monitor: *mut fid_mem_monitor,
            addr: *const c_void,
            len: usize,
        ) -> c_int,
    >,
    /// `unsubscribe`.
    pub unsubscribe: Option<
        unsafe extern "C" fn(monitor: *mut fid_mem_monitor, addr: *const c_void, len: usize),
    >,
    /// `valid`.
    pub valid: Option<
        unsafe extern "C" fn(
            monitor: *mut fid_mem_monitor,
            addr: *const c_void,
            len: usize,
        ) -> bool,
    >,
}

/// `struct fi_ops_mem_notify`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_mem_notify {
    /// `size`.
    pub size: usize,
    /// `notify`.
    pub notify: Option<
        unsafe extern "C" fn(monitor: *mut fid_mem_monitor, addr: *const c_void, len: usize),
    >,
}

/// `struct fid_mem_monitor`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_mem_monitor {
    /// `fid`.
    pub fid: fid,
    /// `export_ops`.
    pub export_ops: *mut fi_ops_mem_monitor,
    /// `import_ops`.
    pub import_ops: *mut fi_ops_mem_notify,
}

/// `struct fi_ops_av_owner`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av_owner {
    /// `size`.
    pub size: usize,
    /// `query`.
    pub query: Option<unsafe extern "C" fn(av: *mut fid_peer_av, attr: *mut fi_av_attr) -> c_int>,
    /// `ep_addr`.
    pub ep_addr: Option<unsafe extern "C" fn(av: *mut fid_peer_av, ep: *mut fid_ep) -> fi_addr_t>,
}

/// `struct fid_peer_av`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_av {
    /// `fid`.
    pub fid: fid,
    /// `owner_ops`.
    pub owner_ops: *mut fi_ops_av_owner,
}

/// `struct fi_peer_av_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_av_context {
    /// `size`.
    pub size: usize,
    /// `av`.
    pub av: *mut fi_peer_av,
}

/// `struct fi_ops_av_set_owner`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av_set_owner {
    /// `size`.
    pub size: usize,
    /// `members`.
    pub members: Option<
        unsafe extern "C" fn(
            av: *mut fid_peer_av_set,
            addr: *mut fi_addr_t,
            count: *mut usize,
        ) -> c_int,
    >,
}

/// `struct fid_peer_av_set`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_av_set {
    /// `fid`.
    pub fid: fid,
    /// `owner_ops`.
    pub owner_ops: *mut fi_ops_av_set_owner,
}

/// `struct fi_peer_av_set_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_av_set_context {
    /// `size`.
    pub size: usize,
    /// `av_set`.
    pub av_set: *mut fi_peer_av_set,
}

/// `struct fi_ops_cq_owner`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cq_owner {
    /// `size`.
    pub size: usize,
    /// `write`.
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
    /// `writeerr`.
    pub writeerr: Option<
        unsafe extern "C" fn(cq: *mut fid_peer_cq, err_entry: *const fi_cq_err_entry) -> isize,
    >,
}

/// `struct fid_peer_cq`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_cq {
    /// `fid`.
    pub fid: fid,
    /// `owner_ops`.
    pub owner_ops: *mut fi_ops_cq_owner,
}

/// `struct fi_peer_cq_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_cq_context {
    /// `size`.
    pub size: usize,
    /// `cq`.
    pub cq: *mut fid_peer_cq,
}

/// `struct fi_peer_domain_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_domain_context {
    /// `size`.
    pub size: usize,
    /// `domain`.
    pub domain: *mut fid_domain,
}

/// `struct fi_peer_eq_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_eq_context {
    /// `size`.
    pub size: usize,
    /// `eq`.
    pub eq: *mut fid_eq,
}

/// `struct fi_peer_rx_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_rx_entry {
    /// `next`.
    pub next: *mut fi_peer_rx_entry,
    /// `prev`.
    pub prev: *mut fi_peer_rx_entry,
    /// `srx`.
    pub srx: *mut fid_peer_srx,
    /// `addr`.
    pub addr: fi_addr_t,
    /// `size`.
    pub size: usize,
    /// `tag`.
    pub tag: u64,
    /// `flags`.
    pub flags: u64,
    /// `context`.
    pub context: *mut c_void,
    /// `count`.
    pub count: usize,
    /// `desc`.
    pub desc: *mut *mut c_void,
    /// `peer_context`.
    pub peer_context: *mut c_void,
    /// `owner_context`.
    pub owner_context: *mut c_void,
    /// `iov`.
    pub iov: *mut iovec,
}

/// `struct fi_ops_srx_owner`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_srx_owner {
    /// `size`.
    pub size: usize,
    /// `get_msg`.
    pub get_msg: Option<
        unsafe extern "C" fn(
            srx: *mut fid_peer_srx,
            addr: fi_addr_t,
            size: usize,
            entry: *mut *mut fi_peer_rx_entry,
        ) -> c_int,
    >,
    /// `get_tag`.
    pub get_tag: Option<
        unsafe extern "C" fn(
            srx: *mut fid_peer_srx,
            addr: fi_addr_t,
            tag: u64,
            entry: *mut *mut fi_peer_rx_entry,
        ) -> c_int,
    >,
    /// `queue_msg`.
    pub queue_msg: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// `queue_tag`.
    pub queue_tag: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// `free_entry`.
    pub free_entry: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry)>,
}

/// `struct fi_ops_srx_peer`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_srx_peer {
    /// `size`.
    pub size: usize,
    /// `start_msg`.
    pub start_msg: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// `start_tag`.
    pub start_tag: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// `discard_msg`.
    pub discard_msg: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
    /// `discard_tag`.
    pub discard_tag: Option<unsafe extern "C" fn(entry: *mut fi_peer_rx_entry) -> c_int>,
}

/// `struct fid_peer_srx`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_peer_srx {
    /// `ep_fid`.
    pub ep_fid: fid_ep,
    /// `owner_ops`.
    pub owner_ops: *mut fi_ops_srx_owner,
    /// `peer_ops`.
    pub peer_ops: *mut fi_ops_srx_peer,
}

/// `struct fi_peer_srx_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_srx_context {
    /// `size`.
    pub size: usize,
    /// `srx`.
    pub srx: *mut fid_peer_srx,
}

/// `struct fi_ops_transfer_peer`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_transfer_peer {
    /// `size`.
    pub size: usize,
    /// `complete`.
    pub complete: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut fi_cq_tagged_entry,
            src_addr: *mut fi_addr_t,
        ) -> isize,
    >,
    /// `comperr`.
    pub comperr: Option<unsafe extern "C" fn(ep: *mut fid_ep, buf: *mut fi_cq_err_entry) -> isize>,
}

/// `struct fi_peer_transfer_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_peer_transfer_context {
    /// `size`.
    pub size: usize,
    /// `info`.
    pub info: *mut fi_info,
    /// `ep`.
    pub ep: *mut fid_ep,
    /// `peer_ops`.
    pub peer_ops: *mut fi_ops_transfer_peer,
}

/// `struct fi_ops_log`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_log {
    /// `size`.
    pub size: usize,
    /// `enabled`.
    pub enabled: Option<
        unsafe extern "C" fn(
            prov: *const fi_provider,
            level: fi_log_level,
            subsys: fi_log_subsys,
            flags: u64,
        ) -> c_int,
    >,
    /// `ready`.
    pub ready: Option<
        unsafe extern "C" fn(
            prov: *const fi_provider,
            level: fi_log_level,
            subsys: fi_log_subsys,
            flags: u64,
            showtime: *mut u64,
        ) -> c_int,
    >,
    /// `log`.
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

/// `struct fid_logging`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_logging {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_log,
}
