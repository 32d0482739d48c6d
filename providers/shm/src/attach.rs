//! How two processes of one host find each other and exchange their
//! regions, leaving nothing on disk.
//!
//! Each endpoint listens on a `SOCK_SEQPACKET` Unix socket in the
//! **abstract namespace** (Linux), named `oxifabric-shm:` followed by its
//! random 128-bit [`EndpointId`] in hex. An abstract name is no file: it
//! exists exactly as long as the socket bound to it, and the kernel closes
//! that socket when its process exits, `SIGKILL` included. So a killed
//! process leaves no stale name behind, and a new endpoint can always
//! bind (a name still in use is a live endpoint: `AddrInUse`).
//!
//! The handshake, bounded by the caller's timeout at every step (connect,
//! send, receive), never waits forever on a silent peer:
//!
//! 1. The connecting side connects and checks the listener's credentials.
//! 2. It sends a hello (magic, version, the claimer id the peer is to use
//!    in its ring, its endpoint id, the address and contents of a probe
//!    word in its own memory, and an optional name its owner gives, such
//!    as its TCP listener's address) with three descriptors attached
//!    (`SCM_RIGHTS`): its ring's region, its ring's doorbell and its
//!    process's life page (`crate::alive`).
//! 3. The accepting side checks the connector's credentials, receives the
//!    hello and descriptor, and answers with its own.
//!
//! Credentials come from the kernel (`SO_PEERCRED`), not from the peer: a
//! peer of another user is refused (`FI_EACCES`), since attaching would
//! hand it our memory. A hello of the wrong size, magic or version, with a
//! claimer id of 0, without exactly three descriptors, or whose descriptors
//! are not a sealed memfd, a non-blocking eventfd and a page closed to
//! writers is refused too;
//! every descriptor of a refused hello is closed.
//!
//! The probe word is this process's ([`probe_word`]): once the handshake
//! is done, each side may read it from the other with cross-memory
//! attach ([`Peer::probe_cma`]) to learn whether the kernel lets it read
//! that peer's memory. Its address is used only as an address in the
//! other process, which the kernel checks; its value only to compare.
//!
//! Liveness: the kernel's pidfd for the peer (`SO_PEERPIDFD` on Linux 6.5
//! and later, race-free; else `pidfd_open` on the credentials' pid) becomes
//! readable when the peer exits; the connection itself, kept open, hangs
//! up when the peer exits or closes it. [`Peer::liveness_fds`] gives both
//! for a poll loop. Before either, the kernel marks the peer's life page,
//! which [`Peer::surely_alive`] reads without a system call.

use crate::cma;
use crate::doorbell::Doorbell;
use crate::region::{last_os, LifePage, Region, Shared, MAX_LEN};
use oxifabric::abi::{FI_EACCES, FI_ECONNREFUSED, FI_ECONNRESET, FI_EIO};
use oxifabric::error::{Error, Result};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PREFIX: &str = "oxifabric-shm:";
const HELLO_MAGIC: u64 = u64::from_le_bytes(*b"oxishmh1");
/// Version 2 added the doorbell and the claimer id; version 3 the probe
/// word's address and contents; version 4 the name; version 5 the life
/// page.
const HELLO_VERSION: u32 = 5;
/// magic u64 | version u32 | claimer u32 | endpoint id [u8; 16] |
/// probe address u64 | probe contents u64 | name length u8 |
/// name [u8; MAX_NAME].
const HELLO_LEN: usize = 49 + MAX_NAME;
/// The longest name a hello carries ([`Offer::name`]).
pub const MAX_NAME: usize = 63;
const BACKLOG: libc::c_int = 128;
/// The bytes of a hello's descriptors (three `int`s).
const FDS_BYTES: u32 = 12;

/// This process's probe word: a random value (not 0) that stays at one
/// address for the life of the process, announced in every hello so that
/// peers can check that cross-memory reads of us work (and read what we
/// said, not some other process that got our pid).
pub fn probe_word() -> &'static u64 {
    static WORD: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    WORD.get_or_init(|| {
        let id = EndpointId::random().map(|id| id.0).unwrap_or_default();
        let v = u64::from_ne_bytes(id[..8].try_into().unwrap_or_default());
        // Not 0, even if the random source failed.
        v | 1
    })
}

/// An endpoint's random 128-bit id; its listener's abstract name is
/// derived from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointId(pub [u8; 16]);

