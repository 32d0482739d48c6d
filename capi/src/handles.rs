//! Small helpers shared by the object thunks.

use core::ffi::c_int;
use oxifabric::abi::*;
use oxifabric::core_warn;

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

/// Maps an engine result to an `ssize_t` return code.
pub fn rcs(r: oxifabric::error::Result<usize>) -> isize {
    match r {
        Ok(n) => n as isize,
        Err(e) => e.code() as isize,
    }
}

/// `fi_control` on a CQ, EQ or counter: `FI_GETWAIT` hands out the wait
/// descriptor (for `FI_WAIT_FD` and `FI_WAIT_UNSPEC`, which is an fd here),
/// `FI_GETWAITOBJ` says which kind of wait object it is.
///
/// # Safety
/// `arg` is NULL or points to the type the command documents.
pub unsafe fn wait_control(
    command: c_int,
    arg: *mut core::ffi::c_void,
    wait_obj: fi_wait_obj,
    fd: c_int,
) -> c_int {
    match command {
        FI_GETWAIT | FI_GETWAITOBJ if arg.is_null() => -FI_EINVAL,
        FI_GETWAIT => match wait_obj {
            FI_WAIT_FD | FI_WAIT_UNSPEC => {
                *(arg as *mut c_int) = fd;
                0
            }
            _ => -FI_ENODATA,
        },
        FI_GETWAITOBJ => {
            *(arg as *mut fi_wait_obj) = if wait_obj == FI_WAIT_UNSPEC {
                FI_WAIT_FD
            } else {
                wait_obj
            };
            0
        }
        _ => -FI_ENOSYS,
    }
}
