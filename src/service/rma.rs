//! One-sided operations (fi_rma(3), fi_atomic(3)): the parts that do not
//! depend on how bytes reach the peer, written once for every provider.
//!
//! - Initiator: [`check_rma`] checks an RMA operation's shape (local and
//!   remote lengths agree, the number of remote pieces, an injected
//!   write's size); [`gather_atomic`] checks an atomic operation's and
//!   copies its operands and compare values (small, and the buffers are
//!   the application's again when the call returns).
//! - Wire: [`AtomicTag`] packs what an atomic asks for (operation,
//!   datatype, kind, element count) into one 64-bit word and unpacks it
//!   only into a combination [`valid`] offers; [`Denied::to_u64`] and
//!   [`Denied::from_u64`] carry a refusal's cause.
//! - Target: [`apply_atomic`] checks the range against the domain's
//!   registrations with the access the operation needs and applies it
//!   with [`apply`] (atomic against every other atomic of the process);
//!   [`remote_complete`] reports an access that completed (the region's
//!   `FI_RMA_EVENT` counter, the endpoint's remote counters, remote CQ
//!   data); [`log_refusal`] logs a refused access with its peer.
//!
//! Reads and writes at the target go through [`MrTable::access`] with
//! `FI_REMOTE_READ` or `FI_REMOTE_WRITE`; how the bytes then move (a
//! socket, cross-memory attach, a cell) is the provider's.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::ops::{internal, iov_len, AtomicReq, IoBuf, RmaIov, RmaOp};
use crate::prov_log;
use crate::service::atomic::{apply, valid, AtomicKind, AtomicOp};
use crate::service::ep_core::Sinks;
use crate::service::mr::{Denied, MemRegion, MrTable};
use std::sync::Arc;

/// Whether an operation's data is the provider's to copy at once: an
/// injected operation (`FI_INJECT`, `fi_inject_write`), whose buffer is
/// the application's again when the call returns.
pub fn injected(flags: u64, internal_flags: u64) -> bool {
    flags & FI_INJECT != 0 || internal_flags & internal::NO_COMPLETION != 0
}

/// Bytes the remote pieces cover; `Inval` when that overflows.
fn remote_len(rma: &[RmaIov]) -> Result<usize> {
    rma.iter()
        .try_fold(0usize, |a, r| a.checked_add(r.len))
        .ok_or(Error::Inval)
}

/// Checks an RMA operation at the initiator: 1 to `rma_iov_limit` remote
/// pieces whose lengths add up (without overflow) to the local buffers',
/// and an injected write of at most `inject_size` bytes. Its length in
/// bytes; `Inval` or `MsgSize` (logged under `prov`) otherwise.
pub fn check_rma(
    prov: &str,
    op: &RmaOp<'_>,
    rma_iov_limit: usize,
    inject_size: usize,
) -> Result<usize> {
    let len = iov_len(op.iov);
    let rlen = remote_len(op.rma)?;
    if rlen != len || op.rma.is_empty() || op.rma.len() > rma_iov_limit {
        prov_log!(
            prov,
            FI_LOG_WARN,
            FI_LOG_EP_DATA,
            "RMA: {} local bytes for {} remote bytes in {} pieces",
            len,
            rlen,
            op.rma.len()
        );
        return Err(Error::Inval);
    }
    if op.write && injected(op.flags, op.internal) && len > inject_size {
        prov_log!(
            prov,
            FI_LOG_WARN,
            FI_LOG_EP_DATA,
            "inject write of {len} bytes exceeds inject_size {inject_size}"
        );
        return Err(Error::MsgSize);
    }
    Ok(len)
}

/// An atomic operation's operands and compare values, copied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AtomicArgs {
    /// The operands, back to back (what the application gave for
    /// `FI_ATOMIC_READ`, which carries none on the wire).
    pub operand: Vec<u8>,
    /// The compare values (compare kinds), back to back.
    pub compare: Vec<u8>,
    /// Bytes the remote pieces cover.
    pub len: usize,
}

