//! The same-host path: everything an RDM endpoint needs to exchange
//! messages and one-sided operations with peers of its host over one
//! [`Transport`], built on the engine's endpoint core and receive queue
//! (binds, completions, matching, unexpected messages, peek, claim,
//! discard, multi-receive, cancel), which its owner keeps and lends it
//! ([`Host`]). Two endpoints own one: the `shm` provider's (`ep.rs`),
//! whose every peer is reached this way, and the sockets provider's RDM
//! endpoint, which reaches its same-host peers this way and the others
//! by TCP under one receive queue. The receive queue's deferred messages
//! are the owner's tokens ([`Token`]): the sockets endpoint's hold TCP
//! rendezvous as well as ours.
//!
//! A message that fits a cell travels as one `EAGER` cell. A larger one
//! from the application's buffers is a rendezvous: one `RNDV` cell says
//! where the bytes are, the receiver matches it like any message and pulls
//! them by cross-memory attach straight into the receive (one copy), then
//! answers `DONE`, which completes the send. Where the receiver may not
//! read the sender's memory (the kernel's ptrace rules), or the bytes were
//! copied at send time (`fi_inject`), they travel in cells: a `FIRST` cell
//! and `MORE` cells (`proto.rs`), which the receiver copies into the
//! matched receive or holds while none matches (the receive queue lists
//! such a message as deferred from its first cell on, so `FI_PEEK` sees it
//! at once; `service::reassembly`).
//!
//! Sends to one peer leave in the order they were posted: while anything
//! waits for a peer (its handshake, room in its ring, the rest of a large
//! message), later sends to it queue behind.
//!
//! How peers are named ([`Naming`]): by `fi_shm://` strings in the AV
//! (the `shm` provider), or by the socket addresses of their TCP
//! listeners (the sockets provider), each such peer listening here under
//! an id derived from that address ([`id_for_sockaddr`]) and telling it
//! in its handshake, so that `FI_SOURCE` finds its AV entry.
//!
//! One-sided operations (RMA, atomics), both sides, are in `path/rma.rs`.

mod bounce;
mod rma;
mod split;
pub use rma::ATOMIC_LIMIT;

use crate::attach::EndpointId;
use crate::cma::RemoteIov;
use crate::proto::{self, Op};
use crate::ring::{Kind, Meta, Peek};
use crate::transport::{Addr, Areas, Config, Event, Sent, Transport};
use oxifabric::abi::*;
use oxifabric::error::{Error, Result};
use oxifabric::ops::{iov_len, IoVec, SendOp};
use oxifabric::service::ep_core::{EpCore, Failure, PeerName, TxCtx};
use oxifabric::service::epoll::Epoll;
use oxifabric::service::keyhash::KeyedU64;
use oxifabric::service::mr::MrTable;
use oxifabric::service::progress::Ready;
use oxifabric::service::reassembly::{Reassembly, Refused};
use oxifabric::service::rxq::{
    complete_into, DeferredMatch, MsgInfo, Placement, Posted, Region, RxQueues, Unnamed,
};
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PROV: &str = crate::provider::NAME;
/// Cells in an endpoint's receive ring, and their size: 4 KiB of payload
/// each, so that every `fi_inject` fits one cell.
const CELLS: usize = 256;
const CELL_SIZE: usize = crate::ring::CELL_HEADER + crate::provider::INJECT_SIZE;
/// Our bounce area (`path/bounce.rs`): 16 chunks of 64 KiB, 1 MiB in
/// flight per endpoint toward peers cross-memory attach cannot reach
/// (pages of it are only allocated once touched: an endpoint that never
/// needs it pays address space, not memory).
const BOUNCE_CHUNKS: usize = 16;
const BOUNCE_SIZE: usize = 64 << 10;
/// The most one ring's cells can add to what the receive queue holds for
/// receives not posted yet, when they carry their bytes inline. A `CHUNK`
/// cell brings up to a chunk (64 KiB); each sender has at most
/// `BOUNCE_CHUNKS` of them out, so a drain overshoots the bound by at most
/// 1 MiB per sender sending that way.
const RING_HELD: usize = CELLS * (CELL_SIZE + oxifabric::service::rxq::ENTRY_COST);
/// The transport's `ctx` of cells that belong to no send (answers).
const NO_SEND: u64 = u64::MAX;
/// Why a peer's operations fail when it goes away.
const GONE: &str = "peer endpoint closed or its process exited";

/// A message from `Addr`, by the sender's number for it.
pub type Key = (Addr, u64);

/// What the owner's receive queue holds for a deferred message: ours are
/// [`Key`]s, which the owner's token type must be able to carry.
pub trait Token: Copy + Eq + Hash {
    /// The token of our message `key`.
    fn shm(key: Key) -> Self;
    /// Our message's key, if the token is one of ours.
    fn as_shm(&self) -> Option<Key>;
}

impl Token for Key {
    fn shm(key: Key) -> Key {
        key
    }
    fn as_shm(&self) -> Option<Key> {
        Some(*self)
    }
}

/// How the application's AV names our peers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// By our `fi_shm://` address strings (the `shm` provider).
    ShmStr,
    /// By their TCP listeners' socket addresses, which their handshakes
    /// tell (the sockets provider).
    Sockaddr,
}

/// The id under which the endpoint whose TCP listener is at `sa` listens
/// here too: derived from the address and our user id, the same in every
/// process of one user (another user's endpoint at that address has
/// another id, and the kernel's credentials check refuses it anyway).
/// Listeners are in the abstract namespace, which is the network
/// namespace's: an endpoint in another one (another container, another
/// host) is not found under it, and is reached by TCP.
pub fn id_for_sockaddr(sa: &SocketAddr) -> EndpointId {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let text = format!("oxifabric-sockets:{uid}:{sa}");
    addr_for_name(text.as_bytes()).0
}

/// The owner's endpoint core and receive queue, lent to the path.
pub struct Host<'a, K> {
    pub core: &'a mut EpCore,
    pub rxq: &'a mut RxQueues<K>,
}

/// Limits of the owner's entry that the path applies.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Transmit operations under way at most (sends and one-sided ones
    /// together), counting the owner's own.
    pub queue_size: usize,
    pub inject_size: usize,
    pub rma_iov_limit: usize,
    /// How long a peer has to answer our handshake.
    pub handshake: Duration,
    /// The owner has another way to its peers (the sockets provider's
    /// TCP): why a first handshake failed is kept for [`Path::reached`].
    pub fallback: bool,
}

/// How far [`Path::reach`] got with a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reached {
    /// Its handshake finished: operations to it go by shared memory.
    Up,
    /// Its handshake is under way.
    Pending,
    /// Its handshake failed, and why, while its process lives: it could
    /// not take us on, or did not answer in time.
    Refused(Error),
    /// It went (its process died, or its endpoint closed): operations to
    /// it fail, naming it.
    Gone,
}
/// Where the bytes of a send come from.
enum Body {
    /// The application's buffers (valid until the send completes).
    App(IoVec),
    /// A copy (`fi_inject`: the buffer is the caller's again on return).
    Copy(Vec<u8>),
}

