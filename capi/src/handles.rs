//! Small helpers shared by the object thunks.

use core::ffi::{c_char, c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use std::sync::Mutex;

/// Logs and returns `-FI_EINVAL` for a fid that is NULL, of the wrong class,
/// or not one of ours.
pub fn bad_fid(what: &str) -> c_int {
    core_warn!(
        FI_LOG_CORE,
        "{what}: invalid object (NULL, wrong class or not created by this library)"
    );
    -FI_EINVAL
}

/// Maps an engine result to a C return code.
pub fn rc(r: oxifabric::error::Result<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.code(),
    }
}

/// Maps an engine result to an `ssize_t` return code. `-FI_EAGAIN` (an
/// empty CQ read, a busy-polling reader's usual answer) is mapped here
/// without the general table's call.
#[inline]
pub fn rcs(r: oxifabric::error::Result<usize>) -> isize {
    match r {
        Ok(n) => n as isize,
        Err(oxifabric::error::Error::Again) => -(FI_EAGAIN as isize),
        Err(e) => e.code() as isize,
    }
}

/// `fi_control` on a CQ, EQ or counter: `FI_GETWAIT` hands out the wait
/// descriptor `fd` gives (asked only then: the set behind it is made on
/// demand; for `FI_WAIT_FD` and `FI_WAIT_UNSPEC`, which is an fd here),
/// `FI_GETWAITOBJ` says which kind of wait object it is.
///
/// # Safety
/// `arg` is NULL or points to the type the command documents (rule 3 of
/// the pointer contract in the crate docs).
pub unsafe fn wait_control(
    command: c_int,
    arg: *mut c_void,
    wait_obj: fi_wait_obj,
    fd: impl FnOnce() -> c_int,
) -> c_int {
    match command {
        FI_GETWAIT | FI_GETWAITOBJ if arg.is_null() => -FI_EINVAL,
        FI_GETWAIT => match wait_obj {
            FI_WAIT_FD | FI_WAIT_UNSPEC => {
                // SAFETY: FI_GETWAIT's arg is an int to write.
                unsafe { *(arg as *mut c_int) = fd() };
                0
            }
            _ => -FI_ENODATA,
        },
        FI_GETWAITOBJ => {
            let obj = if wait_obj == FI_WAIT_UNSPEC {
                FI_WAIT_FD
            } else {
                wait_obj
            };
            // SAFETY: FI_GETWAITOBJ's arg is an enum fi_wait_obj to write.
            unsafe { *(arg as *mut fi_wait_obj) = obj };
            0
        }
        _ => -FI_ENOSYS,
    }
}

/// `fi_cq_strerror`/`fi_eq_strerror`: the text for `prov_errno`, copied
/// into `buf` (truncated, NUL-terminated) when the caller gave one, else
/// the library's own static string.
///
/// # Safety
/// `buf` is NULL or valid for writes of `len` bytes (rule 3).
pub unsafe fn strerror_into(prov_errno: c_int, buf: *mut c_char, len: usize) -> *const c_char {
    let s = oxifabric::strerror::strerror(prov_errno);
    if buf.is_null() || len == 0 {
        return s.as_ptr();
    }
    let b = s.to_bytes();
    let n = b.len().min(len - 1);
    // SAFETY: n + 1 <= len bytes of the caller's buffer; the text is ours.
    unsafe {
        core::ptr::copy_nonoverlapping(b.as_ptr(), buf as *mut u8, n);
        *buf.add(n) = 0;
    }
    buf
}

/// Where an error entry's provider data goes, as the `(err_data,
/// err_data_size)` to report: into the application's own buffer `user`
/// when it offered one (API 1.5 and later with a size), truncated to fit;
/// otherwise into `keep`, which the queue holds until the next error is
/// read, as the man pages allow.
///
/// # Safety
/// `user.0` is NULL or valid for writes of `user.1` bytes (rule 3).
pub unsafe fn place_err_data(
    data: &[u8],
    user: (*mut c_void, usize),
    keep: &Mutex<Vec<u8>>,
) -> (*mut c_void, usize) {
    if data.is_empty() {
        return (core::ptr::null_mut(), 0);
    }
    if !user.0.is_null() && user.1 > 0 {
        let n = user.1.min(data.len());
        // SAFETY: n <= user.1 bytes of the application's buffer.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), user.0 as *mut u8, n) };
        return (user.0, n);
    }
    let mut keep = keep.lock().unwrap_or_else(|p| p.into_inner());
    *keep = data.to_vec();
    (keep.as_mut_ptr() as *mut c_void, keep.len())
}

/// Copies the first `n` bytes of an error entry to the application: as
/// much of the struct as the application's API version knows (`compat`
/// gives the size per version; before 1.5 there is no `err_data_size`).
///
/// # Safety
/// `buf` is valid for writes of `n` bytes (rule 3), `n <= size_of::<T>()`.
pub unsafe fn write_err_entry<T>(entry: &T, buf: *mut T, n: usize) {
    debug_assert!(n <= core::mem::size_of::<T>());
    // SAFETY: n bytes of a live T into n writable bytes; no overlap, as the
    // entry is a local of the caller.
    unsafe { core::ptr::copy_nonoverlapping(entry as *const T as *const u8, buf as *mut u8, n) };
}
