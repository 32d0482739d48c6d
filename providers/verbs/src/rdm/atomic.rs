//! Atomics on the RDM endpoint: every operation and datatype the engine
//! offers (`service::atomic`), applied at the target by the engine
//! (`service::rma::apply_atomic`, atomic with respect to every other
//! atomic of that process), carried as a request and an answer over the
//! connections' wire. The device's own atomics are not used: they could
//! not be atomic with respect to the software path.
//!
//! - **Request** ([`wire::Op::Atomic`], one piece on the initiator's
//!   connection, in order with its other operations): `seq` the
//!   initiator's request number, `tag` the packed [`AtomicTag`] (checked
//!   by the target before use), `len` the body: the target address and key
//!   (8 bytes each, little-endian), then the operands and compare values.
//!   One remote piece of at most [`ATOMIC_LIMIT`] bytes, so a request
//!   always fits one piece.
//! - **Answer** ([`wire::Op::AtomicDone`], on the target's own connection
//!   back): `seq` the request number, `data` 0 or the refusal's cause
//!   (`Denied::to_u64`), the body the values found (fetch and compare
//!   kinds). The initiator's operation completes when its answer arrives;
//!   an answer from another peer, of a number not waiting, or of the wrong
//!   length closes that connection. When a connection to or from the peer
//!   fails, the operations waiting for its answers fail.

use super::wire::{self, Header};
use super::{AtomicWait, Body, Outgoing, RdmEp, State};
use crate::info::NAME;
use oxifabric::abi::*;
use oxifabric::error::{Error, Result};
use oxifabric::ops::{AtomicReq, IoVec};
use oxifabric::service::atomic::AtomicKind;
use oxifabric::service::ep_core::{Failure, TxCtx};
use oxifabric::service::mr::Denied;
use oxifabric::service::rma::{
    apply_atomic, gather_atomic, log_refusal, remote_complete, AtomicTag,
};

/// Most bytes of target memory one atomic operation covers (its request,
/// operands and compare values, fits one piece).
pub const ATOMIC_LIMIT: usize = 4096;

/// Bytes in front of the operands in a request's body: address and key.
const PREFIX: usize = 16;

/// A request's body: target address and key, operands, compare values.
pub fn request_body(addr: u64, key: u64, operand: &[u8], compare: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(PREFIX + operand.len() + compare.len());
    v.extend_from_slice(&addr.to_le_bytes());
    v.extend_from_slice(&key.to_le_bytes());
    v.extend_from_slice(operand);
    v.extend_from_slice(compare);
    v
}

/// A request as the target checked it: what to apply, where, with what.
pub struct Request<'a> {
    pub tag: AtomicTag,
    pub addr: u64,
    pub key: u64,
    pub operand: &'a [u8],
    pub compare: &'a [u8],
}

/// Checks a request piece (header and body); why it is refused otherwise.
pub fn parse_request<'a>(
    h: &Header,
    body: &'a [u8],
) -> std::result::Result<Request<'a>, &'static str> {
    let tag = h
        .tag
        .and_then(AtomicTag::decode)
        .ok_or("an atomic request of an unknown kind")?;
    if tag.len().is_none_or(|n| n > ATOMIC_LIMIT) {
        return Err("an atomic request past the atomic limit");
    }
    let (head, payload) = body
        .split_first_chunk::<PREFIX>()
        .ok_or("an atomic request without its address")?;
    let (operand, compare) = tag
        .split(payload)
        .ok_or("an atomic request whose operands do not add up")?;
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&head[i..i + 8]);
        u64::from_le_bytes(w)
    };
    Ok(Request {
        tag,
        addr: word(0),
        key: word(8),
        operand,
        compare,
    })
}

/// An atomic operation of ours or its answer: one piece of kind `frame`
/// numbered `seq`.
fn frame(
    frame: wire::Op,
    seq: u32,
    tag: Option<u64>,
    data: Option<u64>,
    body: Vec<u8>,
) -> Outgoing {
    Outgoing {
        id: 0,
        seq,
        tag,
        data,
        len: body.len(),
        body: Body::Copy(body),
        off: 0,
        rma: None,
        frame: Some(frame),
        ack: false,
        fence: false,
    }
}