/// A send not yet wholly handed to the transport.
struct Outgoing {
    /// Its key in `inflight`.
    id: u64,
    tag: Option<u64>,
    data: Option<u64>,
    body: Body,
    len: usize,
    /// Bytes handed over so far (the first cell counts from 0).
    off: usize,
    started: bool,
    /// `FI_DELIVERY_COMPLETE`: its first cell asks for an answer.
    ack: bool,
}

/// A send the transport holds cells of.
struct Inflight {
    tx: TxCtx,
    to: Addr,
    /// Cells queued in the transport, not yet in the peer's ring.
    queued: usize,
    /// Every cell has been handed over.
    handed: bool,
    failed: bool,
    /// What the send waits for from the receiver before it completes.
    wait: Option<Wait>,
    /// Chunks of our bounce area holding its bytes that the receiver has
    /// not given back: the send completes only once its bytes left them.
    chunks: u32,
}

/// A `DONE` a send waits for.
#[derive(Clone, Copy)]
enum Wait {
    /// After a rendezvous: the buffers and length, should the receiver
    /// ask for the bytes in cells.
    Rndv(IoVec, usize),
    /// After a message sent with `FI_DELIVERY_COMPLETE`: the receiver has
    /// taken it.
    Ack,
}

/// A rendezvous from a peer, not matched yet.
struct RndvIn {
    msg: MsgInfo,
    len: usize,
    ranges: Vec<RemoteIov>,
    /// The sender takes a `PUSH` (`proto::PUSH_OK`).
    push_ok: bool,
}

/// A matched rendezvous whose bytes are to be pulled (after the
/// transport's progress, which cannot be re-entered from its events).
struct Pull {
    from: Addr,
    token: u64,
    msg: MsgInfo,
    len: usize,
    ranges: Vec<RemoteIov>,
    recv: Posted,
    region: Region,
    keep: bool,
    discard: bool,
    /// The sender takes a `PUSH` (`proto::PUSH_OK`).
    push_ok: bool,
}

/// The path's own state: everything but the owner's core and receive
/// queue and the transport, so that progress can lend the transport out
/// while handling its events.
struct PathState<K> {
    /// Sends waiting for each peer, in order.
    out: HashMap<Addr, VecDeque<Outgoing>, KeyedU64>,
    out_count: usize,
    inflight: HashMap<u64, Inflight, KeyedU64>,
    next_id: u64,
    partial: Reassembly<K>,
    /// `fi_addr_t` to peer and back, valid for one AV generation.
    to_peer: HashMap<fi_addr_t, Addr, KeyedU64>,
    /// The last entry each way looked up, for the same AV generation.
    last_to: Option<(fi_addr_t, Addr)>,
    last_from: Option<(Addr, fi_addr_t)>,
    from_peer: HashMap<Addr, fi_addr_t, KeyedU64>,
    av_gen: u64,
    naming: Naming,
    /// `Naming::Sockaddr`: the listening address each connected peer
    /// told (checked against its id).
    names: HashMap<Addr, SocketAddr, KeyedU64>,
    scratch: Vec<u8>,
    /// Rendezvous waiting for a receive, by key.
    rndv_in: HashMap<Key, RndvIn, KeyedU64>,
    pulls: Vec<Pull>,
    /// Answers waiting for room: peer, operation (`DONE`), token,
    /// status.
    answers: VecDeque<(Addr, Op, u64, u64)>,
    /// Receives whose rendezvous is being copied by both sides, until
    /// the sender's chunks are done (`path/split.rs`), and our slots.
    splits: HashMap<Key, split::Split, KeyedU64>,
    slots: split::Slots,
    /// Rendezvous we shared out with their senders, and chunks we wrote
    /// for receivers (the close log says them).
    split_asked: u64,
    split_served: u64,
    /// `FI_SHM_DISABLE_CMA`: every byte travels in cells or chunks.
    no_cma: bool,
    /// Our bounce area's chunks, and what we owe peers of theirs.
    bounce: bounce::Lender,
    /// RMA and atomics, both sides.
    rma: rma::Rma,
    limits: Limits,
    /// Messages and one-sided operations posted, for the owner's logs.
    posted: u64,
    /// `Limits::fallback`: peers whose first handshake failed, and why,
    /// until [`Path::reached`] tells the owner.
    unreached: HashMap<Addr, Error, KeyedU64>,
    /// Senders the AV did not name when their messages arrived, so that a
    /// later insert names those messages ([`Path::before_post`]).
    unnamed: Unnamed<Addr>,
    /// The owner endpoint's key for collectives (`coll::key_of`; 0: not
    /// given), told when a peer is gone.
    owner: usize,
}

/// The path's methods' view: the owner's core and receive queue with our
/// state.
struct Side<'a, K> {
    core: &'a mut EpCore,
    rxq: &'a mut RxQueues<K>,
    p: &'a mut PathState<K>,
}

/// The same-host path of one endpoint.
pub struct Path<K> {
    tp: Transport,
    st: PathState<K>,
    /// A waiter asked for our descriptors: senders ring our doorbell
    /// until the next progress.
    armed: bool,
    /// The descriptors [`Path::watch_in`] put in its owner's set.
    watched: Vec<RawFd>,
}
/// The text form of an address: what `fi_getname` gives, without its NUL.
pub(crate) fn parse_addr(raw: &[u8]) -> Option<Addr> {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    std::str::from_utf8(&raw[..end]).ok()?.parse().ok()
}

