//! A loopback endpoint: one non-blocking Unix datagram socket. A message
//! travels as one or more fragments to the peer's socket; each carries a
//! small header, and the first one says the message's length, tag and CQ
//! data. Unix datagrams between two sockets are reliable and ordered, so
//! fragments of one sender arrive in order; the receiver keeps one partial
//! message per sender.
//!
//! A MSG endpoint talks to one peer. `fi_connect` sends a `CONNREQ`
//! control datagram to the passive endpoint (`pep.rs`); the endpoint that
//! accepts it answers `ACCEPT` from its own socket, which becomes the
//! client's peer; `REJECT` and `SHUTDOWN` end it.

use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::{iov_len, Binding, EndpointOps, IoVec, OptValue, RecvOp, SendOp};
use oxifabric::service::ep_core::{self, EpCore, Failure, TxCtx};
use oxifabric::service::progress::Progress;
use oxifabric::service::reassembly::Reassembly;
use oxifabric::service::rxq::{self, MsgInfo, RxQueues};
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};
use std::sync::{Arc, Mutex, Weak};

/// Payload bytes per fragment.
pub const FRAG: usize = 60 << 10;
const HDR: usize = 32;
const FIRST: u8 = 1;
const HAS_TAG: u8 = 2;
const HAS_DATA: u8 = 4;
/// A control datagram; its operation is in byte 1.
pub(crate) const CTRL: u8 = 8;
pub(crate) const CONNREQ: u8 = 1;
pub(crate) const ACCEPT: u8 = 2;
pub(crate) const REJECT: u8 = 3;
const SHUTDOWN: u8 = 4;

/// The state of a MSG endpoint's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conn {
    Idle,
    /// Waiting for the passive endpoint's answer.
    Connecting,
    /// Talking to the endpoint at this port.
    Up(u16),
    Down,
}
const PROV: &str = crate::NAME;

/// A message's key: the sender's port and its message number.
type Key = (u16, u32);

/// A send that found the peer's queue full: its remaining fragments.
struct Pending {
    to: u16,
    frames: VecDeque<Vec<u8>>,
    tx: TxCtx,
}

struct State {
    core: EpCore,
    rxq: RxQueues<Key>,
    sock: Option<UnixDatagram>,
    port: u16,
    partial: Reassembly<Key>,
    next_seq: u32,
    conn: Conn,
    /// MSG: the port the connection is known by on each side, as TCP
    /// would name it: the passive endpoint's (ours when we accepted, the
    /// peer's when we connected).
    listen_port: Option<u16>,
    /// MSG: this side accepted the connection.
    accepted: bool,
    pending: VecDeque<Pending>,
    buf: Vec<u8>,
}

/// A loopback endpoint.
pub struct LoopEp {
    me: Weak<LoopEp>,
    info: Info,
    st: Mutex<State>,
}

/// A control datagram carrying `data`.
pub(crate) fn control(op: u8, data: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; HDR];
    f[0] = CTRL;
    f[1] = op;
    f.extend_from_slice(data);
    f
}

/// The socket name of the endpoint at `port`.
pub(crate) fn name_of(port: u16) -> Result<UnixAddr> {
    UnixAddr::from_abstract_name(format!("{PROV}:{port}")).map_err(Error::from)
}

/// The port of a socket name.
pub(crate) fn port_of(a: &UnixAddr) -> Option<u16> {
    std::str::from_utf8(a.as_abstract_name()?)
        .ok()?
        .strip_prefix(PROV)?
        .strip_prefix(':')?
        .parse()
        .ok()
}

/// The port of a socket address in bytes.
pub(crate) fn port_in(raw: &[u8]) -> Option<u16> {
    oxifabric::service::addr_format::decode(raw).map(|a| a.port())
}

