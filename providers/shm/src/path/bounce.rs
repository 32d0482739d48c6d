//! Large messages through the bounce area (`crate::bounce`), for peers
//! whose memory cross-memory attach may not reach.
//!
//! Sender: once a message's first cell is out (a `FIRST` cell, or a
//! rendezvous the receiver answered with `FALLBACK`), while more than a
//! cell's worth is left and a chunk of our area is free, the next bytes
//! (up to a chunk) are copied into that chunk and a `CHUNK` cell names
//! it. With no chunk free, the send waits for that peer to give chunks
//! back when it holds some (it copies them out as it progresses, as it
//! drains cells); when others hold them all, the bytes go on in `MORE`
//! cells, so one slow peer does not hold up sends to the rest. A chunk is lent
//! to one peer for one send until that peer's `FREE` gives it back, or
//! the peer is gone, or the cell naming it never left. The send
//! completes once every chunk it used is back (its bytes have left our
//! area), so a receiver that dies first fails it, as a dead receiver's
//! undrained cells do.
//!
//! Receiver: a `CHUNK` cell is handled where a `MORE` cell would be, in
//! order with the sender's other cells: the bytes are copied out of the
//! sender's area (index and length checked against the geometry read when
//! we attached), appended to the message like a `MORE` cell's payload,
//! and the chunk is owed back. After each progress pass one `FREE` cell
//! per peer gives back everything copied out in that pass.

use super::*;
use crate::bounce::{BounceArea, MAX_CHUNK};
use crate::transport::Areas;

/// Chunks of our bounce area in every process's hands; what we owe peers.
pub(super) struct Lender {
    /// Bit `k` set: chunk `k` is ours to fill.
    free: u64,
    /// Chunk `k`'s borrower: the peer its cell went to, and our send.
    lent: Vec<Option<(Addr, u64)>>,
    size: usize,
    /// Chunks of each peer's area copied out and not given back yet.
    owed: HashMap<Addr, u64, KeyedU64>,
    /// Chunks sent so far (the close log says it).
    pub(super) sent: u64,
}

impl Lender {
    pub(super) fn new(area: BounceArea) -> Lender {
        let n = area.chunks();
        Lender {
            free: if n >= 64 { u64::MAX } else { (1u64 << n) - 1 },
            lent: vec![None; n],
            size: area.size(),
            owed: HashMap::default(),
            sent: 0,
        }
    }

    /// Takes back every lent chunk `which` selects (by borrower and
    /// send); the sends they held, one entry per chunk.
    fn reclaim(&mut self, which: impl Fn(Addr, u64) -> bool) -> Vec<u64> {
        let mut ids = Vec::new();
        for (k, l) in self.lent.iter_mut().enumerate() {
            if let Some((to, id)) = *l {
                if which(to, id) {
                    *l = None;
                    self.free |= 1 << k;
                    ids.push(id);
                }
            }
        }
        ids
    }

    /// A chunk of ours that is free, if any (to fill, then [`Lender::lend`]).
    pub(super) fn free_chunk(&self) -> Option<usize> {
        (self.free != 0 && !self.lent.is_empty()).then(|| self.free.trailing_zeros() as usize)
    }

    /// Chunk `k` went to `to` for `id` (a send, or a one-sided part).
    pub(super) fn lend(&mut self, k: usize, to: Addr, id: u64) {
        if let Some(l) = self.lent.get_mut(k) {
            *l = Some((to, id));
            self.free &= !(1 << k);
            self.sent += 1;
        }
    }

    /// Chunk `k` is back from `to`, which had it for `id` (a one-sided
    /// part that was answered, or that failed): nothing else is changed.
    pub(super) fn release(&mut self, k: usize, to: Addr, id: u64) {
        if let Some(l) = self.lent.get_mut(k) {
            if *l == Some((to, id)) {
                *l = None;
                self.free |= 1 << k;
            }
        }
    }

    /// Chunk `k` of `from`'s area is copied out: to be given back with
    /// the next `FREE` to it.
    pub(super) fn owe(&mut self, from: Addr, k: usize) {
        *self.owed.entry(from).or_default() |= 1 << k;
    }

    /// Whether `to` holds chunks of ours.
    pub(super) fn holds_any(&self, to: Addr) -> bool {
        self.lent.iter().any(|l| l.is_some_and(|(t, _)| t == to))
    }

    /// The chunks of `to`'s area we copied out and not given back yet.
    pub(super) fn owed_to(&self, to: Addr) -> u64 {
        self.owed.get(&to).copied().unwrap_or(0)
    }

    /// Bytes per chunk.
    pub(super) fn chunk_size(&self) -> usize {
        self.size
    }

    /// Whether a `FREE` is owed to some peer.
    pub(super) fn owes(&self) -> bool {
        !self.owed.is_empty()
    }
}

/// Copies the first `len` bytes of chunk `k` of `from`'s area into `dst`
/// (index and length already checked against its geometry); false when
/// the area is gone meanwhile.
pub(super) fn fill_from_chunk(
    areas: Areas<'_>,
    from: Addr,
    k: usize,
    dst: &IoVec,
    len: usize,
) -> bool {
    let (mut off, mut bad) = (0, false);
    dst.fill_at(0, len, |d| {
        bad |= areas.read_at(from, k, off, d).is_err();
        off += d.len();
    });
    !bad
}

