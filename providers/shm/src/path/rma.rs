//! One-sided operations of a `shm` endpoint: RMA reads and writes
//! (`fi_read*`, `fi_write*`, `fi_inject_write*`) and atomics, both sides.
//!
//! Initiator: an operation is cut into parts (`proto.rs`: `WRITE`,
//! `READ`, `ATOMIC` cells), each answered by the target (`ANSWER`); it
//! completes when every part is answered, with the first failure as its
//! error. A write or read of more than a cell goes through the bounce
//! areas (`bounce.rs`) when the peer has one: a write's part carries up to
//! a chunk, copied into a chunk of ours that the target copies out (ours
//! again when the part is answered; while that peer holds chunks and none
//! is free, the part waits); a read's part asks the target to answer
//! through a chunk of its own, which we copy out and give back with
//! `FREE` (no more such reads to one peer than it has chunks; a target
//! with none free answers `NO_BOUNCE` and the span is asked again in
//! cells). Without a bounce area at the peer, a part of 16 KiB or more names the
//! initiator's buffers by address when cross-memory attach works both
//! ways: we reach the peer (`Transport::cma_ok`) and its last answer said
//! it reaches us (`ANSWER_CMA`; until a peer has answered, parts go in
//! cells). Then the part covers a whole remote piece and the target moves
//! the bytes itself with `process_vm_readv`/`writev`, one copy; otherwise,
//! and for small parts, the bytes travel in cells (a write's in its
//! parts, a read's in the answers). The bounce areas go first because
//! they measured faster here at every size from 64 KiB to 8 MiB (two
//! plain copies in two processes, pipelined, against the kernel walking
//! and pinning each page of a range). A target whose cross-memory attach is
//! refused after all answers `NO_CMA`; the part is sent again in cells,
//! and so is every later one to that peer: an operation never fails
//! because the kernel forbids cross-memory attach (a part sent again may
//! then take effect after parts posted later). Atomics carry their operands in cells,
//! as many elements per part as fit (fi_atomic(3)'s atomicity is per
//! element).
//!
//! Target: every part's header, ranges and lengths are checked, then its
//! access against the domain's registrations (`MrTable::access`, or
//! `service::rma::apply_atomic`, which applies the atomic under the
//! engine's element locks) before a byte moves; a refused part is
//! answered with the cause (the initiator's error entry says it and names
//! us), logged, and nothing else happens. The last part of an operation
//! reports the remote completion (`service::rma::remote_complete`: the
//! region's `FI_RMA_EVENT` counter, the endpoint's remote counters,
//! remote CQ data). Parts are handled in the order they arrive, so one
//! initiator's parts take effect in the order it sent them; a part that
//! needs the transport (cross-memory attach) is handled right after the
//! progress call that received it, and every later part from any peer
//! waits behind it.
//!
//! Ordering and fences: parts leave in the order operations were posted;
//! `FI_FENCE` holds an operation, and everything posted after it, until
//! the endpoint's earlier one-sided operations have completed.
//!
//! Waiting: an initiator whose parts wait for answers yields its
//! processor after a few empty looks, since the target that moves the
//! bytes may be waiting for that processor (on a busy host a spinning
//! initiator otherwise starved it: 64-byte writes ran at 0.5 MB/s).
//!
//! Peer death: parts in flight to a peer that goes away, and operations
//! not wholly sent to it, fail with an error naming it; requests from it
//! not yet handled and answers to it are dropped.

use super::bounce::fill_from_chunk;
use super::*;
use crate::proto::{
    decode_rndv, encode_rndv, RmaHeader, ANSWER_BOUNCE, ANSWER_CMA, NO_BOUNCE, NO_CMA, RMA_BOUNCE,
    RMA_CMA, RMA_HEADER, RMA_LAST, RNDV_MAX,
};
use oxifabric::ops::{AtomicReq, IoBuf, RmaIov, RmaOp};
use oxifabric::service::atomic::AtomicKind;
use oxifabric::service::mr::{Denied, MrTable};
use oxifabric::service::rma::{self as one_sided, apply_atomic, remote_complete, AtomicTag};
use std::collections::HashSet;
use std::io::IoSlice;

/// Bytes one atomic operation may cover per remote piece (`fi_query_atomic`
/// reports this divided by the element size); parts carry what fits a cell.
pub const ATOMIC_LIMIT: usize = 4096;
/// Parts in flight (sent, not answered) per endpoint: bounds what a
/// target holds for us, and keeps a large operation from filling the
/// peer's ring for everyone.
const MAX_PARTS_OUT: usize = 128;
/// The transport `ctx` of our parts and answers (the endpoint's sends
/// count up from 0 and never reach it).
const CTX_BIT: u64 = 1 << 63;
/// The transport `ctx` of an answer (its failure concerns nobody here).
const ANSWER_CTX: u64 = CTX_BIT | 1 << 62;
/// The smallest part that moves by cross-memory attach: below it, the
/// few cells' copies cost less than the target's system calls.
const CMA_FROM: usize = 16 << 10;
/// Empty looks for answers after which the initiator yields its
/// processor once (the target, which moves the bytes, may be waiting for
/// it).
const YIELD_AFTER: u32 = 32;
/// Requests from peers kept for reuse of their buffers.
const SPARE_BUFFERS: usize = 64;
/// The most bytes an answer carries: a cell's payload (`ep.rs` sizes
/// cells so that an inject fits one).
const CELL_PAYLOAD: usize = crate::provider::INJECT_SIZE;

