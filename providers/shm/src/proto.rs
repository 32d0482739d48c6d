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
//!
//! Everything here is what the writing peer claims: the receiver checks
//! that a `MORE` belongs to a message it knows from that sender, and that
//! no message grows past the length its `FIRST` announced.

/// `tag` carries the message's tag (a tagged send).
pub const HAS_TAG: u32 = 1;
/// `data` carries remote CQ data.
pub const HAS_DATA: u32 = 2;
/// Where the operation sits in `flags`.
const OP_SHIFT: u32 = 8;
const OP_MASK: u32 = 0xff << OP_SHIFT;

/// The operation a cell carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eager,
    First,
    More,
}

impl Op {
    /// Its bits in `flags`.
    pub fn bits(self) -> u32 {
        let n = match self {
            Op::Eager => 0,
            Op::First => 1,
            Op::More => 2,
        };
        n << OP_SHIFT
    }

    /// The operation of a cell's `flags`; `None` for one we do not know.
    pub fn of(flags: u32) -> Option<Op> {
        match (flags & OP_MASK) >> OP_SHIFT {
            0 => Some(Op::Eager),
            1 => Some(Op::First),
            2 => Some(Op::More),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_and_unknown_ones_are_refused() {
        for op in [Op::Eager, Op::First, Op::More] {
            let f = flags(op, Some(1), None);
            assert_eq!(Op::of(f), Some(op));
            assert_eq!(f & HAS_TAG, HAS_TAG);
            assert_eq!(f & HAS_DATA, 0);
        }
        assert_eq!(Op::of(7 << OP_SHIFT), None);
        assert_eq!(first_len(&[1, 0, 0, 0, 0, 0, 0, 0, 9]), Some(1));
        assert_eq!(first_len(&[1, 0, 0]), None);
    }
}
