//! Error numbers (`rdma/fi_errno.h`).
//!
//! Functions return these negated. The low range aliases the host's errno
//! values; libfabric's own codes start at [`FI_ERRNO_OFFSET`].

use super::*;

/// Success.
pub const FI_SUCCESS: c_int = 0;
/// Operation not permitted.
pub const FI_EPERM: c_int = libc::EPERM;
/// No such file or directory.
pub const FI_ENOENT: c_int = libc::ENOENT;
/// Interrupted system call.
pub const FI_EINTR: c_int = libc::EINTR;
/// Input/output error.
pub const FI_EIO: c_int = libc::EIO;
/// Argument list too long.
pub const FI_E2BIG: c_int = libc::E2BIG;
/// Bad file descriptor.
pub const FI_EBADF: c_int = libc::EBADF;
/// Resource temporarily unavailable: retry after progress.
pub const FI_EAGAIN: c_int = libc::EAGAIN;
/// Out of memory.
pub const FI_ENOMEM: c_int = libc::ENOMEM;
/// Permission denied.
pub const FI_EACCES: c_int = libc::EACCES;
/// Bad address.
pub const FI_EFAULT: c_int = libc::EFAULT;
/// Resource busy.
pub const FI_EBUSY: c_int = libc::EBUSY;
/// No such device.
pub const FI_ENODEV: c_int = libc::ENODEV;
/// Invalid argument.
pub const FI_EINVAL: c_int = libc::EINVAL;
/// Too many open files.
pub const FI_EMFILE: c_int = libc::EMFILE;
/// No space left.
pub const FI_ENOSPC: c_int = libc::ENOSPC;
/// Function not implemented.
pub const FI_ENOSYS: c_int = libc::ENOSYS;
/// Operation would block.
pub const FI_EWOULDBLOCK: c_int = libc::EWOULDBLOCK;
/// No message of the desired type.
pub const FI_ENOMSG: c_int = libc::ENOMSG;
/// No data available.
pub const FI_ENODATA: c_int = libc::ENODATA;
/// Protocol error (2.0).
pub const FI_EPROTO: c_int = libc::EPROTO;
/// Value too large for its type.
pub const FI_EOVERFLOW: c_int = libc::EOVERFLOW;
/// Message too long.
pub const FI_EMSGSIZE: c_int = libc::EMSGSIZE;
/// Protocol not available.
pub const FI_ENOPROTOOPT: c_int = libc::ENOPROTOOPT;
/// Operation not supported.
pub const FI_EOPNOTSUPP: c_int = libc::EOPNOTSUPP;
/// Address already in use.
pub const FI_EADDRINUSE: c_int = libc::EADDRINUSE;
/// Cannot assign requested address.
pub const FI_EADDRNOTAVAIL: c_int = libc::EADDRNOTAVAIL;
/// Network is down.
pub const FI_ENETDOWN: c_int = libc::ENETDOWN;
/// Network is unreachable.
pub const FI_ENETUNREACH: c_int = libc::ENETUNREACH;
/// Connection aborted.
pub const FI_ECONNABORTED: c_int = libc::ECONNABORTED;
/// Connection reset by peer.
pub const FI_ECONNRESET: c_int = libc::ECONNRESET;
/// No buffer space available.
pub const FI_ENOBUFS: c_int = libc::ENOBUFS;
/// Already connected.
pub const FI_EISCONN: c_int = libc::EISCONN;
/// Not connected.
pub const FI_ENOTCONN: c_int = libc::ENOTCONN;
/// Endpoint was shut down.
pub const FI_ESHUTDOWN: c_int = libc::ESHUTDOWN;
/// Timed out.
pub const FI_ETIMEDOUT: c_int = libc::ETIMEDOUT;
/// Connection refused.
pub const FI_ECONNREFUSED: c_int = libc::ECONNREFUSED;
/// Host is down.
pub const FI_EHOSTDOWN: c_int = libc::EHOSTDOWN;
/// No route to host.
pub const FI_EHOSTUNREACH: c_int = libc::EHOSTUNREACH;
/// Operation already in progress.
pub const FI_EALREADY: c_int = libc::EALREADY;
/// Operation now in progress.
pub const FI_EINPROGRESS: c_int = libc::EINPROGRESS;
/// Remote I/O error.
pub const FI_EREMOTEIO: c_int = libc::EREMOTEIO;
/// Operation canceled.
pub const FI_ECANCELED: c_int = libc::ECANCELED;
/// Key rejected.
pub const FI_EKEYREJECTED: c_int = libc::EKEYREJECTED;

/// First libfabric-specific error number.
pub const FI_ERRNO_OFFSET: c_int = 256;

c_anon_enum! {
    /// libfabric-specific error numbers.
    pub enum fi_errno_ext: c_int {
        /// Unspecified error.
        FI_EOTHER = FI_ERRNO_OFFSET,
        /// Buffer too small; the needed size is reported.
        FI_ETOOSMALL = 257,
        /// Not allowed in the object's current state.
        FI_EOPBADSTATE = 258,
        /// An error entry is waiting to be read.
        FI_EAVAIL = 259,
        /// Flags not supported.
        FI_EBADFLAGS = 260,
        /// No event queue bound or available.
        FI_ENOEQ = 261,
        /// Invalid resource domain.
        FI_EDOMAIN = 262,
        /// No completion queue bound or available.
        FI_ENOCQ = 263,
        /// CRC error.
        FI_ECRC = 264,
        /// Data truncated.
        FI_ETRUNC = 265,
        /// Required key not available.
        FI_ENOKEY = 266,
        /// No address vector bound or available.
        FI_ENOAV = 267,
        /// Queue overrun.
        FI_EOVERRUN = 268,
        /// Receiver not ready: no receive buffer posted.
        FI_ENORX = 269,
        /// No more memory registrations available (2.0).
        FI_ENOMR = 270,
        /// The peer is behind a firewall and no connection from it exists
        /// (2.2; see `FI_FIREWALL_ADDR`).
        FI_EFIREWALLADDR = 271,
        /// One past the last libfabric error number.
        FI_ERRNO_MAX = 272,
    }
}

extern "C" {
    /// Returns a static description of a (positive or negative) error number.
    pub fn fi_strerror(errnum: c_int) -> *const c_char;
}
