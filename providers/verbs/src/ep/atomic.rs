//! Native atomics on an MSG endpoint: only what the device does itself,
//! as the issue asks (upstream's verbs also offers `FI_ATOMIC_WRITE` and
//! `FI_ATOMIC_READ`, emulated by RDMA WRITE and fetch-and-add of 0; we do
//! not, so an application never mistakes them for atomic against the
//! device's own atomics).
//!
//! - `fi_atomic` with `FI_SUM`: the device's fetch-and-add; the old value
//!   it brings back lands in an 8-byte registered slot the endpoint owns
//!   (made at the first such call) and is dropped.
//! - `fi_fetch_atomic` with `FI_SUM`: fetch-and-add into the caller's
//!   result buffer, under its descriptor.
//! - `fi_compare_atomic` with `FI_CSWAP`: compare-and-swap, the old value
//!   into the result buffer.
//!
//! On `FI_INT64`/`FI_UINT64` only (the device's atomics are 64-bit), one
//! element per operation at an 8-byte aligned remote address under the
//! peer's key. The target's device checks the key and the range: a bad
//! one comes back as an error work completion, reported like any other.
//! Operand and compare values travel in the work request itself, so they
//! need no descriptor.

use super::{verbs_err, VerbsEp};
use crate::device::AtomicCap;
use crate::ibv::owned::{Op, RegBuf, MAX_SGE};
use crate::ibv::IBV_ACCESS_LOCAL_WRITE;
use crate::info::NAME;
use oxifabric::abi::*;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::{iov_len, AtomicReq, IoBuf};
use oxifabric::service::atomic::AtomicKind;
use oxifabric::service::ep_core::TxCtx;

/// Bytes one atomic operation carries: one 64-bit element.
pub const ATOMIC_SIZE: usize = 8;

/// Whether the device's atomics serve `op` on `dt` for calls of `kind`.
pub fn offers(kind: AtomicKind, op: fi_op, dt: fi_datatype) -> bool {
    matches!(dt, FI_INT64 | FI_UINT64)
        && matches!(
            (kind, op),
            (AtomicKind::Base | AtomicKind::Fetch, FI_SUM) | (AtomicKind::Compare, FI_CSWAP)
        )
}

/// Whether a device with this capability has atomics to offer.
pub fn device_has_atomics(cap: AtomicCap) -> bool {
    matches!(cap, AtomicCap::Hca | AtomicCap::Glob)
}

/// Adds `FI_ATOMIC` to an MSG entry of a device that has atomics: as
/// initiator (`FI_READ`/`FI_WRITE`, already there for RMA) and target.
pub fn advertise(e: &mut Info, cap: AtomicCap) {
    if device_has_atomics(cap) {
        e.caps |= FI_ATOMIC;
        e.tx.caps |= FI_ATOMIC;
        e.rx.caps |= FI_ATOMIC;
    }
}

fn refuse(what: &str, why: std::fmt::Arguments<'_>, err: Error) -> Error {
    oxifabric::prov_log!(NAME, FI_LOG_WARN, FI_LOG_EP_DATA, "{what}: {why}");
    err
}

/// The 64-bit value of an operand (one element, checked to be 8 bytes).
fn value(bufs: &[IoBuf]) -> u64 {
    let mut b = [0u8; ATOMIC_SIZE];
    if let Some(x) = bufs.first() {
        let s = x.as_slice();
        let n = s.len().min(ATOMIC_SIZE);
        b[..n].copy_from_slice(&s[..n]);
    }
    u64::from_ne_bytes(b)
}