fn header(first: bool, seq: u32, len: usize, tag: Option<u64>, data: Option<u64>) -> [u8; HDR] {
    let mut h = [0u8; HDR];
    h[0] = if first { FIRST } else { 0 }
        | if tag.is_some() { HAS_TAG } else { 0 }
        | if data.is_some() { HAS_DATA } else { 0 };
    h[4..8].copy_from_slice(&seq.to_le_bytes());
    h[8..16].copy_from_slice(&(len as u64).to_le_bytes());
    h[16..24].copy_from_slice(&tag.unwrap_or(0).to_le_bytes());
    h[24..32].copy_from_slice(&data.unwrap_or(0).to_le_bytes());
    h
}

fn field(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

impl LoopEp {
    pub fn new(info: &Info) -> Arc<LoopEp> {
        Arc::new_cyclic(|me| LoopEp {
            me: me.clone(),
            info: info.clone(),
            st: Mutex::new(State {
                core: EpCore::new(info, PROV),
                rxq: RxQueues::default(),
                sock: None,
                port: info.src_addr.as_deref().and_then(port_in).unwrap_or(0),
                partial: Reassembly::default(),
                next_seq: 0,
                conn: Conn::Idle,
                listen_port: None,
                accepted: false,
                pending: VecDeque::new(),
                buf: Vec::new(),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn dgram(&self) -> bool {
        self.info.ep.ep_type == FI_EP_DGRAM
    }

    /// The address of the endpoint at `port`, in this endpoint's family.
    fn addr_of(&self, port: u16) -> SocketAddr {
        crate::local_addr(self.info.addr_format == FI_SOCKADDR_IN6 as u32, port)
    }

    /// Binds the socket: the requested port, or a free one.
    fn open(st: &mut State) -> Result<()> {
        let (sock, port) = bind(st.port)?;
        st.port = port;
        st.sock = Some(sock);
        Ok(())
    }

    /// Sends what waits for room at its peer, in order.
    fn flush(st: &mut State) {
        while let Some(p) = st.pending.front_mut() {
            let Some(sock) = &st.sock else { return };
            let Ok(to) = name_of(p.to) else { return };
            while let Some(f) = p.frames.front() {
                match sock.send_to_addr(f, &to) {
                    Ok(_) => {
                        p.frames.pop_front();
                    }
                    // A full peer queue, or no kernel memory for a large
                    // datagram under pressure: try again on the next
                    // progress.
                    Err(e) if transient(&e) => return,
                    Err(e) => {
                        oxifabric::prov_log!(
                            PROV,
                            FI_LOG_WARN,
                            FI_LOG_EP_DATA,
                            "send to port {} failed: {e}",
                            p.to
                        );
                        let tx = p.tx;
                        st.pending.pop_front();
                        st.core.sinks.tx_err(&tx, fail(FI_EIO, &e));
                        break;
                    }
                }
            }
            if let Some(p) = st.pending.front() {
                if p.frames.is_empty() {
                    st.core.sinks.tx_done(&p.tx);
                    st.pending.pop_front();
                }
            }
        }
    }

    fn progress_locked(&self, st: &mut State) {
        Self::flush(st);
        let mut buf = std::mem::take(&mut st.buf);
        buf.resize(HDR + FRAG, 0);
        while let Some(sock) = &st.sock {
            let (n, from) = match sock.recv_from(&mut buf) {
                Ok(x) => x,
                Err(_) => break,
            };
            let Some(port) = port_of(&from) else { continue };
            if n < HDR {
                continue;
            }
            if buf[0] & CTRL != 0 {
                self.on_control(st, port, buf[1], &buf[HDR..n]);
                continue;
            }
            self.on_fragment(st, port, &buf[..HDR], &buf[HDR..n]);
        }
        st.buf = buf;
    }

    /// A connection-management datagram from the endpoint at `port`.
    fn on_control(&self, st: &mut State, port: u16, op: u8, data: &[u8]) {
        match (op, st.conn) {
            (ACCEPT, Conn::Connecting) => {
                st.conn = Conn::Up(port);
                st.core.cm_event(FI_CONNECTED as u32, data.to_vec());
            }
            (REJECT, Conn::Connecting) => {
                st.conn = Conn::Down;
                st.core
                    .cm_error(Failure::code(FI_ECONNREFUSED), data.to_vec());
            }
            (SHUTDOWN, Conn::Up(p)) if p == port => {
                st.conn = Conn::Down;
                st.core.cm_event(FI_SHUTDOWN as u32, Vec::new());
                let f = Failure {
                    peer: Some(self.addr_of(port)),
                    ..Failure::cause(FI_ECONNRESET, "peer shut down")
                };
                st.rxq.fail_all(f, &st.core.sinks);
            }
            _ => {}
        }
    }

    /// Sends one control datagram to `port` now (they are small: a full
    /// peer queue only fails them, as a lost connection would).
    fn send_control(st: &State, port: u16, op: u8, data: &[u8]) -> Result<()> {
        let sock = st.sock.as_ref().ok_or(Error::OpBadState)?;
        sock.send_to_addr(&control(op, data), &name_of(port)?)?;
        Ok(())
    }

    fn on_fragment(&self, st: &mut State, port: u16, h: &[u8], body: &[u8]) {
        let mut seq = [0u8; 4];
        seq.copy_from_slice(&h[4..8]);
        let key = (port, u32::from_le_bytes(seq));
        if h[0] & FIRST != 0 {
            let src = self.addr_of(port);
            let msg = MsgInfo {
                src: st
                    .core
                    .av
                    .as_ref()
                    .map_or(FI_ADDR_NOTAVAIL, |av| av.reverse(&src)),
                tag: (h[0] & HAS_TAG != 0).then(|| field(h, 16)),
                data: (h[0] & HAS_DATA != 0).then(|| field(h, 24)),
            };
            let len = field(h, 8) as usize;
            if len <= body.len() {
                // Whole in one fragment.
                if !(self.dgram() && st.rxq.unexpected.len() >= QUEUE_DGRAM) {
                    st.rxq.deliver(msg, &body[..len], &st.core.sinks);
                }
                return;
            }
            st.partial.start(&mut st.rxq, key, msg, len);
        }
        // A fragment of a message never started, or past its end, is
        // dropped.
        let _ = st.partial.append(key, body, &st.core.sinks);
    }
}

/// Binds a non-blocking socket at `want`, or at a free port when `want` is
/// 0; returns it and its port.
pub(crate) fn bind(want: u16) -> Result<(UnixDatagram, u16)> {
    let try_bind = |port: u16| UnixDatagram::bind_addr(&name_of(port)?).map_err(Error::from);
    let sock = if want != 0 {
        let s = try_bind(want).map_err(|e| match e {
            Error::Os { errno, .. } => Error::Os {
                code: FI_EADDRINUSE,
                errno,
            },
            e => e,
        })?;
        (s, want)
    } else {
        // Ports of unnamed endpoints: spread by process id, then probed.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seed = u64::from(std::process::id()).wrapping_mul(2654435761);
        let mut found = None;
        for _ in 0..4096 {
            let i = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let port = (20000 + seed.wrapping_add(i.wrapping_mul(7919)) % 40000) as u16;
            if let Ok(s) = try_bind(port) {
                found = Some((s, port));
                break;
            }
        }
        found.ok_or(Error::AddrInUse)?
    };
    sock.0.set_nonblocking(true)?;
    Ok(sock)
}

/// Whether a send failure will pass (the receiver's queue is full, or the
/// kernel is short of buffer memory for the moment).
fn transient(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::WouldBlock || matches!(e.raw_os_error(), Some(FI_ENOBUFS | FI_ENOMEM))
}

/// Datagrams held for receives not yet posted (DGRAM drops beyond).
const QUEUE_DGRAM: usize = 256;

fn fail(err: c_int, e: &std::io::Error) -> Failure {
    Failure::os(err, e)
}

impl Progress for LoopEp {
    fn progress(&self) {
        if let Ok(mut st) = self.st.try_lock() {
            self.progress_locked(&mut st);
        }
    }

    fn wait_fd(&self) -> Option<RawFd> {
        self.lock().sock.as_ref().map(|s| s.as_raw_fd())
    }
}

impl EndpointOps for LoopEp {
    fn bind(&self, b: Binding) -> Result<()> {
        self.lock().core.bind(b, self.me.clone())
    }

    fn enable(&self) -> Result<()> {
        let mut st = self.lock();
        if !st.core.start_enable(ep_core::BOTH)? {
            return Ok(());
        }
        Self::open(&mut st)?;
        st.core.finish_enable(ep_core::BOTH);
        Ok(())
    }

    fn close(&self) {
        let mut st = self.lock();
        if let Conn::Up(p) = st.conn {
            let _ = Self::send_control(&st, p, SHUTDOWN, &[]);
        }
        st.sock = None;
        st.core.unbind_all(self.me.clone());
    }

    fn cancel(&self, context: usize) -> Result<()> {
        let mut g = self.lock();
        let st = &mut *g;
        st.rxq.cancel(context, &st.core.sinks)
    }

    fn getopt(&self, level: c_int, name: c_int) -> Result<OptValue> {
        match (level, name) {
            (FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE) => Ok(OptValue::Size(crate::CM_DATA_SIZE)),
            _ => self.lock().rxq.getopt(level, name),
        }
    }

    fn setopt(&self, level: c_int, name: c_int, v: OptValue) -> Result<()> {
        self.lock().rxq.setopt(level, name, v)
    }

    fn getname(&self) -> Result<Vec<u8>> {
        let st = self.lock();
        let port = match (st.conn, st.listen_port) {
            (Conn::Up(_), Some(p)) if st.accepted => p,
            _ => st.port,
        };
        Ok(addr::to_sockaddr(&self.addr_of(port)))
    }

    fn getpeer(&self) -> Result<Vec<u8>> {
        let st = self.lock();
        match (st.conn, st.listen_port) {
            (Conn::Up(_), Some(p)) if !st.accepted => Ok(addr::to_sockaddr(&self.addr_of(p))),
            (Conn::Up(p), _) => Ok(addr::to_sockaddr(&self.addr_of(p))),
            _ => Err(Error::NotConn),
        }
    }

    fn connect(&self, a: &[u8], data: &[u8]) -> Result<()> {
        if self.info.ep.ep_type != FI_EP_MSG {
            return Err(Error::NoSys);
        }
        let to = port_in(a).ok_or(Error::Inval)?;
        if data.len() > crate::CM_DATA_SIZE {
            return Err(Error::Inval);
        }
        let mut st = self.lock();
        if !st.core.enabled {
            return Err(Error::OpBadState);
        }
        if st.conn != Conn::Idle {
            return Err(Error::IsConn);
        }
        Self::send_control(&st, to, CONNREQ, data)?;
        st.conn = Conn::Connecting;
        st.listen_port = Some(to);
        Ok(())
    }

    fn accept(&self, data: &[u8]) -> Result<()> {
        if data.len() > crate::CM_DATA_SIZE {
            return Err(Error::Inval);
        }
        let Some(crate::pep::Request { from, pep_port }) =
            oxifabric::service::connreq::take(self.info.handle)
        else {
            return Err(Error::Inval);
        };
        let mut st = self.lock();
        if st.conn != Conn::Idle {
            return Err(Error::IsConn);
        }
        if st.core.start_enable(ep_core::BOTH)? {
            Self::open(&mut st)?;
            st.core.finish_enable(ep_core::BOTH);
        }
        Self::send_control(&st, from, ACCEPT, data)?;
        st.conn = Conn::Up(from);
        st.listen_port = Some(pep_port);
        st.accepted = true;
        st.core.cm_event(FI_CONNECTED as u32, Vec::new());
        Ok(())
    }

    fn shutdown(&self, _flags: u64) -> Result<()> {
        let mut g = self.lock();
        let st = &mut *g;
        let Conn::Up(p) = st.conn else {
            return Err(Error::NotConn);
        };
        let _ = Self::send_control(st, p, SHUTDOWN, &[]);
        st.conn = Conn::Down;
        st.rxq.fail_all(Failure::code(FI_ECANCELED), &st.core.sinks);
        Ok(())
    }

    fn setname(&self, a: &[u8]) -> Result<()> {
        let mut st = self.lock();
        if st.core.enabled {
            return Err(Error::OpBadState);
        }
        st.port = port_in(a).ok_or(Error::Inval)?;
        Ok(())
    }

    fn recv(&self, op: &RecvOp<'_>) -> Result<()> {
        rxq::check_recv(op, self.info.caps)?;
        let mut g = self.lock();
        let st = &mut *g;
        // A MSG endpoint may post receives before it is connected.
        if !st.core.enabled && self.info.ep.ep_type != FI_EP_MSG {
            return Err(Error::OpBadState);
        }
        if !st.rxq.recv_room(op, crate::QUEUE_SIZE, &st.core.sinks) {
            return Err(Error::Again);
        }
        if op.flags & FI_PEEK != 0 {
            self.progress_locked(st);
        }
        let op = &rxq::as_posted(op, self.info.caps);
        for m in st.rxq.post(op, &st.core.sinks) {
            st.partial.matched(m, &st.core.sinks);
        }
        Ok(())
    }

    fn send(&self, op: &SendOp<'_>) -> Result<()> {
        let len = iov_len(op.iov);
        let max = self.info.ep.max_msg_size;
        if len > max || (op.flags & FI_INJECT != 0 && len > self.info.tx.inject_size) {
            return Err(Error::MsgSize);
        }
        if op.tag.is_some() && self.info.caps & FI_TAGGED == 0 {
            return Err(Error::NoSys);
        }
        let tx = TxCtx::of(op);
        let mut g = self.lock();
        let st = &mut *g;
        if !st.core.enabled {
            return Err(Error::OpBadState);
        }
        if st.pending.len() >= crate::QUEUE_SIZE || !st.core.sinks.tx_room(&tx) {
            self.progress_locked(st);
            return Err(Error::Again);
        }
        let to = match (self.info.ep.ep_type, st.conn) {
            (FI_EP_MSG, Conn::Up(p)) => p,
            (FI_EP_MSG, _) => return Err(Error::NotConn),
            _ => {
                let av = st.core.av.as_ref().ok_or(Error::NoAv)?;
                av.sockaddr(op.dest).ok_or(Error::Inval)?.port()
            }
        };
        let iov = IoVec::from_slice(op.iov).ok_or(Error::Inval)?;
        let seq = st.next_seq;
        st.next_seq = seq.wrapping_add(1);
        let mut frames = VecDeque::new();
        let mut off = 0;
        while off < len || frames.is_empty() {
            let n = FRAG.min(len - off);
            let mut f = Vec::with_capacity(HDR + n);
            f.extend_from_slice(&header(off == 0, seq, len, op.tag, op.data));
            let mut at = off;
            while at < off + n {
                let Some((b, o)) = iov.segment_at(at) else {
                    break;
                };
                let k = (b.len() - o).min(off + n - at);
                f.extend_from_slice(&b.as_slice()[o..o + k]);
                at += k;
            }
            frames.push_back(f);
            off += n;
        }
        st.pending.push_back(Pending { to, frames, tx });
        Self::flush(st);
        Ok(())
    }

    fn rx_size_left(&self) -> Result<usize> {
        Ok(crate::QUEUE_SIZE.saturating_sub(self.lock().rxq.posted_count()))
    }

    fn tx_size_left(&self) -> Result<usize> {
        Ok(crate::QUEUE_SIZE.saturating_sub(self.lock().pending.len()))
    }

    fn as_progress(&self) -> Option<Weak<dyn Progress>> {
        Some(self.me.clone())
    }

    fn completion_sinks(&self) -> Option<oxifabric::service::ep_core::Sinks> {
        Some(self.lock().core.sinks.clone())
    }

    fn set_fid(&self, fid: usize) {
        self.lock().core.fid = fid;
    }
}
