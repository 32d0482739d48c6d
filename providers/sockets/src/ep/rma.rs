//! RMA (`fi_read*`, `fi_write*`) on MSG and RDM endpoints.
//!
//! Initiator: an operation becomes one frame per remote piece (`Write`
//! with the target prefix and the data, or `ReadReq` with the prefix),
//! each answered by the target's `RmaResp`; the operation completes when
//! every piece is answered, with the first refusal as its error. Writes
//! go from the application's buffers (injects from a copy made at once);
//! read answers land straight in the application's buffers.
//!
//! Target: the prefix is checked against the domain's registrations
//! (`MrTable::access`: key, overflow-safe range, access) before a byte is
//! touched; an accepted write lands straight from the socket in the
//! registered memory, an accepted read goes out straight from it. A
//! refused piece has its bytes dropped, is answered with the cause, and is
//! logged; the connection stays up.
//!
//! Ordering: the frames of one connection are handled in order, so reads
//! and writes keep every order except write-after-read (a read's answer
//! is sent from registered memory, which a later write may change before
//! the answer has left); `FI_FENCE` holds an operation (and everything
//! posted after it) until the endpoint's earlier RMA operations complete.

use super::parked::Parked;
use super::*;
use crate::wire::{parse_rma_prefix, rma_prefix, AtomicTag, RMA_PREFIX};
use oxifabric::ops::{AtomicReq, RmaIov, RmaOp};
use oxifabric::service::atomic::AtomicKind;
use oxifabric::service::mr::Denied;
use oxifabric::service::rma::{self as one_sided, apply_atomic, remote_complete};

/// An RMA operation in flight.
pub(super) struct RmaPending {
    tx: TxCtx,
    /// Pieces not answered yet.
    left: usize,
    /// The first failure among its pieces.
    failure: Option<Failure>,
}

/// One piece of an operation, waiting for the target's answer.
pub(super) struct RmaPart {
    op: u64,
    /// The RDM peer it went to (None on MSG endpoints): only that peer's
    /// connection may answer it.
    to: Option<SocketAddr>,
    /// A read: where the answer's bytes go.
    read: Option<IoVec>,
    len: usize,
}

/// An operation not started yet (held behind an `FI_FENCE`).
pub(super) struct HeldRma {
    write: bool,
    iov: IoVec,
    /// An injected write's data, copied when it was posted.
    owned: Option<Vec<u8>>,
    rma: [RmaIov; attrs::RMA_IOV_LIMIT],
    n: usize,
    dest: fi_addr_t,
    tx: TxCtx,
    data: Option<u64>,
    fence: bool,
    /// An atomic operation: what to do, and its compare values (its
    /// operands are in `owned`, its result buffers in `iov`).
    atomic: Option<HeldAtomic>,
}

/// The atomic part of a held operation.
pub(super) struct HeldAtomic {
    kind: AtomicKind,
    op: fi_op,
    datatype: fi_datatype,
    size: usize,
    compare: Vec<u8>,
}

impl SockEp {
    /// `EndpointOps::rma`: checks and posts (or holds, behind a fence).
    pub(super) fn post_rma(&self, op: &RmaOp<'_>) -> Result<()> {
        let len = one_sided::check_rma(PROV, op, attrs::RMA_IOV_LIMIT, attrs::INJECT_SIZE)?;
        let tx = TxCtx::of_rma(op);
        let mut guard = self.lock();
        let st = &mut *guard;
        self.tx_admit(st, &tx)?;
        let route = self.local_dest(st, op.dest);
        self.rma_routed(st, op, len, route)
    }

