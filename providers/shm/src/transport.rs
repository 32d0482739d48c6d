//! The per-endpoint transport object a provider endpoint owns: its
//! receive ring, doorbell and listener, its address, and its peers.
//!
//! Nothing here blocks its caller. [`Transport::send`] to a peer not yet
//! connected queues the message (bounded; full is `Again`) and starts a
//! handshake that [`Transport::progress`] drives one non-blocking step at
//! a time: retrying while the peer's listener does not exist yet, failing
//! the queued messages (as [`Event::SendFailed`] naming the peer) when it
//! does not finish within [`Config::handshake_timeout`]. Progress also
//! accepts peers, flushes queues as the peers' rings make room, hands
//! over what arrived and watches every connected peer's liveness: a dead
//! or closed peer is reported once ([`Event::PeerGone`], after every
//! message it published before), what was queued
//! for it fails, later sends to it fail at once, and the cells it claimed
//! in our ring and never published are taken back
//! (`Receiver::sender_gone`).
//!
//! A message's `Meta::sender` on the wire is the claimer id the receiver
//! gave the sender at the handshake; the receiver maps it back to the
//! sender's address. Like the rest of a cell, it is what the writer
//! claims (see `docs/shm-transport.md` on trust).
//!
//! Sleeping costs nothing while nothing happens: a waiting transport is
//! woken by its doorbell, which senders ring when they publish into our
//! ring while we wait, and which peers ring when they hand back cells of
//! their ring while our queue for them waits for room (we said so in
//! [`Transport::prepare_wait`]); the timers left are connection retries,
//! handshake deadlines and a 100 ms safety bound while a queue waits.

use crate::attach::{self, EndpointId, Grant, Handshake, Listener, Peer};
use crate::cma::{self, RemoteIov};
use crate::region::LifePage;
use crate::ring::{Meta, Payload, Polled, Receiver, Sender, CELL_HEADER, MAX_CELL};
use oxifabric::abi::{FI_EACCES, FI_ECONNREFUSED, FI_ECONNRESET, FI_ENOMEM};
use oxifabric::error::{Error, Result};
use oxifabric::ops::IoBuf;
use oxifabric::service::keyhash::KeyedU64;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a failed handshake waits for its peer's process to be seen
/// exited (`attach::process_gone`).
const EXIT_GRACE: Duration = Duration::from_millis(50);
/// How an address is written: a prefix in the shape of upstream `shm`'s
/// `FI_ADDR_STR` addresses, then the listener's abstract name.
const ADDR_PREFIX: &str = "fi_shm://oxifabric-shm:";
/// How often progress looks at the peers' liveness descriptors (one
/// `poll` for all of them): every millisecond after a peer connects,
/// then less often up to the longest pause (a process with hundreds of
/// endpoints makes one `poll` per endpoint per pause, and one `accept`
/// per `ACCEPT_MAX`: with 512 endpoints sending to one, pauses of 16
/// and 8 ms gave 0.73x one sender's aggregate rate, 64 and 32 ms 0.80x).
/// A send also reads its peer's life page, so a dead peer's sends fail
/// at once whatever the pause.
const LIVENESS_FIRST: Duration = Duration::from_millis(1);
const LIVENESS_MAX: Duration = Duration::from_millis(64);
/// How long (milliseconds) after a peer's life word stops naming a live
/// holder each send to it asks the kernel whether it is gone (see
/// `Transport::send`); a process killed with all its memory tears that
/// down between the two, which can take a while for a large one.
const DEAD_WORD_ASK_MS: u64 = 1000;
/// The first and the longest pause between attempts to reach a peer whose
/// listener does not exist yet.
const RETRY_FIRST: Duration = Duration::from_millis(1);
const RETRY_MAX: Duration = Duration::from_millis(50);
/// The longest a wait lasts while a queue waits for room in a peer's
/// ring: the peer rings our doorbell when it hands cells back (see
/// `ring`'s note on waking a sender), so this only bounds the cost of a
/// peer that does not.
const ROOM_SAFETY: Duration = Duration::from_millis(100);
/// How many incoming handshakes may be in flight at once, by default
/// ([`Transport::set_max_incoming_handshakes`]). Connections beyond it
/// wait in the kernel's listen backlog (128) unaccepted, and beyond
/// that a connecting peer's `connect` fails and it retries: what a local
/// process opening many connections costs us stays bounded.
pub const MAX_INCOMING_HANDSHAKES: usize = 64;
/// How often progress looks for incoming connections while no handshake
/// is under way: soon after the last one came, then less often up to the
/// longest pause (a new peer of a polling endpoint waits at most this
/// long to be taken; a sleeping one is woken by its listener).
const ACCEPT_FIRST: Duration = Duration::from_micros(200);
const ACCEPT_MAX: Duration = Duration::from_millis(32);
/// Progress calls between two looks at the clock while nothing is under
/// way (see `Transport::progress`).
const CLOCK_EVERY: u32 = 32;
/// Bounds on work per progress call, so one call stays short.
const ACCEPTS_PER_PROGRESS: usize = 64;

/// An endpoint's address: its id, written as a string usable as an
/// `FI_ADDR_STR` address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Addr(pub EndpointId);

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ADDR_PREFIX}{}", self.0.hex())
    }
}

impl std::str::FromStr for Addr {
    type Err = Error;

    fn from_str(s: &str) -> Result<Addr> {
        s.strip_prefix(ADDR_PREFIX)
            .and_then(EndpointId::from_hex)
            .map(Addr)
            .ok_or(Error::Inval)
    }
}

