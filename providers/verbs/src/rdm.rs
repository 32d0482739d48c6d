//! An `FI_EP_RDM` endpoint over RC queue pairs (`verbs;ofi_rxm`), built on
//! the engine's endpoint core and receive queue: matching, unexpected
//! messages, `FI_PEEK`/`FI_CLAIM`/`FI_DISCARD`, multi-receive buffers,
//! directed receives, cancel and truncation are `service::rxq`'s, pieces of
//! long messages are put together by `service::reassembly`; this file
//! only moves bytes.
//!
//! - **Addresses.** An endpoint listens with an rdma-cm id bound to its
//!   entry's source address; `fi_getname` gives that socket address, and
//!   peers put it in their AVs.
//! - **Connections** are made on the first send to a peer, without
//!   blocking: address and route resolution, queue pair, `rdma_connect`
//!   with our listening address as private data, each step driven by the
//!   events on the endpoint's CM channel in progress; sends wait in the
//!   connection's queue until it is established. A request is accepted
//!   when its private data names an address of the host it came from.
//!   The sends to one peer all go on one connection: the one we made, or
//!   the peer's; when both sides connect at once, one request wins and
//!   the other side's sends move onto its connection; a peer restarted at
//!   the same address is told by its nonce and its former connections
//!   fail (`rdm/conns.rs`). Endpoints with `FI_RMA` send only on
//!   connections they made (one per direction; why: `rdm/conns.rs`).
//! - **Data.** Every piece is one send from a slot of the endpoint's
//!   registered transmit buffer into a slot of the connection's
//!   registered receive buffer: a 32-byte header (`rdm/wire.rs`: tag, CQ
//!   data, length, message number) and up to [`PIECE`] bytes. A message up
//!   to that size is one eager piece; a longer one is a first piece that
//!   announces its length and more pieces that follow in order
//!   (segmented eager: two copies, no registration of the application's
//!   buffers, hence no `FI_MR_LOCAL`). A receive slot is posted again
//!   once its piece is copied out (into the matched receive, or held as
//!   unexpected), at the start of the next progress pass so that the
//!   application sees the receive first (`rdm/repost.rs`), unless
//!   unexpected messages are at their bound: then it waits with its piece
//!   (`rdm/flow.rs`). While a connection's slots are
//!   all in use, RC's RNR retry (set to "forever" by rdma-cm's
//!   parameters) holds its sender. A stream of small messages leaves
//!   several to a piece's slot once a few work requests are in flight on
//!   its connection (`rdm/bundle.rs`).
//! - **Triggered operations and deferred work** (`FI_TRIGGER`) are the
//!   engine's (`service::trigger`): it holds them on their counter and
//!   posts them through this endpoint's ordinary calls when due, and the
//!   completion sinks report them; nothing here knows about them.
//! - **Faults.** A piece whose header does not decode, or does not fit
//!   what its connection announced, closes that connection (warn line);
//!   a connection that fails or is closed by the peer fails the sends
//!   queued and in flight on it and the messages it was bringing in.
//!   One we are making that fails before it is established (nobody
//!   listens there yet) is made again after a pause for a bounded time
//!   (`rdm/retry.rs`), its sends waiting meanwhile.

mod atomic;
mod bundle;
mod conns;
mod delivery;
mod direct;
mod flow;
mod lru;
mod repost;
mod retry;
mod rma;
mod rndv;
mod sizes;
mod table;
mod txconn;
mod wire;

pub(crate) use atomic::ATOMIC_LIMIT;

use crate::domain::{LkeySet, VerbsDomain};
use crate::ep::{desc_lkeys, register_bufs, wc_failure};
use crate::ibv::owned::{Channel, Cq, Event, Id, Op, Pd, QpCap, RegBuf, WcBuf, MAX_SGE};
use crate::ibv::*;
use crate::info::{inline_size, NAME};
use crate::mr_cache::{Hold, MrCache};
use crate::watch::Watch;
use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::{
    internal, iov_len, Binding, EndpointOps, IoVec, OptValue, RecvOp, RmaOp, SendOp,
};
use oxifabric::service::av::AvMemo;
use oxifabric::service::ep_core::{self, EpCore, Failure, Sinks, TxCtx};
use oxifabric::service::mr::MrTable;
use oxifabric::service::progress::Progress;
use oxifabric::service::quicklock::{QuickGuard, QuickLock};
use oxifabric::service::reassembly::Reassembly;
use oxifabric::service::rma::{check_rma, injected, remote_complete};
use oxifabric::service::rxq::{self, MsgInfo, RxQueues, Unnamed};
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::{Arc, Weak};
use wire::{Header, HDR};

/// The provider name of upstream's rxm variables (`FI_OFI_RXM_*`).
pub const RXM_PARAMS_PROV: &str = "ofi_rxm";
/// Upstream's rxm variables the RDM endpoint reads (`fi_info -e` lists
/// them under `verbs;ofi_rxm`).
pub const RXM_PARAMS: &[(&str, fi_param_type, &str)] = &[
    (
        "sar_limit",
        FI_PARAM_SIZE_T,
        "Messages longer than this many bytes go by rendezvous (RDMA READ by the receiver) on verbs RDM endpoints",
    ),
    (
        "msg_rx_size",
        FI_PARAM_SIZE_T,
        "Receive buffers of 16 KiB posted for each connection of a verbs RDM endpoint (default: 64, from 16 to 1024; fewer buffers, more connections)",
    ),
];

/// The value of upstream's rxm variable `FI_OFI_RXM_<NAME>` (one of
/// [`RXM_PARAMS`]), None when unset.
fn rxm_param(name: &str) -> Option<usize> {
    // Defined by the library with the providers' parameters; again here
    // for the crate's own tests (a second definition is a no-op).
    for (n, ty, help) in RXM_PARAMS {
        let _ = oxifabric::param::define(RXM_PARAMS_PROV, n, *ty, help);
    }
    match oxifabric::param::get(RXM_PARAMS_PROV, name) {
        Ok(oxifabric::param::Value::Size(v)) => Some(v),
        _ => None,
    }
}

/// Payload bytes of one piece.
pub const PIECE: usize = 16 << 10;
/// A buffer slot: header and payload.
const SLOT: usize = HDR + PIECE;
/// Transmit slots of an endpoint (pieces in flight over all connections).
const TX_SLOTS: usize = 64;
/// Entries of the endpoint's completion queue, which every queue pair
/// shares: transmit slots plus each connection's receive slots.
const CQ_SIZE: usize = 16384;
/// How long rdma-cm may take over address and route resolution.
const RESOLVE_MS: i32 = 2000;
/// Receive work requests: this bit, the connection's number from bit 16,
/// the slot below.
const RX_BIT: u64 = 1 << 63;

/// A message coming in pieces: its connection and the sender's number.
type Key = (u32, u32);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `rdma_resolve_addr` issued.
    Resolving,
    /// `rdma_resolve_route` issued.
    Routing,
    /// `rdma_connect` sent.
    Connecting,
    /// A peer's request accepted, not established yet.
    Accepting,
    Up,
    /// Waiting to be made again (`rdm/retry.rs`): an id, nothing issued.
    Paused,
}