impl VerbsEp {
    /// Posts one native atomic (module comment); anything else is refused
    /// with a warn line: a combination the device lacks `-FI_EOPNOTSUPP`,
    /// more than one element `-FI_EMSGSIZE`, several remote pieces, a
    /// misaligned address or remote CQ data `-FI_EINVAL`.
    pub(super) fn post_atomic(&self, op: &AtomicReq<'_>) -> Result<()> {
        let what = match op.kind {
            AtomicKind::Base => "fi_atomic",
            AtomicKind::Fetch => "fi_fetch_atomic",
            AtomicKind::Compare => "fi_compare_atomic",
        };
        if self.info.caps & FI_ATOMIC == 0 || !offers(op.kind, op.op, op.datatype) {
            let why = format_args!(
                "operation {} on datatype {} is not native",
                op.op, op.datatype
            );
            return Err(refuse(what, why, Error::OpNotSupp));
        }
        let [r] = op.rma else {
            let why = format_args!("{} remote pieces, one is allowed", op.rma.len());
            return Err(refuse(what, why, Error::Inval));
        };
        let len = iov_len(op.operand);
        if len != ATOMIC_SIZE || r.len != ATOMIC_SIZE {
            let why = format_args!("{} bytes, one 64-bit element is allowed", len.max(r.len));
            return Err(refuse(what, why, Error::MsgSize));
        }
        if r.addr % ATOMIC_SIZE as u64 != 0 {
            let why = format_args!("remote address {:#x} is not 8-byte aligned", r.addr);
            return Err(refuse(what, why, Error::Inval));
        }
        if op.flags & FI_REMOTE_CQ_DATA != 0 {
            let why = format_args!("no remote CQ data on atomics");
            return Err(refuse(what, why, Error::Inval));
        }
        let Ok(rkey) = u32::try_from(r.key) else {
            let why = format_args!("key {:#x} is wider than the 4-byte mr_key_size", r.key);
            return Err(refuse(what, why, Error::Other(FI_EKEYREJECTED)));
        };
        let add = value(op.operand);
        let verb = match op.kind {
            AtomicKind::Compare => Op::CmpSwap {
                addr: r.addr,
                rkey,
                compare: value(op.compare),
                swap: add,
            },
            _ => Op::FetchAdd {
                addr: r.addr,
                rkey,
                add,
            },
        };
        let tx = TxCtx::of_atomic(op);
        if op.kind == AtomicKind::Base {
            let mut g = self.lock();
            let st = &mut *g;
            if st.atomic_scratch.is_none() {
                let slot = RegBuf::new(&self.pd, ATOMIC_SIZE)
                    .map_err(|e| verbs_err("registering the atomic slot", e))?;
                st.atomic_scratch = Some(slot);
            }
            let slot = st.atomic_scratch.as_ref().ok_or(Error::OpBadState)?;
            let (buf, lkey) = (slot.buf(0, ATOMIC_SIZE), slot.lkey());
            return self.submit(st, tx, verb, &[buf], &[lkey], false, Vec::new());
        }
        if iov_len(op.result) != ATOMIC_SIZE || op.result.len() != 1 {
            let why = format_args!("the result buffer must be one 64-bit element");
            return Err(refuse(what, why, Error::Inval));
        }
        let (lkeys, mrs) = match self.lkeys(op.result_desc, 1, what)? {
            Some(k) => (k, Vec::new()),
            None => self.register_iov(op.result, IBV_ACCESS_LOCAL_WRITE, what)?,
        };
        let mut g = self.lock();
        self.submit(
            &mut g,
            tx,
            verb,
            op.result,
            &lkeys[..1.min(MAX_SGE)],
            false,
            mrs,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_devices_own_atomics_are_offered() {
        for dt in [FI_INT64, FI_UINT64] {
            assert!(offers(AtomicKind::Base, FI_SUM, dt));
            assert!(offers(AtomicKind::Fetch, FI_SUM, dt));
            assert!(offers(AtomicKind::Compare, FI_CSWAP, dt));
            assert!(!offers(AtomicKind::Fetch, FI_ATOMIC_READ, dt));
            assert!(!offers(AtomicKind::Base, FI_ATOMIC_WRITE, dt));
            assert!(!offers(AtomicKind::Compare, FI_CSWAP_NE, dt));
            assert!(!offers(AtomicKind::Base, FI_MIN, dt));
        }
        for dt in [FI_INT32, FI_UINT32, FI_DOUBLE, FI_FLOAT, FI_INT128] {
            assert!(!offers(AtomicKind::Fetch, FI_SUM, dt));
            assert!(!offers(AtomicKind::Compare, FI_CSWAP, dt));
        }
    }

    #[test]
    fn atomics_are_advertised_only_for_devices_that_have_them() {
        let mut e = Info::default();
        advertise(&mut e, AtomicCap::None);
        assert_eq!(e.caps & FI_ATOMIC, 0);
        advertise(&mut e, AtomicCap::Unknown(7));
        assert_eq!(e.caps & FI_ATOMIC, 0);
        advertise(&mut e, AtomicCap::Hca);
        assert_ne!(e.caps & e.tx.caps & e.rx.caps & FI_ATOMIC, 0);
    }
}