/// Hashed as two words (the derived form hashes a length and 16 single
/// bytes; ids are looked up on every send and every received cell).
impl std::hash::Hash for EndpointId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let (a, b) = self.0.split_at(8);
        state.write_u64(u64::from_le_bytes(a.try_into().unwrap_or_default()));
        state.write_u64(u64::from_le_bytes(b.try_into().unwrap_or_default()));
    }
}

impl EndpointId {
    /// A new id from the kernel's random source (so two endpoints, of
    /// this or a later run, do not collide).
    pub fn random() -> Result<EndpointId> {
        let mut b = [0u8; 16];
        let mut got = 0;
        while got < b.len() {
            // SAFETY: writes at most the remaining bytes of `b`.
            let n = unsafe { libc::getrandom(b[got..].as_mut_ptr().cast(), b.len() - got, 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(Error::os(FI_EIO, &e));
            }
            got += n as usize;
        }
        Ok(EndpointId(b))
    }

    /// The id in hex (32 characters).
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses [`EndpointId::hex`]'s form.
    pub fn from_hex(s: &str) -> Option<EndpointId> {
        if s.len() != 32 || !s.is_ascii() {
            return None;
        }
        let mut b = [0u8; 16];
        for (i, out) in b.iter_mut().enumerate() {
            *out = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(EndpointId(b))
    }

    /// The listener's abstract socket address (leading NUL, no trailing
    /// one) and its length.
    fn sockaddr(&self) -> (libc::sockaddr_un, libc::socklen_t) {
        let name = format!("{PREFIX}{}", self.hex());
        // SAFETY: all-zero is a valid sockaddr_un.
        let mut a: libc::sockaddr_un = unsafe { core::mem::zeroed() };
        a.sun_family = libc::AF_UNIX as libc::sa_family_t;
        // sun_path[0] stays 0: the abstract namespace. 46 bytes fit the
        // 108 of sun_path.
        for (dst, b) in a.sun_path[1..].iter_mut().zip(name.bytes()) {
            *dst = b as libc::c_char;
        }
        let len = core::mem::offset_of!(libc::sockaddr_un, sun_path) + 1 + name.len();
        (a, len as libc::socklen_t)
    }
}

/// What one side hands the other at attach: its ring's region and
/// doorbell, its process's life page, and the claimer id the other side is to use in that ring
/// (`ring::Receiver::offer` makes one).
#[derive(Clone, Copy)]
pub struct Offer<'a> {
    /// The ring's region.
    pub region: &'a Region,
    /// The ring's doorbell.
    pub doorbell: &'a Doorbell,
    /// The owner's process's life page (`crate::alive::own_page`).
    pub life: &'a LifePage,
    /// The peer's claimer id in this ring (not 0).
    pub claimer: u32,
    /// What the owner says it is besides its id (the sockets provider:
    /// its TCP listener's address), at most [`MAX_NAME`] bytes; a claim,
    /// which the peer checks against our id before believing it.
    pub name: &'a [u8],
}

impl<'a> Offer<'a> {
    /// The offer with `name` (longer than [`MAX_NAME`]: cut).
    pub fn named(self, name: &'a [u8]) -> Offer<'a> {
        Offer {
            name: &name[..name.len().min(MAX_NAME)],
            ..self
        }
    }
}

/// What one side got from the other: the peer's ring's region (mapped)
/// and doorbell, and our claimer id in that ring; together what
/// `ring::Sender::attach` needs.
pub struct Grant {
    /// The peer's ring's region (one mapping per process, see
    /// [`Shared`]).
    pub region: Arc<Region>,
    /// The peer's doorbell.
    pub doorbell: Doorbell,
    /// Our claimer id in the peer's ring.
    pub claimer: u32,
}

/// The peers' rings and life pages this process maps, each once.
static PEER_REGIONS: Shared<Region> = Shared::new();
static PEER_LIVES: Shared<LifePage> = Shared::new();

/// An endpoint's listener: peers connect to it by the endpoint's id.
pub struct Listener {
    sock: OwnedFd,
    id: EndpointId,
}

impl Listener {
    /// Listens under `id`'s abstract name; `AddrInUse` when a live
    /// endpoint has it.
    pub fn bind(id: EndpointId) -> Result<Listener> {
        let sock = seqpacket(libc::SOCK_NONBLOCK)?;
        if let Err(e) = at_name(sock.as_fd(), &id, libc::bind) {
            if e.raw_os_error() == Some(libc::EADDRINUSE) {
                return Err(Error::AddrInUse);
            }
            return Err(Error::os(FI_EIO, &e));
        }
        // SAFETY: listen on our bound socket.
        if unsafe { libc::listen(sock.as_raw_fd(), BACKLOG) } != 0 {
            return Err(last_os(FI_EIO));
        }
        Ok(Listener { sock, id })
    }

