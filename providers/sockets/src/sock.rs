//! Thin wrappers over the socket calls std does not offer: non-blocking
//! connect, vectored non-blocking send (the epoll set is the engine's).

use core::marker::PhantomData;
use core::mem::MaybeUninit;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// Starts a non-blocking TCP connect; completion is signalled by
/// writability, then checked with [`take_error`].
pub fn connect_nonblocking(to: &SocketAddr) -> io::Result<TcpStream> {
    connect_from(to, None)
}

/// [`connect_nonblocking`] from the local address `from` when it names a
/// port (an MSG endpoint opened with a `src_addr`, or given one by
/// `fi_setname`): the peer and `fi_getname` then see that address.
/// `SO_REUSEADDR` lets a port whose previous connection lingers in
/// TIME_WAIT be used again, as a listener's can.
pub fn connect_from(to: &SocketAddr, from: Option<&SocketAddr>) -> io::Result<TcpStream> {
    let family = if to.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket creation; the fd is owned right away.
    let fd = unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh socket nobody else owns.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    if let Some(from) = from.filter(|f| f.port() != 0 && f.is_ipv4() == to.is_ipv4()) {
        let one: libc::c_int = 1;
        // SAFETY: `one` is a live c_int of the size given.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                &one as *const libc::c_int as *const libc::c_void,
                core::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if with_sockaddr(fd, from, libc::bind) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    if with_sockaddr(fd, to, libc::connect) != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Calls `bind` or `connect` on `fd` with `sa` as a C sockaddr.
fn with_sockaddr(
    fd: RawFd,
    sa: &SocketAddr,
    call: unsafe extern "C" fn(libc::c_int, *const libc::sockaddr, libc::socklen_t) -> libc::c_int,
) -> libc::c_int {
    let raw = oxifabric::addr::to_sockaddr(sa);
    // SAFETY: raw holds a sockaddr of raw.len() bytes, which is all
    // `bind` and `connect` read.
    unsafe {
        call(
            fd,
            raw.as_ptr() as *const libc::sockaddr,
            raw.len() as libc::socklen_t,
        )
    }
}

/// The pending socket error (`SO_ERROR`), e.g. after a failed connect.
pub fn take_error(s: &TcpStream) -> Option<io::Error> {
    s.take_error().ok().flatten()
}

/// Pieces one `writev` takes at most: enough for a batch of small frames
/// (header and payload each) queued on a connection.
pub const WRITEV_MAX: usize = 128;

/// The pieces of one `sendmsg`: up to [`WRITEV_MAX`] iovecs pointing into
/// buffers borrowed for `'a`. Only the pieces pushed are written: filling
/// the whole array first (2 KiB) showed in an 8-byte ping-pong's profile
/// at about 0.1 us per send.
pub struct Iovecs<'a> {
    v: [MaybeUninit<libc::iovec>; WRITEV_MAX],
    n: usize,
    _bufs: PhantomData<&'a [u8]>,
}

impl<'a> Iovecs<'a> {
    pub fn new() -> Iovecs<'a> {
        Iovecs {
            v: [const { MaybeUninit::uninit() }; WRITEV_MAX],
            n: 0,
            _bufs: PhantomData,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Pieces pushed so far.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Drops the pieces pushed after the first `n`.
    pub fn truncate(&mut self, n: usize) {
        self.n = self.n.min(n);
    }

    /// Adds `b`; false (and nothing added) when the array is full.
    pub fn push(&mut self, b: &'a [u8]) -> bool {
        let Some(slot) = self.v.get_mut(self.n) else {
            return false;
        };
        slot.write(libc::iovec {
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        });
        self.n += 1;
        true
    }
}

impl Default for Iovecs<'_> {
    fn default() -> Self {
        Iovecs::new()
    }
}

/// [`send_iovecs`] of the buffers `bufs`, without gathering them into one
/// buffer first.
pub fn writev_to(fd: RawFd, bufs: &[&[u8]], to: Option<&SocketAddr>) -> io::Result<usize> {
    let mut iov = Iovecs::new();
    for b in bufs {
        if !iov.push(b) {
            break;
        }
    }
    send_iovecs(fd, &iov, to)
}

/// `sendmsg` of the pieces in `iov`, to `to` when given (one datagram on
/// a UDP socket), non-blocking, without SIGPIPE. Returns the bytes
/// written; `WouldBlock` when the socket is full.
pub fn send_iovecs(fd: RawFd, iov: &Iovecs<'_>, to: Option<&SocketAddr>) -> io::Result<usize> {
    // SAFETY: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { core::mem::zeroed() };
    // Zeroed only for a datagram's address (128 bytes per stream send
    // otherwise).
    let mut name = MaybeUninit::<libc::sockaddr_storage>::uninit();
    if let Some(sa) = to {
        // SAFETY: all-zero is a valid sockaddr_storage.
        let name = name.write(unsafe { core::mem::zeroed() });
        msg.msg_namelen = raw_sockaddr(sa, name);
        msg.msg_name = name as *mut _ as *mut libc::c_void;
    }
    // The kernel only reads the iovecs (sendmsg's msg_iov is not const
    // in the C declaration).
    msg.msg_iov = iov.v.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = iov.n as _;
    loop {
        // A raw system call: libc's sendmsg is a cancellation point, and
        // its bookkeeping around the call shows in a ping-pong's profile;
        // nothing of ours relies on pthread cancellation.
        // SAFETY: msg points at iov.n initialised iovecs (Iovecs::push
        // writes each before counting it) whose buffers are borrowed for
        // the call, and, when set, at `name`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sendmsg,
                fd,
                &msg as *const libc::msghdr,
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Writes `sa` as a C socket address into `out`; returns its length.
fn raw_sockaddr(sa: &SocketAddr, out: &mut libc::sockaddr_storage) -> libc::socklen_t {
    match sa {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for any
            // socket address.
            let s = unsafe { &mut *(out as *mut _ as *mut libc::sockaddr_in) };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = a.port().to_be();
            s.sin_addr.s_addr = u32::from_ne_bytes(a.ip().octets());
            core::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above.
            let s = unsafe { &mut *(out as *mut _ as *mut libc::sockaddr_in6) };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = a.port().to_be();
            s.sin6_addr.s6_addr = a.ip().octets();
            s.sin6_flowinfo = a.flowinfo();
            s.sin6_scope_id = a.scope_id();
            core::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t
        }
    }
}

/// `recv` into one buffer, non-blocking. Ok(0) means the peer closed.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // A raw system call, as in `send_iovecs`: a busy-polling
        // application makes this call on an empty socket again and again.
        // SAFETY: buf is a live writable slice; no source address is asked.
        let r = unsafe {
            libc::syscall(
                libc::SYS_recvfrom,
                fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
                std::ptr::null_mut::<libc::sockaddr>(),
                std::ptr::null_mut::<libc::socklen_t>(),
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

pub use oxifabric::service::epoll::Epoll;

/// Pauses accepting after an error that leaves the listener readable:
/// without descriptors or memory (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`)
/// the pending connection stays in the backlog, so a level-triggered
/// listener would wake every wait at once, forever. The listener leaves
/// readiness for [`ACCEPT_PAUSE`]; progress after that puts it back.
#[derive(Default)]
pub struct AcceptBackoff {
    until: Option<std::time::Instant>,
}

/// How long accepting pauses after a resource error.
pub const ACCEPT_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

impl AcceptBackoff {
    /// After `accept` failed with `e` on `fd` (watched as `token`): true
    /// when it is a resource error and accepting now pauses.
    pub fn failed(&mut self, epoll: &Epoll, fd: RawFd, token: u64, e: &io::Error) -> bool {
        let resource = matches!(
            e.raw_os_error(),
            Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
        );
        if resource {
            let _ = epoll.set(fd, token, false, false);
            self.until = Some(std::time::Instant::now() + ACCEPT_PAUSE);
        }
        resource
    }

    /// Watches the listener again once the pause is over.
    pub fn resume_due(&mut self, epoll: &Epoll, fd: RawFd, token: u64) {
        if self.until.is_some_and(|t| std::time::Instant::now() >= t) {
            self.until = None;
            let _ = epoll.set(fd, token, true, false);
        }
    }
}

/// A socket an endpoint serves on: a TCP listener (RDM endpoints, passive
/// endpoints) or a UDP socket (DGRAM endpoints).
pub trait Served: AsRawFd + Sized {
    /// Binds (and, for TCP, listens on) `at`.
    fn bind_to(at: SocketAddr) -> io::Result<Self>;
    /// The address it got (the port, when `at` asked for any).
    fn bound_addr(&self) -> io::Result<SocketAddr>;
    /// Makes it non-blocking.
    fn nonblocking(&self) -> io::Result<()>;
}

impl Served for std::net::TcpListener {
    fn bind_to(at: SocketAddr) -> io::Result<Self> {
        let l = std::net::TcpListener::bind(at)?;
        // std listens with a backlog of 128: hundreds of peers connecting
        // at once (an MPI job's start) overflow it, and each dropped SYN
        // costs its peer a one-second retransmission. Listening again
        // raises the backlog to the kernel's limit (`somaxconn`).
        // SAFETY: no pointers; the descriptor is the live listener's.
        if unsafe { libc::listen(l.as_raw_fd(), libc::c_int::MAX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(l)
    }
    fn bound_addr(&self) -> io::Result<SocketAddr> {
        self.local_addr()
    }
    fn nonblocking(&self) -> io::Result<()> {
        self.set_nonblocking(true)
    }
}

impl Served for std::net::UdpSocket {
    fn bind_to(at: SocketAddr) -> io::Result<Self> {
        std::net::UdpSocket::bind(at)
    }
    fn bound_addr(&self) -> io::Result<SocketAddr> {
        self.local_addr()
    }
    fn nonblocking(&self) -> io::Result<()> {
        self.set_nonblocking(true)
    }
}

/// Binds a socket at `want` for `what` (named in the log line), makes it
/// non-blocking and watches it in `epoll` under `token`. A failed bind is
/// `FI_EADDRINUSE` or `FI_EADDRNOTAVAIL`, the OS error kept.
pub fn serve<S: Served>(
    want: SocketAddr,
    epoll: &Epoll,
    token: u64,
    what: &str,
) -> oxifabric::error::Result<(S, SocketAddr)> {
    use oxifabric::abi::*;
    use oxifabric::error::Error;
    let s = S::bind_to(want).map_err(|e| {
        oxifabric::prov_log!(
            "sockets",
            FI_LOG_WARN,
            FI_LOG_EP_CTRL,
            "{what}: cannot bind {want}: {e}"
        );
        if e.kind() == io::ErrorKind::AddrInUse {
            Error::os(FI_EADDRINUSE, &e)
        } else {
            Error::os(FI_EADDRNOTAVAIL, &e)
        }
    })?;
    s.nonblocking()?;
    let at = s.bound_addr()?;
    epoll.add(s.as_raw_fd(), token, false)?;
    Ok((s, at))
}