/// Checks an atomic operation at the initiator and copies its operands:
/// 1 to `rma_iov_limit` remote pieces of at most `limit` bytes each, each
/// a whole number of elements, and operand, compare and result buffers
/// covering exactly the remote bytes where the kind has them. `Inval`
/// (logged under `prov`) otherwise.
pub fn gather_atomic(
    prov: &str,
    op: &AtomicReq<'_>,
    rma_iov_limit: usize,
    limit: usize,
) -> Result<AtomicArgs> {
    let len = remote_len(op.rma)?;
    let gather = |v: &[IoBuf]| {
        let mut b = Vec::with_capacity(len);
        for x in v {
            b.extend_from_slice(x.as_slice());
        }
        b
    };
    let operand = gather(op.operand);
    let compare = gather(op.compare);
    let bad_len = |n: usize, wanted: bool| wanted && n != len;
    if op.size == 0
        || op.rma.is_empty()
        || op.rma.len() > rma_iov_limit
        || op.rma.iter().any(|r| r.len > limit || r.len % op.size != 0)
        || bad_len(operand.len(), op.op != FI_ATOMIC_READ)
        || bad_len(compare.len(), op.kind == AtomicKind::Compare)
        || bad_len(iov_len(op.result), op.kind != AtomicKind::Base)
    {
        prov_log!(
            prov,
            FI_LOG_WARN,
            FI_LOG_EP_DATA,
            "atomic: {} remote pieces of {} bytes (at most {} each) for {} operand, {} compare, {} result bytes",
            op.rma.len(),
            len,
            limit,
            operand.len(),
            compare.len(),
            iov_len(op.result)
        );
        return Err(Error::Inval);
    }
    Ok(AtomicArgs {
        operand,
        compare,
        len,
    })
}

/// What an atomic request asks for, packed in one word: the `fi_op` in
/// bits 0..8, the `fi_datatype` in 8..16, the kind (0 base, 1 fetch, 2
/// compare) in 16..24, the element count in 32..64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicTag {
    pub kind: AtomicKind,
    pub op: fi_op,
    pub datatype: fi_datatype,
    /// Elements, not bytes.
    pub count: u64,
}

impl AtomicTag {
    /// Packs it.
    pub fn encode(&self) -> u64 {
        let kind = match self.kind {
            AtomicKind::Base => 0u64,
            AtomicKind::Fetch => 1,
            AtomicKind::Compare => 2,
        };
        (self.op as u64 & 0xff) | (self.datatype as u64 & 0xff) << 8 | kind << 16 | self.count << 32
    }

    /// Unpacks a word a peer sent; None for unknown bits or a combination
    /// fi_atomic(3) does not define or we do not offer ([`valid`]).
    pub fn decode(tag: u64) -> Option<AtomicTag> {
        if tag & 0xff00_0000 != 0 {
            return None;
        }
        let kind = match (tag >> 16) & 0xff {
            0 => AtomicKind::Base,
            1 => AtomicKind::Fetch,
            2 => AtomicKind::Compare,
            _ => return None,
        };
        let t = AtomicTag {
            kind,
            op: (tag & 0xff) as fi_op,
            datatype: ((tag >> 8) & 0xff) as fi_datatype,
            count: tag >> 32,
        };
        t.size()?;
        Some(t)
    }

    /// Bytes of one element.
    pub fn size(&self) -> Option<usize> {
        valid(self.kind, self.op, self.datatype)
    }

    /// Bytes of target memory it covers (None when that overflows).
    pub fn len(&self) -> Option<usize> {
        usize::try_from(self.count).ok()?.checked_mul(self.size()?)
    }

    /// Whether it covers no element.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes a request carries: operands (none for `FI_ATOMIC_READ`) and
    /// compare values, `count` elements each.
    pub fn payload(&self) -> Option<u64> {
        let one = self.count.checked_mul(self.size()? as u64)?;
        let n = u64::from(self.op != FI_ATOMIC_READ) + u64::from(self.kind == AtomicKind::Compare);
        one.checked_mul(n)
    }

    /// A request's payload cut into operands and compare values; None
    /// unless it holds exactly what [`AtomicTag::payload`] says.
    pub fn split<'a>(&self, payload: &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
        if Some(payload.len() as u64) != self.payload() {
            return None;
        }
        let len = self.len()?;
        Some(match (self.op == FI_ATOMIC_READ, self.kind) {
            (true, _) => (&payload[..0], &payload[..0]),
            (false, AtomicKind::Compare) => payload.split_at(len),
            (false, _) => (payload, &payload[..0]),
        })
    }

    /// The access the target's registration must allow: writing for
    /// base operations, reading for `FI_ATOMIC_READ`, both otherwise.
    pub fn access(&self) -> u64 {
        match (self.kind, self.op) {
            (AtomicKind::Base, _) => FI_REMOTE_WRITE,
            (_, FI_ATOMIC_READ) => FI_REMOTE_READ,
            _ => FI_REMOTE_READ | FI_REMOTE_WRITE,
        }
    }

    /// Whether the target memory changes (counted as a remote write).
    pub fn writes(&self) -> bool {
        self.op != FI_ATOMIC_READ
    }
}