/// One RC connection to a peer.
struct Conn {
    // Field order is drop order: the queue pair goes before the memory
    // its receives were posted into.
    id: Id,
    rx: Option<RegBuf>,
    phase: Phase,
    /// The peer's listening address (what our AV holds).
    peer: SocketAddr,
    /// Sends waiting for room or for the connection, in order.
    queue: VecDeque<Outgoing>,
    next_seq: u32,
    /// Largest piece (with header) the queue pair sends inline.
    inline: usize,
    /// The peer's `fi_addr_t` for `FI_SOURCE`, kept while the AV does not
    /// change.
    src: AvMemo<(), fi_addr_t>,
    /// The peer wants a notice after each RMA access into its memory
    /// (`wire::NOTICES`: it counts them, `FI_RMA_EVENT`).
    notices: bool,
    /// We asked for it (rather than accepted the peer's request).
    ours: bool,
    /// The peer's nonce (`wire::Intro`), once it said it: in its request,
    /// or in its acceptance of ours (0 until then).
    peer_nonce: u64,
    /// Being closed by agreement (`rdm/lru.rs`): nothing but `Bye` is
    /// posted on it.
    closing: Option<lru::Closing>,
    /// When it was last used (`State::tick`), for `rdm/lru.rs`.
    used: u64,
    /// Operations wholly handed to it and not reported yet: what an
    /// `FI_FENCE` waits for.
    unsettled: usize,
    /// Receive slots left unposted until unexpected messages have room
    /// (`rdm/flow.rs`), oldest first: each slot, where in it the pieces
    /// not taken yet start (a bundle may park part way, `rdm/bundle.rs`)
    /// and the length of what it received.
    parked: VecDeque<(usize, usize, usize)>,
    /// Work requests the queue's pump and `rdm/direct.rs` posted on it
    /// that have not completed (`rdm/bundle.rs` waits on it).
    inflight: usize,
    /// Small messages have gone in a bundle on it (said once at info level).
    bundled: bool,
    /// Receive slots to post again at the next progress pass
    /// (`rdm/repost.rs`).
    owed: Vec<usize>,
}

impl Conn {
    /// A connection in its first phase: nothing queued or received yet.
    fn new(id: Id, rx: Option<RegBuf>, phase: Phase, peer: SocketAddr, inline: usize) -> Conn {
        Conn {
            id,
            rx,
            phase,
            peer,
            queue: VecDeque::new(),
            next_seq: 0,
            inline,
            src: AvMemo::default(),
            notices: false,
            ours: !matches!(phase, Phase::Accepting),
            peer_nonce: 0,
            closing: None,
            used: 0,
            unsettled: 0,
            parked: VecDeque::new(),
            inflight: 0,
            bundled: false,
            owed: Vec::new(),
        }
    }
}

/// Where a send's bytes are.
enum Body {
    /// The application's buffers (valid until the send completes).
    App(IoVec),
    /// A copy (`fi_inject` whose bytes could not all leave at once).
    Copy(Vec<u8>),
    /// Nothing but an announcement (`rdm/rndv.rs`): the body of its
    /// `wire::Op::Rts`; the receiver reads the bytes.
    Rts(Vec<u8>),
}

/// A send not yet wholly handed to its queue pair.
struct Outgoing {
    id: u64,
    seq: u32,
    tag: Option<u64>,
    data: Option<u64>,
    body: Body,
    len: usize,
    /// Bytes handed over so far.
    off: usize,
    /// An RMA operation's remote side (`rdm/rma.rs`); None for a message.
    rma: Option<rma::Access>,
    /// A single piece of this kind (an atomic request or answer) with
    /// `seq` as its number, instead of a message.
    frame: Option<wire::Op>,
    /// A message whose sender waits for the receiver's
    /// `wire::Op::Delivered` (`FI_DELIVERY_COMPLETE`, `rdm/delivery.rs`).
    ack: bool,
    /// `FI_FENCE`: not posted before every operation handed to the
    /// connection before it has completed (cleared once it passed).
    fence: bool,
}

impl Outgoing {
    /// A message of the application's send `op` (`len` bytes in `body`),
    /// numbered when it is queued.
    fn message(op: &SendOp<'_>, body: Body, len: usize, ack: bool, fence: bool) -> Outgoing {
        Outgoing {
            id: 0,
            seq: 0,
            tag: op.tag,
            data: op.data,
            body,
            len,
            off: 0,
            rma: None,
            frame: None,
            ack,
            fence,
        }
    }
}

/// An application send under way.
struct Sending {
    /// The application's operation; None for our own (an atomic answer).
    tx: Option<TxCtx>,
    /// The atomic request number whose answer completes it.
    waiting: Option<u32>,
    /// Pieces posted and not completed.
    pieces: usize,
    /// Every piece has been posted.
    handed: bool,
    failed: bool,
    /// The registration cache's entries this operation holds (an RMA
    /// operation's buffers without descriptors), released when it is
    /// reported.
    _mrs: Vec<Hold>,
    /// The connection and message number whose `wire::Op::Delivered`
    /// completes it (`rdm/delivery.rs`).
    ack: Option<(u32, u32)>,
    /// The connection it was wholly handed to (counted in its
    /// `unsettled` until reported).
    conn: Option<u32>,
}

impl Sending {
    /// An operation just numbered, nothing of it posted yet.
    #[inline]
    fn new(tx: Option<TxCtx>, mrs: Vec<Hold>, ack: Option<(u32, u32)>) -> Sending {
        Sending {
            tx,
            waiting: None,
            pieces: 0,
            handed: false,
            failed: false,
            _mrs: mrs,
            ack,
            conn: None,
        }
    }
}

/// Where the next work request of a connection goes: its queue pair and
/// inline limit, the transmit slot it holds and its work request id.
#[derive(Clone, Copy)]
struct Post<'a> {
    id: &'a Id,
    inline: usize,
    txbuf: &'a RegBuf,
    slot: usize,
    wr: u64,
    /// The peer wants RMA notices.
    notices: bool,
}

/// An atomic operation waiting for its answer: its send, the peer that
/// must answer and where the values found go.
struct AtomicWait {
    send: u64,
    peer: SocketAddr,
    result: IoVec,
}

/// A piece in flight: its transmit slot, send and connection.
struct TxWr {
    slot: usize,
    send: u64,
    conn: u32,
    /// A read through the slot: where its bytes go.
    back: Option<rma::ReadBack>,
    /// A rendezvous read of this announced message (`rdm/rndv.rs`).
    pull: Option<Key>,
    /// The sends after `send` whose messages went in the same bundle
    /// (`rdm/bundle.rs`).
    more: Vec<u64>,
}

impl TxWr {
    /// A piece of send `send` on connection `conn` from transmit slot
    /// `slot`: no read back, no rendezvous, no bundle.
    fn new(slot: usize, send: u64, conn: u32) -> TxWr {
        TxWr {
            slot,
            send,
            conn,
            back: None,
            pull: None,
            more: Vec::new(),
        }
    }
}

struct State {
    core: EpCore,
    /// The last destination [`RdmEp::admit`] looked up in the AV and the
    /// peer's listening address it gave: a ping-pong or a stream sends to
    /// one peer over and over.
    last_dest: AvMemo<fi_addr_t, Option<SocketAddr>>,
    rxq: RxQueues<Key>,
    partial: Reassembly<Key>,
    listen: Option<Id>,
    /// Connections by number (read several times per piece: a slot
    /// table, `rdm/table.rs`).
    conns: table::ConnTable<Conn>,
    /// Connection by its rdma-cm id's address (CM events name ids; a
    /// keyed hash, not SipHash's ~150 instructions per lookup).
    by_id: HashMap<usize, u32, oxifabric::service::keyhash::KeyedU64>,
    /// The connection each peer's sends go on.
    tx_conn: txconn::TxConns,
    /// Connections not established yet (the CM channel is read on every
    /// progress call while there are any).
    pending: usize,
    /// Sends in all connections' queues.
    queued: usize,
    /// Atomic requests waiting for their answers, by number.
    atomics: HashMap<u32, AtomicWait>,
    /// Messages waiting for the receiver's `Delivered`, by connection and
    /// message number: their sends (`rdm/delivery.rs`).
    acks: HashMap<(u32, u32), u64>,
    /// Announced messages (`rdm/rndv.rs`) waiting for a receive, and
    /// those being read.
    announced: HashMap<Key, rndv::Announced>,
    pulls: HashMap<Key, rndv::Pull>,
    next_atomic: u32,
    sends: table::Table<Sending>,
    txbuf: RegBuf,
    tx_free: Vec<usize>,
    /// Work requests in flight by id (each holds a transmit slot).
    wrs: table::Table<TxWr>,
    polls: u32,
    /// Connection attempts by peer, and connections waiting to be made
    /// again with when (`rdm/retry.rs`).
    attempts: HashMap<SocketAddr, oxifabric::service::conn_retry::ConnRetry>,
    paused: Vec<(u32, std::time::Instant)>,
    /// A clock of uses (sends queued, pieces received) for `rdm/lru.rs`.
    tick: u64,
    /// More connections are open than the bound and none was idle
    /// (`rdm/lru.rs`): progress looks again.
    over_bound: bool,
    /// Some connection has parked pieces (`rdm/flow.rs`).
    parked_any: bool,
    /// Connections that owe receive slots (`rdm/repost.rs`; may repeat).
    owing: Vec<u32>,
    /// Peers the AV did not name when their messages arrived (by their
    /// listening address): a receive posted after an insert names their
    /// unexpected messages ([`RdmEp::name_unnamed`]).
    unnamed: Unnamed<SocketAddr>,
}

