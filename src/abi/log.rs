//! Mirror of `rdma/providers/fi_log.h`.

use super::*;

c_enum! {
    /// `enum fi_log_subsys`.
    pub enum fi_log_subsys : c_uint {
        /// `FI_LOG_CORE`.
        FI_LOG_CORE = 0,
        /// `FI_LOG_FABRIC`.
        FI_LOG_FABRIC = 1,
        /// `FI_LOG_DOMAIN`.
        FI_LOG_DOMAIN = 2,
        /// `FI_LOG_EP_CTRL`.
        FI_LOG_EP_CTRL = 3,
        /// `FI_LOG_EP_DATA`.
        FI_LOG_EP_DATA = 4,
        /// `FI_LOG_AV`.
        FI_LOG_AV = 5,
        /// `FI_LOG_CQ`.
        FI_LOG_CQ = 6,
        /// `FI_LOG_EQ`.
        FI_LOG_EQ = 7,
        /// `FI_LOG_MR`.
        FI_LOG_MR = 8,
        /// `FI_LOG_CNTR`.
        FI_LOG_CNTR = 9,
        /// `FI_LOG_SUBSYS_MAX`.
        FI_LOG_SUBSYS_MAX = 10,
    }
}

c_enum! {
    /// `enum fi_log_level`.
    pub enum fi_log_level : c_uint {
        /// `FI_LOG_WARN`.
        FI_LOG_WARN = 0,
        /// `FI_LOG_TRACE`.
        FI_LOG_TRACE = 1,
        /// `FI_LOG_INFO`.
        FI_LOG_INFO = 2,
        /// `FI_LOG_DEBUG`.
        FI_LOG_DEBUG = 3,
        /// `FI_LOG_MAX`.
        FI_LOG_MAX = 4,
    }
}

extern "C" {
    /// `fi_log_enabled`.
    pub fn fi_log_enabled(
        prov: *const fi_provider,
        level: fi_log_level,
        subsys: fi_log_subsys,
    ) -> c_int;
}

extern "C" {
    /// `fi_log_ready`.
    pub fn fi_log_ready(
        prov: *const fi_provider,
        level: fi_log_level,
        subsys: fi_log_subsys,
        showtime: *mut u64,
    ) -> c_int;
}

extern "C" {
    /// `fi_log`.
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