    /// A checked and admitted RMA operation of `len` bytes, the way
    /// `route` says (`post_rma`, or one that waited for its peer's way).
    pub(super) fn rma_routed(
        &self,
        st: &mut EpState,
        op: &RmaOp<'_>,
        len: usize,
        route: Route,
    ) -> Result<()> {
        match route {
            Route::Shm(to) => return Self::on_local(st, |p, h| p.rma(h, op, to)),
            Route::Wait(sa) => return Self::park(st, sa, Parked::rma(op, len)),
            Route::Tcp => {}
        }
        let inject = one_sided::injected(op.flags, op.internal);
        let tx = TxCtx::of_rma(op);
        st.tcp_data += 1;
        if op.write && inject {
            self.copies_admit(st, len + op.rma.len() * RMA_PREFIX)?;
        }
        let mut held = HeldRma {
            write: op.write,
            iov: IoVec::from_slice(op.iov).ok_or(Error::Inval)?,
            owned: (op.write && inject).then(|| {
                let mut v = Vec::with_capacity(len);
                for b in op.iov {
                    v.extend_from_slice(b.as_slice());
                }
                v
            }),
            rma: [RmaIov::default(); attrs::RMA_IOV_LIMIT],
            n: op.rma.len(),
            dest: op.dest,
            tx,
            data: op.data.filter(|_| op.write),
            fence: op.flags & FI_FENCE != 0,
            atomic: None,
        };
        held.rma[..op.rma.len()].copy_from_slice(op.rma);
        self.hold_or_start(st, held)
    }

    /// Starts an operation, or holds it behind a fence.
    fn hold_or_start(&self, st: &mut EpState, held: HeldRma) -> Result<()> {
        if !st.fenced.is_empty() || (held.fence && !st.rma_ops.is_empty()) {
            st.fenced.push_back(held);
            st.tx_queued += 1;
            return Ok(());
        }
        self.start_rma(st, held)
    }

    /// `EndpointOps::atomic`: checks and posts. Operands and compare
    /// values are copied at once (they are small: at most
    /// `attrs::ATOMIC_LIMIT` bytes per remote piece), so the buffers may
    /// be reused when the call returns; fetched values land in the result
    /// buffers.
    pub(super) fn post_atomic(&self, op: &AtomicReq<'_>) -> Result<()> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let route = self.local_dest(st, op.dest);
        if let Route::Wait(_) = route {
            // Refused now rather than when its peer's way is known.
            one_sided::gather_atomic(PROV, op, attrs::RMA_IOV_LIMIT, attrs::ATOMIC_LIMIT)?;
        }
        if let Route::Shm(_) | Route::Wait(_) = route {
            self.tx_admit(st, &TxCtx::of_atomic(op))?;
        }
        self.atomic_routed(st, op, route)
    }

    /// An atomic operation the way `route` says (`post_atomic`, or one
    /// that waited for its peer's way); admitted already unless by TCP.
    pub(super) fn atomic_routed(
        &self,
        st: &mut EpState,
        op: &AtomicReq<'_>,
        route: Route,
    ) -> Result<()> {
        match route {
            // The path checks and copies the operands itself.
            Route::Shm(to) => return Self::on_local(st, |p, h| p.atomic(h, op, to)),
            Route::Wait(sa) => return Self::park(st, sa, Parked::atomic(op)),
            Route::Tcp => {}
        }
        let one_sided::AtomicArgs {
            operand, compare, ..
        } = one_sided::gather_atomic(PROV, op, attrs::RMA_IOV_LIMIT, attrs::ATOMIC_LIMIT)?;
        let tx = TxCtx::of_atomic(op);
        self.tx_admit(st, &tx)?;
        st.tcp_data += 1;
        self.copies_admit(
            st,
            operand.len() + compare.len() + op.rma.len() * RMA_PREFIX,
        )?;
        let mut held = HeldRma {
            write: true,
            iov: IoVec::from_slice(op.result).ok_or(Error::Inval)?,
            owned: Some(operand),
            rma: [RmaIov::default(); attrs::RMA_IOV_LIMIT],
            n: op.rma.len(),
            dest: op.dest,
            tx,
            data: op.data,
            fence: op.flags & FI_FENCE != 0,
            atomic: Some(HeldAtomic {
                kind: op.kind,
                op: op.op,
                datatype: op.datatype,
                size: op.size,
                compare,
            }),
        };
        held.rma[..op.rma.len()].copy_from_slice(op.rma);
        self.hold_or_start(st, held)
    }