/// A verbs RDM endpoint.
pub struct RdmEp {
    me: Weak<RdmEp>,
    info: Info,
    pd: Arc<Pd>,
    /// The domain's registrations' local keys (RMA descriptors).
    lkeys: Arc<LkeySet>,
    /// The domain's registration cache (RMA buffers without descriptors).
    cache: Arc<MrCache>,
    /// The domain's registrations (a region's `FI_RMA_EVENT` counter).
    mrs: Arc<MrTable>,
    chan: Arc<Channel>,
    cq: Arc<Cq>,
    /// The CM channel's and the completion channel's descriptors.
    waits: Watch,
    /// This endpoint's incarnation (`wire::Intro::nonce`).
    nonce: u64,
    st: QuickLock<State>,
}

fn verbs_err(what: &str, e: VerbsError) -> Error {
    oxifabric::prov_log!(NAME, FI_LOG_WARN, FI_LOG_EP_CTRL, "{what}: {e}");
    Error::from(e)
}

fn gather(body: &Body, off: usize, len: usize, into: oxifabric::ops::IoBuf) {
    match body {
        Body::App(iov) => {
            let mut at = 0;
            for b in iov.window(off, len).iter() {
                at += into.write_at(at, b.as_slice());
            }
        }
        Body::Copy(v) => {
            into.write_at(0, &v[off..off + len]);
        }
        Body::Rts(_) => {}
    }
}

impl RdmEp {
    pub fn new(info: &Info, d: &VerbsDomain) -> Result<Arc<RdmEp>> {
        let chan = Channel::new().map_err(|e| verbs_err("rdma_create_event_channel", e))?;
        let cq = d
            .dev
            .create_cq(CQ_SIZE)
            .map_err(|e| verbs_err("ibv_create_cq", e))?;
        let listen = Id::new(&chan).map_err(|e| verbs_err("rdma_create_id", e))?;
        let src = info
            .src_addr
            .as_deref()
            .and_then(addr::sockaddr_from_bytes)
            .unwrap_or(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
        listen
            .bind(&src)
            .map_err(|e| verbs_err("rdma_bind_addr", e))?;
        let txbuf = RegBuf::new(&d.pd, TX_SLOTS * SLOT).map_err(|e| verbs_err("ibv_reg_mr", e))?;
        let waits = Watch::new()?;
        waits.fds.add(chan.fd(), 0, false)?;
        waits.fds.add(cq.fd(), 1, false)?;
        Ok(Arc::new_cyclic(|me| RdmEp {
            me: me.clone(),
            info: info.clone(),
            pd: d.pd.clone(),
            lkeys: d.lkeys.clone(),
            cache: d.cache.clone(),
            mrs: d.mrs.clone(),
            chan,
            cq,
            waits,
            // Never 0 ("not said"); a restarted process draws another.
            nonce: oxifabric::service::random::random_u64(),
            st: QuickLock::new(State {
                core: EpCore::new(info, NAME),
                last_dest: AvMemo::default(),
                rxq: RxQueues {
                    unexpected_limit: crate::info::max_unexp(),
                    ..RxQueues::default()
                },
                partial: Reassembly::default(),
                listen: Some(listen),
                conns: table::ConnTable::new(),
                by_id: HashMap::default(),
                tx_conn: txconn::TxConns::default(),
                pending: 0,
                queued: 0,
                atomics: HashMap::new(),
                acks: HashMap::new(),
                announced: HashMap::new(),
                pulls: HashMap::new(),
                next_atomic: 0,
                sends: table::Table::new(),
                txbuf,
                tx_free: (0..TX_SLOTS).rev().collect(),
                wrs: table::Table::new(),
                polls: 0,
                attempts: HashMap::new(),
                paused: Vec::new(),
                tick: 0,
                over_bound: false,
                parked_any: false,
                owing: Vec::new(),
                unnamed: Unnamed::default(),
            }),
        }))
    }

    fn lock(&self) -> QuickGuard<'_, State> {
        self.st.lock()
    }

    /// What we say of ourselves when connecting: notices of peers' RMA
    /// accesses wanted when something of ours counts them (the endpoint
    /// has `FI_RMA_EVENT`, or counters of remote accesses are bound to it;
    /// a notice costs the peer a send per access, so not otherwise),
    /// connections shared both ways when we issue no RMA
    /// (`rdm/conns.rs`), and our nonce.
    fn intro(&self, st: &State) -> wire::Intro {
        let mut flags = 0;
        let sinks = &st.core.sinks;
        if self.info.caps & FI_RMA_EVENT != 0
            || sinks.remote_read_cntr.is_some()
            || sinks.remote_write_cntr.is_some()
        {
            flags |= wire::NOTICES;
        }
        if self.info.caps & FI_RMA == 0 {
            flags |= wire::SHARED;
        }
        wire::Intro {
            flags,
            nonce: self.nonce,
        }
    }

    /// Our listening address.
    fn addr(st: &State) -> Option<SocketAddr> {
        st.listen.as_ref().and_then(Id::local_addr)
    }

    /// The queue pair of a connection on our completion queue, its
    /// receive slots posted; returns its receive buffer and inline size.
    fn setup_qp(&self, id: &mut Id, cn: u32) -> std::result::Result<(RegBuf, usize), VerbsError> {
        let slots = sizes::rx_slots();
        let mut cap = QpCap {
            max_send_wr: TX_SLOTS as u32,
            max_recv_wr: slots as u32,
            // RMA posts the application's buffers (up to iov_limit).
            max_send_sge: MAX_SGE as u32,
            max_recv_sge: 1,
            max_inline_data: inline_size() as u32,
        };
        id.create_qp(&self.pd, &self.cq, &mut cap)?;
        let rx = RegBuf::new(&self.pd, slots * SLOT)?;
        for i in 0..slots {
            id.post_recv(rx_wr(cn, i), &[rx.buf(i * SLOT, SLOT)], &[rx.lkey()])?;
        }
        Ok((rx, cap.max_inline_data as usize))
    }

