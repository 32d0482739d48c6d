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
//!
//! This file holds the endpoint's state and its `EndpointOps`; the
//! protocols live in `rdm.rs` (peering), `cm.rs` (MSG connections),
//! `rndv.rs` (rendezvous), `dgram.rs` (UDP) and `progress.rs` (reading,
//! writing, dispatch).

pub(crate) mod auth;
mod cm;
mod dgram;
mod local;
mod lru;
mod parked;
mod progress;
mod rdm;
mod retry;
mod rma;
mod rndv;
pub mod sep;
pub mod srx;

use self::cm::MsgState;
use self::local::{Route, Token};
use self::rdm::Peer;
use self::rma::{HeldRma, RmaPart, RmaPending};
use self::rndv::RndvMatch;
use crate::attrs;
use crate::conn::{Conn, ConnState, Dest, RxState, TxData, TxDone, TxItem};
use crate::domain::SockDomain;
use crate::idmap::IdMap;
use crate::sock::{self, Epoll};
use crate::wire::{Header, Op, FLAG_DISCARD, HEADER_LEN};
use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::{
    internal, iov_len, AtomicReq, Binding, EndpointOps, IoBuf, IoVec, OptValue, RecvOp, RmaOp,
    SendOp,
};
use oxifabric::prov_log;
use oxifabric::service::addr_format::decode as sockaddr;
use oxifabric::service::ep_core::{self, EpCore, Failure, TxCtx};
use oxifabric::service::mr::MemRegion;
use oxifabric::service::progress::Progress;
use oxifabric::service::quicklock::{QuickGuard, QuickLock};
use oxifabric::service::rxq::{
    self, complete_into, Deferred, DeferredMatch, MsgInfo, Placement, RxQueues, Unexpected,
    Unnamed, ENTRY_COST,
};
use oxifabric::service::signal;
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

struct EpState {
    /// Bindings, completion routing, enable rules.
    core: EpCore,
    rxq: RxQueues<Token>,
    local: Option<SocketAddr>,
    listener: Option<TcpListener>,
    udp: Option<UdpSocket>,
    conns: Vec<Option<Conn>>,
    /// Slots of `conns` emptied since (some may be in use again).
    free_slots: Vec<usize>,
    /// RDM: connections kept open at most (`lru.rs`).
    max_conns: usize,
    /// Over `max_conns` with none idle to close: progress looks again.
    over_limit: bool,
    /// Peers wait to be dialled until a connection is free (`lru.rs`).
    slot_waiting: bool,
    /// At `max_conns`, new connections wait in the listener's backlog
    /// (the listener is not watched) until one closes.
    accept_paused: bool,
    /// Stage buffers of the connections that are not mid-frame.
    stages: crate::conn::StagePool,
    /// RDM peers by listening address: their one connection, whether the
    /// handshake finished, and the sends that wait for it.
    peers: crate::addrmap::AddrMap<Peer>,
    msg: MsgState,
    next_msg_id: u64,
    acks: IdMap<(usize, TxDone)>,
    /// Sends queued in connections, for `-FI_EAGAIN` and `tx_size_left`.
    tx_queued: usize,
    /// A send was written since the last progress call: the application
    /// is posting back to back, so further sends wait in their queues
    /// (send coalescing) until progress writes them, many per writev.
    burst: bool,
    /// Some connection may be `Paused` (set whenever one pauses; cleared
    /// by the scan that finds none), so posting a receive scans the
    /// connections only when one can be waiting for it.
    maybe_paused: bool,
    /// The progress pass under way (or the last) is the application's,
    /// not the auto-progress thread's: bare answers may wait for its next
    /// call (`submit_as`).
    app_pass: bool,
    /// Our own copies held by every queue of this endpoint (connections'
    /// and waiting peers'), kept by the queues themselves.
    copies: crate::conn::Ledger,
    /// Connections holding coalesced sends.
    dirty: Vec<usize>,
    /// DGRAM: the buffer datagrams are received into (allocated once).
    udp_buf: Vec<u8>,
    /// Large sends announced with `Rts`, waiting for the receiver's `Cts`,
    /// by message id: the `Data` frame to send then, and the RDM peer
    /// (None on MSG endpoints).
    rndv_tx: IdMap<(TxItem, Option<SocketAddr>)>,
    /// Receives matched to an announced message, waiting for its `Data`,
    /// by (connection, sender's message id).
    rndv_rx: HashMap<(usize, u64), RndvMatch>,
    /// The id the next connection gets (`Conn::id`).
    next_conn_id: u64,
    /// Claim checks under way (connections with `verifies`).
    verifying: usize,
    /// Accepting pauses after running out of descriptors.
    accept_backoff: sock::AcceptBackoff,
    /// RMA operations in flight, by operation id.
    rma_ops: IdMap<RmaPending>,
    /// The endpoint's one connection, read directly by progress instead of
    /// waiting for epoll to report it (`progress::Solo`).
    solo: progress::Solo,
    /// Their pieces waiting for the target's answer, by frame id.
    rma_parts: IdMap<RmaPart>,
    /// RMA operations held behind an `FI_FENCE`, in posting order.
    fenced: std::collections::VecDeque<HeldRma>,
    /// When the earliest RDM connection retry is due (`retry.rs`).
    next_retry: Option<std::time::Instant>,
    /// The shared receive context bound to it (`srx.rs`).
    srx: Option<Arc<srx::SharedRx>>,
    /// Same-host peers' path (`local.rs`), from `fi_enable` on.
    local_path: Option<Box<local::Local>>,
    /// Messages and one-sided operations posted over TCP (each makes at
    /// least one data frame), for the close log.
    tcp_data: u64,
    /// TCP peers the AV did not name when their messages arrived (by their
    /// listening address): a receive posted after an insert names their
    /// unexpected messages (`name_unnamed`).
    unnamed: Unnamed<SocketAddr>,
}