    /// The id peers connect to.
    pub fn id(&self) -> EndpointId {
        self.id
    }

    /// The listening socket, readable when a peer is waiting (for a poll
    /// loop that then calls [`Listener::accept`]).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// Waits up to `timeout` for a peer, then exchanges rings with it:
    /// our `own` offer for the peer's, whose region is mapped and
    /// returned. `TimedOut` when no peer came or it did not finish the
    /// handshake in time; `FI_EACCES` for a peer of another user.
    pub fn accept(&self, own: &Offer<'_>, timeout: Duration) -> Result<(Peer, Grant)> {
        let deadline = Instant::now() + timeout;
        // The listener is non-blocking: if another thread takes the
        // connection poll announced, wait again instead of blocking.
        let sock = loop {
            if !wait_fd(self.sock.as_fd(), libc::POLLIN, deadline)? {
                return Err(Error::TimedOut);
            }
            // SAFETY: accept4 on our listening socket, no address wanted.
            let raw = unsafe {
                libc::accept4(
                    self.sock.as_raw_fd(),
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                )
            };
            if raw >= 0 {
                // SAFETY: accept4 returned a new descriptor nothing else owns.
                break unsafe { OwnedFd::from_raw_fd(raw) };
            }
            let e = std::io::Error::last_os_error();
            if !matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) {
                return Err(Error::os(FI_ECONNREFUSED, &e));
            }
        };
        let cred = same_user(sock.as_fd())?;
        set_timeouts(sock.as_fd(), deadline)?;
        let (hello, fds) = recv_hello(sock.as_fd(), 0)?;
        send_hello(sock.as_fd(), &self.id, own)?;
        Peer::finish(sock, cred, hello, fds)
    }
}

/// Connects to the endpoint `id` and exchanges rings: our `own` offer for
/// its, whose region is mapped and returned. Bounded by `timeout` as a
/// whole.
pub fn connect(
    id: &EndpointId,
    own_id: &EndpointId,
    own: &Offer<'_>,
    timeout: Duration,
) -> Result<(Peer, Grant)> {
    let deadline = Instant::now() + timeout;
    let sock = seqpacket(0)?;
    // SO_SNDTIMEO also bounds a connect that waits for room in a busy
    // listener's backlog.
    set_timeouts(sock.as_fd(), deadline)?;
    if let Err(e) = at_name(sock.as_fd(), id, libc::connect) {
        return Err(match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EINPROGRESS) => Error::TimedOut,
            _ => Error::os(FI_ECONNREFUSED, &e),
        });
    }
    let cred = same_user(sock.as_fd())?;
    send_hello(sock.as_fd(), own_id, own)?;
    let (hello, fds) = recv_hello(sock.as_fd(), 0)?;
    Peer::finish(sock, cred, hello, fds)
}

/// A peer after the handshake: who it is and how to notice it is gone.
pub struct Peer {
    id: EndpointId,
    pid: libc::pid_t,
    sock: OwnedFd,
    pidfd: Option<OwnedFd>,
    /// Where the peer said its probe word is (in its memory), and what
    /// it holds.
    probe: (usize, u64),
    /// The name its hello carried (a claim; may be empty).
    name: Vec<u8>,
    /// Its process's life page, mapped read-only (once per process).
    life: Arc<LifePage>,
}

impl Peer {
    fn finish(
        sock: OwnedFd,
        cred: libc::ucred,
        hello: [u8; HELLO_LEN],
        [region, doorbell, life]: [OwnedFd; 3],
    ) -> Result<(Peer, Grant)> {
        let mut id = [0u8; 16];
        id.copy_from_slice(&hello[16..32]);
        let claimer = u32::from_ne_bytes([hello[12], hello[13], hello[14], hello[15]]);
        let word = |at: usize| u64::from_ne_bytes(hello[at..at + 8].try_into().unwrap_or_default());
        // Any values: the address is only ever the peer's, for the kernel
        // to check; the contents are only compared.
        let probe = (word(32) as usize, word(40));
        let name_len = usize::from(hello[48]);
        if claimer == 0 || name_len > MAX_NAME {
            return Err(Error::Inval);
        }
        let name = hello[49..49 + name_len].to_vec();
        let grant = Grant {
            region: PEER_REGIONS.get_or_map(region, |fd| Region::from_fd(fd, MAX_LEN))?,
            doorbell: Doorbell::from_fd(doorbell)?,
            claimer,
        };
        let life = PEER_LIVES.get_or_map(life, LifePage::from_fd)?;
        let pidfd = peer_pidfd(sock.as_fd(), cred.pid);
        let peer = Peer {
            id: EndpointId(id),
            pid: cred.pid,
            sock,
            pidfd,
            probe,
            name,
            life,
        };
        Ok((peer, grant))
    }

