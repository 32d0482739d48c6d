//! Active endpoints of all three types.
//!
//! - `FI_EP_RDM`: a listening socket plus one TCP connection per peer, made
//!   on the first send; the connecting side introduces itself with a
//!   `Hello` frame carrying its listening address and holds its messages
//!   until the `HelloAck`, so either side can use the connection,
//!   `FI_SOURCE` can name the sender, and simultaneous connects settle on
//!   one connection (see `wire.rs`).
//! - `FI_EP_MSG`: one TCP connection set up through `fi_connect`/`fi_accept`
//!   (connection requests arrive at a passive endpoint, `pep.rs`).
//! - `FI_EP_DGRAM`: one UDP socket; each message is one datagram.
//!
//! On TCP, messages up to `attrs::RNDV_THRESHOLD` go eagerly (header and
//! payload at once; the receiver buffers them if no receive is posted);
//! larger ones by rendezvous: `Rts` announces the message, the receiver
//! answers `Cts` once a receive matches, and `Data` streams the payload
//! straight into that receive.
//!
//! All state sits behind one mutex per endpoint. Progress takes it with
//! `try_lock`: whoever holds it is already making progress.

use crate::attrs;
use crate::conn::{Conn, ConnState, Dest, RxState, TxData, TxDone, TxItem};
use crate::domain::SockDomain;
use crate::sock::{self, Epoll};
use crate::wire::{Header, Op, FLAG_DISCARD, HEADER_LEN};
use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::{
    internal, iov_len, Binding, EndpointOps, IoBuf, IoVec, OptValue, RecvOp, SendOp,
};
use oxifabric::prov_log;
use oxifabric::service::addr_format::decode as sockaddr;
use oxifabric::service::ep_core::{EpCore, Failure, TxCtx};
use oxifabric::service::progress::Progress;
use oxifabric::service::rxq::{
    complete_into, Deferred, DeferredMatch, MsgInfo, Placement, RxQueues, Unexpected, DEFERRED_COST,
};
use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, Weak};

const TOKEN_LISTENER: u64 = 0;
const TOKEN_UDP: u64 = 1;
const TOKEN_CONN: u64 = 2;

/// Largest control payload (addresses, CM private data).
const MAX_CONTROL: u64 = 1024;
/// Datagrams held for receives not yet posted.
const DGRAM_UNEXPECTED: usize = 256;

/// Connection state of an MSG endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MsgState {
    Idle,
    Connecting(usize),
    Connected(usize),
    Down,
}

/// Where an announced (rendezvous) message comes from: the connection and
/// the sender's message id, to answer with `Cts`. The receive queue keeps
/// it as the token of a deferred message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Announced {
    pub slot: usize,
    pub msg_id: u64,
}

/// A receive matched to an announced message.
type RndvMatch = DeferredMatch<Announced>;

struct EpState {
    /// Bindings, completion routing, enable rules.
    core: EpCore,
    rxq: RxQueues<Announced>,
    local: Option<SocketAddr>,
    listener: Option<TcpListener>,
    udp: Option<UdpSocket>,
    conns: Vec<Option<Conn>>,
    /// RDM peers by listening address: their one connection, whether the
    /// handshake finished, and the sends that wait for it.
    peers: HashMap<SocketAddr, Peer>,
    msg: MsgState,
    next_msg_id: u64,
    acks: HashMap<u64, (usize, TxDone)>,
    /// Sends queued in connections, for `-FI_EAGAIN` and `tx_size_left`.
    tx_queued: usize,
    /// DGRAM: the buffer datagrams are received into (allocated once).
    udp_buf: Vec<u8>,
    /// Large sends announced with `Rts`, waiting for the receiver's `Cts`,
    /// by message id: the `Data` frame to send then, and the RDM peer
    /// (None on MSG endpoints).
    rndv_tx: HashMap<u64, (TxItem, Option<SocketAddr>)>,
    /// Receives matched to an announced message, waiting for its `Data`,
    /// by (connection, sender's message id).
    rndv_rx: HashMap<(usize, u64), RndvMatch>,
}

/// An RDM peer.
#[derive(Default)]
struct Peer {
    /// The connection used with this peer.
    conn: Option<usize>,
    /// The handshake on `conn` finished: sends go straight to it.
    ready: bool,
    /// Sends waiting for the handshake.
    pending: std::collections::VecDeque<TxItem>,
}

/// A sockets endpoint.
pub struct SockEp {
    me: Weak<SockEp>,
    pub ep_type: fi_ep_type,
    info: Info,
    domain: Arc<SockDomain>,
    epoll: Epoll,
    st: Mutex<EpState>,
    /// When the application last drove progress itself (ms since start):
    /// the auto-progress thread stays out of its way while it polls.
    app_progress_ms: std::sync::atomic::AtomicU64,
}

/// Milliseconds since the first call, for coarse activity timestamps.
pub fn now_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
}

const PROV: &str = "sockets";