/// A sockets endpoint.
pub struct SockEp {
    me: Weak<SockEp>,
    pub ep_type: fi_ep_type,
    info: Info,
    domain: Arc<SockDomain>,
    epoll: Epoll,
    st: QuickLock<EpState>,
    /// The application's own progress calls: the auto-progress thread
    /// stays out of its way while it polls.
    app_polls: oxifabric::service::progress::AppPolls,
    /// How long RDM connection setup is retried (`retry.rs`).
    conn_timeout: std::time::Duration,
    /// `FI_SOCKETS_TX_COALESCE`: hold back-to-back sends for one writev.
    coalesce: bool,
    /// The authorization key peers must prove they hold (`auth.rs`).
    auth_key: Option<Vec<u8>>,
    /// Coalesced sends wait for a progress call; the auto-progress thread
    /// writes them if the application makes none soon (see `flush_pending`).
    deferred_pending: std::sync::atomic::AtomicBool,
    /// Same-host peers go by shared memory (`local.rs`): an RDM endpoint
    /// without an authorization key, unless `FI_SOCKETS_SHM=0`.
    local_wanted: bool,
    /// Idle progress calls of an endpoint whose peers are all reached by
    /// shared memory return before the lock (`local.rs`).
    quick: Arc<oxifabric_shm::path::Quick>,
}

/// Sends coalesced on one connection before they are written anyway.
const COALESCE_ITEMS: usize = 64;
/// Sends larger than this are never held back: they fill a writev alone.
const COALESCE_BYTES: usize = 16 << 10;
/// The frames (by header op byte) that start an application's RMA or
/// atomic operation: coalesced like its sends.
const RMA_REQUESTS: [u8; 3] = [Op::Write as u8, Op::ReadReq as u8, Op::Atomic as u8];

/// `FI_SOCKETS_TX_COALESCE` (default on).
fn coalesce_enabled() -> bool {
    !matches!(
        oxifabric::param::get("sockets", "tx_coalesce"),
        Ok(oxifabric::param::Value::Bool(false))
    )
}

/// Milliseconds since the first call, for coarse activity timestamps.
pub use oxifabric::service::progress::clock_ms as now_ms;

const PROV: &str = "sockets";