    /// The id the peer announced (its listener's name).
    pub fn id(&self) -> EndpointId {
        self.id
    }

    /// The name the peer's hello carried ([`Offer::name`]; a claim).
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The peer's process id, as the kernel reported it at connect time.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Whether cross-memory attach to the peer works: reads the probe
    /// word the peer announced from its memory (`cma::probe`) and
    /// compares. `false` when the kernel refuses (ptrace rules, seccomp,
    /// a non-dumpable peer), when the word is not what the peer said
    /// (another process, or a lying peer), or when the peer is gone.
    pub fn probe_cma(&self) -> bool {
        let (addr, value) = self.probe;
        cma::probe(self.pid, addr, &value.to_ne_bytes()).is_ok()
    }

    /// Whether the peer's process certainly lives, from its life page
    /// (one load, no system call): false means "maybe not", to be asked
    /// of the kernel ([`Peer::wait_gone`]).
    pub fn surely_alive(&self) -> bool {
        crate::alive::surely_alive(self.life.owner_word())
    }

    /// Its process's life page.
    pub fn life(&self) -> Arc<LifePage> {
        self.life.clone()
    }

    /// Whether a pidfd watches the process (else only the connection's
    /// hang-up does).
    pub fn has_pidfd(&self) -> bool {
        self.pidfd.is_some()
    }

    /// Descriptors that become ready when the peer is gone: the pidfd
    /// (readable when the process exits), if any, and the connection
    /// (hung up when the process exits or closes it).
    pub fn liveness_fds(&self) -> (Option<BorrowedFd<'_>>, BorrowedFd<'_>) {
        (self.pidfd.as_ref().map(|f| f.as_fd()), self.sock.as_fd())
    }

    /// Whether the peer is gone, waiting up to `timeout` for it to go.
    pub fn wait_gone(&self, timeout: Duration) -> Result<bool> {
        let mut fds = self.liveness_pollfds();
        poll_until(&mut fds, Instant::now() + timeout)?;
        Ok(Peer::gone_in(&fds))
    }

    /// Which of `peers` are gone, in one `poll` that does not wait.
    pub fn which_gone(peers: &[&Peer]) -> Result<Vec<bool>> {
        let (mut fds, mut gone) = (Vec::new(), Vec::new());
        Peer::poll_gone(peers.iter().copied(), &mut fds, &mut gone)?;
        Ok(gone)
    }

