//! The one error type of the engine, and its mapping to `-FI_E*` codes.

use crate::abi::*;
use core::ffi::c_int;

/// Why an operation failed. Converted to the negative `FI_E*` code at the C
/// boundary by [`Error::code`]; nothing else chooses a C error number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// `FI_EINVAL`: an argument is invalid.
    Inval,
    /// `FI_ENOSYS`: the operation or version is not implemented.
    NoSys,
    /// `FI_ENODATA`: nothing matches (e.g. `fi_getinfo`) or a value is unset.
    NoData,
    /// `FI_ENOMEM`: an allocation failed.
    NoMem,
    /// `FI_EBADFLAGS`: a flag is unknown or not supported here.
    BadFlags,
    /// `FI_ENODEV`: no such provider or device.
    NoDev,
    /// `FI_ENOENT`: no such item (e.g. an undefined parameter).
    NoEnt,
    /// `FI_EAGAIN`: try again after progress.
    Again,
    /// `FI_EBUSY`: the object is still in use.
    Busy,
    /// `FI_ETOOSMALL`: a caller's buffer is too small.
    TooSmall,
    /// `FI_EOPNOTSUPP`: the operation is not supported with these arguments.
    OpNotSupp,
    /// Any other positive `FI_E*` or errno value.
    Other(c_int),
}

/// The engine's result type.
pub type Result<T> = core::result::Result<T, Error>;

impl Error {
    /// The positive error number.
    pub fn errno(self) -> c_int {
        match self {
            Error::Inval => FI_EINVAL,
            Error::NoSys => FI_ENOSYS,
            Error::NoData => FI_ENODATA,
            Error::NoMem => FI_ENOMEM,
            Error::BadFlags => FI_EBADFLAGS,
            Error::NoDev => FI_ENODEV,
            Error::NoEnt => FI_ENOENT,
            Error::Again => FI_EAGAIN,
            Error::Busy => FI_EBUSY,
            Error::TooSmall => FI_ETOOSMALL,
            Error::OpNotSupp => FI_EOPNOTSUPP,
            Error::Other(e) => e.abs(),
        }
    }

    /// The value a C function returns for this error: `-FI_Exxx`.
    pub fn code(self) -> c_int {
        -self.errno()
    }

    /// Builds an error from a (positive or negative) error number.
    pub fn from_errno(e: c_int) -> Error {
        match e.abs() {
            FI_EINVAL => Error::Inval,
            FI_ENOSYS => Error::NoSys,
            FI_ENODATA => Error::NoData,
            FI_ENOMEM => Error::NoMem,
            FI_EBADFLAGS => Error::BadFlags,
            FI_ENODEV => Error::NoDev,
            FI_ENOENT => Error::NoEnt,
            FI_EAGAIN => Error::Again,
            FI_EBUSY => Error::Busy,
            FI_ETOOSMALL => Error::TooSmall,
            FI_EOPNOTSUPP => Error::OpNotSupp,
            other => Error::Other(other),
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{}",
            crate::strerror::strerror(self.errno()).to_string_lossy()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_negative_and_round_trip() {
        for e in [
            Error::Inval,
            Error::NoSys,
            Error::NoData,
            Error::BadFlags,
            Error::Other(FI_ETRUNC),
        ] {
            assert!(e.code() < 0);
            assert_eq!(Error::from_errno(e.code()), e);
        }
    }
}
