//! What the `shm` provider's endpoints say to each other in the cells of
//! the transport (`ring::Meta`): the cell's `flags` carry the operation
//! and whether `tag` and `data` mean anything; `token` names a message
//! that spans several cells.
//!
//! - `EAGER`: a whole message, its payload in this one cell.
//! - `FIRST`: the first cell of a message larger than a cell: the payload
//!   starts with the message's total length (8 bytes, little-endian), then
//!   its first bytes; `token` is the sender's number for the message.
//! - `MORE`: the next bytes of message `token` from the same sender, in
//!   order (one sender's cells arrive in the order it sent them).
//! - `RNDV` (a `Rendezvous` cell): a large message whose bytes stay in the
//!   sender's buffers: the payload says its total length and where they
//!   are (at most [`MAX_RNDV_IOV`] ranges of the sender's address space).
//!   The receiver matches it like any message and pulls the bytes with
//!   cross-memory attach straight into the receive, then answers `DONE`.
//!   A receiver that may not read the sender's memory answers `DONE`
//!   with [`FALLBACK`]: the sender then sends the bytes as `MORE` cells
//!   of the same `token`, which the receiver puts into the receive it
//!   already matched.
//! - `CHUNK` (a `Control` cell): the next `data` bytes of message `token`
//!   (as a `MORE` cell's payload would be) lie at the start of chunk `tag`
//!   of the sender's bounce area (`bounce.rs`); the receiver copies them
//!   out and gives the chunk back with `FREE`. A sender sends its bytes
//!   in chunks instead of `MORE` cells while it has chunks free.
//! - `FREE` (a `Control` cell): the chunks of the receiver's bounce area
//!   whose bits are set in `data` are copied out; the sender of a
//!   `CHUNK` may use them again. Only chunks lent to the peer that sends
//!   `FREE` are taken back.
//! - `PUSH` (a `Rendezvous` cell): the receiver of a large `RNDV` whose
//!   sender said [`PUSH_OK`] shares the copy out: the payload names the
//!   receive's buffers (coded as a `RNDV` payload's), `data` the chunk
//!   size, `tag` the receiver's split slot (low 16 bits) and its
//!   generation (the next 40). The sender writes the chunks it claims in
//!   that slot (`slots.rs`) by cross-memory attach, while the receiver
//!   reads the ones it claims; no answer (the slot counts the sender's
//!   chunks). The sender first checks that `token` is a rendezvous of its
//!   own to that peer waiting for its answer and that the ranges and
//!   chunks fit the message.
//! - `DONE` (a `Control` cell): the answer to `RNDV` `token`; `data` is 0
//!   (the receiver has the bytes, or did not want them), [`FALLBACK`], or
//!   an `FI_E*` code (the receive failed).
//! - `WRITE`, `READ`, `ATOMIC`: one part of a one-sided operation
//!   (`ep/rma.rs`): `token` is the initiator's number for the part, `tag`
//!   the target's memory key, `data` remote CQ data (with `HAS_DATA`, on
//!   the operation's last part); the payload starts with an
//!   [`RmaHeader`]. A write or read moves its bytes inline (a write's
//!   follow the header; a read's come back in the answer) or, with
//!   [`RMA_CMA`], by cross-memory attach: the header is followed by the
//!   initiator's ranges, coded as a `RNDV` payload's, which the target
//!   reads from or writes to itself after its access check; or a write's,
//!   with [`RMA_BOUNCE`], through a chunk of the initiator's bounce area
//!   (the header is followed by the chunk's index), which the target
//!   copies out after its access check; a read of more than a cell may
//!   say [`RMA_BOUNCE`] too, and is then answered through a chunk of the
//!   target's area ([`ANSWER_BOUNCE`], or [`NO_BOUNCE`]: "ask again, in
//!   cells"). An atomic carries its operands and compare values inline.
//! - `ANSWER`: the target's answer to part `token`: `data` 0 and the bytes
//!   read or fetched as payload, or a positive `FI_E*` status with the
//!   cause in `tag` (`Denied::to_u64`, or [`NO_CMA`]: "send it in cells");
//!   [`ANSWER_CMA`] in `flags` when the target reaches the initiator by
//!   cross-memory attach.
//!
//! Everything here is what the writing peer claims: the receiver checks
//! that a `MORE` belongs to a message it knows from that sender, and that
//! no message grows past the length its `FIRST` announced; a target
//! checks every part's header, ranges and lengths and its access before
//! it touches memory, and an initiator takes an answer only for a part it
//! sent that peer, of the length it expects.