impl<K: Token> Side<'_, K> {
    /// Hands the next bytes of `o` to `to` through a free chunk: `None`
    /// when that does not apply (the message has not started, a cell's
    /// worth or less is left, or every chunk is lent to other peers), and
    /// then a cell takes them; `Again` when `to` holds chunks and none is
    /// free. Else as `Transport::send`; on `Again` no chunk is lent.
    pub(super) fn push_chunk(
        &mut self,
        tp: &mut Transport,
        to: Addr,
        o: &mut Outgoing,
        cap: usize,
    ) -> Option<Result<Sent>> {
        let b = &mut self.p.bounce;
        if !o.started || o.len - o.off <= cap || b.lent.is_empty() {
            return None;
        }
        if b.free == 0 {
            // Chunks come back as this peer copies them out: wait for
            // them (cells would only fill its ring with 4 KiB copies).
            // All lent to others (which may be slow): cells, so that one
            // peer does not hold up the rest.
            return b.holds_any(to).then_some(Err(Error::Again));
        }
        let k = b.free.trailing_zeros() as usize;
        let n = (o.len - o.off).min(b.size);
        let mut parts: [&[u8]; 9] = [&[]; 9];
        let m = gather(&o.body, o.off, n, &mut parts);
        if let Err(e) = tp.bounce_write(k, &parts[..m]) {
            return Some(Err(e));
        }
        let meta = Meta {
            kind: Kind::Control,
            sender: 0,
            flags: Op::Chunk.bits(),
            tag: k as u64,
            data: n as u64,
            token: o.id,
        };
        let sent = tp.send(to, meta, &[], o.id);
        if sent.is_ok() {
            b.lend(k, to, o.id);
            o.off += n;
            if let Some(f) = self.p.inflight.get_mut(&o.id) {
                f.chunks += 1;
            }
        }
        Some(sent)
    }

    /// A `CHUNK` cell from `from`: the next bytes of its message, from
    /// chunk `meta.tag` of its area.
    pub(super) fn chunk_in(&mut self, from: Addr, meta: &Meta, areas: Areas<'_>) {
        let (k, n) = (meta.tag, meta.data);
        let (Ok(k), Ok(n)) = (usize::try_from(k), usize::try_from(n)) else {
            return self.refuse(from, "a chunk beyond any bounce area");
        };
        if k >= crate::bounce::MAX_CHUNKS || n > MAX_CHUNK || !areas.holds(from, k, n) {
            return self.refuse(from, "a chunk beyond its bounce area");
        }
        // Straight from the peer's chunk into the receive (or the held
        // copy): one copy on this side.
        let mut off = 0;
        let mut bad = false;
        let got = self.p.partial.append_with(
            K::shm((from, meta.token)),
            n,
            |dst| {
                bad |= areas.read_at(from, k, off, dst).is_err();
                off += dst.len();
            },
            &self.core.sinks,
        );
        if bad {
            // Checked above: only a peer gone meanwhile could get here.
            return self.refuse(from, "a chunk its bounce area does not have");
        }
        match got {
            Ok(()) => {}
            Err(Refused::Unknown) => self.refuse(from, "a chunk of a message never started"),
            Err(Refused::TooLong) => self.refuse(from, "a message longer than announced"),
        }
        self.p.bounce.owe(from, k);
    }

    /// A `FREE` cell from `from`: the chunks of `mask` it was lent are
    /// ours again; any other bit is refused.
    pub(super) fn chunks_back(&mut self, from: Addr, mask: u64) {
        let b = &mut self.p.bounce;
        let mut stray = false;
        // At most one send per chunk: no allocation per `FREE`.
        let (mut back, mut n) = ([0u64; crate::bounce::MAX_CHUNKS], 0);
        for k in 0..64 {
            if mask & (1 << k) == 0 {
                continue;
            }
            match b.lent.get_mut(k) {
                Some(l) if matches!(*l, Some((to, _)) if to == from) => {
                    if let Some((_, id)) = *l {
                        back[n] = id;
                        n += 1;
                    }
                    *l = None;
                    b.free |= 1 << k;
                }
                _ => stray = true,
            }
        }
        if stray {
            self.refuse(from, "a chunk given back that it was not lent");
        }
        self.chunks_left(&back[..n]);
    }

    /// Gives back, one `FREE` cell per peer, the chunks copied out of
    /// peers' areas; what does not fit their rings now goes next time.
    pub(super) fn give_back(&mut self, tp: &mut Transport) {
        self.p.bounce.owed.retain(|&to, mask| {
            let meta = Meta {
                kind: Kind::Control,
                sender: 0,
                flags: Op::Free.bits(),
                tag: 0,
                data: *mask,
                token: 0,
            };
            // Sent, queued, or the peer is gone: done with it.
            matches!(tp.send(to, meta, &[], NO_SEND), Err(Error::Again))
        });
    }

    /// Chunks lent to `to` (for send `id` only, when given) will not come
    /// back: the peer is gone, or the cell naming them never left. What
    /// we owe a gone peer is forgotten.
    pub(super) fn chunks_lost(&mut self, to: Addr, id: Option<u64>) {
        let b = &mut self.p.bounce;
        let ids = b.reclaim(|t, i| t == to && id.is_none_or(|id| id == i));
        if id.is_none() {
            b.owed.remove(&to);
            // The peer went with our bytes still in the chunks it held:
            // those sends fail.
            for i in &ids {
                self.fail(*i, gone(self.p.label(to)));
            }
        }
        self.chunks_left(&ids);
    }

    /// One chunk of each send in `ids` is back (or lost): a send whose
    /// bytes have all left our area may complete.
    fn chunks_left(&mut self, ids: &[u64]) {
        for id in ids {
            if let Some(f) = self.p.inflight.get_mut(id) {
                f.chunks = f.chunks.saturating_sub(1);
            }
        }
        for id in ids {
            self.settle(*id);
        }
    }
}