/// Whether a transport `ctx` is one of ours.
pub(super) fn owns(ctx: u64) -> bool {
    ctx & CTX_BIT != 0
}

/// What an operation does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum What {
    Write,
    Read,
    Atomic(AtomicTag),
}

/// A range of an operation to send: `len` bytes of remote piece `piece`
/// from `off` on, which are the local bytes from `local` on.
#[derive(Clone, Copy)]
struct Span {
    piece: usize,
    off: usize,
    local: usize,
    len: usize,
    /// It ends the operation: its last part carries `RMA_LAST`.
    last: bool,
}

/// A one-sided operation posted by the application.
struct OneSided {
    tx: TxCtx,
    to: Addr,
    what: What,
    /// The application's buffers: a write's source, a read's destination,
    /// an atomic's result buffers (valid until the completion).
    local: IoVec,
    /// An injected write's data, or an atomic's operands (copied when
    /// posted).
    owned: Option<Vec<u8>>,
    /// A compare atomic's compare values.
    compare: Vec<u8>,
    rma: [RmaIov; IoVec::CAP],
    n: usize,
    data: Option<u64>,
    fence: bool,
    total: usize,
    /// The next bytes to send: remote piece, offset in it, local offset.
    piece: usize,
    off: usize,
    local_off: usize,
    /// Parts to send again in cells (the target refused cross-memory
    /// attach), before the rest.
    redo: VecDeque<Span>,
    /// Parts sent and not answered.
    out: usize,
    failure: Option<Failure>,
    /// In the issue queue.
    queued: bool,
}

/// What an operation is, as posted: everything but the progress of
/// sending it.
struct Posted {
    tx: TxCtx,
    what: What,
    local: IoVec,
    owned: Option<Vec<u8>>,
    compare: Vec<u8>,
    data: Option<u64>,
    flags: u64,
    total: usize,
}

impl OneSided {
    /// An operation to `to` with nothing sent yet.
    fn new(p: Posted, to: Addr, rma: &[RmaIov]) -> OneSided {
        let n = rma.len().min(IoVec::CAP);
        let mut pieces = [RmaIov::default(); IoVec::CAP];
        pieces[..n].copy_from_slice(&rma[..n]);
        OneSided {
            tx: p.tx,
            to,
            what: p.what,
            local: p.local,
            owned: p.owned,
            compare: p.compare,
            rma: pieces,
            n,
            data: p.data,
            fence: p.flags & FI_FENCE != 0,
            total: p.total,
            piece: 0,
            off: 0,
            local_off: 0,
            redo: VecDeque::new(),
            out: 0,
            failure: None,
            queued: false,
        }
    }

    /// Whether everything has been sent (or nothing more will be).
    fn all_sent(&self) -> bool {
        self.failure.is_some() || (self.piece >= self.n && self.redo.is_empty())
    }
}

/// A part sent, waiting for its answer.
struct Part {
    op: u64,
    to: Addr,
    span: Span,
    cma: bool,
    /// Bytes its answer carries (an inline read's, a fetch's values).
    back: usize,
    /// The chunk of our bounce area holding a write's bytes, ours again
    /// once the part is answered or failed.
    chunk: Option<usize>,
    /// A read that asked to be answered through the target's bounce area.
    bounce_read: bool,
}

/// What waits for the transport, in arrival order: a part that needs it
/// (cross-memory attach), and every cell and peer loss that came after.
enum Later {
    Cell {
        from: Addr,
        meta: Meta,
        bytes: Vec<u8>,
    },
    Gone(Addr),
}

/// An answer waiting for room in the initiator's ring.
struct Answer {
    to: Addr,
    meta: Meta,
    payload: Vec<u8>,
}

/// The endpoint's one-sided state, both sides.
pub(super) struct Rma {
    /// The domain's registrations, which peers' accesses are checked
    /// against.
    mr: Arc<MrTable>,
    ops: HashMap<u64, OneSided>,
    /// Operations with parts left to send, in the order they were posted.
    issue: VecDeque<u64>,
    /// Operations held behind a fence, in order.
    held: VecDeque<OneSided>,
    parts: HashMap<u64, Part>,
    next_id: u64,
    /// Peers whose last answer said they reach our memory by
    /// cross-memory attach (`ANSWER_CMA`).
    reach: HashSet<Addr>,
    /// Target: a part that needs the transport and what came after it.
    work: VecDeque<Later>,
    /// `work` is being replayed: cells and losses go through at once.
    replaying: bool,
    /// An answer came since the last pump.
    answered: bool,
    /// Pumps in a row that found parts waiting and no answer.
    idle: u32,
    answers: VecDeque<Answer>,
    spare: Vec<Vec<u8>>,
}

impl Rma {
    pub(super) fn new(mr: Arc<MrTable>) -> Rma {
        Rma {
            mr,
            ops: HashMap::new(),
            issue: VecDeque::new(),
            held: VecDeque::new(),
            parts: HashMap::new(),
            next_id: 0,
            reach: HashSet::new(),
            work: VecDeque::new(),
            replaying: false,
            answered: false,
            idle: 0,
            answers: VecDeque::new(),
            spare: Vec::new(),
        }
    }

    /// Operations posted and not completed.
    pub(super) fn pending(&self) -> usize {
        self.ops.len() + self.held.len()
    }