/// A transport's sizes and bounds.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Cells in the receive ring (a power of two).
    pub cells: usize,
    /// Bytes per cell, header included (a multiple of 64).
    pub cell_size: usize,
    /// How long a peer has to appear and finish the handshake.
    pub handshake_timeout: Duration,
    /// Messages queued per peer (while connecting, or while its ring is
    /// full) before `send` answers `Again`.
    pub max_queued: usize,
    /// Ids are derived from something a later endpoint may take over
    /// (the sockets provider's listening addresses), not random: a gone
    /// peer's id may come back. A send to a gone peer then tries to reach
    /// it anew, an incoming handshake under its id is a new peer, and an
    /// attempt that finds nobody listening fails the sends at once
    /// (`FI_ECONNREFUSED`: the owner found the peer listening before it
    /// chose this transport, so it has gone) instead of retrying.
    pub ids_reused: bool,
    /// Every handshake fails on our side, as when we are out of
    /// resources (a test knob: `OXI_SHM_REFUSE_HANDSHAKES=1` for the
    /// sockets provider's path): an incoming one once the peer has
    /// connected (it sees the connection close), an outgoing one at once
    /// (`reach` answers `FI_ENOMEM`).
    pub refuse_handshakes: bool,
    /// Chunks in our bounce area (`bounce`; 0: none) and their size:
    /// what we send large messages through to peers we may not reach by
    /// cross-memory attach.
    pub bounce_chunks: usize,
    /// Bytes per bounce chunk.
    pub bounce_size: usize,
    /// Split slots (`slots`) after the bounce area.
    pub split_slots: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            cells: 256,
            cell_size: 512,
            handshake_timeout: Duration::from_secs(5),
            max_queued: 256,
            ids_reused: false,
            refuse_handshakes: false,
            bounce_chunks: 0,
            bounce_size: 0,
            split_slots: 0,
        }
    }
}

/// What [`Transport::send`] did with a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// It is in the peer's ring.
    Delivered,
    /// It waits in the local queue; an [`Event::Flushed`] or
    /// [`Event::SendFailed`] with its `ctx` follows.
    Queued,
}

/// What progress found; the provider maps these onto its receive queue
/// and completion queues.
pub enum Event<'a> {
    /// A message from `from`; copy `payload` where it goes before the
    /// callback returns (the cell goes back to the senders then).
    Received {
        /// The sender's process, when we may read its memory by
        /// cross-memory attach (`cma::read_into`): what `cma_ok` says,
        /// handed over so a rendezvous can be pulled while the payload is
        /// being handled, in order with the messages around it.
        cma_pid: Option<libc::pid_t>,
        /// The sender.
        from: Addr,
        /// The header (its `sender` is our claimer id for `from`).
        meta: Meta,
        /// The payload, still in the ring.
        payload: Payload<'a>,
        /// The connected peers' bounce areas, for a cell that names a
        /// chunk of the sender's.
        areas: Areas<'a>,
    },
    /// A queued message went into the peer's ring.
    Flushed {
        /// The peer.
        to: Addr,
        /// The `ctx` given to `send`.
        ctx: u64,
    },
    /// A queued message will never go: the handshake failed or timed
    /// out, the peer is gone, or the message does not fit its cells.
    SendFailed {
        /// The peer.
        to: Addr,
        /// The `ctx` given to `send`.
        ctx: u64,
        /// Why.
        error: Error,
    },
    /// A peer's first handshake finished (in either direction), before
    /// any of its messages is reported.
    Connected {
        /// The peer.
        addr: Addr,
        /// The name its hello carried (`attach::Offer::name`: a claim,
        /// maybe empty).
        name: &'a [u8],
    },
    /// Our first handshake with a peer failed or timed out (it was never
    /// up) while its process lives: it could not take us on (descriptors,
    /// memory) or did not answer in time. An owner with another way to
    /// the peer may take it (what was queued for it fails next, as
    /// `SendFailed`). A peer that died says nothing of the kind.
    Unreached {
        /// The peer.
        addr: Addr,
        /// Why.
        error: Error,
    },
    /// The peer's process exited or it closed its endpoint; reported once.
    PeerGone {
        /// The peer.
        addr: Addr,
    },
    /// A cell of our ring that no honest sender writes was skipped, or an
    /// incoming handshake was refused.
    Refused {
        /// Why.
        why: &'static str,
    },
}

/// The connected peers' bounce areas, looked up only when a cell names a
/// chunk (so receiving costs nothing more otherwise).
#[derive(Clone, Copy)]
pub struct Areas<'a>(&'a HashMap<EndpointId, PeerEntry, KeyedU64>);

impl Areas<'_> {
    /// Copies `dst.len()` bytes of chunk `k` of peer `from`'s bounce area,
    /// from byte `off` of the chunk on, into `dst`: `NotConn` unless
    /// `from` is connected, `Inval` for a chunk it does not have or bytes
    /// past a chunk's end (see `ring::Sender::bounce_read_at`).
    pub fn read_at(&self, from: Addr, k: usize, off: usize, dst: &mut [u8]) -> Result<()> {
        match self.0.get(&from.0).map(|e| &e.state) {
            Some(State::Up { tx, .. }) => tx.bounce_read_at(k, off, dst),
            _ => Err(Error::NotConn),
        }
    }

    /// Bytes per chunk of connected peer `from`'s area (None: not
    /// connected, or it has no area).
    pub fn chunk_size(&self, from: Addr) -> Option<usize> {
        match self.0.get(&from.0).map(|e| &e.state) {
            Some(State::Up { tx, .. }) if tx.bounce().chunks() > 0 => Some(tx.bounce().size()),
            _ => None,
        }
    }

    /// Chunks of connected peer `from`'s area (0: not connected, or none).
    pub fn chunks_of(&self, from: Addr) -> usize {
        match self.0.get(&from.0).map(|e| &e.state) {
            Some(State::Up { tx, .. }) => tx.bounce().chunks(),
            _ => 0,
        }
    }

    /// Whether connected peer `from`'s area has chunk `k` of `n` bytes.
    pub fn holds(&self, from: Addr, k: usize, n: usize) -> bool {
        match self.0.get(&from.0).map(|e| &e.state) {
            Some(State::Up { tx, .. }) => tx.bounce().holds(k, n),
            _ => false,
        }
    }

    /// Peer `from`'s split slots and the region they are in (the
    /// helper's side of `slots::SlotArea`); `NotConn` unless connected.
    pub fn slots(&self, from: Addr) -> Result<(crate::slots::SlotArea, &crate::region::Region)> {
        match self.0.get(&from.0).map(|e| &e.state) {
            Some(State::Up { tx, .. }) => Ok((tx.slots(), tx.region())),
            _ => Err(Error::NotConn),
        }
    }
}

/// A message waiting to go.
struct Queued {
    meta: Meta,
    payload: Vec<u8>,
    ctx: u64,
}