    /// [`Peer::which_gone`] into buffers the caller keeps (progress
    /// looks every few milliseconds and allocates nothing): `gone` gets
    /// one flag per peer, in order.
    pub fn poll_gone<'a>(
        peers: impl IntoIterator<Item = &'a Peer>,
        fds: &mut Vec<libc::pollfd>,
        gone: &mut Vec<bool>,
    ) -> Result<()> {
        fds.clear();
        gone.clear();
        for p in peers {
            fds.extend(p.liveness_pollfds());
        }
        poll_until(fds, Instant::now())?;
        gone.extend(fds.chunks(2).map(Peer::gone_in));
        Ok(())
    }

    /// The connection (watched for hang-up) and the pidfd (readable on
    /// exit; -1, which poll skips, when there is none).
    fn liveness_pollfds(&self) -> [libc::pollfd; 2] {
        [
            libc::pollfd {
                fd: self.sock.as_raw_fd(),
                events: libc::POLLRDHUP,
                revents: 0,
            },
            libc::pollfd {
                fd: self.pidfd.as_ref().map_or(-1, |f| f.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ]
    }

    /// Whether [`Peer::liveness_pollfds`] after a poll say the peer is gone.
    fn gone_in(fds: &[libc::pollfd]) -> bool {
        let hung_up = fds[0].revents & (libc::POLLHUP | libc::POLLRDHUP | libc::POLLERR) != 0;
        hung_up || fds[1].revents & libc::POLLIN != 0
    }
}

/// The signature libc's `bind` and `connect` share.
type AddrCall =
    unsafe extern "C" fn(libc::c_int, *const libc::sockaddr, libc::socklen_t) -> libc::c_int;

/// Binds or connects (`call`) `sock` to `id`'s abstract name.
fn at_name(sock: BorrowedFd<'_>, id: &EndpointId, call: AddrCall) -> std::io::Result<()> {
    let (addr, len) = id.sockaddr();
    // SAFETY: `call` is bind or connect on an open socket; addr is a
    // valid sockaddr_un of `len` bytes.
    let rc = unsafe {
        call(
            sock.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A new `SOCK_SEQPACKET` Unix socket: message boundaries are kept, so a
/// hello arrives whole or not at all. `flags` adds `SOCK_NONBLOCK`.
fn seqpacket(flags: libc::c_int) -> Result<OwnedFd> {
    let ty = libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | flags;
    // SAFETY: plain socket creation.
    let raw = unsafe { libc::socket(libc::AF_UNIX, ty, 0) };
    if raw < 0 {
        return Err(last_os(FI_EIO));
    }
    // SAFETY: socket returned a new descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// The peer's credentials, refused (`FI_EACCES`) unless it runs as our
/// effective user.
fn same_user(sock: BorrowedFd<'_>) -> Result<libc::ucred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = core::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred and len are writable and len is cred's size.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(last_os(FI_EIO));
    }
    // SAFETY: geteuid has no preconditions.
    if cred.uid != unsafe { libc::geteuid() } || cred.pid <= 0 {
        return Err(Error::Other(FI_EACCES));
    }
    Ok(cred)
}

/// A pidfd for the peer: the kernel's own for the socket's peer where it
/// has `SO_PEERPIDFD` (no pid-reuse race), else `pidfd_open(pid)`, else
/// none (the connection's hang-up remains).
fn peer_pidfd(sock: BorrowedFd<'_>, pid: libc::pid_t) -> Option<OwnedFd> {
    let mut fd: libc::c_int = -1;
    let mut len = core::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: fd and len are writable and len is fd's size.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERPIDFD,
            (&mut fd as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    let raw = if rc == 0 && fd >= 0 {
        fd
    } else {
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor or -1.
        let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if r < 0 {
            return None;
        }
        r as RawFd
    };
    // SAFETY: a new descriptor nothing else owns. pidfd_open's is not
    // close-on-exec by default; set it.
    unsafe {
        libc::fcntl(raw, libc::F_SETFD, libc::FD_CLOEXEC);
        Some(OwnedFd::from_raw_fd(raw))
    }
}

/// Whether the process `pid`, seen moments ago, has exited or does
/// within `grace`: no pidfd can be opened for it, or its pidfd says so
/// (an exited process not yet reaped by its parent too). A failed
/// handshake asks, to tell a dead peer from one that could not take us
/// on. The grace covers a process being killed: the kernel closes its
/// descriptors (our handshake sees the hang-up) a moment before it marks
/// the process exited; without it, a peer killed mid-handshake looked
/// alive and its sends went on by another path to a dead address.
pub fn process_gone(pid: libc::pid_t, grace: Duration) -> bool {
    // SAFETY: pidfd_open takes a pid and flags and returns a new
    // descriptor or -1.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if r < 0 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    // SAFETY: a new descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(r as RawFd) };
    let mut p = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    poll_until(&mut p, Instant::now() + grace).is_ok() && p[0].revents & libc::POLLIN != 0
}

/// Bounds every later send and receive (and connect) on `sock` by the
/// time left until `deadline` (at least 1 ms; zero would mean "forever").
fn set_timeouts(sock: BorrowedFd<'_>, deadline: Instant) -> Result<()> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    let tv = libc::timeval {
        tv_sec: left.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_usec: left.subsec_micros() as libc::suseconds_t,
    };
    for opt in [libc::SO_SNDTIMEO, libc::SO_RCVTIMEO] {
        // SAFETY: tv is a valid timeval of the given size.
        let rc = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&tv as *const libc::timeval).cast(),
                core::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(last_os(FI_EIO));
        }
    }
    Ok(())
}

/// Space for one control message carrying a few descriptors, aligned for
/// `cmsghdr`.
#[repr(C, align(8))]
struct CmsgBuf([u8; 64]);

/// A message header over one iovec and `control_len` bytes of `cbuf`
/// (at most its size): what both hello directions pass to the kernel.
fn msghdr_over(iov: &mut libc::iovec, cbuf: &mut CmsgBuf, control_len: usize) -> libc::msghdr {
    // SAFETY: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { core::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.0.as_mut_ptr().cast();
    msg.msg_controllen = control_len.min(cbuf.0.len()) as _;
    msg
}

fn send_hello(sock: BorrowedFd<'_>, id: &EndpointId, own: &Offer<'_>) -> Result<()> {
    send_hello_raw(
        sock,
        id,
        own.claimer,
        own.name,
        [own.region.fd(), own.doorbell.fd(), own.life.fd()],
    )
}

/// The step-by-step handshake, for a caller that must never block (a
/// provider's progress): each step does one non-blocking system call or
/// a few, and says whether it got further. The checks are the blocking
/// path's own (`same_user`, `recv_hello`, `Peer::finish`).
impl Listener {
    /// Takes one waiting connection, if any, and checks its credentials
    /// (`FI_EACCES` for another user; the connection is closed). The
    /// connector's hello may still be on its way: [`Handshake::try_receive`],
    /// then [`Peer::answer`].
    pub fn try_accept(&self) -> Result<Option<Handshake>> {
        loop {
            // SAFETY: accept4 on our listening socket, no address wanted.
            let raw = unsafe {
                libc::accept4(
                    self.sock.as_raw_fd(),
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                    libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                )
            };
            if raw >= 0 {
                // SAFETY: accept4 returned a new descriptor nothing else owns.
                let sock = unsafe { OwnedFd::from_raw_fd(raw) };
                let cred = same_user(sock.as_fd())?;
                return Ok(Some(Handshake {
                    sock,
                    cred,
                    expect: None,
                }));
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => return Ok(None),
                _ => return Err(Error::os(FI_ECONNREFUSED, &e)),
            }
        }
    }
}

/// What one attempt to reach an endpoint found.
pub enum Attempt {
    /// Nobody listens under its name (in this network namespace).
    Absent,
    /// Its listener's backlog is full, or the call was interrupted: try
    /// again later.
    Busy,
    /// Connected, our hello sent: its answer comes through
    /// [`Handshake::try_receive`].
    Started(Handshake),
}

/// One attempt to reach the endpoint `id` without blocking: when it
/// listens, the connection, its credentials checked and our hello
/// (`own_id`, `own`) sent. The peer's answer comes through
/// [`Handshake::try_receive`], which also checks that the peer is `id`.
pub fn try_connect(id: &EndpointId, own_id: &EndpointId, own: &Offer<'_>) -> Result<Attempt> {
    let sock = seqpacket(libc::SOCK_NONBLOCK)?;
    if let Err(e) = at_name(sock.as_fd(), id, libc::connect) {
        return match e.raw_os_error() {
            Some(libc::ECONNREFUSED | libc::ENOENT) => Ok(Attempt::Absent),
            Some(libc::EAGAIN | libc::EINTR) => Ok(Attempt::Busy),
            _ => Err(Error::os(FI_ECONNREFUSED, &e)),
        };
    }
    let cred = same_user(sock.as_fd())?;
    // A new connection's queue is empty: the hello fits, or the send
    // fails (never waits).
    send_hello(sock.as_fd(), own_id, own)?;
    Ok(Attempt::Started(Handshake {
        sock,
        cred,
        expect: Some(*id),
    }))
}

/// A connection whose peer's hello has not arrived yet.
pub struct Handshake {
    sock: OwnedFd,
    cred: libc::ucred,
    /// The id the peer must announce (we connected to it), if we know it.
    expect: Option<EndpointId>,
}

impl Handshake {
    /// The process at the other end (its credentials' pid), for
    /// [`process_gone`] should the handshake fail.
    pub fn peer_pid(&self) -> libc::pid_t {
        self.cred.pid
    }

    /// The connection, readable when the peer's hello (or its hang-up)
    /// arrives.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// The peer's hello if it arrived (`Err(self)` back when not yet),
    /// refused as in the blocking path, and `Inval` when the peer is not
    /// the endpoint we connected to.
    pub fn try_receive(self) -> Result<core::result::Result<(Peer, Grant), Handshake>> {
        let (hello, fds) = match recv_hello(self.sock.as_fd(), libc::MSG_DONTWAIT) {
            Ok(h) => h,
            // EAGAIN: nothing yet.
            Err(Error::TimedOut) => return Ok(Err(self)),
            Err(e) => return Err(e),
        };
        let (peer, grant) = Peer::finish(self.sock, self.cred, hello, fds)?;
        if self.expect.is_some_and(|id| id != peer.id) {
            return Err(Error::Inval);
        }
        Ok(Ok((peer, grant)))
    }
}

impl Peer {
    /// Sends our hello on an accepted connection (after
    /// [`Handshake::try_receive`]), without waiting.
    pub fn answer(&self, own_id: &EndpointId, own: &Offer<'_>) -> Result<()> {
        send_hello(self.sock.as_fd(), own_id, own)
    }
}

/// A hello carrying `claimer`, our `id` and the descriptors `fds` (the
/// region's, the doorbell's, the life page's).
fn send_hello_raw(
    sock: BorrowedFd<'_>,
    id: &EndpointId,
    claimer: u32,
    name: &[u8],
    fds: [BorrowedFd<'_>; 3],
) -> Result<()> {
    let mut hello = [0u8; HELLO_LEN];
    hello[0..8].copy_from_slice(&HELLO_MAGIC.to_ne_bytes());
    hello[8..12].copy_from_slice(&HELLO_VERSION.to_ne_bytes());
    hello[12..16].copy_from_slice(&claimer.to_ne_bytes());
    hello[16..32].copy_from_slice(&id.0);
    let probe = probe_word();
    hello[32..40].copy_from_slice(&(probe as *const u64 as u64).to_ne_bytes());
    hello[40..48].copy_from_slice(&probe.to_ne_bytes());
    let name = &name[..name.len().min(MAX_NAME)];
    hello[48] = name.len() as u8;
    hello[49..49 + name.len()].copy_from_slice(name);
    let mut iov = libc::iovec {
        iov_base: hello.as_mut_ptr().cast(),
        iov_len: hello.len(),
    };
    let mut cbuf = CmsgBuf([0; 64]);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(FDS_BYTES) } as usize;
    let msg = msghdr_over(&mut iov, &mut cbuf, space);
    // SAFETY: msg_control points at 64 aligned bytes, more than
    // CMSG_SPACE(FDS_BYTES); the first header and its three descriptors
    // lie inside them.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(FDS_BYTES) as _;
        let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
        for (i, fd) in fds.iter().enumerate() {
            core::ptr::write_unaligned(data.add(i), fd.as_raw_fd());
        }
    }
    // SAFETY: msg and everything it points at are valid for the call.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n != HELLO_LEN as isize {
        return Err(io_failure());
    }
    Ok(())
}

