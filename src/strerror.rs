//! `fi_strerror`: text for an error number, positive or negative.
//!
//! Numbers below `FI_ERRNO_OFFSET` are the host's errno values and get the C
//! library's text; libfabric's own numbers get libfabric's wording; anything
//! beyond them reads as an unspecified error — the same text upstream's
//! library gives for every code.

use crate::abi::*;
use core::ffi::CStr;

/// libfabric's own messages, indexed from `FI_ERRNO_OFFSET`.
const MESSAGES: [&CStr; 14] = [
    c"Unspecified error",
    c"Provided buffer is too small",
    c"Operation not permitted in current state",
    c"Error available",
    c"Flags not supported",
    c"Missing or unavailable event queue",
    c"Invalid resource domain",
    c"Missing or unavailable completion queue",
    c"CRC error",
    c"Truncation error",
    c"Required key not available",
    c"Missing or unavailable address vector",
    c"Queue has been overrun",
    c"Receiver not ready, no receive buffers available",
];

/// The message for `errnum` (its sign is ignored).
pub fn strerror(errnum: c_int) -> &'static CStr {
    let e = errnum.unsigned_abs();
    let offset = FI_ERRNO_OFFSET as u32;
    if e < offset {
        // SAFETY: strerror returns a NUL-terminated string. glibc keeps the
        // text of known errnos in static storage; for unknown ones it uses a
        // per-thread buffer that stays valid until the next call on that
        // thread, the same lifetime callers of upstream's fi_strerror get.
        unsafe { CStr::from_ptr(libc::strerror(e as c_int)) }
    } else {
        MESSAGES
            .get((e - offset) as usize)
            .copied()
            .unwrap_or(MESSAGES[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(strerror(0).to_str().unwrap(), "Success");
        assert_eq!(strerror(-FI_EINVAL).to_str().unwrap(), "Invalid argument");
        assert_eq!(strerror(FI_ETRUNC).to_str().unwrap(), "Truncation error");
        assert_eq!(
            strerror(-FI_ENORX).to_str().unwrap(),
            "Receiver not ready, no receive buffers available"
        );
        assert_eq!(strerror(270).to_str().unwrap(), "Unspecified error");
        assert_eq!(strerror(c_int::MIN).to_str().unwrap(), "Unspecified error");
        assert_eq!(strerror(255).to_str().unwrap(), "Unknown error 255");
    }
}