    /// Sends the frames of an operation.
    fn start_rma(&self, st: &mut EpState, h: HeldRma) -> Result<()> {
        let (slot, to) = self.route(st, h.dest)?;
        let op_id = st.next_msg_id;
        st.next_msg_id += 1 + h.n as u64;
        prov_log!(
            PROV,
            FI_LOG_DEBUG,
            FI_LOG_EP_DATA,
            "RMA {} {op_id}: {} pieces, {} bytes, to {:?}",
            if h.write { "write" } else { "read" },
            h.n,
            h.iov.total_len(),
            to
        );
        st.rma_ops.insert(
            op_id,
            RmaPending {
                tx: h.tx,
                left: h.n,
                failure: None,
            },
        );
        let mut off = 0;
        for (i, r) in h.rma[..h.n].iter().enumerate() {
            if !st.rma_ops.contains_key(&op_id) {
                break; // failed already (its connection went down)
            }
            let part_id = op_id + 1 + i as u64;
            let after = (h.n - 1 - i) as u64;
            let local = h.iov.window(off, r.len);
            let pre = rma_prefix(r.addr, r.key);
            let (hdr, data, total) = if let Some(a) = &h.atomic {
                let tag = AtomicTag {
                    kind: a.kind,
                    op: a.op,
                    datatype: a.datatype,
                    count: (r.len / a.size) as u64,
                };
                let mut b = Vec::with_capacity(RMA_PREFIX + 2 * r.len);
                b.extend_from_slice(&pre);
                // FI_ATOMIC_READ carries no operands (the application may
                // still have given a buffer).
                if let Some(v) = h.owned.as_ref().filter(|_| a.op != FI_ATOMIC_READ) {
                    b.extend_from_slice(&v[off..off + r.len]);
                }
                if a.kind == AtomicKind::Compare {
                    b.extend_from_slice(&a.compare[off..off + r.len]);
                }
                let mut hdr = Header::control(Op::Atomic, part_id);
                hdr.len = b.len() as u64;
                hdr.tag = tag.encode();
                if let (0, Some(d)) = (after, h.data) {
                    hdr.flags = crate::wire::FLAG_CQ_DATA;
                    hdr.data = d;
                }
                let total = HEADER_LEN + b.len();
                (hdr, TxData::Owned(b), total)
            } else if h.write {
                let mut hdr = Header::control(Op::Write, part_id);
                hdr.len = (RMA_PREFIX + r.len) as u64;
                hdr.tag = after;
                if let (0, Some(d)) = (after, h.data) {
                    hdr.flags = crate::wire::FLAG_CQ_DATA;
                    hdr.data = d;
                }
                let data = match &h.owned {
                    Some(v) => {
                        let mut b = Vec::with_capacity(RMA_PREFIX + r.len);
                        b.extend_from_slice(&pre);
                        b.extend_from_slice(&v[off..off + r.len]);
                        TxData::Owned(b)
                    }
                    None => TxData::Rma {
                        pre,
                        pre_len: RMA_PREFIX,
                        iov: local,
                    },
                };
                (hdr, data, HEADER_LEN + RMA_PREFIX + r.len)
            } else {
                let mut hdr = Header::control(Op::ReadReq, part_id);
                hdr.len = RMA_PREFIX as u64;
                hdr.tag = r.len as u64;
                hdr.data = after;
                let data = TxData::Rma {
                    pre,
                    pre_len: RMA_PREFIX,
                    iov: IoVec::default(),
                };
                (hdr, data, HEADER_LEN + RMA_PREFIX)
            };
            // What comes back: a read's bytes, or the values a fetching
            // atomic found.
            let back = match &h.atomic {
                Some(a) => a.kind != AtomicKind::Base,
                None => !h.write,
            };
            st.rma_parts.insert(
                part_id,
                RmaPart {
                    op: op_id,
                    to,
                    read: back.then_some(local),
                    len: r.len,
                },
            );
            let item = TxItem {
                hdr: hdr.encode(),
                data,
                total,
                off: 0,
                done: None,
            };
            let sent = self.submit_routed(st, (slot, to), item);
            if sent.is_err() {
                self.part_done(st, part_id, Err(Failure::code(FI_ECONNRESET)));
            }
            off += r.len;
        }
        Ok(())
    }