/// `tag` carries the message's tag (a tagged send).
pub const HAS_TAG: u32 = 1;
/// `data` carries remote CQ data.
pub const HAS_DATA: u32 = 2;
/// The sender asked for `FI_DELIVERY_COMPLETE`: answer `DONE` (status 0)
/// once the message is taken (on an `EAGER` or `FIRST` cell).
pub const ACK: u32 = 4;
/// On a `RNDV`: the sender may write into the receiver's memory by
/// cross-memory attach and takes a `PUSH` for a share of the bytes.
pub const PUSH_OK: u32 = 1 << 16;
/// Where the operation sits in `flags`.
const OP_SHIFT: u32 = 8;
const OP_MASK: u32 = 0xff << OP_SHIFT;

/// The operation a cell carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eager,
    First,
    More,
    Rndv,
    Done,
    Chunk,
    Free,
    Push,
    Write,
    Read,
    Atomic,
    Answer,
}

impl Op {
    /// Its bits in `flags`.
    pub fn bits(self) -> u32 {
        let n = match self {
            Op::Eager => 0,
            Op::First => 1,
            Op::More => 2,
            Op::Rndv => 3,
            Op::Done => 4,
            Op::Chunk => 5,
            Op::Free => 6,
            Op::Push => 7,
            Op::Write => 16,
            Op::Read => 17,
            Op::Atomic => 18,
            Op::Answer => 19,
        };
        n << OP_SHIFT
    }

    /// The operation of a cell's `flags`; `None` for one we do not know.
    pub fn of(flags: u32) -> Option<Op> {
        match (flags & OP_MASK) >> OP_SHIFT {
            0 => Some(Op::Eager),
            1 => Some(Op::First),
            2 => Some(Op::More),
            3 => Some(Op::Rndv),
            4 => Some(Op::Done),
            5 => Some(Op::Chunk),
            6 => Some(Op::Free),
            7 => Some(Op::Push),
            16 => Some(Op::Write),
            17 => Some(Op::Read),
            18 => Some(Op::Atomic),
            19 => Some(Op::Answer),
            _ => None,
        }
    }
}

/// Bytes of a `FIRST` cell's payload taken by the total length.
pub const FIRST_PREFIX: usize = 8;