impl RdmEp {
    /// `fi_atomic` and its fetch and compare forms: checked and copied
    /// by the engine (`gather_atomic`: one remote piece of at most
    /// [`ATOMIC_LIMIT`] bytes), sent as a request; completes when the
    /// answer arrives.
    pub(super) fn post_atomic(&self, op: &AtomicReq<'_>) -> Result<()> {
        if self.info.caps & FI_ATOMIC == 0 {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "atomic on an endpoint whose fi_info has no FI_ATOMIC"
            );
            return Err(Error::NoSys);
        }
        if op.data.is_some() || op.flags & FI_REMOTE_CQ_DATA != 0 {
            // The answer carries the values found, the target's CQ would
            // need an atomic completion of its own: not carried (yet).
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "atomic with remote CQ data: not supported on RDM endpoints"
            );
            return Err(Error::Inval);
        }
        let args = gather_atomic(NAME, op, 1, ATOMIC_LIMIT)?;
        let [r] = op.rma else {
            return Err(Error::Inval);
        };
        let tag = AtomicTag {
            kind: op.kind,
            op: op.op,
            datatype: op.datatype,
            count: (args.len / op.size.max(1)) as u64,
        };
        let result = IoVec::from_slice(op.result).ok_or(Error::Inval)?;
        // FI_ATOMIC_READ carries no operands on the wire (the engine keeps
        // what the application gave).
        let operand: &[u8] = if op.op == FI_ATOMIC_READ {
            &[]
        } else {
            &args.operand
        };
        let body = request_body(r.addr, r.key, operand, &args.compare);
        let mut g = self.lock();
        let st = &mut *g;
        let n = st.next_atomic;
        let mut out = frame(wire::Op::Atomic, n, Some(tag.encode()), None, body);
        out.fence = op.flags & FI_FENCE != 0;
        let (cn, id) = self.enqueue(st, op.dest, out, TxCtx::of_atomic(op), Vec::new())?;
        st.next_atomic = n.wrapping_add(1);
        let peer = st.conns.get(&cn).map(|c| c.peer).ok_or(Error::OpBadState)?;
        if let Some(s) = st.sends.get_mut(id) {
            s.waiting = Some(n);
        }
        st.atomics.insert(
            n,
            AtomicWait {
                send: id,
                peer,
                result,
            },
        );
        Ok(())
    }

    /// A peer's atomic request on connection `cn`: applied by the engine
    /// (or refused: bad key, range or access), counted, answered on our
    /// connection to that peer.
    pub(super) fn serve_atomic(
        &self,
        st: &mut State,
        cn: u32,
        h: &Header,
        body: &[u8],
        src: fi_addr_t,
    ) -> std::result::Result<(), &'static str> {
        let r = parse_request(h, body)?;
        let Some(peer) = st.conns.get(&cn).map(|c| c.peer) else {
            return Ok(());
        };
        let len = r.tag.len().unwrap_or(0);
        let mut found = vec![
            0u8;
            if r.tag.kind == AtomicKind::Base {
                0
            } else {
                len
            }
        ];
        let status = match apply_atomic(
            &self.mrs, r.key, r.addr, r.tag, r.operand, r.compare, &mut found,
        ) {
            Ok(m) => {
                remote_complete(&st.core.sinks, &m, r.tag.writes(), len, None, src);
                0
            }
            Err(d) => {
                log_refusal(NAME, &peer, "atomic", (r.key, r.addr, len as u64), d);
                found.clear();
                d.to_u64()
            }
        };
        let out = frame(wire::Op::AtomicDone, h.seq, None, Some(status), found);
        if let Err(e) = self.queue_to(st, peer, out, None, Vec::new()) {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "the answer to {peer}'s atomic request is lost: {e:?}"
            );
        }
        Ok(())
    }

    /// The answer to our atomic request `h.seq` on connection `cn`: the
    /// values found go to the operation's result buffers and it completes,
    /// or it fails with the target's refusal.
    pub(super) fn atomic_answered(
        st: &mut State,
        cn: u32,
        h: &Header,
        body: &[u8],
    ) -> std::result::Result<(), &'static str> {
        let peer = st.conns.get(&cn).map(|c| c.peer);
        let w = st
            .atomics
            .get(&h.seq)
            .ok_or("an answer to no atomic request")?;
        if Some(w.peer) != peer {
            return Err("an answer to another peer's atomic request");
        }
        let status = h.data.unwrap_or(0);
        let refused = match status {
            0 if body.len() == w.result.total_len() => None,
            0 => return Err("an atomic answer of the wrong length"),
            s => Some(Denied::from_u64(s).ok_or("an unknown atomic refusal")?),
        };
        let Some(w) = st.atomics.remove(&h.seq) else {
            return Ok(());
        };
        if let Some(s) = st.sends.get_mut(w.send) {
            s.waiting = None;
        }
        match refused {
            None => {
                w.result.scatter(0, body);
                Self::settle(st, w.send);
            }
            Some(d) => {
                let f = Failure {
                    peer,
                    ..Failure::cause(d.code(), d.cause())
                };
                Self::fail_send(st, w.send, f);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::wire::Op;
    use super::*;

    fn header(tag: u64, len: usize) -> Header {
        Header {
            op: Op::Atomic,
            seq: 1,
            tag: Some(tag),
            data: None,
            len: len as u64,
            ack: false,
        }
    }

    #[test]
    fn requests_are_checked_before_use() {
        let t = AtomicTag {
            kind: AtomicKind::Compare,
            op: FI_CSWAP,
            datatype: FI_UINT64,
            count: 2,
        };
        let body = request_body(0x1000, 7, &[1; 16], &[2; 16]);
        let r = parse_request(&header(t.encode(), body.len()), &body).unwrap();
        assert_eq!((r.addr, r.key), (0x1000, 7));
        assert_eq!((r.operand, r.compare), (&[1u8; 16][..], &[2u8; 16][..]));
        let short = &body[..body.len() - 1];
        assert!(parse_request(&header(t.encode(), short.len()), short).is_err());
        assert!(
            parse_request(&header(u64::MAX, body.len()), &body).is_err(),
            "unknown kind"
        );
        let big = AtomicTag {
            count: (ATOMIC_LIMIT / 8 + 1) as u64,
            ..t
        };
        assert!(parse_request(&header(big.encode(), body.len()), &body).is_err());
        assert!(
            parse_request(&header(t.encode(), 8), &body[..8]).is_err(),
            "no address"
        );
    }
}