/// The id an endpoint named `raw` listens under: ours parse as they are;
/// any other name (a node name given to `fi_getinfo`) maps to an id of its
/// own, the same in every process.
pub(crate) fn addr_for_name(raw: &[u8]) -> Addr {
    if let Some(a) = parse_addr(raw) {
        return a;
    }
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    let name = &raw[..end];
    // FNV-1a, twice with different seeds: stable across processes and
    // builds, which std's hasher does not promise.
    let fnv = |seed: u64| {
        name.iter().fold(seed, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&fnv(0xcbf2_9ce4_8422_2325).to_le_bytes());
    id[8..].copy_from_slice(&fnv(0x8422_2325_cbf2_9ce4).to_le_bytes());
    Addr(crate::attach::EndpointId(id))
}

fn gone(name: PeerName) -> Failure {
    Failure {
        peer_name: Some(name),
        ..Failure::cause(FI_ECONNRESET, GONE)
    }
}

fn failed_send(name: PeerName, e: Error) -> Failure {
    let cause = match (e, e.errno()) {
        (Error::TimedOut, _) => "no answer from the peer endpoint within the handshake bound",
        (_, FI_ECONNRESET) => GONE,
        (_, FI_ECONNREFUSED) => "the peer endpoint is not listening (it closed or exited)",
        (Error::MsgSize, _) => "message does not fit the peer's cells",
        _ => "could not reach the peer endpoint",
    };
    Failure {
        peer_name: Some(name),
        ..Failure::cause(e.errno(), cause)
    }
}

impl<K> PathState<K> {
    /// How errors name the peer `a`: by the address the application
    /// knows it by, when it told us (`Naming::Sockaddr`).
    fn label(&self, a: Addr) -> PeerName {
        match self.names.get(&a) {
            Some(sa) => PeerName::new(&sa.to_string()),
            None => PeerName::new(&a.to_string()),
        }
    }
}

impl<K: Token> Side<'_, K> {
    /// Fails send `id` with `f` (its error completion), once: false when
    /// it is not in flight or has failed already.
    fn fail(&mut self, id: u64, f: Failure) -> bool {
        let Some(s) = self.p.inflight.get_mut(&id) else {
            return false;
        };
        if s.failed {
            return false;
        }
        s.failed = true;
        let tx = s.tx;
        self.core.sinks.tx_err(&tx, f);
        true
    }

    /// Transmit operations under way: sends and one-sided operations
    /// share the transmit queue's size.
    fn tx_used(&self) -> usize {
        self.p.inflight.len() + self.p.rma.pending()
    }

    /// Brings the address caches in line with the AV.
    fn check_av(&mut self) {
        let g = self.core.av.as_ref().map_or(0, |av| av.generation());
        if g != self.p.av_gen {
            self.p.av_gen = g;
            self.p.to_peer.clear();
            self.p.from_peer.clear();
            self.p.last_to = None;
            self.p.last_from = None;
        }
    }

    /// The peer behind `dest`.
    fn peer_of(&mut self, dest: fi_addr_t) -> Result<Addr> {
        self.check_av();
        // The peer of the last send is the likeliest (a ping-pong, a
        // stream): no hashing then.
        if let Some((d, a)) = self.p.last_to {
            if d == dest {
                return Ok(a);
            }
        }
        if let Some(a) = self.p.to_peer.get(&dest) {
            self.p.last_to = Some((dest, *a));
            return Ok(*a);
        }
        let av = self.core.av.as_ref().ok_or(Error::NoAv)?;
        let e = av.lookup(dest).ok_or(Error::Inval)?;
        let a = parse_addr(&e.raw)
            .or_else(|| Some(addr_for_name(&e.raw)))
            .ok_or(Error::Inval)?;
        self.p.to_peer.insert(dest, a);
        Ok(a)
    }

    /// How the application names the peer `a` (`FI_ADDR_NOTAVAIL` when its
    /// AV does not hold it).
    fn source_of(&mut self, a: Addr) -> fi_addr_t {
        self.check_av();
        if let Some((p, s)) = self.p.last_from {
            if p == a {
                return s;
            }
        }
        if let Some(s) = self.p.from_peer.get(&a) {
            self.p.last_from = Some((a, *s));
            return *s;
        }
        let Some(av) = self.core.av.as_ref() else {
            return FI_ADDR_NOTAVAIL;
        };
        let s = match self.p.naming {
            Naming::ShmStr => {
                let text = a.to_string();
                let s = av.reverse_raw(&crate::provider::str_addr(&text));
                if s == FI_ADDR_NOTAVAIL {
                    av.reverse_raw(text.as_bytes())
                } else {
                    s
                }
            }
            Naming::Sockaddr => match self.p.names.get(&a) {
                Some(sa) => av.reverse(sa),
                None => FI_ADDR_NOTAVAIL,
            },
        };
        self.p.from_peer.insert(a, s);
        s
    }

    /// The number a message from `a` whose source is `src` keeps for
    /// [`Path::before_post`]: 0 when the AV named it.
    fn number_unnamed(&mut self, a: Addr, src: fi_addr_t) -> u32 {
        self.p.unnamed.number(a, src)
    }

    /// Handles one event of the transport.
    fn on_event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Received {
                from,
                meta,
                payload,
                cma_pid,
                areas,
            } => {
                self.p.scratch.resize(payload.len(), 0);
                let n = payload.copy_to(&mut self.p.scratch);
                let mut bytes = std::mem::take(&mut self.p.scratch);
                bytes.truncate(n);
                self.on_cell(from, cma_pid, &meta, &bytes, areas);
                self.p.scratch = bytes;
            }
            Event::Flushed { ctx, .. } => self.cell_left(ctx, None),
            Event::SendFailed { to, ctx, error } if rma::owns(ctx) => {
                self.rma_send_failed(ctx, to, error)
            }
            Event::SendFailed { to, ctx, error } => self.cell_left(ctx, Some((to, error))),
            Event::PeerGone { addr } => self.peer_gone(addr),
            Event::Unreached { addr, error } => {
                if self.p.limits.fallback {
                    self.p.unreached.insert(addr, error);
                }
            }
            Event::Connected { addr, name } => self.connected(addr, name),
            Event::Refused { why } => {
                oxifabric::prov_log!(PROV, FI_LOG_WARN, FI_LOG_EP_DATA, "refused: {why}");
            }
        }
    }

    /// A peer's handshake finished; `name` is what it said its listening
    /// address is (`Naming::Sockaddr`), believed only when its id is the
    /// one derived from it.
    fn connected(&mut self, addr: Addr, name: &[u8]) {
        if self.p.naming != Naming::Sockaddr {
            return;
        }
        let sa = std::str::from_utf8(name)
            .ok()
            .and_then(|s| s.parse::<SocketAddr>().ok())
            .filter(|sa| id_for_sockaddr(sa) == addr.0);
        match sa {
            Some(sa) => {
                self.p.names.insert(addr, sa);
                // It may have been looked up (and not found) before.
                self.p.from_peer.remove(&addr);
                self.p.last_from = None;
            }
            None => self.refuse(addr, "a listening address that is not its own"),
        }
    }

    /// A cell of a send the transport had queued went out (or failed).
    fn cell_left(&mut self, id: u64, failure: Option<(Addr, Error)>) {
        let Some(f) = self.p.inflight.get_mut(&id) else {
            return;
        };
        f.queued = f.queued.saturating_sub(1);
        if let Some((to, e)) = failure {
            // A chunk whose cell never left will not come back.
            self.chunks_lost(to, Some(id));
            if self.fail(id, failed_send(self.p.label(to), e)) {
                // What is left of it will not go either.
                self.drop_outgoing(id);
            }
        }
        self.settle(id);
    }

    /// Completes send `id` once every cell is out.
    fn settle(&mut self, id: u64) {
        let Some(f) = self.p.inflight.get(&id) else {
            return;
        };
        let waits = (f.wait.is_some() || f.chunks > 0) && !f.failed;
        if f.queued > 0 || !(f.handed || f.failed) || waits {
            return;
        }
        if let Some(f) = self.p.inflight.remove(&id) {
            if !f.failed {
                self.core.sinks.tx_done(&f.tx);
            }
        }
    }

    /// Forgets the queued rest of send `id`.
    fn drop_outgoing(&mut self, id: u64) {
        let Some(to) = self.p.inflight.get(&id).map(|f| f.to) else {
            return;
        };
        if let Some(q) = self.p.out.get_mut(&to) {
            let before = q.len();
            q.retain(|o| o.id != id);
            self.p.out_count -= before - q.len();
        }
    }

    /// The peer at `addr` is gone: what waits for it fails, what it was
    /// sending us is dropped (its receives fail).
    fn peer_gone(&mut self, addr: Addr) {
        if self.rma_hold_gone(addr) {
            return;
        }
        oxifabric::prov_log!(PROV, FI_LOG_INFO, FI_LOG_EP_DATA, "peer {addr} is gone");
        self.chunks_lost(addr, None);
        if let Some(q) = self.p.out.remove(&addr) {
            self.p.out_count -= q.len();
            for o in q {
                self.fail(o.id, gone(self.p.label(addr)));
                self.settle(o.id);
            }
        }
        let waiting: Vec<u64> = self
            .p
            .inflight
            .iter()
            .filter(|(_, f)| f.to == addr && f.wait.is_some() && !f.failed)
            .map(|(id, _)| *id)
            .collect();
        for id in waiting {
            self.fail(id, gone(self.p.label(addr)));
            self.settle(id);
        }
        self.p.rndv_in.retain(|k, _| k.0 != addr);
        for p in std::mem::take(&mut self.p.pulls) {
            if p.from == addr {
                self.core
                    .sinks
                    .rx_err(&p.recv, gone(self.p.label(addr)), 0, p.len);
            } else {
                self.p.pulls.push(p);
            }
        }
        self.p.answers.retain(|a| a.0 != addr);
        self.splits_gone(addr);
        self.p.partial.drop_where(
            self.rxq,
            |k| k.as_shm().is_some_and(|k| k.0 == addr),
            gone(self.p.label(addr)),
            &self.core.sinks,
        );
        self.rma_peer_gone(addr);
        // Collectives waiting for its message: everything it published
        // was handed over before this event.
        let src = self.source_of(addr);
        oxifabric::service::coll::peer_gone(self.p.owner, src, gone(self.p.label(addr)));
        self.p.from_peer.remove(&addr);
        self.p.last_from = None;
    }

    /// One cell from `from`.
    fn on_cell(
        &mut self,
        from: Addr,
        cma_pid: Option<libc::pid_t>,
        meta: &Meta,
        bytes: &[u8],
        areas: Areas<'_>,
    ) {
        if self.rma_hold(from, meta, bytes) {
            return;
        }
        let tag = (meta.flags & proto::HAS_TAG != 0).then_some(meta.tag);
        let data = (meta.flags & proto::HAS_DATA != 0).then_some(meta.data);
        let op = Op::of(meta.flags);
        let kind = match op {
            Some(Op::Rndv | Op::Push) => Kind::Rendezvous,
            Some(Op::Done | Op::Chunk | Op::Free) => Kind::Control,
            _ => Kind::Inline,
        };
        if meta.kind != kind {
            return self.refuse(from, "a cell whose kind does not fit its operation");
        }
        match op {
            Some(Op::Rndv) => {
                let Some((len, ranges)) = proto::decode_rndv(bytes) else {
                    return self.refuse(from, "a rendezvous that does not add up");
                };
                let key = (from, meta.token);
                if self.in_use(key) {
                    return self.refuse(from, "a message number in use");
                }
                let msg = MsgInfo {
                    src: self.source_of(from),
                    tag,
                    data,
                };
                let push_ok = meta.flags & proto::PUSH_OK != 0;
                match self.rxq.place_last(msg.src, tag, len) {
                    Placement::Posted { recv, region, keep } => {
                        let p = Pull {
                            from,
                            token: meta.token,
                            msg,
                            len,
                            ranges,
                            recv,
                            region,
                            keep,
                            discard: false,
                            push_ok,
                        };
                        // Pulled now, so its completion comes in order
                        // with the messages around it, unless both sides
                        // are to copy it (that needs the transport).
                        if cma_pid.is_some() && self.split_wanted(&p) {
                            self.p.pulls.push(p);
                        } else {
                            self.pull(p, cma_pid);
                        }
                    }
                    Placement::Unexpected => {
                        let n = self.number_unnamed(from, msg.src);
                        self.rxq.push_deferred_from(msg, n, K::shm(key), len);
                        let r = RndvIn {
                            msg,
                            len,
                            ranges,
                            push_ok,
                        };
                        self.p.rndv_in.insert(key, r);
                    }
                }
            }
            Some(Op::Done) => self.rndv_done(from, meta.token, meta.data),
            Some(Op::Eager) => {
                let msg = MsgInfo {
                    src: self.source_of(from),
                    tag,
                    data,
                };
                let n = self.number_unnamed(from, msg.src);
                self.rxq.deliver_from(msg, n, bytes, &self.core.sinks);
                self.ack(from, meta);
            }
            Some(Op::First) => {
                let Some(len) = proto::first_len(bytes).and_then(|l| usize::try_from(l).ok())
                else {
                    return self.refuse(from, "a first cell without its length");
                };
                let body = &bytes[proto::FIRST_PREFIX..];
                if body.len() > len {
                    return self.refuse(from, "a first cell longer than its message");
                }
                let key = (from, meta.token);
                if self.in_use(key) {
                    return self.refuse(from, "a message number in use");
                }
                let msg = MsgInfo {
                    src: self.source_of(from),
                    tag,
                    data,
                };
                let n = self.number_unnamed(from, msg.src);
                self.p
                    .partial
                    .start_from(self.rxq, K::shm(key), msg, n, len);
                self.append(from, key, body);
                self.ack(from, meta);
            }
            Some(Op::More) => self.append(from, (from, meta.token), bytes),
            Some(Op::Chunk) => self.chunk_in(from, meta, areas),
            Some(Op::Free) => self.chunks_back(from, meta.data),
            Some(Op::Push) => self.push_in(from, cma_pid, meta, bytes, areas),
            Some(op @ (Op::Write | Op::Read | Op::Atomic | Op::Answer)) => {
                self.rma_cell(op, from, meta, bytes, areas)
            }
            None => self.refuse(from, "an operation this endpoint does not know"),
        }
    }

    /// Whether message `key` is under way in any form: in cells, a
    /// rendezvous waiting for its receive, about to be pulled, or copied
    /// by both sides. A peer that starts another message under its
    /// number is refused: both would be found by one key (a receive would
    /// take the other's message, a split would lose its receive).
    fn in_use(&self, key: Key) -> bool {
        self.p.partial.contains(&K::shm(key))
            || self.p.rndv_in.contains_key(&key)
            || self.p.splits.contains_key(&key)
            || self.p.pulls.iter().any(|p| (p.from, p.token) == key)
    }

    /// Answers a cell that asked for it (`FI_DELIVERY_COMPLETE`): the
    /// message is taken.
    fn ack(&mut self, from: Addr, meta: &Meta) {
        if meta.flags & proto::ACK != 0 {
            self.p.answers.push_back((from, Op::Done, meta.token, 0));
        }
    }

    /// The receiver's answer to our rendezvous `id`.
    fn rndv_done(&mut self, from: Addr, id: u64, status: u64) {
        let Some(f) = self.p.inflight.get_mut(&id) else {
            return self.refuse(from, "an answer to no rendezvous of ours");
        };
        let Some(wait) = f.wait else {
            return self.refuse(from, "an answer to no rendezvous of ours");
        };
        if f.to != from {
            return self.refuse(from, "an answer to another peer's rendezvous");
        }
        f.wait = None;
        match (status, wait) {
            (0, _) => {}
            (proto::FALLBACK, Wait::Rndv(iov, len)) => {
                // The bytes go in cells after all, ahead of anything
                // queued for that peer (their matching is done).
                f.handed = false;
                let tag = None;
                self.p.out.entry(from).or_default().push_front(Outgoing {
                    id,
                    tag,
                    data: None,
                    body: Body::App(iov),
                    len,
                    off: 0,
                    started: true,
                    ack: false,
                });
                self.p.out_count += 1;
                return;
            }
            (e, _) => {
                let err = c_int::try_from(e).unwrap_or(FI_EIO);
                let f = Failure {
                    peer_name: Some(self.p.label(from)),
                    ..Failure::cause(err, "the receiver could not take the message")
                };
                self.fail(id, f);
            }
        }
        self.settle(id);
    }

    /// A receive matched a deferred message: a rendezvous is pulled, a
    /// message in cells goes on into the receive.
    fn matched(&mut self, m: DeferredMatch<K>) {
        let Some(key) = m.from.token.as_shm() else {
            return;
        };
        let Some(r) = self.p.rndv_in.remove(&key) else {
            return self.p.partial.matched(m, &self.core.sinks);
        };
        self.p.pulls.push(Pull {
            from: key.0,
            token: key.1,
            // Its sender may have been named since it arrived.
            msg: MsgInfo {
                src: m.src,
                ..r.msg
            },
            len: r.len,
            ranges: r.ranges,
            recv: m.recv,
            region: m.region,
            keep: m.keep,
            discard: m.discard,
            push_ok: r.push_ok,
        });
    }

    /// Pulls the bytes of a matched rendezvous into its receive (from
    /// the process `cma_pid`, if we may read it) and queues the answer.
    fn pull(&mut self, p: Pull, cma_pid: Option<libc::pid_t>) {
        let status = match (p.discard, cma_pid.filter(|_| !self.p.no_cma)) {
            (true, _) => 0,
            (false, None) => {
                // We may not read its memory: it sends the bytes in cells,
                // straight into this receive.
                self.p.partial.start_into(
                    K::shm((p.from, p.token)),
                    p.msg,
                    p.len,
                    p.recv,
                    p.region,
                    p.keep,
                );
                proto::FALLBACK
            }
            (false, Some(pid)) => {
                let n = p.len.min(p.region.total_len());
                let mut left = n;
                let mut ranges = Vec::with_capacity(p.ranges.len());
                for r in &p.ranges {
                    if left == 0 {
                        break;
                    }
                    let l = r.len.min(left);
                    ranges.push(RemoteIov {
                        addr: r.addr,
                        len: l,
                    });
                    left -= l;
                }
                let local = p.region.window(0, n);
                match crate::cma::read_into(pid, &local, &ranges) {
                    Ok(_) => {
                        complete_into(
                            &p.recv,
                            &p.region,
                            n,
                            p.len - n,
                            p.msg,
                            &self.core.sinks,
                            !p.keep,
                        );
                        0
                    }
                    Err(e) => {
                        let f = Failure {
                            peer_name: Some(self.p.label(p.from)),
                            ..Failure::cause(e.errno(), "could not read the sender's buffer")
                        };
                        self.core.sinks.rx_err(&p.recv, f, 0, p.len);
                        u64::try_from(e.errno()).unwrap_or(u64::from(FI_EIO as u32))
                    }
                }
            }
        };
        self.p
            .answers
            .push_back((p.from, Op::Done, p.token, status));
    }

    /// Pulls the bytes of every matched rendezvous into its receive and
    /// answers the senders.
    fn pull_all(&mut self, tp: &mut Transport) {
        for p in std::mem::take(&mut self.p.pulls) {
            let pid = if tp.cma_ok(p.from) {
                tp.peer_pid(p.from)
            } else {
                None
            };
            match pid {
                Some(pid) if self.split_wanted(&p) => self.split_pull(tp, p, pid),
                _ => self.pull(p, pid),
            }
        }
        self.flush_answers(tp);
    }

    /// Sends the answers waiting for room, in order, while there is room.
    fn flush_answers(&mut self, tp: &mut Transport) {
        while let Some(&(to, op, token, status)) = self.p.answers.front() {
            let meta = Meta {
                kind: Kind::Control,
                sender: 0,
                flags: op.bits(),
                tag: 0,
                data: status,
                token,
            };
            match tp.send(to, meta, &[], NO_SEND) {
                Err(Error::Again) => break,
                // Sent, queued, or the peer is gone: done with it.
                _ => {
                    self.p.answers.pop_front();
                }
            }
        }
    }

    fn refuse(&self, from: Addr, why: &str) {
        oxifabric::prov_log!(
            PROV,
            FI_LOG_WARN,
            FI_LOG_EP_DATA,
            "cell from {from} refused: {why}"
        );
    }

    /// The next bytes of message `key` from `from`.
    fn append(&mut self, from: Addr, key: Key, body: &[u8]) {
        match self.p.partial.append(K::shm(key), body, &self.core.sinks) {
            Ok(()) => {}
            Err(Refused::Unknown) => self.refuse(from, "a cell of a message never started"),
            // The message is cut off where its sender said it ends.
            Err(Refused::TooLong) => self.refuse(from, "a message longer than announced"),
        }
    }

    /// Hands waiting sends to the transport, in order per peer, while it
    /// takes them.
    fn pump(&mut self, tp: &mut Transport) {
        if self.p.out_count == 0 {
            return;
        }
        let cap = tp.payload_capacity();
        // Taken out while it is walked (nothing below touches it), so the
        // walk needs no list of peers and no lookup per cell.
        let mut out = std::mem::take(&mut self.p.out);
        for (&to, q) in out.iter_mut() {
            while let Some(o) = q.front_mut() {
                let id = o.id;
                let pushed = match self.push_chunk(tp, to, o, cap) {
                    Some(sent) => sent.map(|s| (s, false, false)),
                    None => push_cell(tp, to, o, cap, !self.p.no_cma),
                };
                let done = match pushed {
                    Ok((sent, rndv, ack)) => {
                        let whole = o.off >= o.len;
                        if let Some(f) = self.p.inflight.get_mut(&id) {
                            if sent == Sent::Queued {
                                f.queued += 1;
                            }
                            f.handed = whole;
                            if let (true, Body::App(iov)) = (rndv, &o.body) {
                                f.wait = Some(Wait::Rndv(*iov, o.len));
                            } else if ack {
                                f.wait = Some(Wait::Ack);
                            }
                        }
                        whole
                    }
                    Err(Error::Again) => break,
                    Err(e) => {
                        self.fail(id, failed_send(self.p.label(to), e));
                        true
                    }
                };
                if done {
                    q.pop_front();
                    self.p.out_count -= 1;
                    self.settle(id);
                }
            }
        }
        out.retain(|_, q| !q.is_empty());
        self.p.out = out;
    }
}