    /// Whether progress has anything to do here.
    pub(super) fn busy(&self) -> bool {
        !(self.work.is_empty() && self.answers.is_empty() && self.issue.is_empty())
    }
}

fn peer_failure(name: PeerName, err: c_int, cause: &'static str) -> Failure {
    Failure {
        peer_name: Some(name),
        ..Failure::cause(err, cause)
    }
}

/// `f` of each buffer of `v`, in an array (no allocation), and how many.
fn per_buf<'a, T: Copy>(
    v: &'a IoVec,
    empty: T,
    f: impl Fn(&'a IoBuf) -> T,
) -> ([T; IoVec::CAP], usize) {
    let mut out = [empty; IoVec::CAP];
    for (d, b) in out.iter_mut().zip(v.iter()) {
        *d = f(b);
    }
    (out, v.len())
}

/// The buffers of `v` as slices, and how many.
fn slices_of(v: &IoVec) -> ([&[u8]; IoVec::CAP], usize) {
    per_buf(v, &[], IoBuf::as_slice)
}

/// The `(address, length)` ranges of `v`, and how many.
fn ranges_of(v: &IoVec) -> ([(usize, usize); IoVec::CAP], usize) {
    per_buf(v, (0, 0), |b| (b.addr(), b.len()))
}

impl<K: Token> Path<K> {
    /// `EndpointOps::rma` to the peer `to`.
    pub fn rma(&mut self, h: &mut Host<'_, K>, op: &RmaOp<'_>, to: Addr) -> Result<()> {
        let limits = self.st.limits;
        let len = one_sided::check_rma(
            PROV,
            op,
            limits.rma_iov_limit.min(IoVec::CAP),
            limits.inject_size,
        )?;
        let inject = op.write && one_sided::injected(op.flags, op.internal);
        let owned = inject.then(|| {
            let mut v = Vec::with_capacity(len);
            for b in op.iov {
                v.extend_from_slice(b.as_slice());
            }
            v
        });
        let p = Posted {
            tx: TxCtx::of_rma(op),
            what: if op.write { What::Write } else { What::Read },
            local: IoVec::from_slice(op.iov).ok_or(Error::Inval)?,
            owned,
            compare: Vec::new(),
            data: op.data.filter(|_| op.write),
            flags: op.flags,
            total: len,
        };
        self.start_one_sided(h, p, op.rma, to)
    }

    /// `EndpointOps::atomic` to the peer `to`: operands and compare
    /// values are copied at once (at most `ATOMIC_LIMIT` bytes per remote
    /// piece).
    pub fn atomic(&mut self, h: &mut Host<'_, K>, op: &AtomicReq<'_>, to: Addr) -> Result<()> {
        let rma_iov_limit = self.st.limits.rma_iov_limit.min(IoVec::CAP);
        let args = one_sided::gather_atomic(PROV, op, rma_iov_limit, ATOMIC_LIMIT)?;
        let tag = AtomicTag {
            kind: op.kind,
            op: op.op,
            datatype: op.datatype,
            count: 0,
        };
        let p = Posted {
            tx: TxCtx::of_atomic(op),
            what: What::Atomic(tag),
            local: IoVec::from_slice(op.result).ok_or(Error::Inval)?,
            owned: Some(args.operand),
            compare: args.compare,
            data: op.data,
            flags: op.flags,
            total: args.len,
        };
        self.start_one_sided(h, p, op.rma, to)
    }

    /// Starts (or holds, behind a fence) an operation its caller checked,
    /// on the remote pieces `rma` of the peer `to`.
    fn start_one_sided(
        &mut self,
        h: &mut Host<'_, K>,
        p: Posted,
        rma: &[RmaIov],
        to: Addr,
    ) -> Result<()> {
        if self.tx_used() >= self.st.limits.queue_size || !h.core.sinks.tx_room(&p.tx) {
            self.progress(h);
            return Err(Error::Again);
        }
        let o = OneSided::new(p, to, rma);
        self.st.posted += 1;
        let st = &mut self.st;
        if !st.rma.held.is_empty() || (o.fence && !st.rma.ops.is_empty()) {
            st.rma.held.push_back(o);
            return Ok(());
        }
        let mut side = Self::side(h, st);
        side.rma_begin(o);
        side.rma_issue(&mut self.tp);
        Ok(())
    }
}