/// The total length at the front of a `FIRST` payload (`None` when the
/// payload is too short to hold it).
pub fn first_len(payload: &[u8]) -> Option<u64> {
    let b: [u8; 8] = payload.get(..FIRST_PREFIX)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// The `flags` of a cell: the operation, and which optional fields mean
/// something.
pub fn flags(op: Op, tag: Option<u64>, data: Option<u64>) -> u32 {
    op.bits() | if tag.is_some() { HAS_TAG } else { 0 } | if data.is_some() { HAS_DATA } else { 0 }
}

/// The most ranges a `RNDV` names (an `IoVec`'s).
pub const MAX_RNDV_IOV: usize = oxifabric::ops::IoVec::CAP;
/// `DONE`'s `data` asking the sender to send the bytes in cells.
pub const FALLBACK: u64 = u64::MAX;
/// Bytes of a `RNDV` payload before its ranges: total length, count.
const RNDV_HEAD: usize = 16;
/// The largest `RNDV` payload.
pub const RNDV_MAX: usize = RNDV_HEAD + 16 * MAX_RNDV_IOV;

/// A `RNDV` payload: total length, then (address, length) of each range.
/// `None` when there are more than [`MAX_RNDV_IOV`] ranges.
pub fn encode_rndv(ranges: &[(usize, usize)], out: &mut [u8; RNDV_MAX]) -> Option<usize> {
    if ranges.len() > MAX_RNDV_IOV {
        return None;
    }
    let total: usize = ranges.iter().map(|r| r.1).sum();
    out[..8].copy_from_slice(&(total as u64).to_le_bytes());
    out[8..16].copy_from_slice(&(ranges.len() as u64).to_le_bytes());
    for (i, (a, l)) in ranges.iter().enumerate() {
        let at = RNDV_HEAD + 16 * i;
        out[at..at + 8].copy_from_slice(&(*a as u64).to_le_bytes());
        out[at + 8..at + 16].copy_from_slice(&(*l as u64).to_le_bytes());
    }
    Some(RNDV_HEAD + 16 * ranges.len())
}

/// A `RNDV` payload read back: the total length and the ranges. `None`
/// unless the count is at most [`MAX_RNDV_IOV`], the payload holds every
/// range, no range wraps past the end of the address space (its user
/// adds offsets to a range's start), and the ranges add up to the total
/// without overflow.
pub fn decode_rndv(p: &[u8]) -> Option<(usize, Vec<crate::cma::RemoteIov>)> {
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(p.get(at..at + 8)?.try_into().ok()?))
    };
    let total = usize::try_from(word(0)?).ok()?;
    let n = usize::try_from(word(8)?).ok()?;
    if n > MAX_RNDV_IOV {
        return None;
    }
    let mut ranges = Vec::with_capacity(n);
    let mut sum = 0usize;
    for i in 0..n {
        let at = RNDV_HEAD + 16 * i;
        let addr = usize::try_from(word(at)?).ok()?;
        let len = usize::try_from(word(at + 8)?).ok()?;
        addr.checked_add(len)?;
        sum = sum.checked_add(len)?;
        ranges.push(crate::cma::RemoteIov { addr, len });
    }
    (sum == total).then_some((total, ranges))
}

/// An RMA part is its operation's last: the target reports the remote
/// completion (counters, remote CQ data) once it is done.
pub const RMA_LAST: u32 = 1;
/// The bytes move by cross-memory attach; the initiator's ranges follow
/// the header (coded as a `RNDV` payload's).
pub const RMA_CMA: u32 = 2;
/// A write's bytes lie at the start of a chunk of the initiator's bounce
/// area (`bounce.rs`), whose index follows the header (8 bytes); the
/// initiator has the chunk back once the part is answered. On a read:
/// the target may answer through a chunk of its own area
/// ([`ANSWER_BOUNCE`]).
pub const RMA_BOUNCE: u32 = 4;
/// In an answer's `flags`: the bytes read lie at the start of a chunk of
/// the target's bounce area, whose index is the payload (8 bytes); the
/// initiator copies them out and gives the chunk back with `FREE`.
pub const ANSWER_BOUNCE: u32 = 1 << 17;
/// The cause of an answer refusing a read through the bounce area (no
/// chunk free): the part is to be sent again, answered in cells.
pub const NO_BOUNCE: u64 = 32;
/// In an answer's `flags`: the target reaches the initiator's memory by
/// cross-memory attach, so later parts may name the initiator's buffers.
pub const ANSWER_CMA: u32 = 8;
/// The cause of an answer refusing cross-memory attach: the target
/// cannot reach the initiator's memory; the part is to be sent again
/// with its bytes in cells.
pub const NO_CMA: u64 = 16;
/// Bytes of an [`RmaHeader`].
pub const RMA_HEADER: usize = 32;

/// The fixed start of an RMA or atomic part's payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RmaHeader {
    /// Where at the target (a virtual address or an offset, as the
    /// target's registration mode says).
    pub addr: u64,
    /// `WRITE`, `READ`: bytes at the target; `ATOMIC`: its
    /// `AtomicTag` word.
    pub word: u64,
    /// Bytes of the whole operation (what the target's remote completion
    /// reports, with [`RMA_LAST`]).
    pub total: u64,
    /// [`RMA_LAST`], [`RMA_CMA`], [`RMA_BOUNCE`].
    pub flags: u32,
}

