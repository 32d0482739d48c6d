//! Provider logging (`rdma/providers/fi_log.h`).
//!
//! Subsystems and levels a log line is filed under, and the three calls
//! behind the `FI_WARN`/`FI_INFO`/`FI_DBG`/... macros: whether a line at a
//! level is wanted (`FI_LOG_LEVEL`, `FI_LOG_PROV`, `FI_LOG_SUBSYS`), whether
//! a rate-limited line may go out now, and the formatted output itself.

use super::*;

c_enum! {
    /// Part of the library a log line comes from (`FI_LOG_SUBSYS`).
    pub enum fi_log_subsys : c_uint {
        /// Core library, provider loading, `fi_getinfo`.
        FI_LOG_CORE = 0,
        /// Fabric objects.
        FI_LOG_FABRIC = 1,
        /// Domains.
        FI_LOG_DOMAIN = 2,
        /// Endpoint setup, options and connection management.
        FI_LOG_EP_CTRL = 3,
        /// Data transfers.
        FI_LOG_EP_DATA = 4,
        /// Address vectors.
        FI_LOG_AV = 5,
        /// Completion queues.
        FI_LOG_CQ = 6,
        /// Event queues.
        FI_LOG_EQ = 7,
        /// Memory registration.
        FI_LOG_MR = 8,
        /// Counters.
        FI_LOG_CNTR = 9,
    }
}

c_enum! {
    /// Severity of a log line (`FI_LOG_LEVEL`); each level includes the
    /// ones before it.
    pub enum fi_log_level : c_uint {
        /// Errors and suspicious conditions.
        FI_LOG_WARN = 0,
        /// Function-level tracing.
        FI_LOG_TRACE = 1,
        /// Informational messages.
        FI_LOG_INFO = 2,
        /// Debug output (debug builds only).
        FI_LOG_DEBUG = 3,
    }
}

extern "C" {
    /// Nonzero when lines from `prov` at `level` in `subsys` are to be printed.
    pub fn fi_log_enabled(
        prov: *const fi_provider,
        level: fi_log_level,
        subsys: fi_log_subsys,
    ) -> c_int;

    /// Like `fi_log_enabled`, but also rate-limits a call site through the
    /// timestamp it keeps in `*showtime`.
    pub fn fi_log_ready(
        prov: *const fi_provider,
        level: fi_log_level,
        subsys: fi_log_subsys,
        showtime: *mut u64,
    ) -> c_int;

    /// Prints one printf-style line tagged with provider, level, subsystem
    /// and the calling function and line.
    pub fn fi_log(
        prov: *const fi_provider,
        level: fi_log_level,
        subsys: fi_log_subsys,
        func: *const c_char,
        line: c_int,
        fmt: *const c_char,
        ...
    );
}
