//! One TCP connection: its receive state machine and its queue of sends.
//! The endpoint drives it; this file only moves bytes and validates frames.

use crate::wire::{Header, HEADER_LEN, RMA_PREFIX};
use oxifabric::abi::*;
use oxifabric::ops::IoVec;
use oxifabric::service::ep_core::TxCtx;
use oxifabric::service::mr::{Denied, MemRegion};
use oxifabric::service::rxq::{Posted, Region, ENTRY_COST};
use std::collections::VecDeque;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Lifecycle of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// Non-blocking connect in progress.
    Connecting,
    /// Connected, proving the authorization key both ways
    /// (`ep/auth.rs`): only key-proof frames are written or accepted.
    Authenticating,
    /// Usable.
    Open,
}

/// Where the payload of the frame being read goes.
#[allow(clippy::large_enum_variant)] // one per connection, never moved in bulk
pub enum Dest {
    /// Straight into a posted receive.
    Posted {
        recv: Posted,
        region: Region,
        keep: bool,
    },
    /// Into a buffer (unexpected message or control payload).
    Buffer(Vec<u8>),
    /// The target prefix of an RMA frame (address, key); `rest` payload
    /// bytes follow it.
    Prefix { b: [u8; RMA_PREFIX], rest: u64 },
    /// RMA data straight into memory: a registered region at the target
    /// of a write (`mr` held while the bytes land), or an initiator's read
    /// buffers. An empty `region` drops the bytes (a refused write).
    Rma {
        region: IoVec,
        mr: Option<Arc<MemRegion>>,
        /// Why the target refused the write whose bytes are dropped.
        refused: Option<Denied>,
    },
}

impl Dest {
    /// Where payload bytes go in memory, when they go to application
    /// memory rather than to one of our buffers.
    pub fn region(&self) -> Option<&IoVec> {
        match self {
            Dest::Posted { region, .. } | Dest::Rma { region, .. } => Some(region),
            _ => None,
        }
    }

    /// Our own buffer the payload fills, when it does not go to
    /// application memory.
    pub fn buffer(&mut self) -> Option<&mut [u8]> {
        match self {
            Dest::Buffer(v) => Some(v),
            Dest::Prefix { b, .. } => Some(b),
            _ => None,
        }
    }
}

/// Receive progress of a connection.
#[allow(clippy::large_enum_variant)] // one per connection
pub enum RxState {
    /// Reading the fixed header.
    Header { buf: [u8; HEADER_LEN], got: usize },
    /// Reading a payload of `hdr.len` bytes, `got` so far.
    Payload { hdr: Header, dest: Dest, got: u64 },
    /// A message header is waiting for room (unexpected memory is full).
    Paused { hdr: Header },
}

/// The bytes of one send.
#[allow(clippy::large_enum_variant)] // the user variant is the fast path
pub enum TxData {
    /// The application's buffers (kept valid by it until completion).
    User(IoVec),
    /// Our own copy (inject, control frames).
    Owned(Vec<u8>),
    /// RMA: a target prefix (`pre_len` bytes of `pre`) followed by memory
    /// the operation names: the initiator's buffers of a write, or the
    /// target's registered memory a read returns. Never copied when
    /// queued (injected writes are built as `Owned`).
    Rma {
        pre: [u8; RMA_PREFIX],
        pre_len: usize,
        iov: IoVec,
    },
    /// Our own copy of a small payload, kept in the item itself so that a
    /// queued small inject allocates nothing.
    Inline { buf: [u8; INLINE_LEN], len: usize },
}

/// Payloads up to this size are copied into the send item itself when
/// they must outlive the caller's buffer.
pub const INLINE_LEN: usize = 128;

/// What to report when a send has left.
#[derive(Debug, Clone, Copy)]
pub struct TxDone {
    /// The send as posted.
    pub tx: TxCtx,
    /// Wait for the peer's acknowledgement (`FI_DELIVERY_COMPLETE`).
    pub ack: Option<u64>,
}

/// One queued send.
pub struct TxItem {
    pub hdr: [u8; HEADER_LEN],
    pub data: TxData,
    pub total: usize,
    /// Bytes of header and payload already written.
    pub off: usize,
    pub done: Option<TxDone>,
}

