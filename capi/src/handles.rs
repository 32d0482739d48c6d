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
