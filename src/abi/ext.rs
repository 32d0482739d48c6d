//! Extensions for providers and peer libraries (`rdma/fi_ext.h`).
//!
//! Provider-specific code ranges and options, exporting and importing fabric
//! objects between providers (`fi_export_fid`/`fi_import_fid`), the
//! imported memory monitor and replacement logging callbacks imported with
//! `fi_import_log`. (The peer-provider interfaces lived here before 2.0;
//! they moved to `rdma/providers/fi_peer.h`.)
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
        /// EFA: emulated RDMA read (bool).
        FI_OPT_EFA_EMULATED_READ = -FI_PROV_SPECIFIC_EFA + 1,
        /// EFA: emulated RDMA write (bool).
        FI_OPT_EFA_EMULATED_WRITE = -FI_PROV_SPECIFIC_EFA + 2,
        /// EFA: emulated atomics (bool).
        FI_OPT_EFA_EMULATED_ATOMICS = -FI_PROV_SPECIFIC_EFA + 3,
        /// EFA: use device RDMA (bool).
        FI_OPT_EFA_USE_DEVICE_RDMA = -FI_PROV_SPECIFIC_EFA + 4,
        /// EFA: in-order delivery of 128-byte aligned sends/receives (bool).
        FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES = -FI_PROV_SPECIFIC_EFA + 5,
        /// EFA: in-order delivery of 128-byte aligned writes (bool).
        FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES = -FI_PROV_SPECIFIC_EFA + 6,
        /// EFA (2.2): every peer runs the same software, so the first
        /// exchange may skip capability handshakes (bool).
        FI_OPT_EFA_HOMOGENEOUS_PEERS = -FI_PROV_SPECIFIC_EFA + 7,
        /// EFA (2.5; also in 2.3.x/2.4.x point releases): whether RDMA writes
        /// with immediate data may complete without a posted receive (bool).
        FI_OPT_EFA_USE_UNSOLICITED_WRITE_RECV = -FI_PROV_SPECIFIC_EFA + 8,
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