    /// A piece was answered (or failed): the operation completes with its
    /// last piece.
    fn part_done(&self, st: &mut EpState, part_id: u64, r: core::result::Result<(), Failure>) {
        let Some(p) = st.rma_parts.remove(&part_id) else {
            return;
        };
        let Some(o) = st.rma_ops.get_mut(&p.op) else {
            return;
        };
        if let Err(f) = r {
            o.failure.get_or_insert(f);
        }
        o.left -= 1;
        if o.left > 0 {
            return;
        }
        if let Some(o) = st.rma_ops.remove(&p.op) {
            match o.failure {
                None => st.core.sinks.tx_done(&o.tx),
                Some(f) => st.core.sinks.tx_err(&o.tx, f),
            }
        }
        self.release_fenced(st);
    }

    /// Starts held operations that may go now: in order, a fenced one only
    /// when nothing is in flight.
    fn release_fenced(&self, st: &mut EpState) {
        while let Some(h) = st.fenced.front() {
            if h.fence && !st.rma_ops.is_empty() {
                return;
            }
            let Some(h) = st.fenced.pop_front() else {
                return;
            };
            st.tx_queued = st.tx_queued.saturating_sub(1);
            let tx = h.tx;
            if let Err(e) = self.start_rma(st, h) {
                st.core.sinks.tx_err(&tx, Failure::code(e.errno()));
            }
        }
    }

    /// Whether an RMA piece to `sa` still waits for its answer.
    pub(super) fn rma_busy_with(st: &EpState, sa: SocketAddr) -> bool {
        st.rma_parts.values().any(|p| p.to == Some(sa))
    }

    /// A connection went down: the pieces that went to its peer (`gone`
    /// says which) fail with `err`.
    pub(super) fn fail_rma_to(
        &self,
        st: &mut EpState,
        gone: impl Fn(Option<SocketAddr>) -> bool,
        err: Failure,
    ) {
        let dead: Vec<u64> = st
            .rma_parts
            .iter()
            .filter(|(_, p)| gone(p.to))
            .map(|(k, _)| *k)
            .collect();
        for k in dead {
            self.part_done(st, k, Err(err));
        }
    }

    /// Target, `Write` or `ReadReq` header: read the target prefix first.
    pub(super) fn on_rma_header(&self, hdr: Header) -> RxState {
        RxState::Payload {
            hdr: Header {
                len: RMA_PREFIX as u64,
                ..hdr
            },
            dest: Dest::Prefix {
                b: [0; RMA_PREFIX],
                rest: hdr.len - RMA_PREFIX as u64,
            },
            got: 0,
        }
    }

    /// Logs a refused access at the target.
    fn log_refusal(
        &self,
        st: &EpState,
        slot: usize,
        what: &str,
        range: (u64, u64, u64),
        d: Denied,
    ) {
        let peer = st.conns[slot]
            .as_ref()
            .and_then(|c| c.peer.or_else(|| c.stream.peer_addr().ok()));
        let peer = peer.map_or_else(|| "?".to_string(), |p| p.to_string());
        one_sided::log_refusal(PROV, &peer, what, range, d);
    }

    /// Target: whether a write of `len` bytes at the place the prefix `b`
    /// names may land, logging a refusal.
    fn write_access(
        &self,
        st: &EpState,
        slot: usize,
        b: &[u8; RMA_PREFIX],
        len: usize,
    ) -> core::result::Result<(Arc<MemRegion>, IoVec), Denied> {
        let (addr, key) = parse_rma_prefix(b);
        self.domain
            .mr
            .access(key, addr, len, FI_REMOTE_WRITE)
            .inspect_err(|&d| self.log_refusal(st, slot, "write", (key, addr, len as u64), d))
    }

    /// Target, a write's prefix arrived: check it, then let the data land
    /// in the registered memory (or be dropped when refused).
    pub(super) fn on_write_prefix(
        &self,
        st: &mut EpState,
        slot: usize,
        hdr: Header,
        b: &[u8; RMA_PREFIX],
        rest: u64,
    ) {
        let dest = match self.write_access(st, slot, b, rest as usize) {
            Ok((mr, region)) => Dest::Rma {
                region,
                mr: Some(mr),
                refused: None,
            },
            Err(d) => Dest::Rma {
                region: IoVec::default(),
                mr: None,
                refused: Some(d),
            },
        };
        if let Some(c) = st.conns[slot].as_mut() {
            c.rx = RxState::Payload {
                hdr: Header { len: rest, ..hdr },
                dest,
                got: 0,
            };
        }
    }