impl SockEp {
    /// Creates an endpoint for an entry of this provider.
    pub fn new(domain: Arc<SockDomain>, info: &Info) -> Result<Arc<SockEp>> {
        let ep_type = info.ep.ep_type;
        if ![FI_EP_RDM, FI_EP_MSG, FI_EP_DGRAM].contains(&ep_type) {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "unsupported endpoint type {ep_type}"
            );
            return Err(Error::Inval);
        }
        let caps = if ep_type == FI_EP_DGRAM {
            attrs::DGRAM_CAPS
        } else {
            attrs::RELIABLE_CAPS
        };
        if info.caps & !caps != 0 {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "unsupported caps {:#x}",
                info.caps & !caps
            );
            return Err(Error::Inval);
        }
        let epoll = Epoll::new().map_err(|_| Error::Other(FI_EMFILE))?;
        let ep = Arc::new_cyclic(|me| SockEp {
            me: me.clone(),
            ep_type,
            info: info.clone(),
            domain,
            epoll,
            app_progress_ms: std::sync::atomic::AtomicU64::new(0),
            st: Mutex::new(EpState {
                core: EpCore::new(info, PROV),
                rxq: RxQueues::default(),
                local: None,
                listener: None,
                udp: None,
                conns: Vec::new(),
                udp_buf: Vec::new(),
                rndv_tx: HashMap::new(),
                rndv_rx: HashMap::new(),
                peers: HashMap::new(),
                msg: MsgState::Idle,
                next_msg_id: 1,
                acks: HashMap::new(),
                tx_queued: 0,
            }),
        });
        Ok(ep)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, EpState> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn weak_progress(&self) -> Weak<dyn Progress> {
        let w: Weak<dyn Progress> = self.me.clone();
        w
    }

    /// The address to bind: the entry's source address, else any port on
    /// the address of the destination's family.
    fn bind_addr(&self) -> SocketAddr {
        let src = self.info.src_addr.as_ref().and_then(|b| sockaddr(b));
        match src {
            Some(s) => s,
            None => {
                let v6 = self.info.addr_format == (FI_SOCKADDR_IN6 as u32);
                if v6 {
                    "[::1]:0".parse().unwrap()
                } else {
                    "127.0.0.1:0".parse().unwrap()
                }
            }
        }
    }

    fn add_conn(&self, st: &mut EpState, conn: Conn, out: bool) -> usize {
        let slot = match st.conns.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                st.conns.push(None);
                st.conns.len() - 1
            }
        };
        let fd = conn.stream.as_raw_fd();
        st.conns[slot] = Some(conn);
        if self.epoll.add(fd, TOKEN_CONN + slot as u64, out).is_ok() {
            if let Some(c) = st.conns[slot].as_mut() {
                c.watching_out = out;
            }
        }
        slot
    }

    fn watch_out(&self, st: &mut EpState, slot: usize) {
        if let Some(c) = st.conns[slot].as_mut() {
            let want = !c.txq.is_empty() || c.state == ConnState::Connecting;
            if want != c.watching_out {
                let _ = self
                    .epoll
                    .modify(c.stream.as_raw_fd(), TOKEN_CONN + slot as u64, want);
                c.watching_out = want;
            }
        }
    }

    /// Tears a connection down, failing everything that depended on it.
    fn close_conn(&self, st: &mut EpState, slot: usize, err: Failure, why: &'static str) {
        let Some(mut c) = st.conns.get_mut(slot).and_then(Option::take) else {
            return;
        };
        // What the application's error entries will say: which peer, and
        // why (the OS error, else `why`).
        let err = Failure {
            peer: c.peer.or_else(|| c.stream.peer_addr().ok()),
            cause: if err.cause.is_empty() && err.prov_errno == 0 {
                why
            } else {
                err.cause
            },
            ..err
        };
        prov_log!(
            PROV,
            FI_LOG_WARN,
            FI_LOG_EP_DATA,
            "connection closed: {}",
            err.describe()
        );
        self.epoll.remove(c.stream.as_raw_fd());
        let _ = c.stream.shutdown(std::net::Shutdown::Both);
        for item in c.txq.drain(..) {
            st.tx_queued = st.tx_queued.saturating_sub(1);
            if let Some(d) = item.done {
                st.core.sinks.tx_err(&d.tx, err);
            }
        }
        let dead: Vec<u64> = st
            .acks
            .iter()
            .filter(|(_, (s, _))| *s == slot)
            .map(|(k, _)| *k)
            .collect();
        for k in dead {
            if let Some((_, d)) = st.acks.remove(&k) {
                st.core.sinks.tx_err(&d.tx, err);
            }
        }
        if let RxState::Payload {
            hdr,
            dest: Dest::Posted { recv, .. },
            ..
        } = &c.rx
        {
            if matches!(hdr.op, Op::Msg | Op::Data) {
                st.core.sinks.rx_err(recv, err, 0, 0);
            }
        }
        // Receives waiting for this connection's announced data fail, and
        // announcements nobody matched yet are forgotten.
        let waiting: Vec<(usize, u64)> =
            st.rndv_rx.keys().filter(|k| k.0 == slot).copied().collect();
        for k in waiting {
            if let Some(m) = st.rndv_rx.remove(&k) {
                st.core.sinks.rx_err(&m.recv, err, 0, 0);
            }
        }
        st.rxq.drop_deferred(|a| a.slot == slot);
        // A peer whose connection died: its waiting sends fail too (those
        // announced and waiting for a clear-to-send among them), and the
        // next send connects afresh.
        let mut failed = Vec::new();
        let mut gone = Vec::new();
        for (sa, p) in st.peers.iter_mut() {
            if p.conn == Some(slot) {
                p.conn = None;
                p.ready = false;
                failed.extend(p.pending.drain(..));
                gone.push(*sa);
            }
        }
        let msg_conn =
            matches!(st.msg, MsgState::Connected(s) | MsgState::Connecting(s) if s == slot);
        let announced: Vec<u64> = st
            .rndv_tx
            .iter()
            .filter(|(_, (_, to))| match to {
                Some(sa) => gone.contains(sa),
                None => msg_conn,
            })
            .map(|(k, _)| *k)
            .collect();
        for k in announced {
            if let Some((item, _)) = st.rndv_tx.remove(&k) {
                failed.push(item);
            }
        }
        for item in failed {
            st.tx_queued = st.tx_queued.saturating_sub(1);
            if let Some(d) = item.done {
                st.core.sinks.tx_err(&d.tx, err);
            }
        }
        match st.msg {
            MsgState::Connected(s) if s == slot => {
                st.msg = MsgState::Down;
                st.core.cm_event(FI_SHUTDOWN as u32, Vec::new());
                let f = Failure {
                    err: FI_ECONNRESET,
                    ..err
                };
                st.rxq.fail_all(f, &st.core.sinks);
            }
            MsgState::Connecting(s) if s == slot => {
                st.msg = MsgState::Down;
                st.core.cm_error(err, Vec::new());
            }
            _ => {}
        }
    }

    /// Queues (or sends at once) one frame on a connection.
    fn submit(&self, st: &mut EpState, slot: usize, mut item: TxItem) -> Result<()> {
        let inject = matches!(item.data, TxData::Owned(_));
        let Some(c) = st.conns[slot].as_mut() else {
            return Err(Error::NotConn);
        };
        if c.txq.is_empty() && c.state == ConnState::Open {
            if let Err(e) = c.write_item(&mut item) {
                let f = reset(&e);
                self.close_conn(st, slot, f, "write failed");
                if let Some(d) = item.done {
                    st.core.sinks.tx_err(&d.tx, f);
                }
                return Ok(());
            }
            if item.finished() {
                self.item_sent(st, slot, item);
                return Ok(());
            }
        }
        let _ = inject;
        if let Some(d) = item.done {
            if d.tx.flags & (FI_INJECT | FI_INJECT_COMPLETE) != 0
                || d.tx.internal & internal::NO_COMPLETION != 0
            {
                item.own_rest();
            }
        } else {
            item.own_rest();
        }
        st.tx_queued += 1;
        if let Some(c) = st.conns[slot].as_mut() {
            c.txq.push_back(item);
        }
        self.watch_out(st, slot);
        Ok(())
    }

    /// A frame left completely: report it, or wait for its acknowledgement.
    fn item_sent(&self, st: &mut EpState, slot: usize, item: TxItem) {
        if let Some(d) = item.done {
            match d.ack {
                Some(id) => {
                    st.acks.insert(id, (slot, d));
                }
                None => st.core.sinks.tx_done(&d.tx),
            }
        }
    }

    fn flush(&self, st: &mut EpState, slot: usize) {
        loop {
            let Some(c) = st.conns[slot].as_mut() else {
                return;
            };
            let Some(mut item) = c.txq.pop_front() else {
                break;
            };
            if let Err(e) = c.write_item(&mut item) {
                c.txq.push_front(item);
                self.close_conn(st, slot, reset(&e), "write failed");
                return;
            }
            if item.finished() {
                st.tx_queued = st.tx_queued.saturating_sub(1);
                self.item_sent(st, slot, item);
            } else {
                c.txq.push_front(item);
                break;
            }
        }
        self.watch_out(st, slot);
    }

    fn control_item(op: Op, payload: Vec<u8>, msg_id: u64) -> TxItem {
        let mut h = Header::control(op, msg_id);
        h.len = payload.len() as u64;
        TxItem {
            hdr: h.encode(),
            total: HEADER_LEN + payload.len(),
            data: TxData::Owned(payload),
            off: 0,
            done: None,
        }
    }

    /// The peer behind an RDM destination, connecting if needed.
    fn rdm_peer(&self, st: &mut EpState, dest: fi_addr_t) -> Result<SocketAddr> {
        let av = st.core.av.as_ref().ok_or(Error::NoAv)?;
        let Some(sa) = av.sockaddr(dest) else {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "destination {dest:#x} is not in the AV"
            );
            return Err(Error::Inval);
        };
        if st.peers.get(&sa).and_then(|p| p.conn).is_some() {
            return Ok(sa);
        }
        let stream = sock::connect_nonblocking(&sa).map_err(|e| {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "connect to {sa} failed: {e}"
            );
            Error::os(FI_ECONNREFUSED, &e)
        })?;
        let mut conn = Conn::new(stream, ConnState::Connecting, Some(sa));
        conn.fi_addr = dest;
        conn.fi_addr_gen = st.core.av.as_ref().map_or(0, |a| a.generation());
        let me = st.local.map(|l| addr::to_sockaddr(&l)).unwrap_or_default();
        conn.txq.push_back(Self::control_item(Op::Hello, me, 0));
        st.tx_queued += 1;
        let slot = self.add_conn(st, conn, true);
        let peer = st.peers.entry(sa).or_default();
        peer.conn = Some(slot);
        peer.ready = false;
        Ok(sa)
    }

    /// Sends an item to an RDM peer now, or queues it until the handshake
    /// on its connection finishes.
    fn rdm_submit(&self, st: &mut EpState, sa: SocketAddr, mut item: TxItem) -> Result<()> {
        let peer = st.peers.entry(sa).or_default();
        match (peer.conn, peer.ready) {
            (Some(slot), true) => self.submit(st, slot, item),
            _ => {
                // The application may reuse inject buffers at once.
                if item
                    .done
                    .is_some_and(|d| d.tx.flags & (FI_INJECT | FI_INJECT_COMPLETE) != 0)
                {
                    item.own_rest();
                }
                peer.pending.push_back(item);
                st.tx_queued += 1;
                Ok(())
            }
        }
    }

    /// The handshake with `sa` finished on `slot`: release waiting sends.
    fn peer_ready(&self, st: &mut EpState, sa: SocketAddr, slot: usize) {
        let items: Vec<TxItem> = {
            let peer = st.peers.entry(sa).or_default();
            peer.conn = Some(slot);
            peer.ready = true;
            peer.pending.drain(..).collect()
        };
        st.tx_queued = st.tx_queued.saturating_sub(items.len());
        for item in items {
            let _ = self.submit(st, slot, item);
        }
    }

    /// The sender of what arrives on `slot` as the application names it:
    /// its AV entry (RDM), or `FI_ADDR_NOTAVAIL` (MSG endpoints, and
    /// senders not in the AV).
    fn src_of(&self, st: &mut EpState, slot: usize) -> fi_addr_t {
        if self.ep_type == FI_EP_MSG {
            return FI_ADDR_NOTAVAIL;
        }
        let Some(c) = st.conns[slot].as_mut() else {
            return FI_ADDR_NOTAVAIL;
        };
        // The cached answer holds until the AV changes (a removed peer is
        // no longer nameable; a re-inserted one has a new fi_addr).
        if let (Some(av), Some(p)) = (&st.core.av, c.peer) {
            let gen = av.generation();
            if c.fi_addr == FI_ADDR_NOTAVAIL || c.fi_addr_gen != gen {
                c.fi_addr = av.reverse(&p);
                c.fi_addr_gen = gen;
            }
        }
        c.fi_addr
    }

    /// Decides where a message's payload goes once its header is read.
    fn on_header(&self, st: &mut EpState, slot: usize, hdr: Header) -> Option<RxState> {
        match hdr.op {
            Op::Msg => {
                let src = self.src_of(st, slot);
                let len = hdr.len as usize;
                prov_log!(
                    PROV,
                    FI_LOG_DEBUG,
                    FI_LOG_EP_DATA,
                    "message from {src:#x}: {len} bytes, tag {:?}",
                    hdr.tag()
                );
                match st.rxq.place(src, hdr.tag(), len) {
                    Placement::Posted { recv, region, keep } => Some(RxState::Payload {
                        hdr,
                        dest: Dest::Posted { recv, region, keep },
                        got: 0,
                    }),
                    Placement::Unexpected => {
                        if st.rxq.unexpected_room(len) {
                            Some(RxState::Payload {
                                hdr,
                                dest: Dest::Buffer(vec![0u8; len]),
                                got: 0,
                            })
                        } else {
                            Some(RxState::Paused { hdr })
                        }
                    }
                }
            }
            Op::Hello | Op::ConnAccept | Op::ConnReject | Op::ConnReq => {
                if hdr.len > MAX_CONTROL {
                    self.close_conn(st, slot, Failure::code(FI_EIO), "oversized control frame");
                    return None;
                }
                Some(RxState::Payload {
                    hdr,
                    dest: Dest::Buffer(vec![0u8; hdr.len as usize]),
                    got: 0,
                })
            }
            Op::HelloAck => {
                if let Some(sa) = st.conns[slot].as_ref().and_then(|c| c.peer) {
                    self.peer_ready(st, sa, slot);
                }
                None
            }
            Op::HelloNack => {
                // The peer's own connection won; its Hello brings it.
                if let Some(c) = st.conns[slot].take() {
                    self.epoll.remove(c.stream.as_raw_fd());
                    st.tx_queued = st.tx_queued.saturating_sub(c.txq.len());
                    if let Some(sa) = c.peer {
                        if let Some(p) = st.peers.get_mut(&sa) {
                            if p.conn == Some(slot) {
                                p.conn = None;
                                p.ready = false;
                            }
                        }
                    }
                }
                None
            }
            Op::Ack => {
                if let Some((_, d)) = st.acks.remove(&hdr.msg_id) {
                    st.core.sinks.tx_done(&d.tx);
                }
                None
            }
            Op::Shutdown => {
                self.close_conn(st, slot, Failure::code(FI_ECONNRESET), "peer shut down");
                None
            }
            Op::Rts => {
                let src = self.src_of(st, slot);
                let from = Deferred {
                    token: Announced {
                        slot,
                        msg_id: hdr.msg_id,
                    },
                    len: hdr.len as usize,
                };
                match st.rxq.place_last(src, hdr.tag(), from.len) {
                    Placement::Posted { recv, region, keep } => {
                        let m = RndvMatch {
                            from,
                            recv,
                            region,
                            keep,
                            discard: false,
                        };
                        self.clear_to_send(st, m);
                    }
                    Placement::Unexpected => {
                        if !st.rxq.unexpected_room(DEFERRED_COST) {
                            // Wait in TCP flow control, as eager messages do.
                            return Some(RxState::Paused { hdr });
                        }
                        st.rxq.push_unexpected(Unexpected {
                            msg: MsgInfo {
                                src,
                                tag: hdr.tag(),
                                data: hdr.cq_data(),
                            },
                            payload: Vec::new(),
                            claimed: None,
                            deferred: Some(from),
                        })
                    }
                }
                None
            }
            Op::Cts => {
                let Some((item, _)) = st.rndv_tx.remove(&hdr.msg_id) else {
                    self.close_conn(
                        st,
                        slot,
                        Failure::code(FI_EIO),
                        "clear-to-send for no announced message",
                    );
                    return None;
                };
                st.tx_queued = st.tx_queued.saturating_sub(1);
                if hdr.flags & FLAG_DISCARD != 0 {
                    // The receiver discarded it: delivered, as far as the
                    // sender can tell.
                    if let Some(d) = item.done {
                        st.core.sinks.tx_done(&d.tx);
                    }
                } else {
                    let _ = self.submit(st, slot, item);
                }
                None
            }
            Op::Data => match st.rndv_rx.remove(&(slot, hdr.msg_id)) {
                Some(m) if m.from.len as u64 == hdr.len => Some(RxState::Payload {
                    hdr,
                    dest: Dest::Posted {
                        recv: m.recv,
                        region: m.region,
                        keep: m.keep,
                    },
                    got: 0,
                }),
                _ => {
                    self.close_conn(
                        st,
                        slot,
                        Failure::code(FI_EIO),
                        "data for no cleared message",
                    );
                    None
                }
            },
        }
    }

    /// A receive matched an announced message: answer `Cts` (with
    /// `FI_DISCARD`, telling the sender to drop it) and wait for its data.
    fn clear_to_send(&self, st: &mut EpState, m: RndvMatch) {
        let a = m.from.token;
        let mut h = Header::control(Op::Cts, a.msg_id);
        if m.discard {
            h.flags = FLAG_DISCARD;
        }
        let item = TxItem {
            hdr: h.encode(),
            data: TxData::Owned(Vec::new()),
            total: HEADER_LEN,
            off: 0,
            done: None,
        };
        if !m.discard {
            st.rndv_rx.insert((a.slot, a.msg_id), m);
        }
        if self.submit(st, a.slot, item).is_err() {
            if let Some(m) = st.rndv_rx.remove(&(a.slot, a.msg_id)) {
                st.core
                    .sinks
                    .rx_err(&m.recv, Failure::code(FI_ECONNRESET), 0, 0);
            }
        }
    }

    /// A whole frame was read.
    fn on_frame(&self, st: &mut EpState, slot: usize, hdr: Header, dest: Dest) {
        match (hdr.op, dest) {
            (Op::Msg | Op::Data, Dest::Posted { recv, region, keep }) => {
                let src = self.src_of(st, slot);
                let cap: usize = region.iter().map(IoBuf::len).sum();
                let n = (hdr.len as usize).min(cap);
                let msg = MsgInfo {
                    src,
                    tag: hdr.tag(),
                    data: hdr.cq_data(),
                };
                complete_into(
                    &recv,
                    &region,
                    n,
                    hdr.len as usize - n,
                    msg,
                    &st.core.sinks,
                    !keep,
                );
                self.ack(st, slot, &hdr);
            }
            (Op::Msg, Dest::Buffer(payload)) => {
                let src = self.src_of(st, slot);
                // A matching receive may have been posted while the payload
                // was arriving: deliver to it rather than queue.
                let msg = MsgInfo {
                    src,
                    tag: hdr.tag(),
                    data: hdr.cq_data(),
                };
                st.rxq.deliver(msg, payload, &st.core.sinks);
                self.ack(st, slot, &hdr);
            }
            (Op::Hello, Dest::Buffer(b)) => {
                let Some(peer) = sockaddr(&b) else {
                    self.close_conn(st, slot, Failure::code(FI_EIO), "malformed hello");
                    return;
                };
                if let Some(c) = st.conns[slot].as_mut() {
                    c.peer = Some(peer);
                    c.fi_addr = FI_ADDR_NOTAVAIL;
                }
                // Another connection with this peer that we opened: both
                // sides connected at once. The connection opened by the
                // smaller address wins, the same decision on both sides.
                let ours = st.peers.get(&peer).and_then(|p| p.conn).filter(|&o| {
                    o != slot
                        && st
                            .conns
                            .get(o)
                            .and_then(Option::as_ref)
                            .is_some_and(|c| c.outgoing)
                });
                let we_win = match (ours, st.local) {
                    (Some(_), Some(me)) => (me.ip(), me.port()) < (peer.ip(), peer.port()),
                    _ => false,
                };
                if we_win {
                    let nack = Self::control_item(Op::HelloNack, Vec::new(), 0);
                    let _ = self.submit(st, slot, nack);
                } else {
                    if let Some(o) = ours.filter(|&o| o != slot) {
                        // Our own attempt lost: drop it, keep its messages.
                        if let Some(c) = st.conns[o].take() {
                            self.epoll.remove(c.stream.as_raw_fd());
                            st.tx_queued = st.tx_queued.saturating_sub(c.txq.len());
                        }
                    }
                    let ack = Self::control_item(Op::HelloAck, Vec::new(), 0);
                    let _ = self.submit(st, slot, ack);
                    self.peer_ready(st, peer, slot);
                }
            }
            (Op::ConnAccept, Dest::Buffer(data)) => {
                if st.msg == MsgState::Connecting(slot) {
                    st.msg = MsgState::Connected(slot);
                    st.core.cm_event(FI_CONNECTED as u32, data);
                }
            }
            (Op::ConnReject, Dest::Buffer(data)) => {
                if st.msg == MsgState::Connecting(slot) {
                    st.msg = MsgState::Down;
                    st.core.cm_error(Failure::code(FI_ECONNREFUSED), data);
                    if let Some(c) = st.conns[slot].take() {
                        self.epoll.remove(c.stream.as_raw_fd());
                    }
                }
            }
            _ => self.close_conn(st, slot, Failure::code(FI_EIO), "unexpected frame"),
        }
    }

    fn ack(&self, st: &mut EpState, slot: usize, hdr: &Header) {
        if hdr.flags & crate::wire::FLAG_ACK_REQ != 0 {
            let item = Self::control_item(Op::Ack, Vec::new(), hdr.msg_id);
            let _ = self.submit(st, slot, item);
        }
    }

    /// Reads everything a connection has.
    ///
    /// Bytes come through the connection's stage buffer, so one `recv`
    /// brings a small frame's header and payload (and often the frames
    /// behind it); a payload larger than what is staged is read straight
    /// into its destination. A read that comes back short means the socket
    /// is empty for now, and the next read would only say so: we stop
    /// there (epoll is level-triggered and reports what arrives later).
    fn read_conn(&self, st: &mut EpState, slot: usize) {
        let mut drained = false;
        loop {
            let Some(c) = st.conns.get_mut(slot).and_then(Option::as_mut) else {
                return;
            };
            let fd = c.stream.as_raw_fd();
            let rx = std::mem::replace(
                &mut c.rx,
                RxState::Header {
                    buf: [0; HEADER_LEN],
                    got: 0,
                },
            );
            match rx {
                RxState::Paused { hdr } => {
                    // Retry placement: a receive may have been posted.
                    let next = self.on_header(st, slot, hdr);
                    match next {
                        Some(RxState::Paused { hdr }) => {
                            if let Some(c) = st.conns[slot].as_mut() {
                                c.rx = RxState::Paused { hdr };
                            }
                            return;
                        }
                        Some(s) => {
                            if let Some(c) = st.conns[slot].as_mut() {
                                c.rx = s;
                            }
                        }
                        None => {}
                    }
                }
                RxState::Header { mut buf, mut got } => {
                    if c.staged().is_empty() {
                        if drained {
                            c.rx = RxState::Header { buf, got };
                            return;
                        }
                        match c.fill_stage() {
                            Ok(0) => {
                                self.close_conn(
                                    st,
                                    slot,
                                    Failure::code(FI_ECONNRESET),
                                    "peer closed the connection",
                                );
                                return;
                            }
                            Ok(n) => drained = n < crate::conn::STAGE_LEN,
                            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                                c.rx = RxState::Header { buf, got };
                                return;
                            }
                            Err(e) => {
                                self.close_conn(st, slot, reset(&e), "read failed");
                                return;
                            }
                        }
                    }
                    got += c.take_staged(&mut buf[got..]);
                    if got < HEADER_LEN {
                        c.rx = RxState::Header { buf, got };
                        continue;
                    }
                    let hdr = match Header::decode(&buf, attrs::MAX_MSG as u64) {
                        Ok(h) => h,
                        Err(e) => {
                            prov_log!(PROV, FI_LOG_WARN, FI_LOG_EP_DATA, "malformed frame: {e}");
                            self.close_conn(st, slot, Failure::code(FI_EIO), "malformed frame");
                            return;
                        }
                    };
                    if let Some(s) = self.on_header(st, slot, hdr) {
                        if let Some(c) = st.conns[slot].as_mut() {
                            c.rx = s;
                        }
                    }
                }
                RxState::Payload {
                    hdr,
                    mut dest,
                    mut got,
                } => {
                    let want = (hdr.len - got) as usize;
                    if want == 0 {
                        self.on_frame(st, slot, hdr, dest);
                        continue;
                    }
                    let n = if !c.staged().is_empty() {
                        let k = c.staged().len().min(want);
                        let src = &c.staged()[..k];
                        match &mut dest {
                            // Bytes past the buffer's end are dropped (truncation).
                            Dest::Posted { region, .. } => {
                                region.scatter(got as usize, src);
                            }
                            Dest::Buffer(v) => {
                                v[got as usize..got as usize + k].copy_from_slice(src)
                            }
                        }
                        c.consume_staged(k);
                        k
                    } else if drained {
                        c.rx = RxState::Payload { hdr, dest, got };
                        return;
                    } else {
                        let (r, asked) = match &mut dest {
                            Dest::Posted { region, .. } => match region.segment_at(got as usize) {
                                Some((b, off)) => {
                                    let k = (b.len() - off).min(want);
                                    // SAFETY: the receive belongs to this
                                    // connection's read state until it
                                    // completes; nothing else references
                                    // its bytes while the read runs.
                                    let target = unsafe { &mut b.as_mut_slice()[off..off + k] };
                                    (sock::read(fd, target), k)
                                }
                                // Past the end of the buffer: read and drop.
                                None => c.read_discard(want),
                            },
                            Dest::Buffer(v) => {
                                let start = got as usize;
                                (sock::read(fd, &mut v[start..start + want]), want)
                            }
                        };
                        match r {
                            Ok(0) => {
                                c.rx = RxState::Payload { hdr, dest, got };
                                self.close_conn(
                                    st,
                                    slot,
                                    Failure::code(FI_ECONNRESET),
                                    "peer closed the connection mid-message",
                                );
                                return;
                            }
                            Ok(n) => {
                                drained = n < asked;
                                n
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                                c.rx = RxState::Payload { hdr, dest, got };
                                return;
                            }
                            Err(e) => {
                                c.rx = RxState::Payload { hdr, dest, got };
                                self.close_conn(st, slot, reset(&e), "read failed");
                                return;
                            }
                        }
                    };
                    got += n as u64;
                    if got == hdr.len {
                        self.on_frame(st, slot, hdr, dest);
                    } else if let Some(c) = st.conns[slot].as_mut() {
                        c.rx = RxState::Payload { hdr, dest, got };
                    }
                }
            }
        }
    }

    fn on_writable(&self, st: &mut EpState, slot: usize) {
        let Some(c) = st.conns[slot].as_mut() else {
            return;
        };
        if c.state == ConnState::Connecting {
            if let Some(e) = sock::take_error(&c.stream) {
                let f = Failure {
                    cause: "connect failed",
                    ..Failure::os(FI_ECONNREFUSED, &e)
                };
                self.close_conn(st, slot, f, "connect failed");
                return;
            }
            c.state = ConnState::Open;
        }
        self.flush(st, slot);
    }

    fn accept_all(&self, st: &mut EpState) {
        loop {
            let Some(l) = &st.listener else { return };
            match l.accept() {
                Ok((s, _)) => {
                    let conn = Conn::new(s, ConnState::Open, None);
                    self.add_conn(st, conn, false);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    prov_log!(PROV, FI_LOG_WARN, FI_LOG_EP_CTRL, "accept failed: {e}");
                    return;
                }
            }
        }
    }

    fn read_udp(&self, st: &mut EpState) {
        // The endpoint's datagram buffer, lent out while reading.
        let mut buf = std::mem::take(&mut st.udp_buf);
        if buf.is_empty() {
            buf = vec![0u8; 65536];
        }
        while let Some(u) = &st.udp {
            let (n, from) = match u.recv_from(&mut buf) {
                Ok(x) => x,
                Err(_) => break,
            };
            let Ok(hdr) = Header::decode(&buf[..n], attrs::DGRAM_MAX_MSG as u64) else {
                prov_log!(
                    PROV,
                    FI_LOG_WARN,
                    FI_LOG_EP_DATA,
                    "dropped a malformed datagram from {from}"
                );
                continue;
            };
            if hdr.op != Op::Msg || hdr.len as usize != n - HEADER_LEN {
                prov_log!(
                    PROV,
                    FI_LOG_WARN,
                    FI_LOG_EP_DATA,
                    "dropped an inconsistent datagram from {from}"
                );
                continue;
            }
            let payload = &buf[HEADER_LEN..n];
            let src = st
                .core
                .av
                .as_ref()
                .map_or(FI_ADDR_NOTAVAIL, |av| av.reverse(&from));
            let msg = MsgInfo {
                src,
                tag: None,
                data: hdr.cq_data(),
            };
            match st.rxq.place(src, None, payload.len()) {
                Placement::Posted { recv, region, keep } => {
                    let k = region.scatter(0, payload);
                    complete_into(
                        &recv,
                        &region,
                        k,
                        payload.len() - k,
                        msg,
                        &st.core.sinks,
                        !keep,
                    );
                }
                Placement::Unexpected => {
                    if st.rxq.unexpected.len() < DGRAM_UNEXPECTED {
                        st.rxq.push_unexpected(Unexpected {
                            msg,
                            payload: payload.to_vec(),
                            claimed: None,
                            deferred: None,
                        });
                    }
                }
            }
        }
        st.udp_buf = buf;
    }

    fn progress_locked(&self, st: &mut EpState) {
        // Readiness comes from epoll even for a single connection: a recv
        // that finds nothing still takes the socket's lock, and a thread
        // spinning on it delays the kernel's delivery of the very data it
        // waits for; epoll_wait checks a ready list without that lock.
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 32];
        let n = self.epoll.wait(&mut evs, 0);
        for ev in &evs[..n] {
            let (token, bits) = (ev.u64, ev.events);
            match token {
                TOKEN_LISTENER => self.accept_all(st),
                TOKEN_UDP => self.read_udp(st),
                t => {
                    let slot = (t - TOKEN_CONN) as usize;
                    if bits & libc::EPOLLOUT as u32 != 0 {
                        self.on_writable(st, slot);
                    }
                    if bits
                        & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR)
                            as u32
                        != 0
                    {
                        let connecting = st
                            .conns
                            .get(slot)
                            .and_then(Option::as_ref)
                            .is_some_and(|c| c.state == ConnState::Connecting);
                        if connecting {
                            self.on_writable(st, slot);
                        }
                        self.read_conn(st, slot);
                    }
                }
            }
        }
    }

    /// Retries connections paused for lack of unexpected-message room.
    fn resume_paused(&self, st: &mut EpState) {
        let paused: Vec<usize> = st
            .conns
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.as_ref()
                    .is_some_and(|c| matches!(c.rx, RxState::Paused { .. }))
            })
            .map(|(i, _)| i)
            .collect();
        for s in paused {
            self.read_conn(st, s);
        }
    }

    /// Takes a connection handed over by a passive endpoint (`fi_accept`).
    fn adopt(&self, st: &mut EpState, pending: crate::pep::PendingConn, data: &[u8]) -> Result<()> {
        let mut conn = Conn::new(pending.stream, ConnState::Open, Some(pending.peer));
        conn.rx = pending.rx;
        let slot = self.add_conn(st, conn, false);
        st.msg = MsgState::Connected(slot);
        self.submit(
            st,
            slot,
            Self::control_item(Op::ConnAccept, data.to_vec(), 0),
        )?;
        st.core.cm_event(FI_CONNECTED as u32, Vec::new());
        // Anything the peer sent right after its request is already queued.
        self.read_conn(st, slot);
        Ok(())
    }
}