impl<K: Token> Side<'_, K> {
    /// Puts an operation in flight: its parts go out from the issue queue.
    fn rma_begin(&mut self, mut o: OneSided) {
        let id = self.p.rma.next_id;
        self.p.rma.next_id = id.wrapping_add(1);
        o.queued = true;
        self.p.rma.ops.insert(id, o);
        self.p.rma.issue.push_back(id);
    }

    /// Progress's share: requests that waited for the transport, answers
    /// that waited for room, parts that wait to go.
    pub(super) fn rma_pump(&mut self, tp: &mut Transport) {
        if std::mem::take(&mut self.p.rma.answered) || self.p.rma.parts.is_empty() {
            self.p.rma.idle = 0;
        } else {
            // Waiting for a target that may share our processor: after a
            // few empty looks, let it run (it moves the bytes; we only
            // wait for its answers).
            self.p.rma.idle = self.p.rma.idle.wrapping_add(1);
            if self.p.rma.idle.is_multiple_of(YIELD_AFTER) {
                std::thread::yield_now();
            }
        }
        if !self.p.rma.busy() {
            return;
        }
        self.rma_flush_answers(tp);
        self.p.rma.replaying = true;
        while let Some(w) = self.p.rma.work.pop_front() {
            match w {
                Later::Cell { from, meta, bytes } => {
                    match Op::of(meta.flags) {
                        Some(Op::Write | Op::Read | Op::Atomic) => {
                            self.rma_serve(Some(tp), from, &meta, &bytes);
                            // Each answer at once: its initiator may post
                            // more while we move the next part's bytes.
                            self.rma_flush_answers(tp);
                        }
                        _ => {
                            let pid = if tp.cma_ok(from) {
                                tp.peer_pid(from)
                            } else {
                                None
                            };
                            self.on_cell(from, pid, &meta, &bytes, tp.areas())
                        }
                    }
                    if self.p.rma.spare.len() < SPARE_BUFFERS {
                        self.p.rma.spare.push(bytes);
                    }
                }
                Later::Gone(addr) => self.peer_gone(addr),
            }
        }
        self.p.rma.replaying = false;
        self.rma_issue(tp);
    }

    /// Sends the answers waiting for room, in order, while there is room.
    fn rma_flush_answers(&mut self, tp: &mut Transport) {
        while let Some(a) = self.p.rma.answers.front() {
            // Whether the initiator may name its buffers to us: only once
            // we said we reach them.
            let mut meta = a.meta;
            if !self.p.no_cma && tp.cma_ok(a.to) {
                meta.flags |= ANSWER_CMA;
            }
            match tp.send(a.to, meta, &[&a.payload], ANSWER_CTX) {
                Err(Error::Again) => break,
                // Sent, or never to be (the initiator is gone).
                _ => {
                    self.p.rma.answers.pop_front();
                }
            }
        }
    }

    /// Sends the parts of the operations in the issue queue, in order,
    /// while the window and the transport take them.
    fn rma_issue(&mut self, tp: &mut Transport) {
        let cap = tp.payload_capacity();
        while let Some(&id) = self.p.rma.issue.front() {
            if self.p.rma.parts.len() >= MAX_PARTS_OUT {
                return;
            }
            let Some(o) = self.p.rma.ops.get(&id) else {
                self.p.rma.issue.pop_front();
                continue;
            };
            if o.all_sent() {
                if let Some(o) = self.p.rma.ops.get_mut(&id) {
                    o.queued = false;
                }
                self.p.rma.issue.pop_front();
                self.rma_settle(id);
                continue;
            }
            let cma_ok = !self.p.no_cma && self.p.rma.reach.contains(&o.to) && tp.cma_ok(o.to);
            match self.rma_send_part(tp, id, cap, cma_ok) {
                Ok(()) => {}
                Err(Error::Again) => return,
                Err(e) => {
                    let Some(to) = self.p.rma.ops.get(&id).map(|o| o.to) else {
                        continue;
                    };
                    let f = failed_send(self.p.label(to), e);
                    if let Some(o) = self.p.rma.ops.get_mut(&id) {
                        o.failure.get_or_insert(f);
                    }
                }
            }
        }
    }

    /// Sends the next part of operation `id`.
    fn rma_send_part(
        &mut self,
        tp: &mut Transport,
        id: u64,
        cap: usize,
        cma_ok: bool,
    ) -> Result<()> {
        let Some(o) = self.p.rma.ops.get_mut(&id) else {
            return Ok(());
        };
        // The next span: one to send again in cells, or the rest of the
        // current remote piece.
        let (span, forced_inline) = match o.redo.front() {
            Some(s) => (*s, true),
            None => {
                let r = o.rma[o.piece];
                let len = r.len - o.off;
                let last = o.piece + 1 == o.n;
                (
                    Span {
                        piece: o.piece,
                        off: o.off,
                        local: o.local_off,
                        len,
                        last,
                    },
                    false,
                )
            }
        };
        let room = cap.saturating_sub(RMA_HEADER);
        // A peer with a bounce area gets large parts through it (ours for a
        // write, its own for a read's answer), not by cross-memory attach:
        // measured here at 1 MiB, 14 against 9 GB/s for writes and 13
        // against 8 for reads (the kernel walks and pins every page of
        // each range; two plain copies in two processes, pipelined, cost
        // less).
        let cma_ok = cma_ok && tp.areas().chunks_of(o.to) == 0;
        let (chunk, cma, back) = match o.what {
            What::Write => {
                if !forced_inline && cma_ok && o.owned.is_none() && span.len >= CMA_FROM {
                    (span.len, true, 0)
                } else {
                    (span.len.min(room), false, 0)
                }
            }
            What::Read => {
                if !forced_inline && cma_ok && span.len >= CMA_FROM {
                    (span.len, true, 0)
                } else {
                    // More than a cell: answered through a chunk of the
                    // target's area, unless this span is asked again.
                    let chunk = tp.areas().chunk_size(o.to).filter(|_| !forced_inline);
                    let n = match chunk {
                        Some(c) if span.len > cap => span.len.min(c),
                        _ => span.len.min(cap),
                    };
                    (n, false, n)
                }
            }
            What::Atomic(t) => {
                let size = t.size().unwrap_or(1);
                let vectors = usize::from(t.op != FI_ATOMIC_READ)
                    + usize::from(t.kind == AtomicKind::Compare);
                let per = (room / (size * vectors.max(1))).min(cap / size).max(1);
                let n = (span.len / size).min(per) * size;
                let back = if t.kind == AtomicKind::Base { 0 } else { n };
                (n, false, back)
            }
        };
        // A write of more than a cell goes through a chunk of our bounce
        // area while one is free: one cell for up to a chunk, which the
        // target copies out in one go (else in cells).
        let bounce = match o.what {
            What::Write if !cma && span.len > room => {
                let free = self.p.bounce.free_chunk();
                // None free but that peer holds some: they come back with
                // its answers, so wait (cells would be 4 KiB copies).
                if free.is_none() && self.p.bounce.holds_any(o.to) {
                    return Err(Error::Again);
                }
                free
            }
            _ => None,
        };
        let bounce_read = matches!(o.what, What::Read) && !cma && chunk > cap;
        if bounce_read {
            // No more such reads to that peer than it has chunks, counting
            // those we have not given back yet: a target out of chunks
            // refuses, and the span goes again in cells.
            let to = o.to;
            let lent = self.p.bounce.owed_to(to).count_ones() as usize;
            let out = self.p.rma.parts.values();
            let out = out.filter(|p| p.bounce_read && p.to == to).count();
            if lent + out >= tp.areas().chunks_of(to) {
                return Err(Error::Again);
            }
        }
        let chunk = match bounce {
            Some(_) => span.len.min(self.p.bounce.chunk_size()),
            None => chunk,
        };
        let r = o.rma[span.piece];
        let word = match o.what {
            What::Atomic(t) => AtomicTag {
                count: (chunk / t.size().unwrap_or(1)) as u64,
                ..t
            }
            .encode(),
            _ => chunk as u64,
        };
        let ends = span.last && chunk == span.len;
        let local = o.local.window(span.local, chunk);
        let (ranges, nr) = ranges_of(&local);
        let hdr = RmaHeader {
            addr: r.addr.wrapping_add(span.off as u64),
            word,
            total: o.total as u64,
            flags: if ends { RMA_LAST } else { 0 }
                | if cma { RMA_CMA } else { 0 }
                | if bounce.is_some() || bounce_read {
                    RMA_BOUNCE
                } else {
                    0
                },
        };
        let head = hdr.encode();
        let mut rbuf = [0u8; RNDV_MAX];
        let mut parts: [&[u8]; 2 + IoVec::CAP] = [&[]; 2 + IoVec::CAP];
        parts[0] = &head;
        let mut k = 1;
        let index = bounce.map_or(0, |c| c as u64).to_le_bytes();
        if let Some(c) = bounce {
            match &o.owned {
                Some(v) => tp.bounce_write(c, &[&v[span.local..span.local + chunk]])?,
                None => {
                    let (bytes, n) = slices_of(&local);
                    tp.bounce_write(c, &bytes[..n])?
                }
            };
        }
        match (o.what, cma) {
            _ if bounce.is_some() => {
                parts[1] = &index;
                k = 2;
            }
            (_, true) => {
                let used = encode_rndv(&ranges[..nr], &mut rbuf).ok_or(Error::Inval)?;
                parts[1] = &rbuf[..used];
                k = 2;
            }
            (What::Write, false) => match &o.owned {
                Some(v) => {
                    parts[1] = &v[span.local..span.local + chunk];
                    k = 2;
                }
                None => {
                    for b in local.iter() {
                        parts[k] = b.as_slice();
                        k += 1;
                    }
                }
            },
            (What::Read, false) => {}
            (What::Atomic(t), false) => {
                let at = span.local..span.local + chunk;
                if t.op != FI_ATOMIC_READ {
                    if let Some(v) = &o.owned {
                        parts[k] = &v[at.clone()];
                        k += 1;
                    }
                }
                if t.kind == AtomicKind::Compare {
                    parts[k] = &o.compare[at];
                    k += 1;
                }
            }
        }
        let op = match o.what {
            What::Write => Op::Write,
            What::Read => Op::Read,
            What::Atomic(_) => Op::Atomic,
        };
        let data = o.data.filter(|_| ends);
        let part_id = self.p.rma.next_id;
        let meta = Meta {
            kind: Kind::Inline,
            sender: 0,
            flags: proto::flags(op, None, data),
            tag: r.key,
            data: data.unwrap_or(0),
            token: part_id,
        };
        tp.send(o.to, meta, &parts[..k], CTX_BIT | part_id)?;
        self.p.rma.next_id = part_id.wrapping_add(1);
        // Advance past what went.
        if forced_inline {
            if chunk == span.len {
                o.redo.pop_front();
            } else if let Some(s) = o.redo.front_mut() {
                s.off += chunk;
                s.local += chunk;
                s.len -= chunk;
            }
        } else {
            o.off += chunk;
            o.local_off += chunk;
            if o.off >= r.len {
                o.piece += 1;
                o.off = 0;
            }
        }
        o.out += 1;
        let to = o.to;
        self.p.rma.parts.insert(
            part_id,
            Part {
                op: id,
                to,
                span: Span {
                    len: chunk,
                    last: ends,
                    ..span
                },
                cma,
                back,
                chunk: bounce,
                bounce_read,
            },
        );
        if let Some(c) = bounce {
            self.p.bounce.lend(c, to, CTX_BIT | part_id);
        }
        Ok(())
    }

    /// Completes operation `id` once it is wholly sent and answered; then
    /// starts what a fence held.
    fn rma_settle(&mut self, id: u64) {
        let Some(o) = self.p.rma.ops.get(&id) else {
            return;
        };
        if o.out > 0 || !o.all_sent() || o.queued {
            return;
        }
        if let Some(o) = self.p.rma.ops.remove(&id) {
            match o.failure {
                None => self.core.sinks.tx_done(&o.tx),
                Some(f) => self.core.sinks.tx_err(&o.tx, f),
            }
        }
        while let Some(h) = self.p.rma.held.front() {
            if h.fence && !self.p.rma.ops.is_empty() {
                break;
            }
            if let Some(h) = self.p.rma.held.pop_front() {
                self.rma_begin(h);
            }
        }
    }

    /// Part `part_id` ended: answered (`Ok`), refused or lost (`Err`).
    fn rma_part_done(&mut self, part_id: u64, r: core::result::Result<(), Failure>) {
        let Some(p) = self.p.rma.parts.remove(&part_id) else {
            return;
        };
        if let Some(c) = p.chunk {
            // The target is done with it (or will never read it).
            self.p.bounce.release(c, p.to, CTX_BIT | part_id);
        }
        let Some(o) = self.p.rma.ops.get_mut(&p.op) else {
            return;
        };
        o.out = o.out.saturating_sub(1);
        if let Err(f) = r {
            o.failure.get_or_insert(f);
        }
        self.rma_settle(p.op);
    }

    /// The transport could not deliver our cell `ctx` to `to`.
    pub(super) fn rma_send_failed(&mut self, ctx: u64, to: Addr, e: Error) {
        if ctx & ANSWER_CTX == ANSWER_CTX {
            return;
        }
        self.rma_part_done(ctx & !CTX_BIT, Err(failed_send(self.p.label(to), e)));
    }

    /// `addr` went away: what is in flight to it fails, what it asked of
    /// us is dropped.
    pub(super) fn rma_peer_gone(&mut self, addr: Addr) {
        let lost: Vec<u64> = (self.p.rma.parts.iter())
            .filter(|(_, p)| p.to == addr)
            .map(|(k, _)| *k)
            .collect();
        let ops: Vec<u64> = (self.p.rma.ops.iter())
            .filter(|(_, o)| o.to == addr)
            .map(|(k, _)| *k)
            .collect();
        let f = gone(self.p.label(addr));
        for id in &ops {
            if let Some(o) = self.p.rma.ops.get_mut(id) {
                o.failure.get_or_insert(f);
                o.redo.clear();
            }
        }
        for k in lost {
            self.rma_part_done(k, Err(gone(self.p.label(addr))));
        }
        for id in ops {
            self.rma_settle(id);
        }
        self.p.rma.answers.retain(|a| a.to != addr);
        self.p.rma.reach.remove(&addr);
    }

    /// A one-sided cell from `from` (a request or an answer).
    pub(super) fn rma_cell(
        &mut self,
        op: Op,
        from: Addr,
        meta: &Meta,
        bytes: &[u8],
        areas: Areas<'_>,
    ) {
        if op == Op::Answer {
            return self.rma_answer(from, meta, bytes, areas);
        }
        let needs_transport =
            RmaHeader::decode(bytes).is_some_and(|(h, _)| h.flags & (RMA_CMA | RMA_BOUNCE) != 0);
        if !needs_transport {
            return self.rma_serve(None, from, meta, bytes);
        }
        // After this progress call, with the transport; what comes after
        // it waits behind it (`rma_hold`).
        self.rma_later(from, meta, bytes);
    }

    fn rma_later(&mut self, from: Addr, meta: &Meta, bytes: &[u8]) {
        let mut b = self.p.rma.spare.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(bytes);
        self.p.rma.work.push_back(Later::Cell {
            from,
            meta: *meta,
            bytes: b,
        });
    }

    /// Whether a cell from `from` must wait behind a part that waits for
    /// the transport (so that it takes effect after that part: a send
    /// after a write is received after the write landed); it is kept if
    /// so.
    pub(super) fn rma_hold(&mut self, from: Addr, meta: &Meta, bytes: &[u8]) -> bool {
        if self.p.rma.work.is_empty() || self.p.rma.replaying {
            return false;
        }
        self.rma_later(from, meta, bytes);
        true
    }

    /// As [`Side::rma_hold`], for the news that `addr` is gone (its last
    /// cells came before it).
    pub(super) fn rma_hold_gone(&mut self, addr: Addr) -> bool {
        if self.p.rma.work.is_empty() || self.p.rma.replaying {
            return false;
        }
        self.p.rma.work.push_back(Later::Gone(addr));
        true
    }

    /// Whether a send to `to` must wait: one-sided operations posted
    /// before it have parts not yet handed to the transport (a send never
    /// overtakes an earlier write: `FI_ORDER_SAW`).
    pub(super) fn rma_unsent_to(&self, to: Addr) -> bool {
        (self.p.rma.held.iter()).any(|o| o.to == to)
            || (self.p.rma.issue.iter())
                .filter_map(|id| self.p.rma.ops.get(id))
                .any(|o| o.to == to && !o.all_sent())
    }

    /// Target: handles one part (`tp` is there for cross-memory attach;
    /// parts that need it are only handled with it) and answers.
    fn rma_serve(&mut self, tp: Option<&mut Transport>, from: Addr, meta: &Meta, bytes: &[u8]) {
        let mut payload = Vec::new();
        let mut bounced = false;
        let outcome = self.rma_access(tp, from, meta, bytes, &mut payload, &mut bounced);
        let (status, cause) = match outcome {
            Ok(()) => (0, 0),
            Err(Refusal::Denied(d)) => (d.code(), d.to_u64()),
            Err(Refusal::NoCma) => (FI_EACCES, NO_CMA),
            Err(Refusal::NoBounce) => (FI_EAGAIN, NO_BOUNCE),
            Err(Refusal::Bad(why)) => {
                self.refuse(from, why);
                (FI_EINVAL, 0)
            }
            Err(Refusal::Failed(e)) => (e, 0),
        };
        if status != 0 {
            payload.clear();
        }
        let answer = Answer {
            to: from,
            meta: Meta {
                kind: Kind::Inline,
                sender: 0,
                flags: Op::Answer.bits() | if bounced { ANSWER_BOUNCE } else { 0 },
                tag: cause,
                data: status as u64,
                token: meta.token,
            },
            payload,
        };
        self.p.rma.answers.push_back(answer);
    }

    /// Target: checks one part and does it; what its answer carries goes
    /// to `back` (`bounced`: the index of the chunk of ours holding it).
    fn rma_access(
        &mut self,
        tp: Option<&mut Transport>,
        from: Addr,
        meta: &Meta,
        bytes: &[u8],
        back: &mut Vec<u8>,
        bounced: &mut bool,
    ) -> core::result::Result<(), Refusal> {
        let op = Op::of(meta.flags).ok_or(Refusal::Bad("an unknown operation"))?;
        let (h, rest) = RmaHeader::decode(bytes).ok_or(Refusal::Bad("a malformed RMA header"))?;
        let key = meta.tag;
        let data = (meta.flags & proto::HAS_DATA != 0).then_some(meta.data);
        let last = h.flags & RMA_LAST != 0;
        let total = usize::try_from(h.total).unwrap_or(usize::MAX);
        let refused = |what: &str, len: usize, d: Denied| {
            one_sided::log_refusal(PROV, &from, what, (key, h.addr, len as u64), d);
            Refusal::Denied(d)
        };
        if let Op::Atomic = op {
            let t = AtomicTag::decode(h.word).ok_or(Refusal::Bad("an unknown atomic"))?;
            let (operand, compare) = t
                .split(rest)
                .ok_or(Refusal::Bad("atomic operands of the wrong length"))?;
            let len = t.len().ok_or(Refusal::Bad("an atomic too large"))?;
            if h.flags & RMA_CMA != 0 || len > CELL_PAYLOAD {
                return Err(Refusal::Bad("an atomic part this endpoint does not send"));
            }
            back.resize(if t.kind == AtomicKind::Base { 0 } else { len }, 0);
            let mr = apply_atomic(&self.p.rma.mr, key, h.addr, t, operand, compare, back)
                .map_err(|d| refused("atomic", len, d))?;
            if last {
                let src = self.source_of(from);
                remote_complete(&self.core.sinks, &mr, t.writes(), total, data, src);
            }
            return Ok(());
        }
        let write = match op {
            Op::Write => true,
            Op::Read => false,
            _ => return Err(Refusal::Bad("not a one-sided request")),
        };
        let len = usize::try_from(h.word).map_err(|_| Refusal::Bad("a length too large"))?;
        let bounce_read = !write && h.flags & RMA_BOUNCE != 0;
        let bounce = if write && h.flags & RMA_BOUNCE != 0 {
            let ix = <[u8; 8]>::try_from(rest)
                .map_err(|_| Refusal::Bad("a chunk index of the wrong length"))?;
            let c = usize::try_from(u64::from_le_bytes(ix)).unwrap_or(usize::MAX);
            let fits = tp.as_ref().is_some_and(|tp| tp.areas().holds(from, c, len));
            if !write || h.flags & RMA_CMA != 0 || len > crate::bounce::MAX_CHUNK || !fits {
                return Err(Refusal::Bad("a chunk beyond its bounce area"));
            }
            Some(c)
        } else {
            None
        };
        let cma = if bounce.is_some() {
            None
        } else if h.flags & RMA_CMA != 0 {
            let (sum, r) = decode_rndv(rest).ok_or(Refusal::Bad("malformed ranges"))?;
            if sum != len {
                return Err(Refusal::Bad("ranges that do not cover the part"));
            }
            Some(r)
        } else {
            let fits = if write {
                rest.len() == len
            } else if bounce_read {
                rest.is_empty() && len <= crate::bounce::MAX_CHUNK
            } else {
                rest.is_empty() && len <= CELL_PAYLOAD
            };
            if !fits {
                return Err(Refusal::Bad("an inline part of the wrong length"));
            }
            None
        };
        let (what, access) = if write {
            ("write", FI_REMOTE_WRITE)
        } else {
            ("read", FI_REMOTE_READ)
        };
        let (mr, region) = self
            .p
            .rma
            .mr
            .access(key, h.addr, len, access)
            .map_err(|d| refused(what, len, d))?;
        match (cma, tp) {
            (None, Some(tp)) if bounce.is_some() => {
                // Straight from the initiator's chunk into the region.
                let c = bounce.unwrap_or(0);
                if !fill_from_chunk(tp.areas(), from, c, &region, len) {
                    return Err(Refusal::Failed(FI_EIO));
                }
            }
            (None, _) if write => {
                region.scatter(0, rest);
            }
            (None, Some(tp)) if bounce_read => {
                // Into a free chunk of ours, lent to the initiator until
                // its `FREE`; none free (or too small): ask again in cells.
                let c = match self.p.bounce.free_chunk() {
                    Some(c) if len <= self.p.bounce.chunk_size() => c,
                    _ => return Err(Refusal::NoBounce),
                };
                let (slices, n) = slices_of(&region);
                tp.bounce_write(c, &slices[..n])
                    .map_err(|e| Refusal::Failed(e.errno()))?;
                self.p
                    .bounce
                    .lend(c, from, CTX_BIT | ANSWER_CTX | meta.token);
                back.extend_from_slice(&(c as u64).to_le_bytes());
                *bounced = true;
            }
            (None, _) => {
                back.reserve(len);
                for b in region.iter() {
                    back.extend_from_slice(b.as_slice());
                }
            }
            (Some(r), Some(tp)) => {
                if self.p.no_cma || !tp.cma_ok(from) {
                    return Err(Refusal::NoCma);
                }
                let moved = if write {
                    tp.cma_read_into(from, &region, &r)
                } else {
                    let local: Vec<IoSlice<'_>> =
                        region.iter().map(|b| IoSlice::new(b.as_slice())).collect();
                    tp.cma_write(from, &local, &r)
                };
                match moved {
                    Ok(m) if m == len => {}
                    Ok(_) => return Err(Refusal::Failed(FI_EIO)),
                    Err(Error::Other(FI_EACCES)) => return Err(Refusal::NoCma),
                    Err(e) => return Err(Refusal::Failed(e.errno())),
                }
            }
            (Some(_), None) => {
                return Err(Refusal::Bad(
                    "a cross-memory part handled without the transport",
                ))
            }
        }
        if last {
            let src = self.source_of(from);
            remote_complete(&self.core.sinks, &mr, write, total, data, src);
        }
        Ok(())
    }

    /// Initiator: part `id`'s answer from `from` is malformed (`why`,
    /// logged): the part fails.
    fn bad_answer(&mut self, id: u64, from: Addr, why: &'static str) {
        self.refuse(from, why);
        let f = peer_failure(self.p.label(from), FI_EIO, why);
        self.rma_part_done(id, Err(f));
    }

    /// Initiator: the target's answer to one of our parts.
    fn rma_answer(&mut self, from: Addr, meta: &Meta, bytes: &[u8], areas: Areas<'_>) {
        self.p.rma.answered = true;
        let id = meta.token;
        let Some(p) = self.p.rma.parts.get(&id).filter(|p| p.to == from) else {
            return self.refuse(from, "an answer to no part sent to that peer");
        };
        let (span, cma, back, bounce_read) = (p.span, p.cma, p.back, p.bounce_read);
        let op = p.op;
        if meta.flags & ANSWER_CMA != 0 {
            self.p.rma.reach.insert(from);
        } else {
            self.p.rma.reach.remove(&from);
        }
        if meta.data == 0 && meta.flags & ANSWER_BOUNCE != 0 {
            // The bytes are in a chunk of the target's area: copy them out
            // (index and length checked against its geometry), give the
            // chunk back with the next `FREE`.
            let c = <[u8; 8]>::try_from(bytes)
                .map(|b| usize::try_from(u64::from_le_bytes(b)).unwrap_or(usize::MAX))
                .ok()
                .filter(|&c| {
                    bounce_read && c < crate::bounce::MAX_CHUNKS && areas.holds(from, c, back)
                });
            let Some(c) = c else {
                return self.bad_answer(id, from, "an answer through a chunk it does not have");
            };
            let mut bad = false;
            if let Some(o) = self.p.rma.ops.get(&op) {
                let dst = o.local.window(span.local, span.len);
                bad = !fill_from_chunk(areas, from, c, &dst, back);
            }
            self.p.bounce.owe(from, c);
            if bad {
                let f = peer_failure(self.p.label(from), FI_EIO, "the target's chunk went away");
                return self.rma_part_done(id, Err(f));
            }
            return self.rma_part_done(id, Ok(()));
        }
        if meta.data == 0 {
            if bytes.len() != back {
                return self.bad_answer(id, from, "an answer of the wrong length");
            }
            if let Some(o) = self.p.rma.ops.get(&op) {
                o.local.window(span.local, span.len).scatter(0, bytes);
            }
            return self.rma_part_done(id, Ok(()));
        }
        if (meta.tag == NO_CMA && cma) || (meta.tag == NO_BOUNCE && bounce_read) {
            // Again, in cells; and, refused cross-memory attach, so every
            // later part to that peer.
            if cma {
                self.p.rma.reach.remove(&from);
            }
            self.p.rma.parts.remove(&id);
            if let Some(o) = self.p.rma.ops.get_mut(&op) {
                o.out = o.out.saturating_sub(1);
                if o.failure.is_none() {
                    o.redo.push_back(span);
                    if !o.queued {
                        o.queued = true;
                        self.p.rma.issue.push_back(op);
                    }
                }
            }
            return self.rma_settle(op);
        }
        let err = c_int::try_from(meta.data).unwrap_or(FI_EIO);
        let cause =
            Denied::from_u64(meta.tag).map_or("the target refused the operation", Denied::cause);
        self.rma_part_done(id, Err(peer_failure(self.p.label(from), err, cause)));
    }
}

/// Why a target did not do a part.
enum Refusal {
    /// The access check said no.
    Denied(Denied),
    /// We cannot reach the initiator by cross-memory attach.
    NoCma,
    /// No chunk of our bounce area is free for a read's answer.
    NoBounce,
    /// The part is malformed (logged).
    Bad(&'static str),
    /// Moving the bytes failed (`FI_E*`).
    Failed(c_int),
}