/// Receives a hello and its three descriptors; anything else is refused
/// (`Inval`), every descriptor that came with it closed.
fn recv_hello(sock: BorrowedFd<'_>, flags: libc::c_int) -> Result<([u8; HELLO_LEN], [OwnedFd; 3])> {
    // One byte more than a hello, to see a longer message as such.
    let mut buf = [0u8; HELLO_LEN + 1];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = CmsgBuf([0; 64]);
    let mut msg = msghdr_over(&mut iov, &mut cbuf, 64);
    // SAFETY: msg points at writable buffers of the lengths it gives.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC | flags) };
    if n < 0 {
        return Err(io_failure());
    }
    let mut fds = Vec::new();
    // SAFETY: walks the control messages the kernel wrote into cbuf,
    // within msg_controllen, with the libc macros; each SCM_RIGHTS
    // payload holds (cmsg_len - CMSG_LEN(0)) / 4 descriptors that are now
    // ours, wrapped at once so that each is closed if refused.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
                for i in 0..bytes / 4 {
                    fds.push(OwnedFd::from_raw_fd(core::ptr::read_unaligned(data.add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if n == 0 {
        return Err(Error::Other(FI_ECONNRESET));
    }
    let truncated = msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0;
    let magic = u64::from_ne_bytes(buf[0..8].try_into().unwrap_or_default());
    let version = u32::from_ne_bytes(buf[8..12].try_into().unwrap_or_default());
    if truncated || n as usize != HELLO_LEN || magic != HELLO_MAGIC || version != HELLO_VERSION {
        return Err(Error::Inval);
    }
    let fds: [OwnedFd; 3] = fds.try_into().map_err(|_| Error::Inval)?;
    let mut hello = [0u8; HELLO_LEN];
    hello.copy_from_slice(&buf[..HELLO_LEN]);
    Ok((hello, fds))
}

/// A failed send or receive: a timeout is `TimedOut`, anything else a
/// reset connection with its errno.
fn io_failure() -> Error {
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) => Error::TimedOut,
        _ => Error::os(FI_ECONNRESET, &e),
    }
}

/// Whether `fd` reports `events` before `deadline`.
fn wait_fd(fd: BorrowedFd<'_>, events: libc::c_short, deadline: Instant) -> Result<bool> {
    let mut p = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    }];
    poll_until(&mut p, deadline)?;
    Ok(p[0].revents != 0)
}