impl Progress for SockEp {
    fn progress(&self) {
        self.app_progress_ms
            .store(now_ms(), std::sync::atomic::Ordering::Relaxed);
        let Ok(mut st) = self.st.try_lock() else {
            return;
        };
        self.progress_locked(&mut st);
    }

    fn wait_fd(&self) -> Option<RawFd> {
        Some(self.epoll.raw())
    }

    /// Whether the application drove this endpoint's progress itself in
    /// the last 10 ms: the auto-progress thread then stays away (the
    /// application sees its data sooner, and two threads spinning on two
    /// cores only slow both).
    fn app_polling(&self) -> bool {
        let last = self
            .app_progress_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        now_ms().saturating_sub(last) < 10
    }

    /// Progress from the auto-progress thread, unless the application is
    /// polling (see `app_polling`). Returns false when skipped.
    fn progress_background(&self) -> bool {
        if self.app_polling() {
            return false;
        }
        if let Ok(mut st) = self.st.try_lock() {
            self.progress_locked(&mut st);
        }
        true
    }
}

impl EndpointOps for SockEp {
    fn bind(&self, b: Binding) -> Result<()> {
        let me = self.weak_progress();
        self.lock().core.bind(b, me)
    }

    fn enable(&self) -> Result<()> {
        let mut st = self.lock();
        if st.core.enabled {
            return Ok(());
        }
        st.core.check_enable()?;
        match self.ep_type {
            FI_EP_RDM => {
                let want = st.local.unwrap_or_else(|| self.bind_addr());
                let l = TcpListener::bind(want).map_err(|e| {
                    prov_log!(
                        PROV,
                        FI_LOG_WARN,
                        FI_LOG_EP_CTRL,
                        "cannot listen on {want}: {e}"
                    );
                    if e.kind() == ErrorKind::AddrInUse {
                        Error::os(FI_EADDRINUSE, &e)
                    } else {
                        Error::os(FI_EADDRNOTAVAIL, &e)
                    }
                })?;
                l.set_nonblocking(true)?;
                st.local = l
                    .local_addr()
                    .ok()
                    .map(|a| attrs::advertised(a, self.info.domain.name.as_deref()));
                self.epoll.add(l.as_raw_fd(), TOKEN_LISTENER, false)?;
                st.listener = Some(l);
            }
            FI_EP_DGRAM => {
                let want = st.local.unwrap_or_else(|| self.bind_addr());
                let u = UdpSocket::bind(want).map_err(|e| {
                    prov_log!(PROV, FI_LOG_WARN, FI_LOG_EP_CTRL, "cannot bind {want}: {e}");
                    Error::os(FI_EADDRNOTAVAIL, &e)
                })?;
                u.set_nonblocking(true)?;
                st.local = u
                    .local_addr()
                    .ok()
                    .map(|a| attrs::advertised(a, self.info.domain.name.as_deref()));
                self.epoll.add(u.as_raw_fd(), TOKEN_UDP, false)?;
                st.udp = Some(u);
            }
            _ => {}
        }
        st.rxq.posted.reserve(1024);
        st.core.enabled = true;
        drop(st);
        self.domain.register(self.me.clone());
        Ok(())
    }