    /// Target, a write whose whole frame (prefix and data) is staged
    /// behind its header (every small write): checked, landed from the
    /// stage and answered here, without the two trips through the
    /// connection's read state (prefix, then data) that
    /// [`Self::on_write_prefix`] and [`Self::on_write_done`] make for one
    /// that is still arriving. False, with nothing consumed, otherwise.
    pub(super) fn write_staged(&self, st: &mut EpState, slot: usize, hdr: &Header) -> bool {
        let Ok(total) = usize::try_from(hdr.len) else {
            return false;
        };
        let Some(pre) = st.conns[slot]
            .as_ref()
            .and_then(|c| c.staged().get(..total))
            .and_then(|b| b.first_chunk::<RMA_PREFIX>().copied())
        else {
            return false;
        };
        let len = total - RMA_PREFIX;
        let access = self.write_access(st, slot, &pre, len);
        let Some(c) = st.conns[slot].as_mut() else {
            return false;
        };
        let (mr, refused) = match access {
            Ok((mr, region)) => {
                region.scatter(0, &c.staged()[RMA_PREFIX..total]);
                (Some(mr), None)
            }
            Err(d) => (None, Some(d)),
        };
        c.consume_staged(total);
        let hdr = Header {
            len: len as u64,
            ..*hdr
        };
        self.on_write_done(st, slot, hdr, mr, refused);
        true
    }

    /// Target, a write's data landed (or was dropped): count it, report
    /// remote CQ data, answer.
    pub(super) fn on_write_done(
        &self,
        st: &mut EpState,
        slot: usize,
        hdr: Header,
        mr: Option<Arc<MemRegion>>,
        refused: Option<Denied>,
    ) {
        if let (None, 0, Some(m)) = (refused, hdr.tag, &mr) {
            let src = self.src_of(st, slot);
            remote_complete(
                &st.core.sinks,
                m,
                true,
                hdr.len as usize,
                hdr.cq_data(),
                src,
            );
        }
        self.answer(st, slot, hdr.msg_id, refused, None);
    }

    /// Target, a read's prefix arrived: check it and answer with the bytes
    /// straight from the registered memory, or with the refusal.
    pub(super) fn on_read_req(
        &self,
        st: &mut EpState,
        slot: usize,
        hdr: Header,
        b: &[u8; RMA_PREFIX],
    ) {
        let (addr, key) = parse_rma_prefix(b);
        match self
            .domain
            .mr
            .access(key, addr, hdr.tag as usize, FI_REMOTE_READ)
        {
            Ok((mr, region)) => {
                if hdr.data == 0 {
                    let src = self.src_of(st, slot);
                    remote_complete(&st.core.sinks, &mr, false, hdr.tag as usize, None, src);
                }
                self.answer(st, slot, hdr.msg_id, None, Some(region));
            }
            Err(d) => {
                self.log_refusal(st, slot, "read", (key, addr, hdr.tag), d);
                self.answer(st, slot, hdr.msg_id, Some(d), None);
            }
        }
    }

    /// Target, an `Atomic` frame arrived whole: check the range (one
    /// contiguous piece of a registration that allows the access), apply
    /// the operation under the engine's element locks, and answer with
    /// the values found (fetch and compare kinds).
    pub(super) fn on_atomic(&self, st: &mut EpState, slot: usize, hdr: Header, payload: &[u8]) {
        let Some(t) = AtomicTag::decode(hdr.tag) else {
            return; // decode checked it already
        };
        let (pre, rest) = payload.split_at(RMA_PREFIX.min(payload.len()));
        let (Ok(pre), Some((operand, compare)), Some(len)) =
            (<[u8; RMA_PREFIX]>::try_from(pre), t.split(rest), t.len())
        else {
            return; // decode checked the frame's length already
        };
        let (addr, key) = parse_rma_prefix(&pre);
        let mut result = vec![0u8; if t.kind == AtomicKind::Base { 0 } else { len }];
        let mr = match apply_atomic(&self.domain.mr, key, addr, t, operand, compare, &mut result) {
            Ok(mr) => mr,
            Err(d) => {
                self.log_refusal(st, slot, "atomic", (key, addr, len as u64), d);
                self.answer(st, slot, hdr.msg_id, Some(d), None);
                return;
            }
        };
        let src = self.src_of(st, slot);
        remote_complete(&st.core.sinks, &mr, t.writes(), len, hdr.cq_data(), src);
        let n = result.len();
        self.answer_with(st, slot, hdr.msg_id, None, TxData::Owned(result), n);
    }