    /// Starts a connection to the peer listening at `peer`; its sends
    /// queue on it meanwhile.
    fn connect_to(&self, st: &mut State, peer: SocketAddr) -> Result<u32> {
        if st.conns.len() >= sizes::max_conns() {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "connection to {peer}: this endpoint already has {} connections",
                sizes::max_conns()
            );
            return Err(Error::Again);
        }
        let id = Id::new(&self.chan).map_err(|e| verbs_err("rdma_create_id", e))?;
        Self::dial(st, &id, &peer)?;
        let cn = st.conns.next_key();
        st.by_id.insert(id.addr(), cn);
        st.conns
            .insert(cn, Conn::new(id, None, Phase::Resolving, peer, 0));
        st.pending += 1;
        st.tx_conn.insert(peer, cn);
        self.bound_conns(st);
        Ok(cn)
    }

    /// A peer's connection request: accepted when its private data names
    /// a listening address on the host the request came from, unless it
    /// crosses one of ours that wins (`rdm/conns.rs`).
    fn on_request(&self, st: &mut State, mut id: Id, data: &[u8]) {
        let from = id.peer_addr();
        let peer = wire::parse_hello(data).filter(|(p, _)| from.is_some_and(|f| f.ip() == p.ip()));
        let Some((peer, intro)) = peer else {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "connection request from {from:?} refused: its data names no listening address of its host"
            );
            let _ = id.reject(&[]);
            return;
        };
        self.forget_restarted(st, peer, intro.nonce);
        let Some(replaced) = self.settle_crossing(st, &id, peer, intro) else {
            return;
        };
        if st.conns.len() >= sizes::max_conns() {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "connection request from {peer} refused: {} connections already",
                sizes::max_conns()
            );
            let _ = id.reject(&[]);
            return;
        }
        let cn = st.conns.next_key();
        let (rx, inline) = match self.setup_qp(&mut id, cn) {
            Ok(r) => r,
            Err(e) => {
                verbs_err("accepting a connection", e);
                let _ = id.reject(&[]);
                return;
            }
        };
        if let Err(e) = id.accept(&wire::answer(self.intro(st))) {
            verbs_err("rdma_accept", e);
            return;
        }
        st.by_id.insert(id.addr(), cn);
        let mut conn = Conn::new(id, Some(rx), Phase::Accepting, peer, inline);
        conn.notices = intro.flags & wire::NOTICES != 0;
        conn.peer_nonce = intro.nonce;
        st.conns.insert(cn, conn);
        st.pending += 1;
        if self.shares(intro) {
            self.take_over(st, peer, cn, replaced);
        }
        self.bound_conns(st);
    }

    /// One CM event on the endpoint's channel.
    fn on_cm(&self, st: &mut State, ev: Event) {
        if ev.kind == RDMA_CM_EVENT_CONNECT_REQUEST {
            if let Some(id) = ev.request {
                self.on_request(st, id, &ev.data);
            }
            return;
        }
        let Some(&cn) = st.by_id.get(&ev.id) else {
            return;
        };
        let refused = |err, what| Failure {
            prov_errno: ev.status,
            prov_errno_kind: "rdma-cm status",
            ..Failure::cause(err, what)
        };
        match ev.kind {
            RDMA_CM_EVENT_ADDR_RESOLVED => {
                let Some(c) = st.conns.get_mut(&cn) else {
                    return;
                };
                match c.id.resolve_route(RESOLVE_MS) {
                    Ok(()) => c.phase = Phase::Routing,
                    Err(e) => {
                        verbs_err("rdma_resolve_route", e);
                        self.conn_failed(st, cn, refused(FI_EHOSTUNREACH, "no route to the peer"));
                    }
                }
            }
            RDMA_CM_EVENT_ROUTE_RESOLVED => {
                let hello = Self::addr(st)
                    .map(|a| wire::hello(&a, self.intro(st)))
                    .unwrap_or_default();
                let Some(c) = st.conns.get_mut(&cn) else {
                    return;
                };
                let r = self.setup_qp(&mut c.id, cn).and_then(|(rx, inline)| {
                    c.rx = Some(rx);
                    c.inline = inline;
                    c.id.connect(&hello)
                });
                match r {
                    Ok(()) => c.phase = Phase::Connecting,
                    Err(e) => {
                        verbs_err("connecting", e);
                        self.conn_failed(
                            st,
                            cn,
                            refused(FI_EIO, "could not set up the connection"),
                        );
                    }
                }
            }
            RDMA_CM_EVENT_ESTABLISHED => {
                let Some(c) = st.conns.get_mut(&cn) else {
                    return;
                };
                if c.phase == Phase::Connecting {
                    let intro = wire::parse_answer(&ev.data);
                    c.notices = intro.flags & wire::NOTICES != 0;
                    c.peer_nonce = intro.nonce;
                }
                if c.phase != Phase::Up {
                    c.phase = Phase::Up;
                    crate::info::set_rnr_timer(&c.id);
                    let peer = c.peer;
                    st.pending -= 1;
                    Self::reached(st, peer);
                    Self::pump(st, cn);
                    self.after_pump(st);
                }
            }
            // Before it is established, ours is made again (`rdm/retry.rs`).
            RDMA_CM_EVENT_REJECTED => {
                let f = refused(FI_ECONNREFUSED, "connection rejected");
                if wire::parse_refusal(&ev.data) == Some(wire::CROSSED) {
                    return self.crossed(st, cn, f);
                }
                self.dial_failed(st, cn, f, true)
            }
            RDMA_CM_EVENT_ADDR_ERROR
            | RDMA_CM_EVENT_ROUTE_ERROR
            | RDMA_CM_EVENT_UNREACHABLE
            | RDMA_CM_EVENT_CONNECT_ERROR => {
                let f = refused(FI_EHOSTUNREACH, "peer unreachable");
                self.dial_failed(st, cn, f, false)
            }
            RDMA_CM_EVENT_DISCONNECTED | RDMA_CM_EVENT_DEVICE_REMOVAL => {
                // What the peer sent before it left is in our CQ: take it
                // before the queue pair goes.
                self.poll_cq(st);
                let agreed = st.conns.get(&cn).is_some_and(|c| c.closing.is_some());
                let (src, peer) = (Self::source_of(st, cn), st.conns.get(&cn).map(|c| c.peer));
                let f = Failure::cause(FI_ECONNRESET, "peer closed the connection");
                self.conn_failed(st, cn, f);
                if !agreed {
                    // Collectives waiting for its message (`coll::peer_gone`).
                    let key = oxifabric::service::coll::key_of(self);
                    oxifabric::service::coll::peer_gone(key, src, Failure { peer, ..f });
                }
            }
            _ => {}
        }
    }

    /// Connection `cn` is gone: its queued and in-flight sends fail, the
    /// messages it was bringing in fail their receives, its next send to
    /// that peer connects anew.
    fn conn_failed(&self, st: &mut State, cn: u32, mut f: Failure) {
        if st.conns.get(&cn).is_some_and(|c| c.closing.is_some()) {
            // Idle and being closed: its end is no error (`rdm/lru.rs`).
            return self.close_idle(st, cn);
        }
        // What arrived before the failure is handed on first.
        self.flush_parked(st, cn);
        let Some(mut c) = st.conns.remove(&cn) else {
            return;
        };
        f.peer = Some(c.peer);
        if f.err != FI_ECONNRESET {
            oxifabric::prov_log!(NAME, FI_LOG_WARN, FI_LOG_EP_DATA, "{}", f.describe());
        }
        st.by_id.remove(&c.id.addr());
        if c.phase != Phase::Up {
            st.pending -= 1;
        }
        st.tx_conn.remove_if(&c.peer, cn);
        if c.phase == Phase::Up {
            let _ = c.id.disconnect();
        }
        st.queued -= c.queue.len();
        let mut hit: Vec<u64> = c.queue.drain(..).map(|o| o.id).collect();
        hit.extend(Self::release_wrs(st, cn));
        // Atomics waiting for that peer's answers fail too (the answer
        // comes on the peer's own connection).
        hit.extend(
            st.atomics
                .values()
                .filter(|w| w.peer == c.peer)
                .map(|w| w.send),
        );
        // So do messages waiting for their acknowledgement on it.
        hit.extend(Self::awaiting_acks(st, cn));
        for id in hit {
            Self::fail_send(st, id, f);
        }
        Self::drop_pulls(st, cn, f);
        let State {
            partial, rxq, core, ..
        } = st;
        partial.drop_where(rxq, |k| k.0 == cn, f, &core.sinks);
        drop(c);
        self.after_pump(st);
    }

    /// Forgets the work requests posted on connection `cn` (its queue
    /// pair is going: they will not complete), giving their transmit slots
    /// back; returns their sends.
    fn release_wrs(st: &mut State, cn: u32) -> Vec<u64> {
        let dead: Vec<u64> = st
            .wrs
            .iter()
            .filter(|(_, w)| w.conn == cn)
            .map(|(k, _)| k)
            .collect();
        let mut hit = Vec::new();
        for wr in dead {
            if let Some(w) = st.wrs.take(wr) {
                st.tx_free.push(w.slot);
                for id in std::iter::once(w.send).chain(w.more) {
                    if let Some(s) = st.sends.get_mut(id) {
                        s.pieces -= 1;
                    }
                    hit.push(id);
                }
            }
        }
        hit
    }

    /// Reports send `id` once nothing of it is in flight any more.
    fn settle(st: &mut State, id: u64) {
        let Some(s) = st.sends.get(id) else { return };
        if s.pieces > 0 || !s.failed && (!s.handed || s.waiting.is_some() || s.ack.is_some()) {
            return;
        }
        if let Some(s) = st.sends.take(id) {
            if let Some(c) = s.conn.and_then(|cn| st.conns.get_mut(&cn)) {
                c.unsettled = c.unsettled.saturating_sub(1);
            }
            if let Some(a) = s.waiting {
                st.atomics.remove(&a);
            }
            if let Some(k) = s.ack {
                st.acks.remove(&k);
            }
            if let (false, Some(tx)) = (s.failed, &s.tx) {
                st.core.sinks.tx_done(tx);
            }
        }
    }

    /// Send `id` failed with `f` (reported once), then settles.
    fn fail_send(st: &mut State, id: u64, f: Failure) {
        if let Some(s) = st.sends.get_mut(id) {
            if !s.failed {
                s.failed = true;
                if let Some(tx) = &s.tx {
                    st.core.sinks.tx_err(tx, f);
                }
            }
        }
        Self::settle(st, id);
    }

    /// Posts what connection `cn` has queued while transmit slots last:
    /// message pieces, RMA work requests (`rdm/rma.rs`).
    fn pump(st: &mut State, cn: u32) {
        let State {
            conns,
            txbuf,
            tx_free,
            wrs,
            sends,
            queued,
            ..
        } = st;
        let Some(c) = conns.get_mut(&cn) else { return };
        if c.phase != Phase::Up {
            return;
        }
        let notices = c.notices;
        while let Some(o) = c.queue.front_mut() {
            if c.closing.is_some() && o.frame != Some(wire::Op::Bye) {
                // Held for a new connection (`rdm/lru.rs`).
                return;
            }
            if o.fence {
                if c.unsettled > 0 {
                    // Progress pumps again once they are reported.
                    return;
                }
                o.fence = false;
            }
            let small = bundle::takes(o);
            if small && bundle::waits(c.inflight, o.len) {
                // Bundled once one completes (`rdm/bundle.rs`).
                return;
            }
            let Some(slot) = tx_free.pop() else { return };
            let wr = wrs.next_id();
            let p = Post {
                id: &c.id,
                inline: c.inline,
                txbuf,
                slot,
                wr,
                notices,
            };
            let n = if small { bundle::count(&c.queue) } else { 1 };
            if n > 1 {
                if let Err(e) = bundle::post(&p, &c.queue, n) {
                    tx_free.push(slot);
                    verbs_err("ibv_post_send", e);
                    return;
                }
                let mut more: Vec<u64> = c.queue.drain(..n).map(|o| o.id).collect();
                let first = more.remove(0);
                *queued -= n;
                c.inflight += 1;
                if !c.bundled {
                    c.bundled = true;
                    bundle::first(c.peer, n);
                }
                for &id in std::iter::once(&first).chain(&more) {
                    Self::count_post(&mut c.unsettled, cn, sends, id, true);
                }
                wrs.insert_as(
                    wr,
                    TxWr {
                        more,
                        ..TxWr::new(slot, first, cn)
                    },
                );
                continue;
            }
            let Some(o) = c.queue.front_mut() else {
                tx_free.push(slot);
                return;
            };
            let posted = if o.rma.is_some() {
                rma::step(&p, o)
            } else {
                Self::piece(&p, o).map(|()| None)
            };
            match posted {
                Ok(back) => {
                    wrs.insert_as(
                        wr,
                        TxWr {
                            back,
                            ..TxWr::new(slot, o.id, cn)
                        },
                    );
                    c.inflight += 1;
                    let (id, done) = (o.id, rma::finished(o, notices));
                    Self::count_post(&mut c.unsettled, cn, sends, id, done);
                    if done {
                        c.queue.pop_front();
                        *queued -= 1;
                    }
                }
                Err(e) => {
                    tx_free.push(slot);
                    verbs_err("ibv_post_send", e);
                    return;
                }
            }
        }
    }

    /// Counts a work request posted on connection `cn` for send `id`
    /// (`done`: its last): the send counts it, and a send wholly handed
    /// over is counted in its connection's `unsettled` until reported
    /// (what `FI_FENCE` waits for). The queue's pump and `rdm/direct.rs`
    /// both post.
    #[inline]
    fn count_post(
        unsettled: &mut usize,
        cn: u32,
        sends: &mut table::Table<Sending>,
        id: u64,
        done: bool,
    ) {
        if let Some(s) = sends.get_mut(id) {
            s.pieces += 1;
            s.handed = done;
            if done {
                s.conn = Some(cn);
                *unsettled += 1;
            }
        }
    }

    /// Posts the next piece of message `o` from transmit slot `slot`.
    fn piece(p: &Post<'_>, o: &mut Outgoing) -> std::result::Result<(), VerbsError> {
        let (id, txbuf) = (p.id, p.txbuf);
        if let Body::Rts(desc) = &o.body {
            Self::post_rts(p, o.seq, o.tag, o.data, o.len, desc)?;
            o.off = o.len;
            return Ok(());
        }
        let n = PIECE.min(o.len - o.off);
        let (op, len) = match (o.off, o.len <= PIECE) {
            (_, _) if o.frame.is_some() => (o.frame.unwrap_or(wire::Op::Eager), n),
            (0, true) => (wire::Op::Eager, n),
            (0, false) => (wire::Op::First, o.len),
            _ => (wire::Op::More, n),
        };
        let h = Header {
            op,
            seq: o.seq,
            tag: o.tag,
            data: o.data,
            len: len as u64,
            ack: o.ack,
        };
        let b = txbuf.buf(p.slot * SLOT, HDR + n);
        b.write_at(0, &h.encode());
        gather(&o.body, o.off, n, b.slice(HDR, n));
        id.post_send(
            p.wr,
            Op::Send(None),
            &[b],
            &[txbuf.lkey()],
            HDR + n <= p.inline,
        )?;
        o.off += n;
        Ok(())
    }

    /// Queues operation `out` for the peer at `dest` (connecting to it on
    /// first use) under a new number, and posts what its connection can
    /// take; returns the connection and the number. `Again` when the
    /// endpoint's transmit queue or CQ is full.
    fn enqueue(
        &self,
        st: &mut State,
        dest: fi_addr_t,
        out: Outgoing,
        tx: TxCtx,
        mrs: Vec<Hold>,
    ) -> Result<(u32, u64)> {
        let peer = self.admit(st, dest, &tx)?;
        self.queue_to(st, peer, out, Some(tx), mrs)
    }

    /// Whether the endpoint takes an operation of the application's (with
    /// completion context `tx`) for `dest` now: enabled, room in its
    /// transmit queue and CQ, `dest` in the AV; the peer's listening
    /// address if so.
    fn admit(&self, st: &mut State, dest: fi_addr_t, tx: &TxCtx) -> Result<SocketAddr> {
        if !st.core.enabled {
            return Err(Error::OpBadState);
        }
        if st.sends.len() >= self.info.tx.size.max(1) || !st.core.sinks.tx_room(tx) {
            self.progress_locked(st);
            return Err(Error::Again);
        }
        let av = st.core.av.as_ref().ok_or(Error::NoAv)?;
        let Some(peer) = st.last_dest.get(av, dest, |av| av.sockaddr(dest)) else {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "operation to {dest:#x}: not an address of the AV"
            );
            return Err(Error::Inval);
        };
        Ok(peer)
    }

    /// Queues message `out` of the application's send `op` (completion
    /// context `tx`, registrations `mrs` held until it completes) for
    /// `peer`; an injected message's bytes that have not left yet are
    /// copied, since the caller's buffers are its own again on return.
    #[allow(clippy::too_many_arguments)]
    fn queue_message(
        &self,
        st: &mut State,
        peer: SocketAddr,
        out: Outgoing,
        tx: TxCtx,
        mrs: Vec<Hold>,
        op: &SendOp<'_>,
        inject: bool,
    ) -> Result<()> {
        let (cn, id) = self.queue_to(st, peer, out, Some(tx), mrs)?;
        if inject {
            if let Some(o) = st
                .conns
                .get_mut(&cn)
                .and_then(|c| c.queue.iter_mut().find(|o| o.id == id))
            {
                o.body = Body::Copy(copy_of(op.iov));
            }
        }
        Ok(())
    }

    /// Queues `out` for `peer` (see [`RdmEp::enqueue`]); `tx` None for an
    /// operation of ours, which no application completion reports.
    fn queue_to(
        &self,
        st: &mut State,
        peer: SocketAddr,
        out: Outgoing,
        tx: Option<TxCtx>,
        mrs: Vec<Hold>,
    ) -> Result<(u32, u64)> {
        let cn = match st.tx_conn.get(&peer) {
            Some(cn) => cn,
            None => self.connect_to(st, peer)?,
        };
        Self::queue_on(st, cn, out, tx, mrs).map(|id| (cn, id))
    }

    /// Queues `out` on connection `cn` under a new number (a message
    /// takes the connection's next message number) and posts what the
    /// connection can take; returns the number.
    fn queue_on(
        st: &mut State,
        cn: u32,
        mut out: Outgoing,
        tx: Option<TxCtx>,
        mrs: Vec<Hold>,
    ) -> Result<u64> {
        st.tick += 1;
        let Some(c) = st.conns.get_mut(&cn) else {
            return Err(Error::OpBadState);
        };
        c.used = st.tick;
        if out.rma.is_none() && out.frame.is_none() {
            out.seq = c.next_seq;
            c.next_seq = c.next_seq.wrapping_add(1);
        }
        let ack = out.ack.then_some((cn, out.seq));
        let id = st.sends.insert(Sending::new(tx, mrs, ack));
        out.id = id;
        c.queue.push_back(out);
        st.queued += 1;
        if let Some(k) = ack {
            st.acks.insert(k, id);
        }
        Self::pump(st, cn);
        Ok(id)
    }

    /// The local keys of an RMA operation's buffers: its descriptors when
    /// it has them all; None when it goes through transmit slots (up to a
    /// piece, or injected); else the domain's registration cache's
    /// (`ep::register_bufs`; refused under `FI_MR_LOCAL`).
    fn rma_keys(
        &self,
        op: &RmaOp<'_>,
        len: usize,
        what: &str,
    ) -> Result<(Option<[u32; MAX_SGE]>, Vec<Hold>)> {
        if injected(op.flags, op.internal) {
            return Ok((None, Vec::new()));
        }
        if let Some(k) = desc_lkeys(&self.lkeys, op.desc, op.iov.len(), what)? {
            return Ok((Some(k), Vec::new()));
        }
        if len <= PIECE {
            return Ok((None, Vec::new()));
        }
        // A read lands in the buffers: local write.
        let access = if op.write { 0 } else { IBV_ACCESS_LOCAL_WRITE };
        let (k, mrs) = register_bufs(&self.cache, self.info.domain.mr_mode, op.iov, access, what)?;
        Ok((Some(k), mrs))
    }

    /// After slots were freed: the other connections' queues move on.
    /// The checks are inline and the work out of line: every progress
    /// call makes them and almost never has work (under the guest's
    /// emulated CPU each instruction of an empty poll counts).
    #[inline]
    fn after_pump(&self, st: &mut State) {
        if !st.pulls.is_empty() {
            self.pulls_waiting(st);
        }
        if st.queued != 0 && !st.tx_free.is_empty() {
            self.pump_queued(st);
        }
    }

    /// [`Self::after_pump`]'s work: every connection with a queue and
    /// room pumps it.
    #[inline(never)]
    fn pump_queued(&self, st: &mut State) {
        let ready: Vec<u32> = st
            .conns
            .iter()
            .filter(|(_, c)| c.phase == Phase::Up && !c.queue.is_empty())
            .map(|(k, _)| k)
            .collect();
        for cn in ready {
            Self::pump(st, cn);
        }
    }

    /// The application's name for the peer of connection `cn`.
    fn source_of(st: &mut State, cn: u32) -> fi_addr_t {
        let Some(av) = st.core.av.as_ref() else {
            return FI_ADDR_NOTAVAIL;
        };
        let Some(c) = st.conns.get_mut(&cn) else {
            return FI_ADDR_NOTAVAIL;
        };
        let peer = c.peer;
        c.src.get(av, (), |av| av.reverse(&peer))
    }

    /// The number a message on connection `cn` whose source is `src`
    /// carries for [`RdmEp::name_unnamed`] (`rxq::Unnamed`): 0 when the AV
    /// named its sender.
    fn number_unnamed(st: &mut State, cn: u32, src: fi_addr_t) -> u32 {
        if src != FI_ADDR_NOTAVAIL {
            return 0;
        }
        match st.conns.get(&cn) {
            Some(c) => st.unnamed.number(c.peer, src),
            None => 0,
        }
    }

    /// Before a receive is posted: if the AV changed since messages from
    /// peers it did not name arrived, those peers are looked up again and
    /// their unexpected messages take the addresses found, so a directed
    /// receive posted after the application's `fi_av_insert` finds them.
    fn name_unnamed(st: &mut State) {
        st.unnamed.refresh(&mut st.rxq, st.core.av.as_deref());
    }

    /// A peer sent what the protocol does not allow: its connection is
    /// closed.
    fn refuse(&self, st: &mut State, cn: u32, why: &str) {
        let peer = st.conns.get(&cn).map(|c| c.peer);
        oxifabric::prov_log!(
            NAME,
            FI_LOG_WARN,
            FI_LOG_EP_DATA,
            "peer {peer:?} sent {why}: closing its connection"
        );
        self.conn_failed(
            st,
            cn,
            Failure::cause(FI_EPROTO, "the peer broke the protocol"),
        );
    }

    /// A receive slot completed.
    fn on_recv(&self, st: &mut State, wc: &ibv_wc) {
        let cn = ((wc.wr_id & !RX_BIT) >> 16) as u32;
        let slot = (wc.wr_id & 0xffff) as usize;
        let Some(c) = st.conns.get(&cn) else { return };
        if wc.status != IBV_WC_SUCCESS {
            // A flushed receive slot is the first sign that the queue pair
            // is in error state (a peer's refused RMA access on it, or the
            // peer gone): the connection is dropped now, so that nothing
            // more is posted on it before its CM event arrives.
            let f = if wc.status == IBV_WC_WR_FLUSH_ERR {
                Failure::cause(
                    FI_ECONNRESET,
                    "the connection's queue pair is in error state",
                )
            } else {
                wc_failure(wc.status, Some(c.peer), "receive")
            };
            self.conn_failed(st, cn, f);
            return;
        }
        st.tick += 1;
        let tick = st.tick;
        let Some(c) = st.conns.get_mut(&cn) else {
            return;
        };
        c.used = tick;
        // The device wrote at most the slot.
        let len = (wc.byte_len as usize).min(SLOT);
        let at = if c.parked.is_empty() {
            match self.take_piece(st, cn, slot, 0, len, false) {
                flow::Taken::Done => return,
                flow::Taken::Parked(at) => at,
            }
        } else {
            0
        };
        Self::park(st, cn, slot, at, len);
    }

    /// Handles the pieces in receive slot `slot` of connection `cn` from
    /// byte `start` to `len` (one piece, or a bundle's, `rdm/bundle.rs`)
    /// in order, and gives the slot back to be posted again
    /// (`rdm/repost.rs`), unless a message piece must wait for room
    /// (`rdm/flow.rs`): then the pieces from that one on are left
    /// (`Parked` says where they start). `failing`: the connection is
    /// going, the pieces are taken whatever the bound and the slot is not
    /// posted again.
    fn take_piece(
        &self,
        st: &mut State,
        cn: u32,
        slot: usize,
        start: usize,
        len: usize,
        failing: bool,
    ) -> flow::Taken {
        let Some(c) = st.conns.get(&cn) else {
            return flow::Taken::Done;
        };
        let Some(rx) = c.rx.as_ref() else {
            return flow::Taken::Done;
        };
        let whole = rx.buf(slot * SLOT, SLOT);
        let mut at = start;
        loop {
            let rest = whole.slice(at, len.saturating_sub(at));
            let (h, body, used) = match Header::decode_next(rest.as_slice()) {
                Ok(x) => x,
                Err(why) => {
                    self.refuse(st, cn, why);
                    return flow::Taken::Done;
                }
            };
            if matches!(h.op, wire::Op::First | wire::Op::Rts)
                && h.len > self.info.ep.max_msg_size as u64
            {
                self.refuse(st, cn, "a message longer than max_msg_size");
                return flow::Taken::Done;
            }
            let msg = MsgInfo {
                src: Self::source_of(st, cn),
                tag: h.tag,
                data: h.data,
            };
            if !failing && !Self::has_room(st, cn, &h, body.len(), &msg) {
                return flow::Taken::Parked(at);
            }
            let from = match h.op {
                wire::Op::Eager | wire::Op::First | wire::Op::Rts => {
                    Self::number_unnamed(st, cn, msg.src)
                }
                _ => 0,
            };
            let bad = match h.op {
                wire::Op::Atomic => self.serve_atomic(st, cn, &h, body, msg.src).err(),
                wire::Op::AtomicDone => Self::atomic_answered(st, cn, &h, body).err(),
                wire::Op::Delivered => Self::delivered(st, cn, &h).err(),
                wire::Op::Rts => self.on_rts(st, cn, &h, body, msg, from),
                wire::Op::Bye => self.on_bye(st, cn, h.seq).err(),
                _ => self.deliver(st, cn, &h, body, msg, from),
            };
            if let Some(why) = bad {
                self.refuse(st, cn, why);
                return flow::Taken::Done;
            }
            self.acknowledge(st, cn, &h);
            if st.conns.get(&cn).is_none() {
                // Gone, and its receive slots with it.
                return flow::Taken::Done;
            }
            at += used;
            if at >= len {
                break;
            }
        }
        if !failing {
            self.give_back(st, cn, slot);
        }
        flow::Taken::Done
    }

    /// A message piece or an RMA notice (on connection `cn`; `from` numbers
    /// a sender the AV did not name, [`RdmEp::number_unnamed`]): into the
    /// engine's receive queue and reassembly, or counted; why the piece is
    /// refused otherwise.
    fn deliver(
        &self,
        st: &mut State,
        cn: u32,
        h: &Header,
        body: &[u8],
        msg: MsgInfo,
        from: u32,
    ) -> Option<&'static str> {
        let State {
            rxq, partial, core, ..
        } = &mut *st;
        let key = (cn, h.seq);
        match h.op {
            wire::Op::Eager => {
                rxq.deliver_from(msg, from, body, &core.sinks);
                None
            }
            wire::Op::First if partial.contains(&key) => Some("a message number in use"),
            wire::Op::First => {
                partial.start_from(rxq, key, msg, from, h.len as usize);
                partial
                    .append(key, body, &core.sinks)
                    .err()
                    .map(|_| "a first piece past its length")
            }
            wire::Op::More => partial
                .append(key, body, &core.sinks)
                .err()
                .map(|_| "a piece of no message, or past its length"),
            wire::Op::Written | wire::Op::Read => {
                // The access before it is done (RC's order).
                let write = h.op == wire::Op::Written;
                let (key, addr) = (u64::from(h.seq), h.tag.unwrap_or(0));
                let access = if write {
                    FI_REMOTE_WRITE
                } else {
                    FI_REMOTE_READ
                };
                let len = h.len as usize;
                match self.mrs.access(key, addr, len, access) {
                    Ok((m, _)) => remote_complete(&core.sinks, &m, write, len, h.data, msg.src),
                    // The region is closed by now: the endpoint still counts it.
                    Err(_) => core.sinks.remote_done(write, len, h.data, msg.src),
                }
                None
            }
            wire::Op::Atomic
            | wire::Op::AtomicDone
            | wire::Op::Delivered
            | wire::Op::Rts
            | wire::Op::Bye => None,
        }
    }

    /// A piece left (or failed).
    fn on_sent(&self, st: &mut State, wc: &ibv_wc) {
        let Some(w) = st.wrs.take(wc.wr_id) else {
            return;
        };
        if let (Some(r), IBV_WC_SUCCESS) = (&w.back, wc.status) {
            rma::read_back(&st.txbuf, w.slot, r);
        }
        st.tx_free.push(w.slot);
        if let (Some(k), IBV_WC_SUCCESS) = (w.pull, wc.status) {
            return self.read_done(st, k);
        }
        if let (None, Some(c)) = (w.pull, st.conns.get_mut(&w.conn)) {
            c.inflight = c.inflight.saturating_sub(1);
        }
        let sends = std::iter::once(w.send).chain(w.more.iter().copied());
        for id in sends.clone() {
            if let Some(s) = st.sends.get_mut(id) {
                s.pieces -= 1;
            }
        }
        if wc.status != IBV_WC_SUCCESS {
            let peer = st.conns.get(&w.conn).map(|c| c.peer);
            let f = wc_failure(wc.status, peer, "send");
            for id in sends {
                Self::fail_send(st, id, f);
            }
            self.conn_failed(st, w.conn, f);
            return;
        }
        for id in sends {
            Self::settle(st, id);
        }
    }

    fn poll_cq(&self, st: &mut State) {
        // Not cleared before each poll (`WcBuf`): most polls find nothing.
        let mut wc = WcBuf::<16>::default();
        loop {
            let found = match wc.poll(&self.cq) {
                Ok(found) => found,
                Err(e) => {
                    oxifabric::prov_log!(NAME, FI_LOG_WARN, FI_LOG_CQ, "{e}");
                    &[]
                }
            };
            for w in found {
                if w.wr_id & RX_BIT != 0 {
                    self.on_recv(st, w);
                } else {
                    self.on_sent(st, w);
                }
            }
            if found.len() < WcBuf::<16>::ROOM {
                break;
            }
        }
        self.after_pump(st);
    }

    fn progress_locked(&self, st: &mut State) {
        if !st.core.enabled {
            return;
        }
        self.repost_owed(st);
        let due = self.waits.due(&mut st.polls, st.pending > 0);
        if due.read {
            while let Some(ev) = self.chan.next() {
                self.on_cm(st, ev);
            }
            // Armed before the poll below (crate::watch::Due).
            self.cq.settle_events(due.arm);
            self.redial_due(st);
        }
        self.poll_cq(st);
        self.resume_parked(st);
        if st.over_bound {
            self.bound_conns(st);
        }
    }
}