/// The bytes `[off, off + n)` of a send's body, as slices.
fn gather<'a>(body: &'a Body, off: usize, n: usize, parts: &mut [&'a [u8]; 9]) -> usize {
    match body {
        Body::Copy(v) => {
            parts[0] = &v[off..off + n];
            1
        }
        Body::App(iov) => {
            // The application's buffers, valid until this send completes.
            let (mut skip, mut left, mut k) = (off, n, 0);
            for b in iov.iter() {
                let s = b.as_slice();
                if skip >= s.len() {
                    skip -= s.len();
                    continue;
                }
                if left == 0 || k == parts.len() {
                    break;
                }
                let take = (s.len() - skip).min(left);
                parts[k] = &s[skip..skip + take];
                k += 1;
                left -= take;
                skip = 0;
            }
            k
        }
    }
}

/// Hands the next cell of `o` to the transport.
/// `RNDV` when it is a rendezvous (the bytes stay in the application's
/// buffers until the receiver answers).
fn push_cell(
    tp: &mut Transport,
    to: Addr,
    o: &mut Outgoing,
    cap: usize,
    rndv: bool,
) -> Result<(Sent, bool, bool)> {
    if let (true, false, true, Body::App(iov)) = (rndv, o.started, o.len > cap, &o.body) {
        // We may write into the receiver too: it may ask us to copy part.
        // Offered too while the handshake that tells is under way (a
        // first large send): should we not reach it after all, we claim
        // none of its chunks and the receiver copies them all.
        let push = if tp.cma_ok(to) || tp.reaching(to) != Some(true) {
            proto::PUSH_OK
        } else {
            0
        };
        let ranges: Vec<(usize, usize)> = iov.iter().map(|b| (b.addr(), b.len())).collect();
        let mut buf = [0u8; proto::RNDV_MAX];
        if let Some(n) = proto::encode_rndv(&ranges, &mut buf) {
            let meta = Meta {
                kind: Kind::Rendezvous,
                sender: 0,
                flags: proto::flags(Op::Rndv, o.tag, o.data) | push,
                tag: o.tag.unwrap_or(0),
                data: o.data.unwrap_or(0),
                token: o.id,
            };
            let sent = tp.send(to, meta, &[&buf[..n]], o.id)?;
            o.started = true;
            o.off = o.len;
            return Ok((sent, true, false));
        }
    }
    let mut parts: [&[u8]; 9] = [&[]; 9];
    let (op, n, prefix) = if !o.started && o.len <= cap {
        (Op::Eager, o.len, None)
    } else if !o.started {
        let n = (cap - proto::FIRST_PREFIX).min(o.len);
        (Op::First, n, Some((o.len as u64).to_le_bytes()))
    } else {
        (Op::More, cap.min(o.len - o.off), None)
    };
    let ack = o.ack && op != Op::More;
    let meta = Meta {
        kind: Kind::Inline,
        sender: 0,
        flags: proto::flags(op, o.tag, o.data) | if ack { proto::ACK } else { 0 },
        tag: o.tag.unwrap_or(0),
        data: o.data.unwrap_or(0),
        token: o.id,
    };
    let sent = match &prefix {
        Some(p) => {
            let mut k = 1;
            let mut rest: [&[u8]; 9] = [&[]; 9];
            let m = gather(&o.body, o.off, n, &mut rest);
            parts[0] = p;
            for r in rest.iter().take(m.min(8)) {
                parts[k] = r;
                k += 1;
            }
            tp.send(to, meta, &parts[..k], o.id)?
        }
        None => {
            let k = gather(&o.body, o.off, n, &mut parts);
            tp.send(to, meta, &parts[..k], o.id)?
        }
    };
    o.started = true;
    o.off += n;
    Ok((sent, false, ack))
}

