//! RMA on the RDM endpoint: `fi_read`/`fi_write`/`fi_writedata` (and their
//! msg, iov and inject forms) as RDMA READ and WRITE on the peer's
//! connection, queued behind its sends until the connection is up.
//!
//! - **Keys.** The remote key is the one the target's `fi_mr_key` gave
//!   (the device's rkey, `DeviceMr` in `domain.rs`); the target's device
//!   checks it and the range, and a refusal comes back as the initiator's
//!   error completion with the verbs status (the connection goes down with
//!   it, as RC wants; the next operation to that peer connects anew). So
//!   that this takes nothing of the target's with it, an endpoint with
//!   RMA sends only on connections it made (each direction has its own
//!   queue pair), and a flushed receive slot drops its connection at once
//!   (nothing more is posted on a queue pair in error state).
//! - **Local buffers.** With descriptors (`fi_mr_desc`) the device reads
//!   or writes the application's buffers under their local keys. Without
//!   them an operation of up to one piece goes through the transmit slot
//!   it holds (a write is copied in, inline when small; a read lands there
//!   and is copied out at completion), so injected writes need nothing
//!   more; a longer one takes its registrations from the domain's cache
//!   (`ep::register_bufs`, refused under `FI_MR_LOCAL`), held until it
//!   completes.
//! - **Sizes.** An operation is cut into work requests of at most
//!   [`CHUNK`] bytes (under the port's `max_msg_sz`), each holding a
//!   transmit slot, so the queue pairs' send queues never overflow.
//! - **Notices.** RDMA WRITE with immediate data carries 4 bytes and RDM
//!   entries offer 8 (the wire header's), and a plain RDMA access gives
//!   the target no completion at all. So an access may be followed on the
//!   same connection by a header-only piece ([`wire::Op::Written`] or
//!   [`wire::Op::Read`]: key, address, length, remote CQ data): always
//!   after `fi_writedata`, and after every access when the peer asked for
//!   notices at connection time (`wire::NOTICES`: its endpoint has
//!   `FI_RMA_EVENT`). RC executes the two in order, so when the target
//!   sees the notice the access is done; it reports it through the engine
//!   (`service::rma::remote_complete`: the region's `FI_RMA_EVENT`
//!   counter, the endpoint's remote counters, `FI_RMA | FI_REMOTE_WRITE |
//!   FI_REMOTE_CQ_DATA` with `FI_SOURCE` for data), consuming no posted
//!   receive. A refused access takes the connection down, so its notice
//!   is flushed and counts nothing.

use super::wire::{self, Header, HDR};
use super::{gather, Body, Outgoing, Post, PIECE, SLOT};
use crate::ibv::owned::{Op, RegBuf, MAX_SGE};
use crate::ibv::VerbsError;
use crate::info::NAME;
use oxifabric::abi::*;
use oxifabric::error::{Error, Result};
use oxifabric::ops::{IoBuf, IoVec};

/// Most bytes of one RDMA work request (rxe's port allows 8 MiB).
pub const CHUNK: usize = 1 << 20;

/// What an RMA operation still has to do.
pub struct Access {
    pub write: bool,
    /// The remote address of byte 0 and the key.
    pub addr: u64,
    pub rkey: u32,
    /// Local keys of the application's buffers (`Body::App`), or None:
    /// the operation goes through transmit slots.
    pub keys: Option<[u32; MAX_SGE]>,
    /// `fi_writedata`'s remote CQ data.
    pub data: Option<u64>,
    /// The notice after the access was posted.
    pub noticed: bool,
    /// A first work request was posted (a zero-length operation posts
    /// one too).
    pub started: bool,
}

/// A read through a transmit slot: where its bytes go at completion.
pub struct ReadBack {
    pub dest: IoVec,
    pub len: usize,
}

/// The remote key as the device takes it: 4 bytes (`mr_key_size`).
pub fn rkey(key: u64) -> Result<u32> {
    u32::try_from(key).map_err(|_| {
        oxifabric::prov_log!(
            NAME,
            FI_LOG_WARN,
            FI_LOG_EP_DATA,
            "RMA key {key:#x} is wider than the 4-byte mr_key_size"
        );
        Error::Other(FI_EKEYREJECTED)
    })
}

/// Whether an access needs a notice after it: it carries remote CQ
/// data, or the peer counts accesses (`notices`).
fn wants_notice(a: &Access, notices: bool) -> bool {
    a.data.is_some() || notices
}

/// Whether queued operation `o` has posted everything (`notices`: the
/// peer wants RMA notices).
pub fn finished(o: &Outgoing, notices: bool) -> bool {
    match &o.rma {
        Some(a) => a.started && o.off >= o.len && (a.noticed || !wants_notice(a, notices)),
        None => o.off >= o.len,
    }
}