/// The bytes of `iov`, back to back (an injected operation's, whose
/// buffers are the caller's again when the call returns).
fn copy_of(iov: &[oxifabric::ops::IoBuf]) -> Vec<u8> {
    let mut v = Vec::with_capacity(iov_len(iov));
    for b in iov {
        v.extend_from_slice(b.as_slice());
    }
    v
}

/// The work request id of receive slot `slot` of connection `cn`.
fn rx_wr(cn: u32, slot: usize) -> u64 {
    RX_BIT | u64::from(cn) << 16 | slot as u64
}

impl Progress for RdmEp {
    fn progress(&self) {
        if let Some(mut st) = self.st.try_lock() {
            self.progress_locked(&mut st);
        }
    }

    /// As `VerbsEp`'s: a pass that arms the completion queue first.
    fn wait_fd(&self) -> Option<RawFd> {
        self.progress_settled();
        Some(self.waits.fds.raw())
    }

    fn pin_watch(&self) {
        self.waits.pin();
    }

    fn progress_settled(&self) {
        self.waits.wanted();
        let mut st = self.lock();
        self.progress_locked(&mut st);
    }
}

impl EndpointOps for RdmEp {
    fn bind(&self, b: Binding) -> Result<()> {
        if matches!(b, Binding::Srx(_)) {
            return Err(Error::NoSys);
        }
        self.lock().core.bind(b, self.me.clone())
    }