    fn close(&self) {
        let mut st = self.lock();
        let slots: Vec<usize> = (0..st.conns.len())
            .filter(|&i| st.conns[i].is_some())
            .collect();
        for s in slots {
            if let Some(c) = st.conns[s].as_mut() {
                if self.ep_type == FI_EP_MSG && c.state == ConnState::Open && c.txq.is_empty() {
                    let item = Self::control_item(Op::Shutdown, Vec::new(), 0);
                    let mut item = item;
                    let _ = c.write_item(&mut item);
                }
            }
            if let Some(c) = st.conns[s].take() {
                self.epoll.remove(c.stream.as_raw_fd());
            }
        }
        st.listener = None;
        st.udp = None;
        st.core.unbind_all(&self.weak_progress());
    }

    fn cancel(&self, context: usize) -> Result<()> {
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.rxq.cancel(context, &st.core.sinks) {
            Ok(())
        } else {
            Err(Error::NoEnt)
        }
    }

    fn getopt(&self, level: c_int, name: c_int) -> Result<OptValue> {
        if level != FI_OPT_ENDPOINT {
            return Err(Error::NoProtoOpt);
        }
        match name {
            FI_OPT_MIN_MULTI_RECV => Ok(OptValue::Size(self.lock().rxq.min_multi_recv)),
            FI_OPT_CM_DATA_SIZE => Ok(OptValue::Size(attrs::CM_DATA_SIZE)),
            _ => Err(Error::NoProtoOpt),
        }
    }