impl TxItem {
    /// Hands the not-yet-written pieces, header first, to `f` until it
    /// returns false; whether all were taken. Writes push them straight
    /// into the `sendmsg` array (no array of pieces per item).
    fn each_piece<'s>(&'s self, mut f: impl FnMut(&'s [u8]) -> bool) -> bool {
        let mut skip = self.off;
        if skip < HEADER_LEN {
            if !f(&self.hdr[skip..]) {
                return false;
            }
            skip = 0;
        } else {
            skip -= HEADER_LEN;
        }
        let (pre, iov): (&[u8], Option<&IoVec>) = match &self.data {
            TxData::User(iov) => (&[], Some(iov)),
            TxData::Rma { pre, pre_len, iov } => (&pre[..*pre_len], Some(iov)),
            TxData::Owned(v) => (v, None),
            TxData::Inline { buf, len } => (&buf[..*len], None),
        };
        if skip < pre.len() {
            if !f(&pre[skip..]) {
                return false;
            }
            skip = 0;
        } else {
            skip -= pre.len();
        }
        if let Some(iov) = iov {
            for b in iov.iter() {
                let s = b.as_slice();
                if skip >= s.len() {
                    skip -= s.len();
                    continue;
                }
                if !f(&s[skip..]) {
                    return false;
                }
                skip = 0;
            }
        }
        true
    }

    /// Whether everything was written.
    pub fn finished(&self) -> bool {
        self.off >= self.total
    }

    /// Replaces the application's buffers by a copy of what is left to
    /// send, so that the application may reuse them now (inject).
    pub fn own_rest(&mut self) {
        if let TxData::User(iov) = &self.data {
            let len = self.total - HEADER_LEN;
            if len <= INLINE_LEN {
                let mut buf = [0u8; INLINE_LEN];
                let mut at = 0;
                for b in iov.iter() {
                    let s = b.as_slice();
                    buf[at..at + s.len()].copy_from_slice(s);
                    at += s.len();
                }
                self.data = TxData::Inline { buf, len };
                return;
            }
            let mut v = Vec::with_capacity(self.total - HEADER_LEN);
            for b in iov.iter() {
                v.extend_from_slice(b.as_slice());
            }
            // The copy covers the whole payload, so `off` keeps its meaning.
            self.data = TxData::Owned(v);
        }
    }
}

impl TxItem {
    /// What it counts against the endpoint's bound on queued copies
    /// (`attrs::Limits::inject_queue`): our own bytes and the entry; the
    /// application's buffers cost nothing here.
    pub fn charge(&self) -> usize {
        match &self.data {
            TxData::Owned(v) => ENTRY_COST + v.capacity(),
            TxData::Inline { .. } => ENTRY_COST,
            // An RMA frame's payload is the initiator's buffers or the
            // target's registered memory, never a copy of ours.
            TxData::User(_) | TxData::Rma { .. } => 0,
        }
    }
}

/// What an endpoint's queued sends hold in copies of our own, summed over
/// all its queues as they change, so the bound on queued copies costs
/// O(1) per send instead of a walk over every connection.
pub type Ledger = std::sync::Arc<std::sync::atomic::AtomicUsize>;

/// Queued sends (a connection's, or an RDM peer's waiting for its
/// handshake) with the memory their own copies take.
#[derive(Default)]
pub struct TxQueue {
    items: VecDeque<TxItem>,
    owned: usize,
    /// The endpoint's ledger, from the first push on.
    ledger: Option<Ledger>,
}

impl TxQueue {
    /// Queues `item`, counting its copy here and in the endpoint's `ledger`.
    pub fn push_back(&mut self, item: TxItem, ledger: &Ledger) {
        if self.ledger.is_none() {
            ledger.fetch_add(self.owned, Relaxed);
            self.ledger = Some(ledger.clone());
        }
        self.change(item.charge() as isize);
        self.items.push_back(item);
    }

    fn change(&mut self, by: isize) {
        self.owned = self.owned.wrapping_add_signed(by);
        if let Some(l) = &self.ledger {
            if by >= 0 {
                l.fetch_add(by as usize, Relaxed);
            } else {
                l.fetch_sub(by.unsigned_abs(), Relaxed);
            }
        }
    }

    pub fn pop_front(&mut self) -> Option<TxItem> {
        let item = self.items.pop_front()?;
        self.change(-(item.charge() as isize));
        Some(item)
    }

    /// Empties the queue.
    pub fn take_all(&mut self) -> VecDeque<TxItem> {
        self.change(-(self.owned as isize));
        std::mem::take(&mut self.items)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn front(&self) -> Option<&TxItem> {
        self.items.front()
    }

    pub fn iter(&self) -> impl Iterator<Item = &TxItem> {
        self.items.iter()
    }

    /// The items, to advance their write offsets (what they charge does
    /// not change with the offset).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut TxItem> {
        self.items.iter_mut()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Memory of our own copies queued here.
    pub fn owned(&self) -> usize {
        self.owned
    }
}

impl Drop for TxQueue {
    fn drop(&mut self) {
        self.change(-(self.owned as isize));
    }
}

/// An address claimed by a `Hello`, not confirmed yet.
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    pub addr: SocketAddr,
    pub nonce: u64,
    /// The check is under way (else it waits for a free check).
    pub checking: bool,
}