    /// Sends an `RmaResp`: the refusal, or success with the bytes read
    /// (straight from registered memory) or fetched (`fetched`).
    fn answer(
        &self,
        st: &mut EpState,
        slot: usize,
        id: u64,
        refused: Option<Denied>,
        read: Option<IoVec>,
    ) {
        let iov = read.unwrap_or_default();
        let data = TxData::Rma {
            pre: [0; RMA_PREFIX],
            pre_len: 0,
            iov,
        };
        self.answer_with(st, slot, id, refused, data, iov.total_len());
    }

    /// Sends an `RmaResp` with `len` payload bytes in `data`.
    fn answer_with(
        &self,
        st: &mut EpState,
        slot: usize,
        id: u64,
        refused: Option<Denied>,
        data: TxData,
        len: usize,
    ) {
        let mut h = Header::control(Op::RmaResp, id);
        if let Some(d) = refused {
            h.data = d.code() as u64;
            h.tag = d.to_u64();
        }
        h.len = len as u64;
        let item = TxItem {
            hdr: h.encode(),
            total: HEADER_LEN + len,
            data,
            off: 0,
            done: None,
        };
        // A bare answer (a write's, or a refusal) may wait for the next
        // frame; one carrying data (a read's, a fetch's) is what the peer
        // waits for.
        let _ = self.submit_as(st, slot, item, len == 0);
    }

    /// Initiator, an `RmaResp` header: a refusal fails its piece; a read's
    /// bytes go to the read's buffers. An answer nobody asked this peer
    /// for, or of the wrong length, is a protocol error.
    pub(super) fn on_rma_resp(
        &self,
        st: &mut EpState,
        slot: usize,
        hdr: Header,
    ) -> Option<RxState> {
        let from_peer = match self.ep_type {
            FI_EP_MSG => None,
            _ => st.conns[slot].as_ref().and_then(|c| c.peer),
        };
        let ours =
            self.ep_type != FI_EP_MSG || matches!(st.msg, MsgState::Connected(s) if s == slot);
        let part = st
            .rma_parts
            .get(&hdr.msg_id)
            .filter(|p| p.to == from_peer && ours)
            .map(|p| (p.read, p.len));
        let Some((read, len)) = part else {
            self.close_conn(
                st,
                slot,
                Failure::code(FI_EIO),
                "RMA answer to no request of this peer",
            );
            return None;
        };
        if hdr.data != 0 {
            let cause =
                Denied::from_u64(hdr.tag).map_or("target refused the access", Denied::cause);
            let f = Failure {
                err: hdr.data as c_int,
                peer: st.conns[slot]
                    .as_ref()
                    .and_then(|c| c.peer.or_else(|| c.stream.peer_addr().ok())),
                cause,
                ..Default::default()
            };
            self.part_done(st, hdr.msg_id, Err(f));
            return None;
        }
        match read {
            None if hdr.len == 0 => {
                self.part_done(st, hdr.msg_id, Ok(()));
                None
            }
            Some(region) if hdr.len == len as u64 => Some(RxState::Payload {
                hdr,
                dest: Dest::Rma {
                    region,
                    mr: None,
                    refused: None,
                },
                got: 0,
            }),
            _ => {
                self.close_conn(
                    st,
                    slot,
                    Failure::code(FI_EIO),
                    "RMA answer of the wrong length",
                );
                None
            }
        }
    }

    /// Initiator, a read's bytes are in place.
    pub(super) fn on_read_done(&self, st: &mut EpState, hdr: Header) {
        self.part_done(st, hdr.msg_id, Ok(()));
    }
}
