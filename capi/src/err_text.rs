//! `fi_cq_strerror` and `fi_eq_strerror`: the text of an error entry.

use core::ffi::{c_char, c_int, c_void};
use std::sync::Mutex;

/// The text for an error entry the application read from a queue that
/// keeps the `err_data` it handed out in `kept`: the provider's own
/// explanation (peer and cause) when `err_data` is that buffer, else the
/// text of `prov_errno`. Copied into `buf` when the caller gives one;
/// otherwise our storage is returned, valid until the next readerr, as
/// upstream's is.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
pub unsafe fn error_text(
    kept: Option<&Mutex<Vec<u8>>>,
    prov_errno: c_int,
    err_data: *const c_void,
    buf: *mut c_char,
    len: usize,
) -> *const c_char {
    let kept = kept.map(|k| k.lock().unwrap_or_else(|p| p.into_inner()));
    let text = kept
        .as_deref()
        .and_then(|k| oxifabric::service::ep_core::error_text(k, err_data as usize));
    let s = text.unwrap_or_else(|| oxifabric::strerror::strerror(prov_errno));
    if buf.is_null() || len == 0 {
        return s.as_ptr();
    }
    let b = s.to_bytes();
    let n = b.len().min(len - 1);
    // SAFETY: `buf` has room for `len > n` bytes (caller's contract).
    unsafe {
        core::ptr::copy_nonoverlapping(b.as_ptr(), buf as *mut u8, n);
        *buf.add(n) = 0;
    }
    buf
}