/// A TCP connection of an endpoint.
pub struct Conn {
    pub stream: TcpStream,
    pub state: ConnState,
    /// The peer's address as it names itself (its listening address for
    /// RDM, the connected address for MSG).
    pub peer: Option<SocketAddr>,
    /// The peer's `fi_addr_t` in our AV, looked up lazily.
    pub fi_addr: fi_addr_t,
    /// The AV generation `fi_addr` was looked up in.
    pub fi_addr_gen: u64,
    pub rx: RxState,
    pub txq: TxQueue,
    /// Whether output readiness is being watched.
    pub watching_out: bool,
    /// Whether input readiness is being watched.
    pub watching_in: bool,
    /// Sends are held in `txq` for the endpoint's next progress call
    /// (send coalescing); the slot is on the endpoint's dirty list.
    pub deferred: bool,
    /// We opened it (as opposed to accepting it).
    pub outgoing: bool,
    /// Unique within the endpoint (slots are reused; ids are not).
    pub id: u64,
    /// RDM, accepted: the address its `Hello` claims while the claim is
    /// being checked (`peer` stays empty until it is confirmed).
    pub claim: Option<Claim>,
    /// A connection we made to check a claim: the claiming connection
    /// (slot and id) and the nonce it sent.
    pub verifies: Option<(usize, u64, u64)>,
    /// Short-lived by design (a claim check): its end is not an error.
    pub transient: bool,
    /// While `Authenticating`: the challenge we sent, which the peer's
    /// proof must answer.
    pub challenge: Option<[u8; 32]>,
    /// While `Authenticating`: the peer's challenge, bound into its proof.
    pub peer_challenge: Option<[u8; 32]>,
    /// Accepted, and its first frame (`Hello` or `Verify`) was read: it
    /// no longer counts as unidentified at the connection limit
    /// (`ep/lru.rs`).
    pub introduced: bool,
    /// Being closed because it is idle (`Bye` sent or acknowledged,
    /// `ep/lru.rs`): sends for its peer wait until it is gone.
    pub closing: bool,
    /// When it last carried a frame (ms, `ep::now_ms`): the least recently
    /// used idle connection is the one closed at the limit.
    pub last_used: u64,
    /// Bytes read from the socket and not yet consumed: `stage[lo..hi]`.
    /// A connection holds a stage buffer only while it has such bytes
    /// (or is reading); an idle one gives it back to its endpoint's
    /// [`StagePool`], so 10,000 idle peers do not cost 10,000 buffers.
    stage: Option<Box<[u8]>>,
    lo: usize,
    hi: usize,
}

/// Size of a stage buffer: one read brings any frame up to this size
/// whole, header and payload.
pub const STAGE_LEN: usize = 32 << 10;

/// The stage buffers of one endpoint's connections that are not reading.
///
/// Progress reads one connection at a time under the endpoint's lock, so
/// a pool of a few buffers serves any number of connections: only a
/// connection left holding part of a frame keeps one. Buffers come back
/// here warm, so the steady-state receive path allocates nothing.
#[derive(Default)]
pub struct StagePool {
    free: Vec<Box<[u8]>>,
}

/// Buffers kept for reuse; more than this many connections holding
/// partial frames at once is rare, and their buffers are freed on return.
const STAGE_POOL_KEEP: usize = 4;

impl StagePool {
    fn take(&mut self) -> Box<[u8]> {
        self.free
            .pop()
            .unwrap_or_else(|| vec![0u8; STAGE_LEN].into_boxed_slice())
    }

    fn put(&mut self, b: Box<[u8]>) {
        if self.free.len() < STAGE_POOL_KEEP {
            self.free.push(b);
        }
    }
}

impl Conn {
    /// Wraps a stream.
    pub fn new(stream: TcpStream, state: ConnState, peer: Option<SocketAddr>) -> Conn {
        let _ = stream.set_nonblocking(true);
        let _ = stream.set_nodelay(true);
        Conn {
            stream,
            state,
            peer,
            fi_addr: FI_ADDR_NOTAVAIL,
            fi_addr_gen: 0,
            rx: RxState::Header {
                buf: [0; HEADER_LEN],
                got: 0,
            },
            txq: TxQueue::default(),
            watching_out: false,
            watching_in: false,
            deferred: false,
            outgoing: state == ConnState::Connecting,
            id: 0,
            claim: None,
            verifies: None,
            transient: false,
            challenge: None,
            peer_challenge: None,
            introduced: false,
            closing: false,
            last_used: 0,
            stage: None,
            lo: 0,
            hi: 0,
        }
    }

