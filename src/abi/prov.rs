//! Provider entry point and configuration parameters
//! (`rdma/providers/fi_prov.h`).
//!
//! What a provider hands the core: the `fi_provider` descriptor returned by
//! its `fi_prov_ini` entry point (declared with `FI_EXT_INI` when the
//! provider is a loadable plug-in), and the calls a provider uses to declare
//! and read its `FI_<PROV>_<NAME>` environment parameters.

use super::*;

/// Tag a loadable provider puts in its file name (`lib<name>-fi.so`).
pub const FI_LIB_EXTENSION: &core::ffi::CStr = c"fi";
/// File name ending of a loadable provider: `FI_LIB_EXTENSION` then `.so`.
pub const FI_LIB_SUFFIX: &core::ffi::CStr = c"fi.so";

/// A provider's descriptor: its identity and the entry points the core
/// calls; every other call reaches the provider through object vtables.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_provider {
    /// Provider's own version (`FI_VERSION(major, minor)`).
    pub version: u32,
    /// libfabric API version the provider was written against.
    pub fi_version: u32,
    /// Scratch space owned by the core.
    pub context: fi_context,
    /// Provider name, as reported in `fi_fabric_attr.prov_name`.
    pub name: *const c_char,
    /// Lists the provider's matching fabrics/domains/endpoints (`fi_getinfo`).
    pub getinfo: Option<
        unsafe extern "C" fn(
            version: u32,
            node: *const c_char,
            service: *const c_char,
            flags: u64,
            hints: *const fi_info,
            info: *mut *mut fi_info,
        ) -> c_int,
    >,
    /// Opens a fabric described by `attr` (`fi_fabric`).
    pub fabric: Option<
        unsafe extern "C" fn(
            attr: *mut fi_fabric_attr,
            fabric: *mut *mut fid_fabric,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// Releases provider-global state when the library unloads.
    pub cleanup: Option<unsafe extern "C" fn()>,
}

extern "C" {
    /// Declares a configuration parameter of `provider` (read from the
    /// environment as `FI_<PROV>_<PARAM_NAME>`), with a printf-style help text.
    pub fn fi_param_define(
        provider: *const fi_provider,
        param_name: *const c_char,
        r#type: fi_param_type,
        help_string_fmt: *const c_char,
        ...
    ) -> c_int;

    /// Reads a declared parameter's value into `value` (type per its
    /// declaration); `-FI_ENODATA` when unset, `-FI_ENOENT` when undeclared.
    pub fn fi_param_get(
        provider: *mut fi_provider,
        param_name: *const c_char,
        value: *mut c_void,
    ) -> c_int;
}