enum State {
    /// Reaching the peer: the next attempt's time and pause, and the
    /// handshake's deadline.
    Connecting {
        deadline: Instant,
        retry_at: Instant,
        pause: Duration,
        /// Whether a handshake of ours is under way (else retry).
        in_flight: bool,
    },
    /// Connected: its ring, every connection to it (one per handshake,
    /// each a liveness handle; the first gives its pid), and whether
    /// cross-memory attach to it worked when the first one finished.
    Up {
        tx: Sender,
        links: Vec<Peer>,
        /// The first link's life page, here so that a send's look at it
        /// touches no link (a cold line per peer when one process talks
        /// through hundreds of endpoints).
        life: Arc<LifePage>,
        cma_ok: bool,
    },
    /// Dead or closed; kept so later sends fail at once.
    Gone,
}

struct PeerEntry {
    state: State,
    queue: VecDeque<Queued>,
    /// The claimer ids given to this peer in our ring.
    claimers: Vec<u32>,
    /// When (coarse clock) a send last asked the kernel whether the peer
    /// is gone, and whether it was.
    asked: u64,
    dying: bool,
    /// When (coarse clock, never 0) a send first found the peer's life
    /// word not naming a live holder since it last did; 0 while it does.
    dead_word_since: u64,
}

impl PeerEntry {
    fn new(state: State) -> PeerEntry {
        PeerEntry {
            state,
            queue: VecDeque::new(),
            claimers: Vec::new(),
            asked: 0,
            dying: false,
            dead_word_since: 0,
        }
    }
}

/// A handshake under way.
struct Pending {
    hs: Handshake,
    /// The peer we connected to (`None`: an incoming connection).
    target: Option<EndpointId>,
    /// The claimer id offered in our hello (outgoing only).
    claimer: u32,
    deadline: Instant,
}

/// Whom a claimer id of our ring was given to.
#[derive(Clone, Copy)]
struct Claim {
    id: EndpointId,
    /// Set once connected, when cross-memory attach to it works.
    cma_pid: Option<libc::pid_t>,
    /// The liveness look under way ([`Transport::looks`]) when a message
    /// from it last arrived: heard since the last look, it was alive a
    /// moment ago, and that look may skip the system call. A number, not
    /// a time: reading even the coarse clock on every drain cost about 24
    /// instructions per message.
    heard: u64,
}

/// One endpoint's shared-memory transport.
pub struct Transport {
    id: EndpointId,
    cfg: Config,
    rx: Receiver,
    listener: Listener,
    peers: HashMap<EndpointId, PeerEntry, KeyedU64>,
    pending: Vec<Pending>,
    /// Who each claimer id in our ring was given to.
    claimers: HashMap<u32, Claim, KeyedU64>,
    /// Liveness looks made so far, plus one: the number of the one to come.
    looks: u64,
    next_liveness: Instant,
    /// When progress next looks for incoming connections while none is
    /// under way (an `accept` costs a system call; progress runs on every
    /// poll of the application).
    next_accept: Instant,
    /// Progress calls so far, and whether the next one looks at the
    /// timers whatever the count.
    calls: u32,
    look_now: bool,
    accept_pause: Duration,
    liveness_pause: Duration,
    /// Some peer may be connecting, or some queue may hold messages:
    /// progress looks at every peer only then.
    maybe_connecting: bool,
    maybe_queued: bool,
    /// The most incoming handshakes in flight at once.
    max_incoming: usize,
    /// What our hellos say we are besides our id (`set_name`).
    name: Vec<u8>,
    /// Buffers the liveness look reuses.
    live_ids: Vec<EndpointId>,
    live_fds: Vec<libc::pollfd>,
    live_gone: Vec<bool>,
    /// Progress takes what arrived (see [`Transport::set_receiving`]).
    receiving: bool,
}

impl Transport {
    /// A transport under a new random address.
    pub fn new(cfg: Config) -> Result<Transport> {
        Transport::with_id(EndpointId::random()?, cfg)
    }

    /// A transport listening under `id` (`AddrInUse` when a live endpoint
    /// has it).
    pub fn with_id(id: EndpointId, cfg: Config) -> Result<Transport> {
        let rx = Receiver::with_bounce(
            cfg.cells,
            cfg.cell_size,
            cfg.bounce_chunks,
            cfg.bounce_size,
            cfg.split_slots,
        )?;
        let listener = Listener::bind(id)?;
        Ok(Transport {
            id,
            cfg,
            rx,
            listener,
            peers: HashMap::default(),
            pending: Vec::new(),
            claimers: HashMap::default(),
            looks: 1,
            next_liveness: Instant::now(),
            next_accept: Instant::now(),
            calls: 0,
            look_now: true,
            accept_pause: ACCEPT_FIRST,
            liveness_pause: LIVENESS_FIRST,
            maybe_connecting: false,
            maybe_queued: false,
            max_incoming: MAX_INCOMING_HANDSHAKES,
            name: Vec::new(),
            live_ids: Vec::new(),
            live_fds: Vec::new(),
            live_gone: Vec::new(),
            receiving: true,
        })
    }

    /// Whether progress takes what arrives in our ring. An owner that
    /// has no room left for messages nobody asked for yet turns it off:
    /// they stay in the ring, whose senders then wait for room (their
    /// queues fill, then their sends answer `Again`), until it is turned
    /// on again.
    pub fn set_receiving(&mut self, on: bool) {
        self.receiving = on;
    }

    /// A look at our ring from outside (see `ring::Peek`).
    pub fn peek(&self) -> crate::ring::Peek {
        self.rx.peek()
    }

    /// Nothing under way but what arrives in our ring and what runs on
    /// timers: no handshake, no connection attempt, no queued message.
    pub fn quiet(&self) -> bool {
        self.pending.is_empty() && !self.maybe_connecting && !self.maybe_queued && self.receiving
    }

    /// What our hellos tell peers we are besides our id (see
    /// `attach::Offer::name`); `Inval` when longer than
    /// `attach::MAX_NAME`.
    pub fn set_name(&mut self, name: &[u8]) -> Result<()> {
        if name.len() > attach::MAX_NAME {
            return Err(Error::Inval);
        }
        self.name = name.to_vec();
        Ok(())
    }

    /// How far reaching `to` got: `Some(true)` when it is up, `Some(false)`
    /// while our handshake with it is under way, `None` when it is not a
    /// peer (never reached, unreached, or gone).
    pub fn reaching(&self, to: Addr) -> Option<bool> {
        match self.peers.get(&to.0).map(|e| &e.state) {
            Some(State::Up { .. }) => Some(true),
            Some(State::Connecting { .. }) => Some(false),
            Some(State::Gone) | None => None,
        }
    }