    /// Bytes staged and not yet consumed.
    pub fn staged(&self) -> &[u8] {
        match &self.stage {
            Some(b) => &b[self.lo..self.hi],
            None => &[],
        }
    }

    /// Marks `n` staged bytes consumed.
    pub fn consume_staged(&mut self, n: usize) {
        self.lo += n;
    }

    /// Copies staged bytes into `out`; returns how many.
    pub fn take_staged(&mut self, out: &mut [u8]) -> usize {
        let staged = self.staged();
        let n = out.len().min(staged.len());
        out[..n].copy_from_slice(&staged[..n]);
        self.lo += n;
        n
    }

    /// Reads from the socket into the (empty) stage, taking a buffer from
    /// `pool` if the connection holds none.
    pub fn fill_stage(&mut self, pool: &mut StagePool) -> std::io::Result<usize> {
        debug_assert!(self.lo == self.hi);
        let buf = self.stage.get_or_insert_with(|| pool.take());
        let n = crate::sock::read(self.stream.as_raw_fd(), buf)?;
        self.lo = 0;
        self.hi = n;
        Ok(n)
    }

    /// Reads up to `want` bytes (of a truncated payload) and drops them;
    /// a stage buffer, empty here, serves as scratch. Returns the read's
    /// result and how much it asked for.
    pub fn read_discard(
        &mut self,
        want: usize,
        pool: &mut StagePool,
    ) -> (std::io::Result<usize>, usize) {
        debug_assert!(self.lo == self.hi);
        let buf = self.stage.get_or_insert_with(|| pool.take());
        let k = want.min(buf.len());
        (crate::sock::read(self.stream.as_raw_fd(), &mut buf[..k]), k)
    }

    /// Gives the stage buffer back to `pool` when nothing is staged in it.
    pub fn release_stage(&mut self, pool: &mut StagePool) {
        if self.lo == self.hi {
            if let Some(b) = self.stage.take() {
                pool.put(b);
            }
            self.lo = 0;
            self.hi = 0;
        }
    }

    /// Writes queued sends, many frames per `writev`, until the queue is
    /// empty or the socket is full. Finished items stay at the front of
    /// the queue for the endpoint to report; the first unfinished one (if
    /// any) is where the socket stopped.
    pub fn write_queued(&mut self) -> std::io::Result<()> {
        let mut start = 0; // first item not yet finished
        loop {
            let mut iov = crate::sock::Iovecs::new();
            let mut want = 0;
            for item in self.txq.iter().skip(start) {
                let mark = iov.len();
                if !item.each_piece(|b| iov.push(b)) {
                    // Not all of its pieces fit: it goes in the next call.
                    iov.truncate(mark);
                    break;
                }
                want += item.total - item.off;
            }
            if iov.is_empty() {
                return Ok(());
            }
            let mut n = match crate::sock::send_iovecs(self.stream.as_raw_fd(), &iov, None) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            };
            let full = n < want;
            for item in self.txq.iter_mut().skip(start) {
                let step = (item.total - item.off).min(n);
                item.off += step;
                n -= step;
                if !item.finished() {
                    break;
                }
                start += 1;
            }
            if full {
                return Ok(());
            }
        }
    }

    /// Writes as much of `item` as the socket takes now.
    pub fn write_item(&self, item: &mut TxItem) -> std::io::Result<()> {
        while !item.finished() {
            let mut iov = crate::sock::Iovecs::new();
            item.each_piece(|b| iov.push(b));
            match crate::sock::send_iovecs(self.stream.as_raw_fd(), &iov, None) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => item.off += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(len: usize) -> TxItem {
        TxItem {
            hdr: [0; HEADER_LEN],
            total: HEADER_LEN + len,
            data: TxData::Owned(vec![0; len]),
            off: 0,
            done: None,
        }
    }

    #[test]
    fn ledger_follows_every_queue() {
        let ledger = Ledger::default();
        let sum = || ledger.load(Relaxed);
        let mut a = TxQueue::default();
        let mut b = TxQueue::default();
        a.push_back(copy(100), &ledger);
        a.push_back(copy(50), &ledger);
        b.push_back(copy(10), &ledger);
        assert_eq!(sum(), a.owned() + b.owned());
        assert!(sum() >= 160);
        a.pop_front();
        assert_eq!(sum(), a.owned() + b.owned());
        let taken = b.take_all();
        assert_eq!((taken.len(), b.owned()), (1, 0));
        assert_eq!(sum(), a.owned());
        // A queue moved elsewhere (a peer's held sends) keeps counting.
        let moved = std::mem::take(&mut a);
        assert_eq!(sum(), moved.owned());
        drop(moved);
        assert_eq!(sum(), 0, "a dropped queue gives its copies back");
    }
}
