//! The shared `-FI_ENOSYS` slots: operations an object does not support.
//! Their capabilities are never advertised in `fi_info`.

use core::ffi::{c_char, c_int, c_void};
use oxifabric::abi::*;

pub unsafe extern "C" fn bind(_fid: *mut fid, _bfid: *mut fid, _flags: u64) -> c_int {
    -FI_ENOSYS
}
pub unsafe extern "C" fn control(_fid: *mut fid, _command: c_int, _arg: *mut c_void) -> c_int {
    -FI_ENOSYS
}
pub unsafe extern "C" fn ops_open(
    _fid: *mut fid,
    _name: *const c_char,
    _flags: u64,
    _ops: *mut *mut c_void,
    _context: *mut c_void,
) -> c_int {
    -FI_ENOSYS
}
pub unsafe extern "C" fn tostr(_fid: *const fid, _buf: *mut c_char, _len: usize) -> c_int {
    -FI_ENOSYS
}
pub unsafe extern "C" fn ops_set(
    _fid: *mut fid,
    _name: *const c_char,
    _flags: u64,
    _ops: *mut c_void,
    _context: *mut c_void,
) -> c_int {
    -FI_ENOSYS
}