    /// Whether the endpoint `to` can be reached now: one connection
    /// attempt, without blocking. True when it listens (its handshake is
    /// then under way, and sends to it queue behind it) or is known
    /// already (connected, connecting, or gone: sends to it then fail
    /// at once); false when nobody listens under its name in our
    /// network namespace; `Err` when the attempt failed otherwise
    /// (another user's endpoint: `FI_EACCES`; no descriptors left).
    pub fn reach(&mut self, to: Addr) -> Result<bool> {
        if self.peers.contains_key(&to.0) {
            return Ok(true);
        }
        if self.cfg.refuse_handshakes {
            return Err(Error::Other(FI_ENOMEM));
        }
        let c = self.rx.new_claimer();
        self.claimers.insert(
            c,
            Claim {
                id: to.0,
                cma_pid: None,
                heard: 0,
            },
        );
        let offer = self.rx.offer(c).named(&self.name);
        let now = Instant::now();
        let deadline = now + self.cfg.handshake_timeout;
        let in_flight = match attach::try_connect(&to.0, &self.id, &offer) {
            Ok(attach::Attempt::Started(hs)) => {
                self.pending.push(Pending {
                    hs,
                    target: Some(to.0),
                    claimer: c,
                    deadline,
                });
                true
            }
            Ok(attach::Attempt::Busy) => {
                self.claimers.remove(&c);
                false
            }
            Ok(attach::Attempt::Absent) => {
                self.claimers.remove(&c);
                return Ok(false);
            }
            Err(e) => {
                self.claimers.remove(&c);
                self.rx.sender_gone(c);
                return Err(e);
            }
        };
        self.maybe_connecting = true;
        self.peers.insert(
            to.0,
            PeerEntry::new(State::Connecting {
                deadline,
                retry_at: now + RETRY_FIRST,
                pause: RETRY_FIRST,
                in_flight,
            }),
        );
        Ok(true)
    }

    /// This endpoint's address.
    pub fn addr(&self) -> Addr {
        Addr(self.id)
    }

    /// The most payload bytes a message to us may carry.
    pub fn payload_capacity(&self) -> usize {
        self.rx.payload_capacity()
    }

    /// Our bounce area (what [`Config::bounce_chunks`] asked for).
    pub fn bounce(&self) -> crate::bounce::BounceArea {
        self.rx.bounce()
    }

    /// Copies `parts` into chunk `k` of our bounce area, for a peer to
    /// read after a cell names it; the bytes written (`Inval` when they
    /// do not fit a chunk or there is no such chunk).
    pub fn bounce_write(&self, k: usize, parts: &[&[u8]]) -> Result<usize> {
        self.rx.bounce_write(k, parts)
    }

    /// Our split slots, and the region they are in (the owner's side of
    /// `slots::SlotArea`).
    pub fn slots(&self) -> (crate::slots::SlotArea, &crate::region::Region) {
        (self.rx.slots(), self.rx.region())
    }