impl<K: Token> Side<'_, K> {
    /// Starts a send: straight into the peer's ring when it fits a cell
    /// and nothing waits for that peer, else queued behind what does.
    /// `Again` when the transmit queue, the CQ or the peer's ring is full.
    fn start_send(
        &mut self,
        tp: &mut Transport,
        op: &SendOp<'_>,
        tx: TxCtx,
        len: usize,
        to: Addr,
    ) -> Result<()> {
        if self.tx_used() >= self.p.limits.queue_size || !self.core.sinks.tx_room(&tx) {
            return Err(Error::Again);
        }
        if self.rma_unsent_to(to) {
            return Err(Error::Again);
        }
        let id = self.p.next_id;
        let cap = tp.payload_capacity();
        let idle = self.p.out_count == 0 || self.p.out.get(&to).is_none_or(VecDeque::is_empty);
        if idle && len <= cap {
            // One buffer (every fi_send-style call) is passed as it is;
            // only an iovec is gathered into a list of slices.
            let one: [&[u8]; 1];
            let mut many: [&[u8]; 8];
            let parts: &[&[u8]] = match op.iov {
                [b] => {
                    one = [b.as_slice()];
                    &one
                }
                iov => {
                    many = [&[]; 8];
                    for (p, b) in many.iter_mut().zip(iov) {
                        *p = b.as_slice();
                    }
                    &many[..iov.len().min(8)]
                }
            };
            let ack = op.flags & FI_DELIVERY_COMPLETE != 0;
            let meta = Meta {
                kind: Kind::Inline,
                sender: 0,
                flags: proto::flags(Op::Eager, op.tag, op.data) | if ack { proto::ACK } else { 0 },
                tag: op.tag.unwrap_or(0),
                data: op.data.unwrap_or(0),
                token: id,
            };
            let sent = tp.send(to, meta, parts, id);
            if !matches!(sent, Err(Error::Again)) {
                self.p.next_id = id.wrapping_add(1);
            }
            let wait = ack.then_some(Wait::Ack);
            match sent {
                Ok(Sent::Delivered) if !ack => self.core.sinks.tx_done(&tx),
                Ok(sent) => {
                    self.p.inflight.insert(
                        id,
                        Inflight {
                            tx,
                            to,
                            queued: usize::from(sent == Sent::Queued),
                            handed: true,
                            failed: false,
                            wait,
                            chunks: 0,
                        },
                    );
                }
                Err(Error::Again) => return Err(Error::Again),
                Err(e) => self
                    .core
                    .sinks
                    .tx_err(&tx, failed_send(self.p.label(to), e)),
            }
            return Ok(());
        }
        self.p.next_id = id.wrapping_add(1);
        let copy =
            op.flags & FI_INJECT != 0 || op.internal & oxifabric::ops::internal::NO_COMPLETION != 0;
        let body = if copy {
            let mut v = Vec::with_capacity(len);
            for b in op.iov {
                v.extend_from_slice(b.as_slice());
            }
            Body::Copy(v)
        } else {
            Body::App(IoVec::from_slice(op.iov).ok_or(Error::Inval)?)
        };
        self.p.inflight.insert(
            id,
            Inflight {
                tx,
                to,
                queued: 0,
                handed: false,
                failed: false,
                wait: None,
                chunks: 0,
            },
        );
        self.p.out.entry(to).or_default().push_back(Outgoing {
            id,
            tag: op.tag,
            data: op.data,
            body,
            len,
            off: 0,
            started: false,
            ack: op.flags & FI_DELIVERY_COMPLETE != 0,
        });
        self.p.out_count += 1;
        self.pump(tp);
        Ok(())
    }
}