    fn enable(&self) -> Result<()> {
        let mut st = self.lock();
        if !st.core.start_enable(ep_core::BOTH)? {
            return Ok(());
        }
        let id = st.listen.as_ref().ok_or(Error::OpBadState)?;
        id.listen(1024).map_err(|e| verbs_err("rdma_listen", e))?;
        st.core.finish_enable(ep_core::BOTH);
        Ok(())
    }

    fn close(&self) {
        let mut st = self.lock();
        for c in st.conns.values() {
            if c.phase == Phase::Up {
                let _ = c.id.disconnect();
            }
        }
        // Queue pairs go before the completion queue (ours, dropped with
        // the endpoint) and their buffers (Conn's field order).
        st.conns.clear();
        st.by_id.clear();
        st.listen = None;
        st.wrs.clear();
        st.sends.clear();
        st.pulls.clear();
        st.announced.clear();
        st.core.unbind_all(self.me.clone());
    }

    fn cancel(&self, context: usize) -> Result<()> {
        let mut g = self.lock();
        let st = &mut *g;
        st.rxq.cancel(context, &st.core.sinks)
    }

    fn getopt(&self, level: c_int, name: c_int) -> Result<OptValue> {
        self.lock().rxq.getopt(level, name)
    }

    fn setopt(&self, level: c_int, name: c_int, v: OptValue) -> Result<()> {
        self.lock().rxq.setopt(level, name, v)
    }