/// Target: checks an atomic request on `[addr, addr + t.len())` of the
/// region `key` (one contiguous piece of a registration that allows
/// [`AtomicTag::access`]) and applies it, each element under the
/// engine's element locks; the values found land in `result` (fetch and
/// compare kinds; `t.len()` bytes, else empty). `operand` and `compare`
/// as [`AtomicTag::split`] gives them. The region, for
/// [`remote_complete`]; a refusal says why.
pub fn apply_atomic(
    mr: &MrTable,
    key: u64,
    addr: u64,
    t: AtomicTag,
    operand: &[u8],
    compare: &[u8],
    result: &mut [u8],
) -> core::result::Result<Arc<MemRegion>, Denied> {
    let len = t.len().ok_or(Denied::Range)?;
    let (m, iov) = mr.access(key, addr, len, t.access())?;
    if iov.len() > 1 {
        // Elements must not straddle the pieces of a regv.
        return Err(Denied::Range);
    }
    if len == 0 {
        return Ok(m);
    }
    let target = iov
        .first()
        .map_or(core::ptr::null_mut(), |b| b.addr() as *mut u8);
    let req = AtomicOp {
        kind: t.kind,
        op: t.op,
        datatype: t.datatype,
        count: len / t.size().ok_or(Denied::Access)?,
    };
    let res = (t.kind != AtomicKind::Base).then_some(result);
    // SAFETY: `target` is the start of `len` bytes of one registered
    // piece that allows this access (checked just above); the
    // application keeps registered memory valid while registered, and
    // other atomics on it go through the same element locks. `apply`
    // checks the operand, compare and result lengths itself.
    unsafe { apply(req, target, operand, compare, res) }.map_err(|_| Denied::Access)?;
    Ok(m)
}

/// Target: a peer's access into `mr` completed (for an operation of
/// several pieces, once, with its last): the region's counter
/// (`FI_RMA_EVENT`, `fi_mr_bind`), the endpoint's remote counter, and a
/// write's remote CQ data (`len` bytes from `src`).
pub fn remote_complete(
    sinks: &Sinks,
    mr: &MemRegion,
    write: bool,
    len: usize,
    data: Option<u64>,
    src: fi_addr_t,
) {
    mr.count_remote(write);
    sinks.remote_done(write, len, data, src);
}