impl<K> Drop for Path<K> {
    /// Says how the path's bytes went (tests read this at info level).
    fn drop(&mut self) {
        oxifabric::prov_log!(
            PROV,
            FI_LOG_INFO,
            FI_LOG_EP_CTRL,
            "same-host path {} closed: {} messages and one-sided operations posted, {} chunks sent through the bounce area, {} rendezvous copied by both sides, {} chunks written for receivers",
            self.tp.addr(),
            self.st.posted,
            self.st.bounce.sent,
            self.st.split_asked,
            self.st.split_served
        );
    }
}

impl<K: Token> Path<K> {
    /// A path listening under `id`, with the owner's registrations `mr`
    /// (the keys its one-sided operations are checked against), its
    /// peers named as `naming` says; `name` is what our handshakes tell
    /// peers our listening address is (empty: nothing).
    pub fn new(
        id: EndpointId,
        mr: Arc<MrTable>,
        naming: Naming,
        name: &[u8],
        limits: Limits,
    ) -> Result<Path<K>> {
        let cfg = Config {
            cells: CELLS,
            cell_size: CELL_SIZE,
            handshake_timeout: limits.handshake,
            ids_reused: naming == Naming::Sockaddr,
            refuse_handshakes: limits.fallback
                && std::env::var_os("OXI_SHM_REFUSE_HANDSHAKES").is_some_and(|v| v == "1"),
            bounce_chunks: BOUNCE_CHUNKS,
            bounce_size: BOUNCE_SIZE,
            split_slots: split::SLOTS,
            ..Config::default()
        };
        let mut tp = Transport::with_id(id, cfg)?;
        tp.set_name(name)?;
        let area = tp.bounce();
        Ok(Path {
            tp,
            st: PathState {
                out: HashMap::default(),
                out_count: 0,
                inflight: HashMap::default(),
                next_id: 0,
                partial: Reassembly::default(),
                to_peer: HashMap::default(),
                last_to: None,
                last_from: None,
                from_peer: HashMap::default(),
                av_gen: u64::MAX,
                naming,
                names: HashMap::default(),
                scratch: Vec::new(),
                rndv_in: HashMap::default(),
                pulls: Vec::new(),
                answers: VecDeque::new(),
                splits: HashMap::default(),
                slots: split::Slots::default(),
                split_asked: 0,
                split_served: 0,
                no_cma: crate::provider::cma_disabled(),
                bounce: bounce::Lender::new(area),
                rma: rma::Rma::new(mr),
                limits,
                posted: 0,
                unreached: HashMap::default(),
                unnamed: Unnamed::default(),
                owner: 0,
            },
            armed: false,
            watched: Vec::new(),
        })
    }