    fn setopt(&self, level: c_int, name: c_int, v: OptValue) -> Result<()> {
        if level != FI_OPT_ENDPOINT {
            return Err(Error::NoProtoOpt);
        }
        match (name, v) {
            (FI_OPT_MIN_MULTI_RECV, OptValue::Size(n)) => {
                self.lock().rxq.min_multi_recv = n;
                Ok(())
            }
            _ => Err(Error::NoProtoOpt),
        }
    }

    fn getname(&self) -> Result<Vec<u8>> {
        let st = self.lock();
        let a = match st.local {
            Some(a) => a,
            None => match st.msg {
                MsgState::Connected(s) | MsgState::Connecting(s) => st.conns[s]
                    .as_ref()
                    .and_then(|c| c.stream.local_addr().ok())
                    .ok_or(Error::OpBadState)?,
                _ => {
                    // Not bound yet: report the entry's source address.
                    self.bind_addr()
                }
            },
        };
        Ok(addr::to_sockaddr(&a))
    }

    fn setname(&self, a: &[u8]) -> Result<()> {
        let mut st = self.lock();
        if st.core.enabled {
            return Err(Error::OpBadState);
        }
        let sa = sockaddr(a).ok_or(Error::Inval)?;
        st.local = Some(sa);
        Ok(())
    }

