//! Helpers shared by the exported functions: panic containment chosen by
//! return type, handle recovery, and C string conversion.

use core::ffi::{c_char, c_int, CStr};
use oxifabric::abi::{fi_provider, FI_EOTHER, FI_LOG_CORE};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A type an `extern "C"` function returns, and what it returns when the
/// call went wrong in a way the type must still express.
///
/// One implementation per C return type keeps every thunk's fallback the
/// same: integer codes get `-FI_EOTHER` for a contained panic and the error
/// code itself otherwise; `u64` (counter values) and pointers, which cannot
/// carry a code, get 0 and NULL.
pub trait CReturn: Sized {
    /// Returned when a panic was contained.
    const PANIC: Self;
    /// A negative `FI_E*` code as this type (its neutral value when the type
    /// cannot carry one).
    fn from_code(code: c_int) -> Self;
}

impl CReturn for c_int {
    const PANIC: c_int = -FI_EOTHER;
    fn from_code(code: c_int) -> c_int {
        code
    }
}

impl CReturn for isize {
    const PANIC: isize = -(FI_EOTHER as isize);
    fn from_code(code: c_int) -> isize {
        code as isize
    }
}

impl CReturn for u64 {
    const PANIC: u64 = 0;
    fn from_code(_: c_int) -> u64 {
        0
    }
}

impl CReturn for () {
    const PANIC: () = ();
    fn from_code(_: c_int) {}
}

impl<T> CReturn for *mut T {
    const PANIC: *mut T = core::ptr::null_mut();
    fn from_code(_: c_int) -> *mut T {
        core::ptr::null_mut()
    }
}

impl<T> CReturn for *const T {
    const PANIC: *const T = core::ptr::null();
    fn from_code(_: c_int) -> *const T {
        core::ptr::null()
    }
}

/// Runs `f`, turning a panic into `fallback` and a warn log line, so that no
/// unwinding ever crosses into C. Most callers want [`catch`]; this form is
/// for the few functions whose fallback is not their type's usual one
/// (`fi_strerror`'s text, `fi_log_enabled`'s 0).
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

/// Runs `f` with a contained panic becoming the return type's
/// [`CReturn::PANIC`].
pub fn catch<T: CReturn>(f: impl FnOnce() -> T) -> T {
    guard(T::PANIC, f)
}

/// The prelude of a thunk on one object: recovers the handle behind a fid
/// with `$lookup` (one of the `*_handle` functions, which check class and
/// magic), runs `$body` with it inside [`catch`], and for a fid that is NULL
/// or not ours logs it and returns `-FI_EINVAL` in the thunk's return type.
///
/// `with_handle!(cq_handle, cq, "fi_cq_signal", |h| ...)`
macro_rules! with_handle {
    ($lookup:path, $fid:expr, $what:expr, |$h:ident| $body:expr) => {
        $crate::boundary::catch(|| {
            // SAFETY: the crate's pointer contract: a fid argument is NULL
            // or points to a live `struct fid`, which is all the lookup
            // reads before it has checked class and magic.
            match unsafe { $lookup($fid as _) } {
                Some($h) => $body,
                None => $crate::boundary::CReturn::from_code($crate::handles::bad_fid($what)),
            }
        })
    };
}
pub(crate) use with_handle;

/// A C string argument as `&str`: Ok(None) for NULL, Err for invalid UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives the borrow.
pub unsafe fn opt_str<'a>(p: *const c_char) -> Result<Option<&'a str>, core::str::Utf8Error> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: not NULL, and NUL-terminated and live by the caller's promise.
    unsafe { CStr::from_ptr(p) }.to_str().map(Some)
}

/// The name of a provider passed by a C caller; the core's name for NULL.
///
/// # Safety
/// `prov` is NULL or points to a `struct fi_provider` whose `name` is NULL
/// or a NUL-terminated string.
pub unsafe fn prov_name(prov: *const fi_provider) -> String {
    // SAFETY: NULL or a valid fi_provider, by the caller's promise.
    match unsafe { prov.as_ref() } {
        Some(p) if !p.name.is_null() => {
            // SAFETY: a non-NULL name is NUL-terminated, by the same promise.
            unsafe { CStr::from_ptr(p.name) }
                .to_string_lossy()
                .into_owned()
        }
        _ => "core".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxifabric::abi::FI_EINVAL;

    #[test]
    fn panic_fallback_follows_the_return_type() {
        assert_eq!(catch(|| -> c_int { panic!("x") }), -FI_EOTHER);
        assert_eq!(catch(|| -> isize { panic!("x") }), -(FI_EOTHER as isize));
        assert_eq!(catch(|| -> u64 { panic!("x") }), 0);
        assert!(catch(|| -> *const u8 { panic!("x") }).is_null());
        assert_eq!(catch(|| -> c_int { 7 }), 7);
    }

    #[test]
    fn with_handle_refuses_a_null_or_foreign_fid_in_the_return_type() {
        let null: *mut oxifabric::abi::fid = core::ptr::null_mut();
        let rc: c_int = with_handle!(crate::cq::cq_handle, null, "test", |_h| 0);
        assert_eq!(rc, -FI_EINVAL);
        let n: isize = with_handle!(crate::cq::cq_handle, null, "test", |_h| 1);
        assert_eq!(n, -(FI_EINVAL as isize));
        let v: u64 = with_handle!(crate::cntr::cntr_handle, null, "test", |_h| 5);
        assert_eq!(v, 0);
        // An object of the right class that is not one of our handles
        // (larger than a handle's head, as another library's CQ would be).
        #[repr(C)]
        struct Foreign {
            fid: oxifabric::abi::fid,
            rest: [u64; 8],
        }
        let mut foreign = Foreign {
            fid: oxifabric::abi::fid {
                fclass: oxifabric::abi::FI_CLASS_CQ as usize,
                context: core::ptr::null_mut(),
                ops: core::ptr::null_mut(),
            },
            rest: [0; 8],
        };
        let f = &mut foreign.fid as *mut oxifabric::abi::fid;
        let rc: c_int = with_handle!(crate::cq::cq_handle, f, "test", |_h| 0);
        assert_eq!(rc, -FI_EINVAL);
    }

    #[test]
    fn error_codes_keep_their_value_where_the_type_can_carry_them() {
        assert_eq!(<c_int as CReturn>::from_code(-FI_EINVAL), -FI_EINVAL);
        assert_eq!(
            <isize as CReturn>::from_code(-FI_EINVAL),
            -(FI_EINVAL as isize)
        );
        assert_eq!(<u64 as CReturn>::from_code(-FI_EINVAL), 0);
        assert!(<*mut u8 as CReturn>::from_code(-FI_EINVAL).is_null());
    }
}