impl RmaHeader {
    /// Its bytes (the last four reserved, 0).
    pub fn encode(&self) -> [u8; RMA_HEADER] {
        let mut b = [0u8; RMA_HEADER];
        b[..8].copy_from_slice(&self.addr.to_le_bytes());
        b[8..16].copy_from_slice(&self.word.to_le_bytes());
        b[16..24].copy_from_slice(&self.total.to_le_bytes());
        b[24..28].copy_from_slice(&self.flags.to_le_bytes());
        b
    }

    /// The header at the start of `payload` and what follows it; None
    /// when it is short, has unknown flags or reserved bytes set.
    pub fn decode(payload: &[u8]) -> Option<(RmaHeader, &[u8])> {
        let (h, rest) = payload.split_first_chunk::<RMA_HEADER>()?;
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&h[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let mut f = [0u8; 4];
        f.copy_from_slice(&h[24..28]);
        let hdr = RmaHeader {
            addr: u64_at(0),
            word: u64_at(8),
            total: u64_at(16),
            flags: u32::from_le_bytes(f),
        };
        if hdr.flags & !(RMA_LAST | RMA_CMA | RMA_BOUNCE) != 0 || h[28..] != [0; 4] {
            return None;
        }
        Some((hdr, rest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_and_unknown_ones_are_refused() {
        for op in [
            Op::Eager,
            Op::First,
            Op::More,
            Op::Rndv,
            Op::Done,
            Op::Chunk,
            Op::Free,
            Op::Push,
            Op::Write,
            Op::Read,
            Op::Atomic,
            Op::Answer,
        ] {
            let f = flags(op, Some(1), None);
            assert_eq!(Op::of(f), Some(op));
            assert_eq!(f & HAS_TAG, HAS_TAG);
            assert_eq!(f & HAS_DATA, 0);
        }
        assert_eq!(Op::of(8 << OP_SHIFT), None);
        assert_eq!(first_len(&[1, 0, 0, 0, 0, 0, 0, 0, 9]), Some(1));
        assert_eq!(first_len(&[1, 0, 0]), None);
    }

    #[test]
    fn rendezvous_payloads_round_trip_and_lies_are_refused() {
        let mut buf = [0u8; RNDV_MAX];
        let n = encode_rndv(&[(0x1000, 5), (0x2000, 7)], &mut buf).unwrap();
        let (total, r) = decode_rndv(&buf[..n]).unwrap();
        assert_eq!(total, 12);
        assert_eq!(r.len(), 2);
        assert_eq!((r[1].addr, r[1].len), (0x2000, 7));
        // Cut short, a count past the limit, a total the ranges do not make.
        assert!(decode_rndv(&buf[..n - 1]).is_none());
        let mut bad = buf;
        bad[8] = 9;
        assert!(decode_rndv(&bad[..n]).is_none());
        let mut bad = buf;
        bad[0] = 13;
        assert!(decode_rndv(&bad[..n]).is_none());
        let mut bad = buf;
        bad[RNDV_HEAD + 8..RNDV_HEAD + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_rndv(&bad[..n]).is_none());
        assert!(encode_rndv(&[(0, 1); MAX_RNDV_IOV + 1], &mut buf).is_none());
    }

    #[test]
    fn rma_headers_round_trip_and_bad_ones_are_refused() {
        let h = RmaHeader {
            addr: 0x1000,
            word: 77,
            total: 4096,
            flags: RMA_LAST | RMA_CMA,
        };
        let mut b = h.encode().to_vec();
        b.extend_from_slice(&[9; 32]);
        let (d, rest) = RmaHeader::decode(&b).unwrap();
        assert_eq!(d, h);
        assert_eq!(rest.len(), 32);
        assert_eq!(RmaHeader::decode(&b[..RMA_HEADER - 1]), None);
        let unknown = RmaHeader { flags: 8, ..h };
        assert_eq!(RmaHeader::decode(&unknown.encode()), None);
        let mut reserved = h.encode();
        reserved[31] = 1;
        assert_eq!(RmaHeader::decode(&reserved), None);
    }
}