    fn getpeer(&self) -> Result<Vec<u8>> {
        let st = self.lock();
        match st.msg {
            MsgState::Connected(s) => st.conns[s]
                .as_ref()
                .and_then(|c| c.peer.or_else(|| c.stream.peer_addr().ok()))
                .map(|p| addr::to_sockaddr(&p))
                .ok_or(Error::NotConn),
            _ => Err(Error::NotConn),
        }
    }

    fn connect(&self, a: &[u8], data: &[u8]) -> Result<()> {
        if self.ep_type != FI_EP_MSG {
            return Err(Error::NoSys);
        }
        if data.len() > attrs::CM_DATA_SIZE {
            return Err(Error::Inval);
        }
        let sa = sockaddr(a).ok_or(Error::Inval)?;
        let mut st = self.lock();
        if !st.core.enabled {
            return Err(Error::OpBadState);
        }
        if st.msg != MsgState::Idle {
            return Err(Error::IsConn);
        }
        let stream = sock::connect_nonblocking(&sa).map_err(|e| Error::os(FI_ECONNREFUSED, &e))?;
        let mut conn = Conn::new(stream, ConnState::Connecting, Some(sa));
        conn.txq
            .push_back(Self::control_item(Op::ConnReq, data.to_vec(), 0));
        st.tx_queued += 1;
        let slot = self.add_conn(&mut st, conn, true);
        st.msg = MsgState::Connecting(slot);
        Ok(())
    }