    fn side<'a>(h: &'a mut Host<'_, K>, st: &'a mut PathState<K>) -> Side<'a, K> {
        Side {
            core: &mut *h.core,
            rxq: &mut *h.rxq,
            p: st,
        }
    }

    /// Our address.
    pub fn addr(&self) -> Addr {
        self.tp.addr()
    }

    /// A look at our ring from outside the owner's lock ([`Quick`]).
    pub fn peek(&self) -> Peek {
        self.tp.peek()
    }

    /// Whether only input (in our ring) and timers can give progress
    /// work: nothing queued, pulled, answered, given back, shared out
    /// (a sender's chunks are seen done only by looking), held or
    /// connecting, and
    /// no waiter armed us.
    pub fn quiet(&self) -> bool {
        let s = &self.st;
        !self.armed
            && s.out_count == 0
            && s.pulls.is_empty()
            && s.answers.is_empty()
            && !s.bounce.owes()
            && s.splits.is_empty()
            && !s.rma.busy()
            && self.tp.quiet()
    }

    /// Transmit operations under way (sends and one-sided ones).
    pub fn tx_used(&self) -> usize {
        self.st.inflight.len() + self.st.rma.pending()
    }

    /// Messages and one-sided operations posted so far.
    pub fn posted(&self) -> u64 {
        self.st.posted
    }

    /// Whether the endpoint `to` listens here now, starting the handshake
    /// with it if so (`Naming::Sockaddr` owners decide by this which path
    /// a peer takes). `Err` when reaching it failed for another reason
    /// than its absence (another user's endpoint, no descriptors left).
    /// `name`: the address the application knows it by.
    pub fn reach(&mut self, to: Addr, name: Option<SocketAddr>) -> Result<bool> {
        if let Some(sa) = name {
            // Errors name it so even before its handshake says so.
            self.st.names.insert(to, sa);
        }
        self.tp.reach(to)
    }

    /// How far reaching `to` got (after [`Path::reach`] said it listens).
    pub fn reached(&mut self, to: Addr) -> Reached {
        match self.tp.reaching(to) {
            Some(true) => Reached::Up,
            Some(false) => Reached::Pending,
            None => match self.st.unreached.remove(&to) {
                Some(e) => Reached::Refused(e),
                None => Reached::Gone,
            },
        }
    }

    /// The peer the AV entry `dest` names (`Naming::ShmStr`).
    pub fn peer_of(&mut self, h: &mut Host<'_, K>, dest: fi_addr_t) -> Result<Addr> {
        Self::side(h, &mut self.st).peer_of(dest)
    }

    /// Does everything that is ready, without blocking.
    pub fn progress(&mut self, h: &mut Host<'_, K>) {
        let Path { tp, st, armed, .. } = self;
        if *armed {
            // Whoever slept is awake (or polls): senders stop ringing
            // until the next wait arms us again.
            let _ = tp.after_wait();
            *armed = false;
        }
        // Messages nobody asked for yet are held within the receive
        // queue's bound: while a ring's worth more might not fit, they
        // wait in the ring (its senders wait for room).
        tp.set_receiving(h.rxq.unexpected_room(st.partial.held() + RING_HELD));
        let mut side = Self::side(h, st);
        side.pump(tp);
        tp.progress(&mut |ev| side.on_event(ev));
        if !side.p.pulls.is_empty() || !side.p.answers.is_empty() {
            side.pull_all(tp);
        }
        if side.p.bounce.owes() {
            side.give_back(tp);
        }
        if !side.p.splits.is_empty() {
            side.splits_check(tp);
        }
        side.pump(tp);
        side.rma_pump(tp);
    }

    /// Senders ring our doorbell from now on (until the next progress);
    /// if something is already there (or a timer is due soon), the
    /// doorbell is made readable so the waiter comes straight back.
    pub fn arm(&mut self) {
        let tp = &mut self.tp;
        let ready = tp.prepare_wait().unwrap_or(true);
        // Timers (connection retries, handshake deadlines) have no
        // descriptor: one that is due makes the waiter come back now; a
        // later one waits for the engine's own periodic wake-up (100 ms).
        let soon = tp
            .next_timer()
            .is_some_and(|t| t <= Instant::now() + Duration::from_millis(1));
        if ready || soon {
            tp.wake();
        }
        self.armed = true;
    }

    /// Makes `poll` watch exactly our descriptors, under `token`.
    pub fn watch_in(&mut self, poll: &Epoll, token: u64) {
        let now: Vec<RawFd> = self
            .tp
            .wait_fds()
            .iter()
            .map(|(f, _)| f.as_raw_fd())
            .collect();
        if now == self.watched {
            return;
        }
        for fd in &self.watched {
            if !now.contains(fd) {
                poll.remove(*fd);
            }
        }
        for fd in &now {
            // Already there is fine; a closed descriptor left the set by
            // itself, so a reused number is added afresh.
            let _ = poll.add(*fd, token, false);
        }
        self.watched = now;
    }

    /// Takes our descriptors out of `poll` (before the path goes).
    pub fn unwatch(&mut self, poll: &Epoll) {
        for fd in self.watched.drain(..) {
            poll.remove(fd);
        }
    }

    /// Sends `op` (its length `len`, checked by the owner) to `to`.
    /// `Again` when the transmit queue, the CQ or the peer's ring is
    /// full (after a round of progress, so that room comes).
    pub fn send(
        &mut self,
        h: &mut Host<'_, K>,
        op: &SendOp<'_>,
        len: usize,
        to: Addr,
    ) -> Result<()> {
        let tx = TxCtx::of(op);
        let r = Self::side(h, &mut self.st).start_send(&mut self.tp, op, tx, len, to);
        match r {
            Err(Error::Again) => {
                self.progress(h);
                Err(Error::Again)
            }
            Ok(()) => {
                self.st.posted += 1;
                Ok(())
            }
            r => r,
        }
    }

    /// A receive matched our deferred message `m` (from the owner's
    /// receive queue): a rendezvous is pulled, a message in cells goes on
    /// into the receive.
    pub fn matched(&mut self, h: &mut Host<'_, K>, m: DeferredMatch<K>) {
        Self::side(h, &mut self.st).matched(m);
    }

    /// The owner endpoint's key for collectives (`coll::key_of` of it): a
    /// peer that is gone is reported there (`coll::peer_gone`).
    pub fn set_owner(&mut self, key: usize) {
        self.st.owner = key;
    }

    /// Before a receive is posted: if the AV changed since messages from
    /// senders it did not name arrived, those senders are looked up again
    /// and their messages take the addresses found
    /// (`RxQueues::name_sources`), so a directed receive finds them.
    pub fn before_post(&mut self, h: &mut Host<'_, K>) {
        let av = h.core.av.as_ref();
        let Some(peers) = self
            .st
            .unnamed
            .to_name(|| av.map_or(0, |av| av.generation()))
        else {
            return;
        };
        let mut s = Self::side(h, &mut self.st);
        let names: Vec<fi_addr_t> = peers.iter().map(|a| s.source_of(*a)).collect();
        s.p.unnamed.apply(s.rxq, &names);
    }

    /// After receives were posted: pulls what they matched.
    pub fn after_post(&mut self, h: &mut Host<'_, K>) {
        if !self.st.pulls.is_empty() {
            Self::side(h, &mut self.st).pull_all(&mut self.tp);
        }
    }
}