    /// The connected peers' bounce areas (as [`Event::Received`] gives
    /// them).
    pub fn areas(&self) -> Areas<'_> {
        Areas(&self.peers)
    }

    /// Sets how many incoming handshakes may be in flight at once (at
    /// least 1; [`MAX_INCOMING_HANDSHAKES`] by default). At the limit,
    /// progress accepts no new connection (they wait in the kernel's
    /// backlog; a full backlog makes the connector retry) and
    /// [`Transport::wait_fds`] leaves the listener out, until a
    /// handshake under way finishes, fails or times out
    /// ([`Config::handshake_timeout`]).
    pub fn set_max_incoming_handshakes(&mut self, n: usize) {
        self.max_incoming = n.max(1);
    }

    /// Incoming handshakes in flight now: accepted connections whose
    /// hello has not come yet.
    pub fn incoming_handshakes(&self) -> usize {
        self.pending.iter().filter(|p| p.target.is_none()).count()
    }

    /// The process id of the connected peer `to`, as the kernel reported
    /// it when the first connection to it was made (`SO_PEERCRED`);
    /// `None` while `to` is not connected (unknown, connecting, or gone).
    pub fn peer_pid(&self, to: Addr) -> Option<libc::pid_t> {
        match &self.peers.get(&to.0)?.state {
            State::Up { links, .. } => links.first().map(Peer::pid),
            _ => None,
        }
    }

    /// Whether cross-memory attach to the connected peer `to` works: the
    /// result of reading the probe word it announced in its hello, done
    /// once when the first connection to it finished. `false` while `to`
    /// is not connected, and when the kernel refused (the handshake
    /// succeeds either way; use a copy through the rings instead).
    pub fn cma_ok(&self, to: Addr) -> bool {
        matches!(
            self.peers.get(&to.0),
            Some(PeerEntry {
                state: State::Up { cma_ok: true, .. },
                ..
            })
        )
    }

    /// Copies the ranges `remote` of the connected peer `to`'s memory, in
    /// order, into `local` (filled in order); the bytes copied (the
    /// ranges' total). Refused before any transfer: `NotConn` while `to`
    /// is not connected, `FI_ECONNRESET` once it is gone (or found gone
    /// now: its liveness descriptors are polled first, so a dead peer's
    /// recycled pid is not touched), `FI_EACCES` when
    /// [`Transport::cma_ok`] is false (no system call at all). Else as
    /// `cma::readv`: `Inval` when `local` is too small, `FI_EACCES` when
    /// the kernel refuses, `FI_EIO` for a range not mapped in the peer.
    pub fn cma_read(
        &self,
        to: Addr,
        local: &mut [IoSliceMut<'_>],
        remote: &[RemoteIov],
    ) -> Result<usize> {
        let pid = self.cma_target(to)?;
        cma::readv(pid, local, remote)
    }

    /// [`Transport::cma_read`] into application memory (`cma::read_into`).
    pub fn cma_read_into(&self, to: Addr, local: &[IoBuf], remote: &[RemoteIov]) -> Result<usize> {
        let pid = self.cma_target(to)?;
        cma::read_into(pid, local, remote)
    }

    /// Copies `local` (gathered in order) into the ranges `remote` of the
    /// connected peer `to`'s memory, in order; the bytes copied (the
    /// ranges' total). Refused as [`Transport::cma_read`]; else as
    /// `cma::writev` (`Inval` when `local` holds fewer bytes than the
    /// ranges, `FI_EIO` for a range not mapped writable in the peer).
    pub fn cma_write(
        &self,
        to: Addr,
        local: &[IoSlice<'_>],
        remote: &[RemoteIov],
    ) -> Result<usize> {
        let pid = self.cma_target(to)?;
        cma::writev(pid, local, remote)
    }

    /// The pid to use for cross-memory attach to `to`, if allowed (see
    /// [`Transport::cma_read`]).
    fn cma_target(&self, to: Addr) -> Result<libc::pid_t> {
        let Some(e) = self.peers.get(&to.0) else {
            return Err(Error::NotConn);
        };
        match &e.state {
            State::Gone => Err(Error::Other(FI_ECONNRESET)),
            State::Connecting { .. } => Err(Error::NotConn),
            State::Up { cma_ok: false, .. } => Err(Error::Other(FI_EACCES)),
            State::Up { links, .. } => {
                let first = links.first().ok_or(Error::NotConn)?;
                if first.wait_gone(Duration::ZERO)? {
                    return Err(Error::Other(FI_ECONNRESET));
                }
                Ok(first.pid())
            }
        }
    }

    /// A peer's entry from a first send on: its connection starts now.
    fn connecting(handshake_timeout: Duration) -> PeerEntry {
        let now = Instant::now();
        PeerEntry::new(State::Connecting {
            deadline: now + handshake_timeout,
            retry_at: now,
            pause: RETRY_FIRST,
            in_flight: false,
        })
    }

    /// Sends `payload` with `meta` (its `sender` is set here) to `to`
    /// without blocking. `Delivered` when it is in the peer's ring;
    /// `Queued` when it waits for the handshake or for room (an event
    /// with `ctx` follows); `Again` when the peer's queue is full;
    /// `MsgSize` when it fits no cell; `FI_ECONNRESET` at once for a peer
    /// reported gone.
    pub fn send(&mut self, to: Addr, meta: Meta, payload: &[&[u8]], ctx: u64) -> Result<Sent> {
        let len: usize = payload.iter().map(|p| p.len()).sum();
        if len > MAX_CELL - CELL_HEADER {
            return Err(Error::MsgSize);
        }
        let max_queued = self.cfg.max_queued;
        // One lookup on this path, which every send takes (`entry` would
        // cost more: it makes room for an insertion first).
        let entry = match self.peers.get_mut(&to.0) {
            Some(e) => {
                if self.cfg.ids_reused && matches!(e.state, State::Gone) {
                    // Maybe another endpoint under that id by now: try anew.
                    *e = Self::connecting(self.cfg.handshake_timeout);
                    self.maybe_connecting = true;
                }
                e
            }
            None => {
                self.maybe_connecting = true;
                self.peers
                    .entry(to.0)
                    .or_insert(Self::connecting(self.cfg.handshake_timeout))
            }
        };
        let mut meta = meta;
        // A message put in a dead peer's ring would complete as sent, and
        // progress sees a death only every few milliseconds: a send reads
        // its peer's life page (`crate::alive`), one load. When that does
        // not say the peer lives, the kernel is asked: on every send for
        // the first DEAD_WORD_ASK_MS after the word turned (the holder of
        // a killed process ends before the process is reported exited:
        // an answer "alive" kept for a tick let a send posted after the
        // peer was reaped complete as delivered), then once per coarse
        // clock tick at most (the holder may be a thread that ended in a
        // live process, and each look is a system call). A peer found
        // gone fails every later send at once, until progress reports it
        // (PeerGone).
        if let State::Up { links, life, .. } = &entry.state {
            if crate::alive::surely_alive(life.owner_word()) {
                if entry.dead_word_since != 0 {
                    entry.dead_word_since = 0;
                }
            } else {
                let now = coarse_ms();
                if entry.dead_word_since == 0 {
                    entry.dead_word_since = now.max(1);
                }
                let settled = now.saturating_sub(entry.dead_word_since) > DEAD_WORD_ASK_MS;
                if !entry.dying && (!settled || entry.asked != now) {
                    entry.asked = now;
                    entry.dying = links
                        .iter()
                        .any(|p| p.wait_gone(Duration::ZERO).unwrap_or(false));
                }
                if entry.dying {
                    self.next_liveness = Instant::now();
                    self.look_now = true;
                    return Err(Error::Other(FI_ECONNRESET));
                }
            }
        }
        match &entry.state {
            State::Gone => return Err(Error::Other(FI_ECONNRESET)),
            State::Up { tx, .. } if entry.queue.is_empty() => {
                meta.sender = tx.claimer();
                match tx.try_send(&meta, payload) {
                    Ok(()) => return Ok(Sent::Delivered),
                    Err(Error::Again) => {}
                    Err(e) => return Err(e),
                }
            }
            _ => {}
        }
        if entry.queue.len() >= max_queued {
            return Err(Error::Again);
        }
        self.maybe_queued = true;
        entry.queue.push_back(Queued {
            meta,
            payload: payload.concat(),
            ctx,
        });
        Ok(Sent::Queued)
    }

    /// Does everything that is ready, without blocking, and hands each
    /// event to `sink`; how many events there were.
    pub fn progress(&mut self, sink: &mut impl FnMut(Event<'_>)) -> usize {
        let mut n = 0;
        let mut count = |e: Event<'_>| {
            n += 1;
            sink(e)
        };
        // The clock is read (and timers looked at) on one call in
        // CLOCK_EVERY while nothing is under way: in a process polling
        // hundreds of endpoints, reading it on every call was a fifth of
        // the time. A wait asks for a look on the next call.
        self.calls = self.calls.wrapping_add(1);
        let busy = !self.pending.is_empty() || self.maybe_connecting;
        if busy || self.look_now || self.calls.is_multiple_of(CLOCK_EVERY) {
            self.look_now = false;
            self.timers(&mut count);
        }
        if self.maybe_queued {
            self.flush(&mut count);
            self.maybe_queued = self.peers.values().any(|e| !e.queue.is_empty());
        }
        if self.receiving {
            self.receive(&mut count);
        }
        n
    }

    /// Accepts, handshakes, connection attempts and liveness: what runs
    /// on time rather than on input.
    fn timers(&mut self, count: &mut impl FnMut(Event<'_>)) {
        let mut count = count;
        let now = Instant::now();
        if !self.pending.is_empty() || now >= self.next_accept {
            let before = self.pending.len();
            self.accept_new(&mut count, now);
            self.accept_pause = if self.pending.len() > before {
                ACCEPT_FIRST
            } else {
                (self.accept_pause * 2).min(ACCEPT_MAX)
            };
            self.next_accept = now + self.accept_pause;
        }
        if !self.pending.is_empty() {
            self.advance_handshakes(&mut count, now);
        }
        if self.maybe_connecting {
            self.connect_or_expire(&mut count, now);
            self.maybe_connecting = self
                .peers
                .values()
                .any(|e| matches!(e.state, State::Connecting { .. }));
        }
        if now >= self.next_liveness {
            self.next_liveness = now + self.liveness_pause;
            self.liveness_pause = (self.liveness_pause * 2).min(LIVENESS_MAX);
            self.watch_liveness(&mut count);
        }
    }

    /// Takes new incoming connections (their hellos are read by
    /// `advance_handshakes`), as many as keep the incoming handshakes in
    /// flight within their limit.
    fn accept_new(&mut self, sink: &mut impl FnMut(Event<'_>), now: Instant) {
        let room = self.max_incoming.saturating_sub(self.incoming_handshakes());
        for _ in 0..ACCEPTS_PER_PROGRESS.min(room) {
            match self.listener.try_accept() {
                Ok(Some(hs)) => self.pending.push(Pending {
                    hs,
                    target: None,
                    claimer: 0,
                    deadline: now + self.cfg.handshake_timeout,
                }),
                Ok(None) => return,
                Err(_) => sink(Event::Refused {
                    why: "incoming connection refused (credentials)",
                }),
            }
        }
    }

    /// Reads the hellos that arrived; finishes or fails each handshake.
    fn advance_handshakes(&mut self, sink: &mut impl FnMut(Event<'_>), now: Instant) {
        for p in std::mem::take(&mut self.pending) {
            let (target, claimer, deadline) = (p.target, p.claimer, p.deadline);
            let pid = p.hs.peer_pid();
            match p.hs.try_receive() {
                Ok(Err(hs)) if now < deadline => self.pending.push(Pending {
                    hs,
                    target,
                    claimer,
                    deadline,
                }),
                Ok(Err(_)) => self.handshake_failed(target, claimer, Error::TimedOut, false, sink),
                Ok(Ok((peer, grant))) => {
                    let id = peer.id();
                    let name = peer.name().to_vec();
                    match self.connected(target, claimer, peer, grant) {
                        Ok(true) => sink(Event::Connected {
                            addr: Addr(id),
                            name: &name,
                        }),
                        Ok(false) => {}
                        Err(e) => self.handshake_failed(target, claimer, e, false, sink),
                    }
                }
                Err(e) => {
                    // Rare (a handshake that fails), so a short wait for
                    // a dying peer's exit is affordable here.
                    let gone = attach::process_gone(pid, EXIT_GRACE);
                    self.handshake_failed(target, claimer, e, gone, sink)
                }
            }
        }
    }

    /// A finished handshake: answers an incoming one, then records the
    /// peer (or adds the connection to a known one); true when the peer
    /// is new.
    fn connected(
        &mut self,
        target: Option<EndpointId>,
        claimer: u32,
        peer: Peer,
        grant: Grant,
    ) -> Result<bool> {
        let id = peer.id();
        let mut first = false;
        if matches!(
            self.peers.get(&id),
            Some(PeerEntry {
                state: State::Gone,
                ..
            })
        ) {
            if !self.cfg.ids_reused {
                // A closed endpoint's id is never reused by an honest peer.
                return Err(Error::Inval);
            }
            // A new endpoint under the id of one that went.
            self.peers.remove(&id);
        }
        let claimer = if target.is_none() {
            if self.cfg.refuse_handshakes {
                return Err(Error::Other(FI_ENOMEM));
            }
            let c = self.rx.new_claimer();
            // Known before the peer can use it.
            self.claimers.insert(
                c,
                Claim {
                    id,
                    cma_pid: None,
                    heard: 0,
                },
            );
            if let Err(e) = peer.answer(&self.id, &self.rx.offer(c).named(&self.name)) {
                self.claimers.remove(&c);
                self.rx.sender_gone(c);
                return Err(e);
            }
            c
        } else {
            claimer
        };
        let entry = self.peers.entry(id).or_insert(PeerEntry::new(State::Gone));
        entry.claimers.push(claimer);
        // A new connection is watched closely at first.
        self.liveness_pause = LIVENESS_FIRST;
        // Room in the liveness look's buffers now, not on its first look
        // (which may come in the middle of the owner's traffic).
        let links = self.claimers.len();
        self.live_ids
            .reserve(links.saturating_sub(self.live_ids.len()));
        self.live_fds
            .reserve((2 * links).saturating_sub(self.live_fds.len()));
        self.live_gone
            .reserve(links.saturating_sub(self.live_gone.len()));
        match &mut entry.state {
            State::Up { links, .. } => links.push(peer),
            state => {
                let tx = Sender::from_grant(grant)?;
                if target.is_some() {
                    // The peer could use our ring before its answer came
                    // and may have asked for room while we could not ring
                    // it: one (maybe spurious) wake-up covers that.
                    tx.ring_doorbell();
                }
                // Once per peer: a failed probe only means "no CMA".
                let cma_ok = peer.probe_cma();
                *state = State::Up {
                    tx,
                    life: peer.life(),
                    links: vec![peer],
                    cma_ok,
                };
                first = true;
            }
        }
        // Every id this peer holds in our ring now says whether (and as
        // which process) we may read its memory.
        if let State::Up {
            links,
            cma_ok: true,
            ..
        } = &entry.state
        {
            let pid = links.first().map(Peer::pid);
            for c in &entry.claimers {
                if let Some(k) = self.claimers.get_mut(c) {
                    k.cma_pid = pid;
                }
            }
        }
        Ok(first)
    }

    /// A handshake that will not finish: an outgoing one fails what was
    /// queued for its peer (unless another connection reached it), and
    /// says `Unreached` first unless the peer's process is `gone`.
    fn handshake_failed(
        &mut self,
        target: Option<EndpointId>,
        claimer: u32,
        error: Error,
        gone: bool,
        sink: &mut impl FnMut(Event<'_>),
    ) {
        let Some(id) = target else {
            sink(Event::Refused {
                why: "incoming handshake failed",
            });
            return;
        };
        // The peer may have mapped our ring and claimed a cell with it.
        self.claimers.remove(&claimer);
        self.rx.sender_gone(claimer);
        if let Some(e) = self.peers.get(&id) {
            if matches!(e.state, State::Connecting { .. }) {
                if let Some(e) = self.peers.remove(&id) {
                    if !gone {
                        sink(Event::Unreached {
                            addr: Addr(id),
                            error,
                        });
                    }
                    fail_all(Addr(id), e.queue, error, sink);
                }
            }
        }
    }

    /// Starts handshakes whose retry time came; fails those past their
    /// deadline.
    fn connect_or_expire(&mut self, sink: &mut impl FnMut(Event<'_>), now: Instant) {
        let mut failed = Vec::new();
        for (id, e) in self.peers.iter_mut() {
            let State::Connecting {
                deadline,
                retry_at,
                pause,
                in_flight,
            } = &mut e.state
            else {
                continue;
            };
            if now >= *deadline {
                failed.push((*id, Error::TimedOut));
                continue;
            }
            if *in_flight || now < *retry_at {
                continue;
            }
            let c = self.rx.new_claimer();
            self.claimers.insert(
                c,
                Claim {
                    id: *id,
                    cma_pid: None,
                    heard: 0,
                },
            );
            match attach::try_connect(id, &self.id, &self.rx.offer(c).named(&self.name)) {
                Ok(attach::Attempt::Started(hs)) => {
                    *in_flight = true;
                    self.pending.push(Pending {
                        hs,
                        target: Some(*id),
                        claimer: c,
                        deadline: *deadline,
                    });
                }
                Ok(attach::Attempt::Absent) if self.cfg.ids_reused => {
                    self.claimers.remove(&c);
                    failed.push((*id, Error::Other(FI_ECONNREFUSED)));
                }
                Ok(attach::Attempt::Absent | attach::Attempt::Busy) => {
                    self.claimers.remove(&c);
                    *retry_at = now + *pause;
                    *pause = (*pause * 2).min(RETRY_MAX);
                }
                Err(err) => {
                    self.claimers.remove(&c);
                    self.rx.sender_gone(c);
                    failed.push((*id, err));
                }
            }
        }
        for (id, error) in failed {
            if let Some(e) = self.peers.remove(&id) {
                // Nobody listens under its id any more: it went.
                if error != Error::Other(FI_ECONNREFUSED) {
                    sink(Event::Unreached {
                        addr: Addr(id),
                        error,
                    });
                }
                fail_all(Addr(id), e.queue, error, sink);
            }
        }
    }

    /// Reports connected peers that died or closed, once each, after the
    /// messages they published before.
    fn watch_liveness(&mut self, sink: &mut impl FnMut(Event<'_>)) {
        // Peers that sent us something since the last look (at most
        // LIVENESS_MAX ago) were alive then: when all were, the look (a
        // system call) waits for the next time.
        let look = self.looks;
        self.looks += 1;
        let claimers = &self.claimers;
        let heard = |e: &PeerEntry| {
            let mut h = e.claimers.iter().filter_map(|c| claimers.get(c));
            h.any(|k| k.heard == look)
        };
        let all_heard = self.peers.values().all(|e| match &e.state {
            State::Up { .. } => heard(e),
            _ => true,
        });
        if all_heard {
            return;
        }
        let mut ids = std::mem::take(&mut self.live_ids);
        ids.clear();
        for (id, e) in &self.peers {
            if let State::Up { links, .. } = &e.state {
                ids.extend(links.iter().map(|_| *id));
            }
        }
        // The same walk again (the map did not change): the links in the
        // order of `ids`.
        let links = self.peers.values().flat_map(|e| match &e.state {
            State::Up { links, .. } => links.as_slice(),
            _ => &[],
        });
        let looked = ids.is_empty()
            || Peer::poll_gone(links, &mut self.live_fds, &mut self.live_gone).is_err()
            || !self.live_gone.contains(&true);
        if looked {
            self.live_ids = ids;
            return;
        }
        let mut dead: Vec<EndpointId> = ids
            .iter()
            .zip(&self.live_gone)
            .filter_map(|(id, g)| g.then_some(*id))
            .collect();
        self.live_ids = ids;
        dead.dedup();
        let mut newly = Vec::new();
        for id in dead {
            let Some(e) = self.peers.get_mut(&id) else {
                continue;
            };
            if matches!(e.state, State::Gone) {
                continue;
            }
            e.state = State::Gone;
            for &c in &e.claimers {
                self.rx.sender_gone(c);
            }
            newly.push((id, std::mem::take(&mut e.queue)));
        }
        if newly.is_empty() {
            return;
        }
        // What the dead published is in our ring already: hand it over
        // before saying they are gone (cells they only claimed are taken
        // back on the way).
        self.receive(sink);
        for (id, queue) in newly {
            sink(Event::PeerGone { addr: Addr(id) });
            fail_all(Addr(id), queue, Error::Other(FI_ECONNRESET), sink);
        }
    }

    /// Moves queued messages into connected peers' rings while they have
    /// room.
    fn flush(&mut self, sink: &mut impl FnMut(Event<'_>)) {
        for (id, e) in self.peers.iter_mut() {
            let State::Up { tx, .. } = &e.state else {
                continue;
            };
            while let Some(q) = e.queue.front_mut() {
                q.meta.sender = tx.claimer();
                match tx.try_send(&q.meta, &[&q.payload]) {
                    Err(Error::Again) => break,
                    Ok(()) => sink(Event::Flushed {
                        to: Addr(*id),
                        ctx: q.ctx,
                    }),
                    Err(error) => sink(Event::SendFailed {
                        to: Addr(*id),
                        ctx: q.ctx,
                        error,
                    }),
                }
                e.queue.pop_front();
            }
        }
    }

    /// Hands over what our ring holds (at most one ring's worth per
    /// call), then wakes the senders that wait for room.
    fn receive(&mut self, sink: &mut impl FnMut(Event<'_>)) {
        // Room comes only with cells handed back: no look otherwise (so
        // bits a peer sets cost rings only as often as we drain).
        if self.drain(sink) == 0 {
            return;
        }
        let bits = self.rx.room_wanted();
        if bits == 0 {
            return;
        }
        let wants = |c: &u32| bits & (1 << (c % 64)) != 0;
        for e in self.peers.values() {
            if let State::Up { tx, .. } = &e.state {
                if e.claimers.iter().any(wants) {
                    tx.ring_doorbell();
                }
            }
        }
    }

    /// Hands over what our ring holds (at most one ring's worth); how
    /// many cells went back to the senders.
    fn drain(&mut self, sink: &mut impl FnMut(Event<'_>)) -> usize {
        let look = self.looks;
        for n in 0..self.cfg.cells {
            let claimers = &mut self.claimers;
            let areas = Areas(&self.peers);
            let polled = self
                .rx
                .poll(|r, payload| match claimers.get_mut(&r.meta.sender) {
                    Some(k) => {
                        k.heard = look;
                        sink(Event::Received {
                            from: Addr(k.id),
                            cma_pid: k.cma_pid,
                            meta: r.meta,
                            payload,
                            areas,
                        })
                    }
                    None => sink(Event::Refused {
                        why: "message from an unknown sender",
                    }),
                });
            match polled {
                Polled::Empty => return n,
                Polled::Got(()) | Polled::Abandoned => {}
                Polled::Refused(why) => sink(Event::Refused { why }),
            }
        }
        self.cfg.cells
    }

    /// Descriptors a wait for this transport watches, with the `poll`
    /// events of interest: the doorbell, the listener (left out while
    /// incoming handshakes are at their limit) and pending handshakes
    /// (readable), each connected peer's pidfd (readable on exit) and
    /// connection (hang-up). The list follows the transport's state:
    /// take it anew after each progress call. Wait also no later than
    /// [`Transport::next_timer`], between [`Transport::prepare_wait`] and
    /// [`Transport::after_wait`] ([`Transport::wait`] does all of this).
    pub fn wait_fds(&self) -> Vec<(BorrowedFd<'_>, libc::c_short)> {
        let mut fds = vec![(self.rx.doorbell().fd(), libc::POLLIN)];
        if self.incoming_handshakes() < self.max_incoming {
            fds.push((self.listener.fd(), libc::POLLIN));
        }
        fds.extend(self.pending.iter().map(|p| (p.hs.fd(), libc::POLLIN)));
        for e in self.peers.values() {
            if let State::Up { links, .. } = &e.state {
                for p in links {
                    let (pidfd, sock) = p.liveness_fds();
                    fds.extend(pidfd.map(|f| (f, libc::POLLIN)));
                    fds.push((sock, libc::POLLRDHUP));
                }
            }
        }
        fds
    }

    /// When progress must run again even if no descriptor is ready: the
    /// next connection attempt or handshake deadline, or a safety bound
    /// (100 ms from now) while a queue waits for room in a peer's ring
    /// (the peer rings our doorbell when room comes, if we said we wait:
    /// [`Transport::prepare_wait`]).
    pub fn next_timer(&self) -> Option<Instant> {
        let mut t: Option<Instant> = None;
        let mut at = |i: Instant| t = Some(t.map_or(i, |t| t.min(i)));
        for p in &self.pending {
            at(p.deadline);
        }
        for e in self.peers.values() {
            match &e.state {
                State::Connecting {
                    deadline,
                    retry_at,
                    in_flight,
                    ..
                } => at(if *in_flight { *deadline } else { *retry_at }),
                State::Up { .. } if !e.queue.is_empty() => at(Instant::now() + ROOM_SAFETY),
                _ => {}
            }
        }
        t
    }

    /// Makes the doorbell readable now, so that whoever sleeps on it (or
    /// is about to) returns at once.
    pub fn wake(&self) {
        self.rx.doorbell().ring();
    }

    /// Sleeps until something may be ready or `deadline` passes, without
    /// spinning: senders ring the doorbell only while we wait (see
    /// `Receiver::prepare_sleep`). Whether something may be ready; the
    /// caller runs [`Transport::progress`] either way.
    pub fn wait(&mut self, deadline: Instant) -> Result<bool> {
        if self.prepare_wait()? {
            self.after_wait()?;
            return Ok(true);
        }
        let until = self.next_timer().map_or(deadline, |t| t.min(deadline));
        let mut fds: Vec<libc::pollfd> = self
            .wait_fds()
            .into_iter()
            .map(|(fd, events)| libc::pollfd {
                fd: fd.as_raw_fd(),
                events,
                revents: 0,
            })
            .collect();
        let r = attach::poll_until(&mut fds, until);
        self.after_wait()?;
        r?;
        Ok(fds.iter().any(|p| p.revents != 0))
    }

    /// The first half of [`Transport::wait`], for a caller that sleeps
    /// in its own `poll` or `epoll` on [`Transport::wait_fds`] (bounded by
    /// [`Transport::next_timer`]): empties our doorbell and tells senders
    /// we are about to sleep (they ring it then), and tells each peer
    /// whose ring is full while our queue for it waits that we want to
    /// hear of room (it rings the same doorbell). `true` means something
    /// is ready already (a message in our ring, or room in a peer's):
    /// do not sleep, run [`Transport::progress`]. Either way call
    /// [`Transport::after_wait`] after the sleep (or instead of it).
    pub fn prepare_wait(&mut self) -> Result<bool> {
        // A wait ends on a listener, handshake, pidfd or hang-up as much
        // as on the doorbell: the progress after it looks at once.
        let now = Instant::now();
        self.next_accept = now;
        self.next_liveness = now;
        self.look_now = true;
        if self.rx.prepare_sleep()? {
            return Ok(true);
        }
        for e in self.peers.values() {
            if let State::Up { tx, .. } = &e.state {
                if !e.queue.is_empty() && tx.want_room()? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The second half of [`Transport::wait`]: senders stop ringing our
    /// doorbell for messages (peers asked for room may still ring it
    /// once, a spurious wake-up at worst).
    pub fn after_wait(&mut self) -> Result<()> {
        self.rx.after_sleep()
    }
}

/// The coarse monotonic clock in milliseconds: read without a system
/// call, ticking every few milliseconds.
pub(crate) fn coarse_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    (ts.tv_sec as u64) * 1000 + (ts.tv_nsec as u64) / 1_000_000
}

/// Fails every message of `queue` (for `to`) with `error`.
fn fail_all(to: Addr, queue: VecDeque<Queued>, error: Error, sink: &mut impl FnMut(Event<'_>)) {
    for q in queue {
        sink(Event::SendFailed {
            to,
            ctx: q.ctx,
            error,
        });
    }
}