/// Polls until something is ready or `deadline` passes (retrying after
/// signals). Entries with a negative fd are ignored, as poll does.
pub(crate) fn poll_until(fds: &mut [libc::pollfd], deadline: Instant) -> Result<()> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = left.as_millis().min(i32::MAX as u128) as libc::c_int;
        // Round up, so a sub-millisecond rest still waits.
        let ms = if ms == 0 && !left.is_zero() { 1 } else { ms };
        // SAFETY: fds is a valid, writable array of its length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n >= 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(Error::os(FI_EIO, &e));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A bare connection to `id`'s listener that says nothing by itself.
    pub(crate) fn connect_raw(id: &EndpointId) -> OwnedFd {
        let sock = seqpacket(0).unwrap();
        at_name(sock.as_fd(), id, libc::connect).unwrap();
        sock
    }

    #[test]
    fn ids_are_random_and_round_trip_through_hex() {
        let a = EndpointId::random().unwrap();
        assert_ne!(a, EndpointId::random().unwrap());
        assert_eq!(EndpointId::from_hex(&a.hex()), Some(a));
        assert_eq!(EndpointId::from_hex("xyz"), None);
        assert_eq!(EndpointId::from_hex(&"g".repeat(32)), None);
    }

    #[test]
    fn a_hello_that_is_not_one_is_refused() {
        let region = Region::create(4096).unwrap();
        let bell = Doorbell::new().unwrap();
        let life = crate::alive::own_page().unwrap();
        let own = Offer {
            region: &region,
            doorbell: &bell,
            life,
            claimer: 5,
            name: &[],
        };
        let l = Listener::bind(EndpointId::random().unwrap()).unwrap();
        // Right size, wrong magic, with a descriptor.
        let raw = connect_raw(&l.id());
        let junk = [0xffu8; HELLO_LEN];
        // SAFETY: sends our local buffer.
        let n = unsafe { libc::send(raw.as_raw_fd(), junk.as_ptr().cast(), HELLO_LEN, 0) };
        assert_eq!(n, HELLO_LEN as isize);
        let r = l.accept(&own, Duration::from_secs(5));
        assert_eq!(r.err(), Some(Error::Inval), "no descriptor, bad magic");
        // Proper hellos whose descriptors are not a sealed memfd, an
        // eventfd and a life page, or whose claimer id is 0.
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        let lf = life.fd();
        let bad = [
            (1, [file.as_fd(), bell.fd(), lf], "not a region"),
            (1, [region.fd(), file.as_fd(), lf], "not an eventfd"),
            (1, [region.fd(), region.fd(), lf], "a region is no doorbell"),
            (
                1,
                [region.fd(), bell.fd(), region.fd()],
                "a region peers may write is no life page",
            ),
            (0, [region.fd(), bell.fd(), lf], "claimer 0"),
        ];
        for (claimer, fds, what) in bad {
            let raw = connect_raw(&l.id());
            send_hello_raw(raw.as_fd(), &EndpointId([1; 16]), claimer, &[], fds).unwrap();
            let r = l.accept(&own, Duration::from_secs(5));
            assert_eq!(r.err(), Some(Error::Inval), "{what}");
        }
        // And a proper one works, in one process too.
        let raw = connect_raw(&l.id());
        send_hello(raw.as_fd(), &EndpointId([2; 16]), &own).unwrap();
        let (peer, grant) = l.accept(&own, Duration::from_secs(5)).unwrap();
        assert_eq!(peer.id(), EndpointId([2; 16]));
        assert_eq!(peer.pid(), std::process::id() as libc::pid_t);
        assert_eq!(grant.region.len(), 4096);
        assert_eq!(grant.claimer, 5);
        let (hello, [fd, _bell, _life]) = recv_hello(raw.as_fd(), 0).unwrap();
        assert_eq!(hello[16..32], l.id().0);
        assert_eq!(hello[12..16], 5u32.to_ne_bytes());
        assert_eq!(hello[40..48], probe_word().to_ne_bytes());
        assert!(peer.probe_cma(), "reading our own probe word works");
        assert!(
            peer.surely_alive() || !cfg!(target_env = "gnu"),
            "our own life page says we live"
        );
        assert!(Region::from_fd(fd, MAX_LEN).is_ok());
        assert!(!peer.wait_gone(Duration::ZERO).unwrap());
        drop(raw);
        assert!(
            peer.wait_gone(Duration::from_secs(5)).unwrap(),
            "hang-up seen"
        );
    }
}