    fn accept(&self, data: &[u8]) -> Result<()> {
        if self.ep_type != FI_EP_MSG {
            return Err(Error::NoSys);
        }
        if data.len() > attrs::CM_DATA_SIZE {
            return Err(Error::Inval);
        }
        let mut st = self.lock();
        if st.msg != MsgState::Idle {
            return Err(Error::IsConn);
        }
        if st.core.eq.is_none() {
            return Err(Error::NoEq);
        }
        let Some(pending) = crate::pep::take_pending(self.info.handle) else {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "fi_accept: info->handle is not a pending connection request"
            );
            return Err(Error::Inval);
        };
        self.adopt(&mut st, pending, data)
    }

    fn shutdown(&self, _flags: u64) -> Result<()> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let MsgState::Connected(slot) = st.msg else {
            return Err(Error::NotConn);
        };
        let canceled = Failure::code(FI_ECANCELED);
        let item = Self::control_item(Op::Shutdown, Vec::new(), 0);
        if let Some(c) = st.conns[slot].as_mut() {
            let mut item = item;
            let _ = c.write_item(&mut item);
        }
        if let Some(c) = st.conns[slot].take() {
            self.epoll.remove(c.stream.as_raw_fd());
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
            for item in c.txq {
                if let Some(d) = item.done {
                    st.core.sinks.tx_err(&d.tx, canceled);
                }
            }
        }
        st.msg = MsgState::Down;
        for (_, (item, _)) in std::mem::take(&mut st.rndv_tx) {
            if let Some(d) = item.done {
                st.core.sinks.tx_err(&d.tx, canceled);
            }
        }
        for (_, m) in std::mem::take(&mut st.rndv_rx) {
            st.core.sinks.rx_err(&m.recv, canceled, 0, 0);
        }
        st.rxq.drop_deferred(|a| a.slot == slot);
        st.rxq.fail_all(canceled, &st.core.sinks);
        Ok(())
    }

    fn recv(&self, op: &RecvOp<'_>) -> Result<()> {
        if op.tag.is_some() && self.info.caps & FI_TAGGED == 0 {
            return Err(Error::NoSys);
        }
        if op.flags & FI_MULTI_RECV != 0 && op.tag.is_some() {
            return Err(Error::BadFlags);
        }
        let mut guard = self.lock();
        let st = &mut *guard;
        if !st.core.enabled && self.ep_type != FI_EP_MSG {
            return Err(Error::OpBadState);
        }
        if op.flags & (FI_PEEK | FI_CLAIM) == 0 && st.rxq.posted_count() >= attrs::QUEUE_SIZE {
            self.progress_locked(st);
            if st.rxq.posted_count() >= attrs::QUEUE_SIZE {
                return Err(Error::Again);
            }
        }
        if op.flags & (FI_PEEK | FI_CLAIM) == 0 && !st.core.sinks.rx_room(op.flags) {
            // The application has to read its CQ first.
            return Err(Error::Again);
        }
        if op.flags & FI_PEEK != 0 {
            // Let whatever has arrived be seen.
            self.progress_locked(st);
        }
        // Without FI_DIRECTED_RECV the source address of a receive is ignored.
        let directed;
        let op = if self.info.caps & FI_DIRECTED_RECV == 0 && op.src != FI_ADDR_UNSPEC {
            directed = RecvOp {
                src: FI_ADDR_UNSPEC,
                ..*op
            };
            &directed
        } else {
            op
        };
        prov_log!(
            PROV,
            FI_LOG_DEBUG,
            FI_LOG_EP_DATA,
            "recv posted: src {:#x} ctx {:#x} len {} tag {:?} flags {:#x}",
            op.src,
            op.context,
            iov_len(op.iov),
            op.tag,
            op.flags
        );
        for m in st.rxq.post(op, &st.core.sinks) {
            self.clear_to_send(st, m);
        }
        self.resume_paused(st);
        Ok(())
    }

    fn send(&self, op: &SendOp<'_>) -> Result<()> {
        let len = iov_len(op.iov);
        let max = if self.ep_type == FI_EP_DGRAM {
            attrs::DGRAM_MAX_MSG
        } else {
            attrs::MAX_MSG
        };
        if len > max {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "message of {len} bytes exceeds max_msg_size {max}"
            );
            return Err(Error::MsgSize);
        }
        if op.flags & FI_INJECT != 0 && len > attrs::INJECT_SIZE {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "inject of {len} bytes exceeds inject_size {}",
                attrs::INJECT_SIZE
            );
            return Err(Error::MsgSize);
        }
        if op.tag.is_some() && self.info.caps & FI_TAGGED == 0 {
            return Err(Error::NoSys);
        }
        let tx = TxCtx::of(op);
        let mut guard = self.lock();
        let st = &mut *guard;
        if !st.core.enabled {
            return Err(Error::OpBadState);
        }
        if st.tx_queued >= attrs::QUEUE_SIZE {
            self.progress_locked(st);
            if st.tx_queued >= attrs::QUEUE_SIZE {
                return Err(Error::Again);
            }
        }
        if !st.core.sinks.tx_room(&tx) {
            // The application has to read its CQ first.
            return Err(Error::Again);
        }
        let want_ack = op.flags & FI_DELIVERY_COMPLETE != 0 && self.ep_type != FI_EP_DGRAM;
        let msg_id = st.next_msg_id;
        st.next_msg_id += 1;
        let hdr = Header::msg(len as u64, op.tag, op.data, msg_id, want_ack);
        if self.ep_type == FI_EP_DGRAM {
            let av = st.core.av.as_ref().ok_or(Error::NoAv)?;
            let dest = av.sockaddr(op.dest).ok_or(Error::Inval)?;
            let h = hdr.encode();
            let mut pieces: [&[u8]; 1 + IoVec::CAP] = [&[]; 1 + IoVec::CAP];
            pieces[0] = &h;
            let n = op.iov.len().min(IoVec::CAP);
            for (p, b) in pieces[1..].iter_mut().zip(&op.iov[..n]) {
                *p = b.as_slice();
            }
            let u = st.udp.as_ref().ok_or(Error::OpBadState)?;
            match sock::writev_to(u.as_raw_fd(), &pieces[..1 + n], Some(&dest)) {
                Ok(_) => st.core.sinks.tx_done(&tx),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Err(Error::Again),
                Err(e) => {
                    prov_log!(
                        PROV,
                        FI_LOG_WARN,
                        FI_LOG_EP_DATA,
                        "datagram to {dest} failed: {e}"
                    );
                    let f = Failure {
                        peer: Some(dest),
                        ..Failure::os(FI_EIO, &e)
                    };
                    st.core.sinks.tx_err(&tx, f);
                }
            }
            return Ok(());
        }
        let iov = IoVec::from_slice(op.iov).ok_or(Error::Inval)?;
        // Large messages are announced and sent once the receiver has a
        // buffer for them (rendezvous), so they are never buffered there.
        let rndv = len > attrs::RNDV_THRESHOLD;
        let item = TxItem {
            hdr: if rndv { hdr.with_op(Op::Data) } else { hdr }.encode(),
            data: TxData::User(iov),
            total: HEADER_LEN + len,
            off: 0,
            done: Some(TxDone {
                tx,
                ack: want_ack.then_some(msg_id),
            }),
        };
        let (item, held) = if rndv {
            let rts = TxItem {
                hdr: hdr.with_op(Op::Rts).encode(),
                data: TxData::Owned(Vec::new()),
                total: HEADER_LEN,
                off: 0,
                done: None,
            };
            (rts, Some(item))
        } else {
            (item, None)
        };
        let to = match self.ep_type {
            FI_EP_MSG => match st.msg {
                MsgState::Connected(slot) => {
                    self.submit(st, slot, item)?;
                    None
                }
                _ => return Err(Error::NotConn),
            },
            _ => {
                let sa = self.rdm_peer(st, op.dest)?;
                self.rdm_submit(st, sa, item)?;
                Some(sa)
            }
        };
        if let Some(data) = held {
            st.tx_queued += 1;
            st.rndv_tx.insert(msg_id, (data, to));
        }
        Ok(())
    }

    fn rx_size_left(&self) -> Result<usize> {
        Ok(attrs::QUEUE_SIZE.saturating_sub(self.lock().rxq.posted_count()))
    }

    fn tx_size_left(&self) -> Result<usize> {
        Ok(attrs::QUEUE_SIZE.saturating_sub(self.lock().tx_queued))
    }

    fn as_progress(&self) -> Option<Weak<dyn Progress>> {
        Some(self.weak_progress())
    }

    fn set_fid(&self, fid: usize) {
        self.lock().core.fid = fid;
    }
}

/// A connection failure caused by an OS error: reported as
/// `FI_ECONNRESET`, the errno kept as `prov_errno`.
fn reset(e: &std::io::Error) -> Failure {
    Failure::os(FI_ECONNRESET, e)
}