/// Progress that costs next to nothing while there is nothing to do.
///
/// A queue looks at every endpoint that polls a ring on every read (its
/// probe, `Progress::probe`, is this); with hundreds of endpoints on one
/// queue, each idle one's
/// full pass (its lock, its transport's bookkeeping) made most of the
/// read's cost. An owner keeps one of these outside its lock: after a pass
/// that left nothing under way it says [`Quick::busy`]`(false)`, any call
/// that may queue work says `busy(true)`, and a progress call that finds
/// it not busy and its ring empty ([`Peek`]) returns at once, except one
/// call in [`QUICK_FULL_EVERY`], which runs the timers (handshakes coming
/// in, liveness, the owner's other sockets).
#[derive(Default)]
pub struct Quick {
    peek: std::sync::OnceLock<Peek>,
    busy: AtomicBool,
    calls: AtomicU32,
}

/// One progress call in this many runs a full pass while idle.
pub const QUICK_FULL_EVERY: u32 = 32;

impl Quick {
    /// The ring to look at (once the path exists; before, never skip).
    pub fn watch(&self, peek: Peek) {
        let _ = self.peek.set(peek);
        self.busy(true);
    }

    /// Whether work may be under way (relaxed: a pass that misses it
    /// runs within [`QUICK_FULL_EVERY`] calls).
    pub fn busy(&self, b: bool) {
        if self.busy.load(Relaxed) != b {
            self.busy.store(b, Relaxed);
        }
    }

    /// Whether this progress call may return at once.
    pub fn skip(&self) -> bool {
        !self.look()
    }

    /// Whether a progress call must run: busy, input in the ring, or the
    /// idle call in [`QUICK_FULL_EVERY`].
    fn look(&self) -> bool {
        // No ring yet (or none at all, the owner's path off): always run.
        let Some(p) = self.peek.get() else {
            return true;
        };
        if self.busy.load(Relaxed) || p.maybe_ready() {
            return true;
        }
        // A lost count (two threads at once) only moves the full pass.
        let n = self.calls.load(Relaxed).wrapping_add(1);
        self.calls.store(n, Relaxed);
        n.is_multiple_of(QUICK_FULL_EVERY)
    }
}

/// A queue's look before it drives the owner
/// ([`oxifabric::service::progress::Progress::probe`]): the owner's
/// progress call then looks again, so a full pass the count grants here
/// is passed on as busy (the pass sets it back).
impl Ready for Quick {
    fn ready(&self) -> bool {
        let go = self.look();
        if go {
            self.busy(true);
        }
        go
    }
}

/// The length of a send, checked against the entry's inject size.
pub fn check_send(op: &SendOp<'_>, inject_size: usize, caps: u64) -> Result<usize> {
    let len = iov_len(op.iov);
    if op.flags & FI_INJECT != 0 && len > inject_size {
        return Err(Error::MsgSize);
    }
    if op.tag.is_some() && caps & FI_TAGGED == 0 {
        return Err(Error::NoSys);
    }
    Ok(len)
}