    fn getname(&self) -> Result<Vec<u8>> {
        let st = self.lock();
        Self::addr(&st)
            .map(|a| addr::to_sockaddr(&a))
            .ok_or(Error::OpBadState)
    }

    fn recv(&self, op: &RecvOp<'_>) -> Result<()> {
        rxq::check_recv(op, self.info.caps)?;
        let mut g = self.lock();
        let st = &mut *g;
        if !st.core.enabled {
            return Err(Error::OpBadState);
        }
        if !st
            .rxq
            .recv_room(op, self.info.rx.size.max(1), &st.core.sinks)
        {
            return Err(Error::Again);
        }
        if op.flags & FI_PEEK != 0 {
            self.progress_locked(st);
        }
        Self::name_unnamed(st);
        let op = &rxq::as_posted(op, self.info.caps);
        for m in st.rxq.post(op, &st.core.sinks) {
            self.matched(st, m);
        }
        // The receive may be what a parked piece waits for, or have
        // taken an unexpected message.
        self.resume_parked(st);
        Ok(())
    }

    fn send(&self, op: &SendOp<'_>) -> Result<()> {
        if op.tag.is_some() && self.info.caps & FI_TAGGED == 0 {
            return Err(Error::NoSys);
        }
        let len = iov_len(op.iov);
        if len > self.info.ep.max_msg_size {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "send of {len} bytes, max_msg_size is {}",
                self.info.ep.max_msg_size
            );
            return Err(Error::MsgSize);
        }
        let inject = op.flags & FI_INJECT != 0 || op.internal & internal::NO_COMPLETION != 0;
        if inject && len > self.info.tx.inject_size {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "inject of {len} bytes, inject_size is {}",
                self.info.tx.inject_size
            );
            return Err(Error::MsgSize);
        }
        if op.iov.len() > IoVec::CAP {
            return Err(Error::Inval);
        }
        let body = || IoVec::from_slice(op.iov).unwrap_or_default();
        let fence = op.flags & FI_FENCE != 0;
        let tx = TxCtx::of(op);
        if len <= PIECE
            && (inject || len <= Self::rndv_limit())
            && op.flags & FI_DELIVERY_COMPLETE == 0
            && !fence
        {
            // One eager piece with nothing to wait for: posted at once
            // when its connection can take it (`rdm/direct.rs`).
            let mut g = self.lock();
            let st = &mut *g;
            let peer = self.admit(st, op.dest, &tx)?;
            if Self::post_now(st, peer, op, len, &tx) {
                return Ok(());
            }
            let out = Outgoing::message(op, Body::App(body()), len, false, false);
            return self.queue_message(st, peer, out, tx, Vec::new(), op, inject);
        }
        // Large: an announcement the receiver reads by (`rdm/rndv.rs`),
        // which completes on its `Delivered`.
        let (body, mrs) = match (!inject)
            .then(|| self.announce(op.iov, op.desc, len))
            .flatten()
        {
            Some((desc, holds)) => (Body::Rts(desc), holds),
            None => (Body::App(body()), Vec::new()),
        };
        let ack = matches!(body, Body::Rts(_)) || op.flags & FI_DELIVERY_COMPLETE != 0;
        let mut g = self.lock();
        let st = &mut *g;
        let peer = self.admit(st, op.dest, &tx)?;
        let out = Outgoing::message(op, body, len, ack, fence);
        self.queue_message(st, peer, out, tx, mrs, op, inject)
    }

    /// RMA (`rdm/rma.rs`): checked here (shape, inject size, one remote
    /// piece, a 4-byte key, descriptors), queued on the peer's connection.
    fn rma(&self, op: &RmaOp<'_>) -> Result<()> {
        if self.info.caps & FI_RMA == 0 {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "RMA on an endpoint whose fi_info has no FI_RMA"
            );
            return Err(Error::NoSys);
        }
        let limit = self.info.tx.rma_iov_limit.max(1);
        let len = check_rma(NAME, op, limit, self.info.tx.inject_size)?;
        let [r] = op.rma else {
            return Err(Error::Inval);
        };
        let rkey = rma::rkey(r.key)?;
        let what = if op.write { "RMA write" } else { "RMA read" };
        let (keys, mrs) = self.rma_keys(op, len, what)?;
        let body = if op.write && injected(op.flags, op.internal) {
            Body::Copy(copy_of(op.iov))
        } else {
            Body::App(IoVec::from_slice(op.iov).ok_or(Error::Inval)?)
        };
        let notify = (op.write && (op.data.is_some() || op.flags & FI_REMOTE_CQ_DATA != 0))
            .then(|| op.data.unwrap_or(0));
        let out = Outgoing {
            id: 0,
            seq: 0,
            tag: None,
            data: None,
            body,
            len,
            off: 0,
            rma: Some(rma::Access {
                write: op.write,
                addr: r.addr,
                rkey,
                keys,
                data: notify,
                noticed: false,
                started: false,
            }),
            frame: None,
            ack: false,
            fence: op.flags & FI_FENCE != 0,
        };
        let mut g = self.lock();
        self.enqueue(&mut g, op.dest, out, TxCtx::of_rma(op), mrs)
            .map(|_| ())
    }

    /// Atomics (`rdm/atomic.rs`).
    fn atomic(&self, op: &oxifabric::ops::AtomicReq<'_>) -> Result<()> {
        self.post_atomic(op)
    }

    fn atomic_limit(&self) -> usize {
        if self.info.caps & FI_ATOMIC != 0 {
            atomic::ATOMIC_LIMIT
        } else {
            0
        }
    }

    fn rx_size_left(&self) -> Result<usize> {
        Ok(self
            .info
            .rx
            .size
            .saturating_sub(self.lock().rxq.posted_count()))
    }

    fn tx_size_left(&self) -> Result<usize> {
        Ok(self.info.tx.size.saturating_sub(self.lock().sends.len()))
    }

    fn completion_sinks(&self) -> Option<Sinks> {
        Some(self.lock().core.sinks.clone())
    }

    fn as_progress(&self) -> Option<Weak<dyn Progress>> {
        Some(self.me.clone())
    }

    fn set_fid(&self, fid: usize) {
        self.lock().core.fid = fid;
    }
}
