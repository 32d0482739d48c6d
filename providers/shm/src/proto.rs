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
//! - `DONE` (a `Control` cell): the answer to `RNDV` `token`; `data` is 0
//!   (the receiver has the bytes, or did not want them), [`FALLBACK`], or
//!   an `FI_E*` code (the receive failed).
//!
//! Everything here is what the writing peer claims: the receiver checks
//! that a `MORE` belongs to a message it knows from that sender, and that
//! no message grows past the length its `FIRST` announced.

/// `tag` carries the message's tag (a tagged send).
pub const HAS_TAG: u32 = 1;
/// `data` carries remote CQ data.
pub const HAS_DATA: u32 = 2;
/// The sender asked for `FI_DELIVERY_COMPLETE`: answer `DONE` (status 0)
/// once the message is taken (on an `EAGER` or `FIRST` cell).
pub const ACK: u32 = 4;
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
/// range, and the ranges add up to the total without overflow.
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
        sum = sum.checked_add(len)?;
        ranges.push(crate::cma::RemoteIov { addr, len });
    }
    (sum == total).then_some((total, ranges))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_and_unknown_ones_are_refused() {
        for op in [Op::Eager, Op::First, Op::More, Op::Rndv, Op::Done] {
            let f = flags(op, Some(1), None);
            assert_eq!(Op::of(f), Some(op));
            assert_eq!(f & HAS_TAG, HAS_TAG);
            assert_eq!(f & HAS_DATA, 0);
        }
        assert_eq!(Op::of(7 << OP_SHIFT), None);
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
}