/// The `len` bytes from byte `off` of `iov` with their local keys.
pub(super) fn keyed_window(
    iov: &IoVec,
    keys: &[u32; MAX_SGE],
    off: usize,
    len: usize,
) -> (IoVec, [u32; MAX_SGE]) {
    let mut out = IoVec::default();
    let mut k = [0u32; MAX_SGE];
    let (mut skip, mut left) = (off, len);
    for (b, key) in iov.iter().zip(keys) {
        if left == 0 {
            break;
        }
        if skip >= b.len() {
            skip -= b.len();
            continue;
        }
        let n = (b.len() - skip).min(left);
        k[out.len()] = *key;
        let _ = out.push(b.slice(skip, n));
        left -= n;
        skip = 0;
    }
    (out, k)
}

/// Posts the next work request of RMA operation `o` (which has an
/// [`Access`]) where `p` says:
/// a piece of the access, or the write's notice once the access is all
/// posted. Advances `o`; returns where a read through the slot goes.
pub fn step(p: &Post<'_>, o: &mut Outgoing) -> std::result::Result<Option<ReadBack>, VerbsError> {
    let (id, txbuf) = (p.id, p.txbuf);
    let Some(a) = o.rma.as_mut() else {
        return Ok(None);
    };
    if a.started && o.off >= o.len {
        if wants_notice(a, p.notices) && !a.noticed {
            let h = Header {
                op: if a.write {
                    wire::Op::Written
                } else {
                    wire::Op::Read
                },
                seq: a.rkey,
                tag: Some(a.addr),
                data: a.data,
                len: o.len as u64,
                ack: false,
            };
            let b = txbuf.buf(p.slot * SLOT, HDR);
            b.write_at(0, &h.encode());
            id.post_send(p.wr, Op::Send(None), &[b], &[txbuf.lkey()], HDR <= p.inline)?;
            a.noticed = true;
        }
        return Ok(None);
    }
    let n = if a.keys.is_some() { CHUNK } else { PIECE }.min(o.len - o.off);
    // The target's device refuses an address that wraps (bad access).
    let remote = a.addr.wrapping_add(o.off as u64);
    let op = if a.write {
        Op::Write {
            addr: remote,
            rkey: a.rkey,
            imm: None,
        }
    } else {
        Op::Read {
            addr: remote,
            rkey: a.rkey,
        }
    };
    let mut back = None;
    match (&a.keys, &o.body) {
        (Some(keys), Body::App(iov)) => {
            let (v, k) = keyed_window(iov, keys, o.off, n);
            id.post_send(p.wr, op, &v, &k[..v.len()], false)?;
        }
        _ => {
            let b: IoBuf = txbuf.buf(p.slot * SLOT, n);
            let bufs: &[IoBuf] = if n == 0 {
                &[]
            } else {
                std::slice::from_ref(&b)
            };
            if a.write {
                gather(&o.body, o.off, n, b);
                id.post_send(p.wr, op, bufs, &[txbuf.lkey()], n <= p.inline)?;
            } else {
                id.post_send(p.wr, op, bufs, &[txbuf.lkey()], false)?;
                if let Body::App(iov) = &o.body {
                    back = Some(ReadBack {
                        dest: iov.window(o.off, n),
                        len: n,
                    });
                }
            }
        }
    }
    a.started = true;
    o.off += n;
    Ok(back)
}

/// A read through transmit slot `slot` completed: its bytes go to the
/// application's buffers.
pub fn read_back(txbuf: &RegBuf, slot: usize, r: &ReadBack) {
    let b = txbuf.buf(slot * SLOT, r.len);
    r.dest.scatter(0, b.as_slice());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_windows_keep_each_buffers_key() {
        let mut mem = [0u8; 30];
        let p = mem.as_mut_ptr();
        // SAFETY: three disjoint ranges of `mem`, which outlives them.
        let bufs = unsafe {
            [
                IoBuf::new(p, 10),
                IoBuf::new(p.add(10), 10),
                IoBuf::new(p.add(20), 10),
            ]
        };
        let iov = IoVec::from_slice(&bufs).unwrap();
        let mut keys = [0u32; MAX_SGE];
        keys[..3].copy_from_slice(&[7, 8, 9]);
        let (v, k) = keyed_window(&iov, &keys, 5, 10);
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].addr(), v[0].len()), (p as usize + 5, 5));
        assert_eq!((v[1].addr(), v[1].len()), (p as usize + 10, 5));
        assert_eq!(&k[..2], &[7, 8]);
        let (v, k) = keyed_window(&iov, &keys, 20, 10);
        assert_eq!((v.len(), k[0]), (1, 9));
        assert_eq!(keyed_window(&iov, &keys, 30, 0).0.len(), 0);
    }
}
