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
    /// `FI_EOPBADSTATE`: not possible in the object's state (e.g. before
    /// `fi_enable`).
    OpBadState,
    /// `FI_ENOCQ`: the endpoint has no CQ (or counter) for its completions.
    NoCq,
    /// `FI_ENOAV`: a connectionless endpoint has no address vector.
    NoAv,
    /// `FI_ENOEQ`: a connection-oriented endpoint has no event queue.
    NoEq,
    /// `FI_ENOTCONN`: the endpoint is not connected.
    NotConn,
    /// `FI_EISCONN`: the endpoint is already connected (or connecting).
    IsConn,
    /// `FI_EMSGSIZE`: the message is larger than the provider allows.
    MsgSize,
    /// `FI_ENOPROTOOPT`: no such option at that level.
    NoProtoOpt,
    /// `FI_EAVAIL`: an error entry is waiting to be read.
    Avail,
    /// `FI_ETIMEDOUT`: a blocking call timed out.
    TimedOut,
    /// `FI_ECANCELED`: the operation was canceled.
    Canceled,
    /// `FI_EADDRINUSE`: the address is taken by another endpoint.
    AddrInUse,
    /// An operating-system call failed: the `FI_E*` code it maps to and the
    /// OS `errno` behind it (reported as `prov_errno`), so the cause is not
    /// lost on the way to the application.
    Os {
        /// Positive `FI_E*` code the caller sees.
        code: c_int,
        /// The OS error number.
        errno: c_int,
    },
    /// Any other positive `FI_E*` or errno value.
    Other(c_int),
}

impl Error {
    /// An OS failure reported as `code`, keeping the OS error `e` as its
    /// cause (e.g. a failed `connect` is `FI_ECONNREFUSED` whatever the
    /// errno, but the errno stays visible).
    pub fn os(code: c_int, e: &std::io::Error) -> Error {
        Error::Os {
            code,
            errno: e.raw_os_error().unwrap_or(FI_EIO),
        }
    }

    /// The provider-specific error number behind it (the OS errno), 0 when
    /// there is none.
    pub fn prov_errno(self) -> c_int {
        match self {
            Error::Os { errno, .. } => errno,
            _ => 0,
        }
    }
}

/// An OS error keeps its errno: libfabric's `FI_E*` numbers are the Linux
/// errno values, so the code is the errno itself (`FI_EIO` when the error
/// carries none).
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        let errno = e.raw_os_error().unwrap_or(FI_EIO);
        Error::Os { code: errno, errno }
    }
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
            Error::OpBadState => FI_EOPBADSTATE,
            Error::NoCq => FI_ENOCQ,
            Error::NoAv => FI_ENOAV,
            Error::NoEq => FI_ENOEQ,
            Error::NotConn => FI_ENOTCONN,
            Error::IsConn => FI_EISCONN,
            Error::MsgSize => FI_EMSGSIZE,
            Error::NoProtoOpt => FI_ENOPROTOOPT,
            Error::Avail => FI_EAVAIL,
            Error::TimedOut => FI_ETIMEDOUT,
            Error::Canceled => FI_ECANCELED,
            Error::AddrInUse => FI_EADDRINUSE,
            Error::Os { code, .. } => code.abs(),
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
            FI_EOPBADSTATE => Error::OpBadState,
            FI_ENOCQ => Error::NoCq,
            FI_ENOAV => Error::NoAv,
            FI_ENOEQ => Error::NoEq,
            FI_ENOTCONN => Error::NotConn,
            FI_EISCONN => Error::IsConn,
            FI_EMSGSIZE => Error::MsgSize,
            FI_ENOPROTOOPT => Error::NoProtoOpt,
            FI_EAVAIL => Error::Avail,
            FI_ETIMEDOUT => Error::TimedOut,
            FI_ECANCELED => Error::Canceled,
            FI_EADDRINUSE => Error::AddrInUse,
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
            Error::NoCq,
            Error::NotConn,
            Error::Other(FI_ETRUNC),
        ] {
            assert!(e.code() < 0);
            assert_eq!(Error::from_errno(e.code()), e);
        }
    }

    #[test]
    fn os_errors_keep_their_errno() {
        let e = Error::from(std::io::Error::from_raw_os_error(FI_ECONNREFUSED));
        assert_eq!(e.code(), -FI_ECONNREFUSED);
        assert_eq!(e.prov_errno(), FI_ECONNREFUSED);
        let e = Error::os(FI_EADDRNOTAVAIL, &std::io::Error::from_raw_os_error(13));
        assert_eq!((e.code(), e.prov_errno()), (-FI_EADDRNOTAVAIL, 13));
    }
}