/// Target: logs a refused access (`what`: "write", "read", "atomic") of
/// `len` bytes at `addr` through `key` from `peer`.
pub fn log_refusal(
    prov: &str,
    peer: &dyn std::fmt::Display,
    what: &str,
    (key, addr, len): (u64, u64, u64),
    d: Denied,
) {
    prov_log!(
        prov,
        FI_LOG_WARN,
        FI_LOG_EP_DATA,
        "refused RMA {what} from {peer}: key {key:#x}, address {addr:#x}, {len} bytes: {}",
        d.cause()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::mr::MrRequest;

    fn buf(v: &mut [u8]) -> IoBuf {
        // SAFETY: the tests keep `v` alive and unaliased while it is used.
        unsafe { IoBuf::new(v.as_mut_ptr(), v.len()) }
    }

    #[test]
    fn atomic_tags_round_trip_and_bad_ones_are_refused() {
        let t = AtomicTag {
            kind: AtomicKind::Compare,
            op: FI_CSWAP,
            datatype: FI_UINT64,
            count: 3,
        };
        assert_eq!(AtomicTag::decode(t.encode()), Some(t));
        assert_eq!(t.len(), Some(24));
        assert_eq!(t.payload(), Some(48));
        let p = [7u8; 48];
        let (o, c) = t.split(&p).unwrap();
        assert_eq!((o.len(), c.len()), (24, 24));
        assert_eq!(t.split(&p[..47]), None);
        assert_eq!(t.access(), FI_REMOTE_READ | FI_REMOTE_WRITE);
        // Bitwise on floating point is not offered; unknown bits neither.
        let bad = AtomicTag {
            kind: AtomicKind::Base,
            op: FI_BOR,
            datatype: FI_DOUBLE,
            count: 1,
        };
        assert_eq!(AtomicTag::decode(bad.encode()), None);
        assert_eq!(AtomicTag::decode(t.encode() | 1 << 24), None);
        assert_eq!(AtomicTag::decode(t.encode() | 3 << 16), None);
        let read = AtomicTag {
            kind: AtomicKind::Fetch,
            op: FI_ATOMIC_READ,
            datatype: FI_INT32,
            count: 2,
        };
        assert_eq!(read.payload(), Some(0));
        assert_eq!(read.split(&[]), Some((&[][..], &[][..])));
        assert_eq!(read.access(), FI_REMOTE_READ);
        assert!(!read.writes());
        // The largest count a peer can name: its sizes do not overflow,
        // and no payload a cell or a frame carries matches them.
        let huge = AtomicTag {
            count: u64::from(u32::MAX),
            ..t
        };
        assert_eq!(AtomicTag::decode(huge.encode()), Some(huge));
        assert_eq!(huge.len(), Some(8 * (u32::MAX as usize)));
        assert_eq!(huge.split(&[0u8; 4096]), None);
    }

    #[test]
    fn atomics_apply_inside_a_registration_only() {
        let t = MrTable::new(0, 2);
        let mut a = 40u64.to_ne_bytes();
        let mut b = [0u8; 8];
        let iov = [buf(&mut a), buf(&mut b)];
        let req = MrRequest {
            iov: &iov,
            access: FI_REMOTE_READ | FI_REMOTE_WRITE,
            offset: 0,
            requested_key: 5,
            flags: 0,
        };
        t.register(&req).unwrap();
        let add = AtomicTag {
            kind: AtomicKind::Fetch,
            op: FI_SUM,
            datatype: FI_UINT64,
            count: 1,
        };
        let mut old = [0u8; 8];
        let two = 2u64.to_ne_bytes();
        apply_atomic(&t, 5, 0, add, &two, &[], &mut old).unwrap();
        assert_eq!(u64::from_ne_bytes(old), 40);
        assert_eq!(u64::from_ne_bytes(a), 42);
        let wrong_key = apply_atomic(&t, 6, 0, add, &two, &[], &mut old);
        assert_eq!(wrong_key.err(), Some(Denied::Key));
        // Elements across the two pieces of a regv are refused.
        let two_elems = AtomicTag { count: 2, ..add };
        let r = apply_atomic(&t, 5, 0, two_elems, &[0; 16], &[], &mut [0; 16]);
        assert_eq!(r.err(), Some(Denied::Range));
        let r = apply_atomic(&t, 5, 12, add, &two, &[], &mut old);
        assert_eq!(r.err(), Some(Denied::Range));
    }

    #[test]
    fn rma_and_atomic_shapes_are_checked() {
        let mut a = [0u8; 16];
        let iov = [buf(&mut a)];
        let rma = [RmaIov {
            addr: 0,
            len: 16,
            key: 1,
        }];
        let op = RmaOp {
            write: true,
            iov: &iov,
            desc: &[],
            dest: 0,
            rma: &rma,
            context: 0,
            flags: 0,
            internal: 0,
            data: None,
        };
        assert_eq!(check_rma("test", &op, 4, 8), Ok(16));
        let inject = RmaOp {
            flags: FI_INJECT,
            ..op
        };
        assert_eq!(check_rma("test", &inject, 4, 8), Err(Error::MsgSize));
        let short = [RmaIov { len: 15, ..rma[0] }];
        let bad = RmaOp { rma: &short, ..op };
        assert_eq!(check_rma("test", &bad, 4, 8), Err(Error::Inval));
        let mut res = [0u8; 16];
        let result = [buf(&mut res)];
        let at = AtomicReq {
            kind: AtomicKind::Fetch,
            op: FI_SUM,
            datatype: FI_UINT32,
            size: 4,
            operand: &iov,
            compare: &[],
            result: &result,
            desc: &[],
            compare_desc: &[],
            result_desc: &[],
            dest: 0,
            rma: &rma,
            context: 0,
            flags: 0,
            internal: 0,
            data: None,
        };
        let args = gather_atomic("test", &at, 4, 16).unwrap();
        assert_eq!(
            (args.operand.len(), args.compare.len(), args.len),
            (16, 0, 16)
        );
        assert_eq!(gather_atomic("test", &at, 4, 8), Err(Error::Inval));
        let no_result = AtomicReq { result: &[], ..at };
        assert_eq!(gather_atomic("test", &no_result, 4, 16), Err(Error::Inval));
    }
}
