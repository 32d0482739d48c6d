//! Helpers shared by the exported functions: panic containment and C string
//! conversion.

use core::ffi::{c_char, CStr};
use oxifabric::abi::{fi_provider, FI_LOG_CORE};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`, turning a panic into `fallback` and a warn log line, so that no
/// unwinding ever crosses into C.
pub fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            oxifabric::core_warn!(
                FI_LOG_CORE,
                "internal error: a panic was contained at the C boundary"
            );
            fallback
        }
    }
}

/// A C string argument as `&str`: Ok(None) for NULL, Err for invalid UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives the borrow.
pub unsafe fn opt_str<'a>(p: *const c_char) -> Result<Option<&'a str>, core::str::Utf8Error> {
    if p.is_null() {
        return Ok(None);
    }
    CStr::from_ptr(p).to_str().map(Some)
}

/// The name of a provider passed by a C caller; the core's name for NULL.
///
/// # Safety
/// `prov` is NULL or points to a `struct fi_provider` whose `name` is NULL
/// or a NUL-terminated string.
pub unsafe fn prov_name(prov: *const fi_provider) -> String {
    match prov.as_ref() {
        Some(p) if !p.name.is_null() => CStr::from_ptr(p.name).to_string_lossy().into_owned(),
        _ => "core".to_string(),
    }
}
