//! Mirror of `rdma/providers/fi_prov.h`.

use super::*;

/// `FI_LIB_EXTENSION`.
pub const FI_LIB_EXTENSION: &core::ffi::CStr = c"fi";

/// `FI_LIB_SUFFIX`.
pub const FI_LIB_SUFFIX: u64 = 0x558c253518a1;

/// `struct fi_provider`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_provider {
    /// `version`.
    pub version: u32,
    /// `fi_version`.
    pub fi_version: u32,
    /// `context`.
    pub context: fi_context,
    /// `name`.
    pub name: *const c_char,
    /// `getinfo`.
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
    /// `fabric`.
    pub fabric: Option<
        unsafe extern "C" fn(
            attr: *mut fi_fabric_attr,
            fabric: *mut *mut fid_fabric,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `cleanup`.
    pub cleanup: Option<unsafe extern "C" fn()>,
}

extern "C" {
    /// `fi_param_define`.
    pub fn fi_param_define(
        provider: *const fi_provider,
        param_name: *const c_char,
        r#type: fi_param_type,
        help_string_fmt: *const c_char,
        ...
    ) -> c_int;
}

extern "C" {
    /// `fi_param_get`.
    pub fn fi_param_get(
        provider: *mut fi_provider,
        param_name: *const c_char,
        value: *mut c_void,
    ) -> c_int;
}