/// How long a closing endpoint tries to write what it owes its peers.
const CLOSE_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);
/// Why an MSG connection ended when the peer sent `Shutdown`.
const PEER_SHUTDOWN: &str = "peer shut down";

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
        let auth_key = info
            .ep
            .auth_key
            .clone()
            .or_else(|| domain.auth_key.clone())
            .filter(|k| !k.is_empty());
        // Datagrams have no connection to prove a key on: refused rather
        // than ignored, so no application believes it is protected.
        if auth_key.is_some() && ep_type == FI_EP_DGRAM {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "authorization keys need connections; FI_EP_DGRAM endpoints cannot check them"
            );
            return Err(Error::NoSys);
        }
        let epoll = Epoll::new().map_err(|e| Error::os(FI_EMFILE, &e))?;
        let local_wanted = auth_key.is_none() && local::enabled();
        let ep = Arc::new_cyclic(|me| SockEp {
            auth_key,
            me: me.clone(),
            ep_type,
            info: info.clone(),
            domain,
            epoll,
            app_polls: Default::default(),
            conn_timeout: retry::conn_timeout(),
            st: QuickLock::new(EpState {
                core: EpCore::new(info, PROV),
                rxq: RxQueues {
                    unexpected_limit: attrs::limits().unexp,
                    ..RxQueues::default()
                },
                local: None,
                listener: None,
                udp: None,
                conns: Vec::new(),
                udp_buf: Vec::new(),
                stages: Default::default(),
                max_conns: lru::max_conns(),
                over_limit: false,
                slot_waiting: false,
                accept_paused: false,
                rndv_tx: IdMap::default(),
                rndv_rx: HashMap::new(),
                rma_ops: IdMap::default(),
                free_slots: Vec::new(),
                solo: progress::Solo::default(),
                rma_parts: IdMap::default(),
                fenced: std::collections::VecDeque::new(),
                peers: Default::default(),
                msg: MsgState::Idle,
                // Not guessable: frames that refer to a message by id are
                // also checked against the connection it went out on.
                next_msg_id: oxifabric::service::random::random_u64(),
                acks: IdMap::default(),
                tx_queued: 0,
                next_retry: None,
                srx: None,
                local_path: None,
                tcp_data: 0,
                unnamed: Unnamed::default(),
                next_conn_id: 1,
                verifying: 0,
                accept_backoff: Default::default(),
                burst: false,
                maybe_paused: false,
                app_pass: false,
                copies: Default::default(),
                dirty: Vec::new(),
            }),
            coalesce: coalesce_enabled(),
            deferred_pending: std::sync::atomic::AtomicBool::new(false),
            local_wanted: ep_type == FI_EP_RDM && local_wanted,
            quick: Default::default(),
        });
        // Bound at open, as upstream does: fi_getname reports the real
        // address (port included) before fi_enable, and peers that connect
        // early wait in the backlog instead of being refused.
        ep.open_socket(&mut ep.lock(), ep.bind_addr())?;
        Ok(ep)
    }

    /// Binds the endpoint's listening TCP socket (RDM) or its UDP socket
    /// (DGRAM) at `want`, replacing one bound before (`fi_setname`). MSG
    /// endpoints bind when they connect or accept.
    fn open_socket(&self, st: &mut EpState, want: SocketAddr) -> Result<()> {
        let at = match self.ep_type {
            FI_EP_RDM => self.rebind(&mut st.listener, want, TOKEN_LISTENER)?,
            FI_EP_DGRAM => self.rebind(&mut st.udp, want, TOKEN_UDP)?,
            _ => return Ok(()),
        };
        st.local = Some(attrs::advertised(at, self.info.domain.name.as_deref()));
        Ok(())
    }

    /// Closes the socket in `slot` (if any) and binds a new one at `want`,
    /// watched under `token`; returns the address it got.
    fn rebind<S: sock::Served>(
        &self,
        slot: &mut Option<S>,
        want: SocketAddr,
        token: u64,
    ) -> Result<SocketAddr> {
        if let Some(old) = slot.take() {
            self.epoll.remove(old.as_raw_fd());
        }
        let (s, at) = sock::serve::<S>(want, &self.epoll, token, "fi_endpoint")?;
        *slot = Some(s);
        Ok(at)
    }

    fn lock(&self) -> QuickGuard<'_, EpState> {
        self.st.lock()
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

    fn add_conn(&self, st: &mut EpState, mut conn: Conn, out: bool) -> usize {
        conn.id = st.next_conn_id;
        st.next_conn_id += 1;
        st.solo.forget();
        // Two connections: epoll watches both.
        self.rewatch(st);
        // A slot `take_conn` freed, else a new one: no scan of the
        // connections. Only this function fills a slot, and only with one
        // it popped, so a listed slot is empty; the check keeps a live
        // connection from ever being overwritten if that changes.
        let slot = loop {
            match st.free_slots.pop() {
                Some(i) if st.conns.get(i).is_some_and(Option::is_none) => break i,
                Some(_) => continue,
                None => {
                    st.conns.push(None);
                    break st.conns.len() - 1;
                }
            }
        };
        let fd = conn.stream.as_raw_fd();
        conn.last_used = now_ms();
        st.conns[slot] = Some(conn);
        if self.epoll.add(fd, TOKEN_CONN + slot as u64, out).is_ok() {
            if let Some(c) = st.conns[slot].as_mut() {
                c.watching_out = out;
                c.watching_in = true;
            }
        }
        self.bound_conns(st, slot);
        slot
    }

    /// Whether a connection is read: not while a message waits for
    /// unexpected-message room (`Paused`), nor while our replies to its
    /// peer pile up unread (more than the inject-queue bound).
    fn reading(c: &Conn) -> bool {
        !matches!(c.rx, RxState::Paused { .. }) && c.txq.owned() <= attrs::limits().inject_queue
    }

    /// Sets what epoll reports for a connection: input only while it is
    /// read (level-triggered readiness of a socket we will not read would
    /// wake every wait at once), output while sends are queued.
    fn watch(&self, st: &mut EpState, slot: usize) {
        let changes = |c: &Conn| Self::interest(c) != (c.watching_in, c.watching_out);
        if st.solo.unwatched() == Some(slot) && st.conns[slot].as_ref().is_some_and(changes) {
            // Out of the set while polled (`progress::Solo`): back in
            // before its interest changes (unless epoll refused it back,
            // which `rewatch` logged: it stays polled only).
            self.rewatch(st);
            if st.solo.unwatched() == Some(slot) {
                return;
            }
        }
        if let Some(c) = st.conns.get_mut(slot).and_then(Option::as_mut) {
            let (want_in, want_out) = Self::interest(c);
            if want_out != c.watching_out || want_in != c.watching_in {
                let _ = self.epoll.set(
                    c.stream.as_raw_fd(),
                    TOKEN_CONN + slot as u64,
                    want_in,
                    want_out,
                );
                c.watching_out = want_out;
                c.watching_in = want_in;
            }
        }
    }

    /// What epoll should report for a connection: (input, output).
    fn interest(c: &Conn) -> (bool, bool) {
        // Sends held for coalescing go out at the next progress call
        // (`flush_deferred`), not on readiness: watching for output
        // meanwhile would cost two epoll_ctl calls per batch.
        let out = (!c.txq.is_empty() && c.state == ConnState::Open && !c.deferred)
            || c.state == ConnState::Connecting;
        (Self::reading(c), out)
    }

    /// Takes a connection out of its slot, which new connections reuse.
    fn take_conn(st: &mut EpState, slot: usize) -> Option<Conn> {
        let c = st.conns.get_mut(slot).and_then(Option::take)?;
        st.solo.closed(slot);
        st.free_slots.push(slot);
        Some(c)
    }

    /// Tears a connection down, failing everything that depended on it.
    fn close_conn(&self, st: &mut EpState, slot: usize, err: Failure, why: &'static str) {
        // An idle connection being closed (`lru.rs`): no error, and the
        // sends held for its peer go on a new connection afterwards.
        let held = self.detach_closing(st, slot);
        self.close_conn_now(st, slot, err, why);
        if let Some((sa, items)) = held {
            self.redial(st, sa, items);
        }
    }

    fn close_conn_now(&self, st: &mut EpState, slot: usize, err: Failure, why: &'static str) {
        if self.retry_later(st, slot, &err) {
            return;
        }
        let Some(mut c) = Self::take_conn(st, slot) else {
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
            if c.transient {
                FI_LOG_DEBUG
            } else {
                FI_LOG_WARN
            },
            FI_LOG_EP_DATA,
            "connection closed: {}",
            err.describe()
        );
        self.epoll.remove(c.stream.as_raw_fd());
        let _ = c.stream.shutdown(std::net::Shutdown::Both);

        for item in c.txq.take_all() {
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
        st.rxq
            .drop_deferred(|t| matches!(t, Token::Tcp(a) if a.slot == slot));
        // A peer whose connection died: its waiting sends fail too (those
        // announced and waiting for a clear-to-send among them), and the
        // next send connects afresh.
        let mut failed = Vec::new();
        let mut gone = Vec::new();
        let mut lost = Vec::new();
        for (sa, p) in st.peers.iter_mut() {
            if p.conn == Some(slot) {
                p.conn = None;
                // A connection that was in use died: should the peer's
                // listener refuse next, it is gone (`retry.rs`).
                p.retry.lost |= p.ready;
                if p.ready {
                    lost.push(*sa);
                }
                p.ready = false;
                failed.extend(p.pending.take_all());
                gone.push(*sa);
            }
        }
        // Collectives waiting for a message of a peer whose connection
        // ended (not by the agreed close, `lru.rs`, which detached it
        // first): every frame it sent was read before the end.
        if let Some(av) = st.core.av.as_ref() {
            for sa in &lost {
                let key = oxifabric::service::coll::key_of(self);
                oxifabric::service::coll::peer_gone(key, av.reverse(sa), err);
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
        // RMA pieces that went to this peer fail (their answers will
        // never come).
        self.fail_rma_to(
            st,
            |to| match to {
                Some(sa) => gone.contains(&sa),
                None => msg_conn,
            },
            err,
        );
        self.fail_items(st, failed, err);
        match st.msg {
            MsgState::Connected(s) if s == slot => {
                st.msg = MsgState::Down;
                st.core.cm_event(FI_SHUTDOWN as u32, Vec::new());
                // A peer that shut down in order sent everything before its
                // `Shutdown`: receives still posted stay posted (the
                // application cancels them or closes the endpoint), as
                // with upstream's providers. A connection that broke fails
                // them, so nobody waits for data that cannot come.
                if err.cause != PEER_SHUTDOWN {
                    let f = Failure {
                        err: FI_ECONNRESET,
                        ..err
                    };
                    st.rxq.fail_all(f, &st.core.sinks);
                }
            }
            MsgState::Connecting(s) if s == slot => {
                st.msg = MsgState::Down;
                st.core.cm_error(err, Vec::new());
            }
            _ => {}
        }
        // Last, as they may open a connection (into this very slot): a
        // claim check that ends without an answer fails the claim; a
        // claiming connection that ends stops holding its address.
        if let Some((claimer, id, _)) = c.verifies {
            st.verifying = st.verifying.saturating_sub(1);
            self.claim_checked(st, claimer, id, false);
            self.start_checks(st);
        }
        if let Some(cl) = c.claim {
            self.claim_dropped(st, cl.addr, slot);
        }
    }

    /// Fails sends that were counted in `tx_queued` with `err`.
    fn fail_items(&self, st: &mut EpState, items: Vec<TxItem>, err: Failure) {
        for item in items {
            st.tx_queued = st.tx_queued.saturating_sub(1);
            if let Some(d) = item.done {
                st.core.sinks.tx_err(&d.tx, err);
            }
        }
    }

    /// Where frames to `dest` go: the connection they can be written on
    /// now (a connected MSG endpoint's; an RDM peer's once its handshake
    /// is done), and for RDM the peer's address, its connection started if
    /// needed.
    fn route(
        &self,
        st: &mut EpState,
        dest: fi_addr_t,
    ) -> Result<(Option<usize>, Option<SocketAddr>)> {
        match self.ep_type {
            FI_EP_MSG => match st.msg {
                MsgState::Connected(slot) => Ok((Some(slot), None)),
                _ => Err(Error::NotConn),
            },
            _ => {
                let (sa, ready) = self.rdm_peer(st, dest)?;
                Ok((ready, Some(sa)))
            }
        }
    }

    /// Queues (or sends at once) a frame where [`Self::route`] said.
    fn submit_routed(
        &self,
        st: &mut EpState,
        route: (Option<usize>, Option<SocketAddr>),
        item: TxItem,
    ) -> Result<()> {
        match route {
            (Some(slot), _) => self.submit(st, slot, item),
            (None, Some(sa)) => self.rdm_submit(st, sa, item),
            (None, None) => Err(Error::NotConn),
        }
    }

    /// The latency path of a send: when its connection is open with
    /// nothing queued and [`Self::submit_as`] would write it at once (no
    /// `FI_MORE`, no coalescing), the header and the application's buffers
    /// go out in one writev without building a queue item first. Returns
    /// the bytes written: `total` when it left whole (the caller
    /// completes it), else what a queued item starts from (0 when nothing
    /// was tried, the socket was full or failed: the general path then
    /// meets the same condition and handles it).
    fn send_now(
        &self,
        st: &mut EpState,
        slot: usize,
        hdr: &[u8; HEADER_LEN],
        iov: &[IoBuf],
        total: usize,
        flags: u64,
    ) -> usize {
        let coalesce = self.coalesce && st.burst && total <= COALESCE_BYTES;
        if flags & FI_MORE != 0 || coalesce || iov.len() > IoVec::CAP {
            return 0;
        }
        let Some(c) = st.conns.get_mut(slot).and_then(Option::as_mut) else {
            return 0;
        };
        if !c.txq.is_empty() || c.state != ConnState::Open {
            return 0;
        }
        if st.max_conns != usize::MAX {
            c.last_used = now_ms();
        }
        let mut pieces = sock::Iovecs::new();
        pieces.push(hdr);
        for b in iov.iter().filter(|b| !b.is_empty()) {
            pieces.push(b.as_slice());
        }
        match sock::send_iovecs(c.stream.as_raw_fd(), &pieces, None) {
            Ok(n) => {
                st.burst |= n == total;
                n
            }
            Err(_) => 0,
        }
    }

    /// Queues (or sends at once) one frame on a connection.
    fn submit(&self, st: &mut EpState, slot: usize, item: TxItem) -> Result<()> {
        self.submit_as(st, slot, item, false)
    }

    /// [`Self::submit`]; `lazy` marks a frame nobody waits on more than on
    /// what the application does next (a write's bare answer): during a
    /// pass the application drives, it waits for the next frame to that
    /// peer or the next progress call (the auto-progress thread's within
    /// about a millisecond when none comes), so an RMA ping-pong's answer
    /// and reply share one writev instead of costing the target a send
    /// before its application even sees the write.
    fn submit_as(&self, st: &mut EpState, slot: usize, mut item: TxItem, lazy: bool) -> Result<()> {
        let inject = matches!(item.data, TxData::Owned(_));
        let Some(c) = st.conns[slot].as_mut() else {
            return Err(Error::NotConn);
        };
        if st.max_conns != usize::MAX {
            c.last_used = now_ms();
        }
        // FI_MORE: the application has more sends coming; queue this one
        // so that the next send without it takes the batch in one writev.
        let more = item.done.is_some_and(|d| d.tx.flags & FI_MORE != 0);
        // Coalescing: an application send posted after another without a
        // progress call in between waits for that call (or for a full
        // batch), which writes the connection's queue in one writev. The
        // first send after progress goes at once, so a ping-pong never
        // waits.
        // RMA and atomic requests are the application's operations too,
        // though they carry no `done` (they complete on the answer); so
        // are the answers carrying data (a read's, a fetch's) that a pass
        // the application drives produces, a batch of requests' worth.
        let op = Header::op_byte(&item.hdr);
        let data = item.done.is_some()
            || RMA_REQUESTS.contains(&op)
            || (op == Op::RmaResp as u8 && item.total > HEADER_LEN && st.app_pass);
        let coalesce = (data && !more && st.burst && item.total <= COALESCE_BYTES
            || lazy && st.app_pass)
            && self.coalesce
            && c.state == ConnState::Open;
        if c.txq.is_empty() && c.state == ConnState::Open && !more && !coalesce {
            if let Err(e) = c.write_item(&mut item) {
                let f = reset(&e);
                self.close_conn(st, slot, f, "write failed");
                if let Some(d) = item.done {
                    st.core.sinks.tx_err(&d.tx, f);
                }
                return Ok(());
            }
            if item.finished() {
                st.burst |= data;
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
        let Some(c) = st.conns[slot].as_mut() else {
            return Ok(());
        };
        c.txq.push_back(item, &st.copies);
        if coalesce {
            if !c.deferred {
                c.deferred = true;
                st.dirty.push(slot);
                if !self
                    .deferred_pending
                    .swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    st.core.sinks.kick_progress();
                }
            }
            if c.txq.len() >= COALESCE_ITEMS {
                self.flush(st, slot);
            }
            return Ok(());
        }
        // Sends held back by FI_MORE go out now, with this one, in one
        // writev, unless the socket is full (the front frame is partly
        // written) and readiness will call flush.
        let held = c.state == ConnState::Open && c.txq.front().is_some_and(|f| f.off == 0);
        if held && !more {
            self.flush(st, slot);
        } else {
            self.watch(st, slot);
        }
        Ok(())
    }

    /// Writes the coalesced sends of every connection (progress calls this
    /// first) and ends the burst: the next send goes at once.
    fn flush_deferred(&self, st: &mut EpState) {
        st.burst = false;
        if st.dirty.is_empty() {
            return;
        }
        self.deferred_pending
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let mut dirty = std::mem::take(&mut st.dirty);
        for &slot in &dirty {
            if let Some(c) = st.conns.get_mut(slot).and_then(Option::as_mut) {
                c.deferred = false;
            }
            self.flush(st, slot);
        }
        dirty.clear();
        // Keep the list's storage: the steady state allocates nothing.
        if st.dirty.is_empty() {
            st.dirty = dirty;
        }
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

    /// Writes a connection's queued sends (many frames per writev) and
    /// reports those that left.
    fn flush(&self, st: &mut EpState, slot: usize) {
        let Some(c) = st.conns[slot].as_mut() else {
            return;
        };
        // Nothing goes out before the connect completes (`on_writable`
        // flushes then): a write would consume the connect's error
        // (`SO_ERROR`) and report a refused connection as a reset one.
        // Nor before the peer proved the authorization key (`auth.rs`).
        if c.state != ConnState::Open {
            return;
        }
        if let Err(e) = c.write_queued() {
            self.close_conn(st, slot, reset(&e), "write failed");
            return;
        }
        loop {
            let Some(c) = st.conns[slot].as_mut() else {
                return;
            };
            if !c.txq.front().is_some_and(TxItem::finished) {
                break;
            }
            let Some(item) = c.txq.pop_front() else {
                break;
            };
            st.tx_queued = st.tx_queued.saturating_sub(1);
            self.item_sent(st, slot, item);
        }
        self.watch(st, slot);
    }

    /// Writes what the endpoint owes its peers before its connections
    /// close: coalesced sends and answers (an RMA write's
    /// acknowledgement among them: its initiator must not see a write
    /// that landed fail) and every frame queued on an open connection,
    /// waiting for room for at most [`CLOSE_DRAIN`]. Sends waiting for
    /// a connection not made yet are not started.
    fn drain_for_close(&self, st: &mut EpState) {
        self.flush_deferred(st);
        let end = std::time::Instant::now() + CLOSE_DRAIN;
        loop {
            let mut waiting = Vec::new();
            for slot in 0..st.conns.len() {
                let open = st.conns[slot]
                    .as_ref()
                    .is_some_and(|c| c.state == ConnState::Open && !c.txq.is_empty());
                if !open {
                    continue;
                }
                self.flush(st, slot);
                if let Some(c) = st.conns[slot].as_ref().filter(|c| !c.txq.is_empty()) {
                    waiting.push(c.stream.as_raw_fd());
                }
            }
            if waiting.is_empty() || std::time::Instant::now() >= end {
                return;
            }
            signal::poll_for(&waiting, libc::POLLOUT, Some(end));
        }
    }

    /// Memory of our own copies queued on every connection and for every
    /// peer still in its handshake.
    fn owned_total(st: &EpState) -> usize {
        st.copies.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether an operation may be posted now: the endpoint is enabled,
    /// the transmit queue has room (after a round of progress), and so
    /// has the CQ its completion goes to (else the application has to
    /// read its CQ first: `-FI_EAGAIN`).
    fn tx_admit(&self, st: &mut EpState, tx: &TxCtx) -> Result<()> {
        if !st.core.is_live(FI_SEND) {
            return Err(Error::OpBadState);
        }
        // What is posted next may leave work for progress.
        self.quick.busy(true);
        let used = |st: &EpState| st.tx_queued + Self::local_used(st);
        if used(st) >= attrs::QUEUE_SIZE {
            self.progress_locked(st);
            if used(st) >= attrs::QUEUE_SIZE {
                return Err(Error::Again);
            }
        }
        if !st.core.sinks.tx_room(tx) {
            return Err(Error::Again);
        }
        Ok(())
    }

    /// Copies (of injected sends, injected RMA writes, atomic operands)
    /// queued behind peers that do not read are bounded: whether `len`
    /// more bytes may be copied now (checked only when something is queued
    /// at all; `-FI_EAGAIN` over `attrs::Limits::inject_queue` after a round
    /// of progress).
    fn copies_admit(&self, st: &mut EpState, len: usize) -> Result<()> {
        if st.tx_queued == 0 {
            return Ok(());
        }
        let limit = attrs::limits().inject_queue;
        // One copy always fits: a single large FI_INJECT_COMPLETE send must
        // not wait for sends that are not copies (a rendezvous waiting for
        // its receiver) to drain.
        let over = |st: &EpState| {
            let owned = Self::owned_total(st);
            owned > 0 && owned + len + ENTRY_COST > limit
        };
        if over(st) {
            self.progress_locked(st);
            if over(st) {
                return Err(Error::Again);
            }
        }
        Ok(())
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
}

impl SockEp {
    /// The number a message on `slot` whose source is `src` carries for
    /// [`SockEp::name_unnamed`] (`rxq::Unnamed`): 0 when the AV named its
    /// sender, or when the connection's peer is not known.
    fn number_unnamed(st: &mut EpState, slot: usize, src: fi_addr_t) -> u32 {
        if src != FI_ADDR_NOTAVAIL {
            return 0;
        }
        match st
            .conns
            .get(slot)
            .and_then(Option::as_ref)
            .and_then(|c| c.peer)
        {
            Some(peer) => st.unnamed.number(peer, src),
            None => 0,
        }
    }

    /// Before a receive is posted: if the AV changed since messages from
    /// TCP peers it did not name arrived, those peers are looked up again
    /// and their unexpected messages take the addresses found, so a
    /// directed receive posted after the application's `fi_av_insert`
    /// finds them (the same-host path does the same in
    /// `local_before_post`).
    fn name_unnamed(st: &mut EpState) {
        st.unnamed.refresh(&mut st.rxq, st.core.av.as_deref());
    }

    /// A checked and admitted send of `len` bytes, the way `route` says
    /// (`EndpointOps::send`, or a send that waited for its peer's way).
    fn send_routed(
        &self,
        st: &mut EpState,
        op: &SendOp<'_>,
        len: usize,
        route: Route,
    ) -> Result<()> {
        match route {
            Route::Shm(to) => return Self::on_local(st, |p, h| p.send(h, op, len, to)),
            Route::Wait(sa) => return Self::park(st, sa, parked::Parked::send(op, len)),
            Route::Tcp => {}
        }
        st.tcp_data += 1;
        let tx = TxCtx::of(op);
        let copied = op.flags & (FI_INJECT | FI_INJECT_COMPLETE) != 0
            || tx.internal & internal::NO_COMPLETION != 0;
        if copied && self.ep_type != FI_EP_DGRAM {
            self.copies_admit(st, len)?;
        }
        let want_ack = op.flags & FI_DELIVERY_COMPLETE != 0 && self.ep_type != FI_EP_DGRAM;
        let msg_id = st.next_msg_id;
        st.next_msg_id = st.next_msg_id.wrapping_add(1);
        let hdr = Header::msg(len as u64, op.tag, op.data, msg_id, want_ack);
        if self.ep_type == FI_EP_DGRAM {
            return self.send_dgram(st, op, &tx, &hdr);
        }
        // Large messages are announced and sent once the receiver has a
        // buffer for them (rendezvous), so they are never buffered there.
        let rndv = len > attrs::RNDV_THRESHOLD;
        let (slot, to) = self.route(st, op.dest)?;
        // Encoded once: the direct write and the queue item carry the same.
        let wire_hdr = if rndv { hdr.with_op(Op::Data) } else { hdr }.encode();
        let mut off = 0;
        if let (Some(slot), false, false) = (slot, rndv, want_ack) {
            off = self.send_now(st, slot, &wire_hdr, op.iov, HEADER_LEN + len, op.flags);
            if off == HEADER_LEN + len {
                st.core.sinks.tx_done(&tx);
                return Ok(());
            }
        }
        let iov = IoVec::from_slice(op.iov).ok_or(Error::Inval)?;
        let item = TxItem {
            hdr: wire_hdr,
            data: TxData::User(iov),
            total: HEADER_LEN + len,
            off,
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
        self.submit_routed(st, (slot, to), item)?;
        if let Some(data) = held {
            st.tx_queued += 1;
            st.rndv_tx.insert(msg_id, (data, to));
        }
        Ok(())
    }
}

impl EndpointOps for SockEp {
    fn bind(&self, b: Binding) -> Result<()> {
        if let Binding::Srx(ops) = b {
            let Some(srx) = ops
                .into_any()
                .and_then(|a| a.downcast::<srx::SharedRx>().ok())
            else {
                return Err(Error::Inval);
            };
            let mut st = self.lock();
            if st.core.enabled {
                return Err(Error::OpBadState);
            }
            if st.srx.is_some() {
                prov_log!(
                    PROV,
                    FI_LOG_WARN,
                    FI_LOG_EP_CTRL,
                    "fi_ep_bind: a shared receive context is already bound"
                );
                return Err(Error::Inval);
            }
            srx.attach(self.me.clone());
            st.srx = Some(srx);
            return Ok(());
        }
        self.lock().core.bind(b, self.me.clone())
    }

    fn serve_context_pair(&self) {
        self.lock().core.context_pair = true;
    }

    fn enable(&self) -> Result<()> {
        self.enable_halves(ep_core::BOTH)
    }

    fn enable_halves(&self, dirs: u64) -> Result<()> {
        let mut st = self.lock();
        if !st.core.start_enable(dirs)? {
            return Ok(());
        }
        st.rxq.posted.reserve(1024);
        st.core.finish_enable(dirs);
        self.local_open(&mut st);
        drop(st);
        self.domain.register(self.me.clone());
        Ok(())
    }

    fn close(&self) {
        let mut st = self.lock();
        self.drain_for_close(&mut st);
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
            if let Some(c) = Self::take_conn(&mut st, s) {
                self.epoll.remove(c.stream.as_raw_fd());
            }
        }
        st.listener = None;
        st.udp = None;
        self.local_close(&mut st);
        if let Some(srx) = st.srx.take() {
            srx.detach(&self.me);
        }
        st.core.unbind_all(self.me.clone());
    }

    fn cancel(&self, context: usize) -> Result<()> {
        let mut guard = self.lock();
        let st = &mut *guard;
        st.rxq.cancel(context, &st.core.sinks)
    }

    /// A connected MSG endpoint's TCP socket; before it connects (or after
    /// it went down) there is none. RDM and DGRAM endpoints own many
    /// sockets or a shared one: `NoSys`.
    fn socket_fd(&self) -> Result<c_int> {
        if self.ep_type != FI_EP_MSG {
            return Err(Error::NoSys);
        }
        let st = self.lock();
        match st.msg {
            MsgState::Connected(s) => st.conns[s]
                .as_ref()
                .map(|c| c.stream.as_raw_fd())
                .ok_or(Error::OpBadState),
            _ => Err(Error::OpBadState),
        }
    }

    fn getopt(&self, level: c_int, name: c_int) -> Result<OptValue> {
        if level != FI_OPT_ENDPOINT {
            return Err(Error::NoProtoOpt);
        }
        match name {
            FI_OPT_CM_DATA_SIZE => Ok(OptValue::Size(attrs::CM_DATA_SIZE)),
            _ => self.lock().rxq.getopt(level, name),
        }
    }

    fn setopt(&self, level: c_int, name: c_int, v: OptValue) -> Result<()> {
        self.lock().rxq.setopt(level, name, v)
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
        if self.ep_type == FI_EP_MSG {
            st.local = Some(sa);
            return Ok(());
        }
        self.open_socket(&mut st, sa)
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
        self.cm_connect(a, data)
    }

    fn accept(&self, data: &[u8]) -> Result<()> {
        self.cm_accept(data)
    }

    fn shutdown(&self, _flags: u64) -> Result<()> {
        self.cm_shutdown()
    }

    fn recv(&self, op: &RecvOp<'_>) -> Result<()> {
        rxq::check_recv(op, self.info.caps)?;
        let mut guard = self.lock();
        self.recv_locked(&mut guard, op)
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
        self.tx_admit(st, &tx)?;
        let route = self.local_dest(st, op.dest);
        self.send_routed(st, op, len, route)
    }

    fn rma(&self, op: &RmaOp<'_>) -> Result<()> {
        if self.ep_type == FI_EP_DGRAM {
            return Err(Error::NoSys);
        }
        self.post_rma(op)
    }

    fn atomic(&self, op: &AtomicReq<'_>) -> Result<()> {
        if self.ep_type == FI_EP_DGRAM {
            return Err(Error::NoSys);
        }
        self.post_atomic(op)
    }

    fn atomic_limit(&self) -> usize {
        if self.ep_type == FI_EP_DGRAM {
            0
        } else {
            attrs::ATOMIC_LIMIT
        }
    }

    fn rx_size_left(&self) -> Result<usize> {
        Ok(attrs::QUEUE_SIZE.saturating_sub(self.lock().rxq.posted_count()))
    }

    fn tx_size_left(&self) -> Result<usize> {
        let st = self.lock();
        Ok(attrs::QUEUE_SIZE.saturating_sub(st.tx_queued + Self::local_used(&st)))
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

/// A connection failure caused by an OS error: reported as
/// `FI_ECONNRESET`, the errno kept as `prov_errno`.
fn reset(e: &std::io::Error) -> Failure {
    Failure::os(FI_ECONNRESET, e)
}

impl SockEp {
    /// `fi_recv` with the endpoint's lock held (also called by a shared
    /// receive context for a receive one of its unexpected messages takes).
    fn recv_locked(&self, st: &mut EpState, op: &RecvOp<'_>) -> Result<()> {
        if !st.core.is_live(FI_RECV) && self.ep_type != FI_EP_MSG {
            return Err(Error::OpBadState);
        }
        if !st.rxq.recv_room(op, attrs::QUEUE_SIZE, &st.core.sinks) {
            // Completed receives may be waiting to be matched: look once
            // more after progress (a full CQ the application must read).
            self.progress_locked(st);
            if !st.rxq.recv_room(op, attrs::QUEUE_SIZE, &st.core.sinks) {
                return Err(Error::Again);
            }
        }
        if op.flags & FI_PEEK != 0 {
            // Let whatever has arrived be seen.
            self.progress_locked(st);
        }
        let op = &rxq::as_posted(op, self.info.caps);
        self.quick.busy(true);
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
        self.local_before_post(st);
        Self::name_unnamed(st);
        for m in st.rxq.post(op, &st.core.sinks) {
            self.clear_to_send(st, m);
        }
        self.local_after_post(st);
        self.resume_paused(st);
        Ok(())
    }
}
