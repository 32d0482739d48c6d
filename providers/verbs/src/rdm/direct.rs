//! Small messages posted at once, without passing through their
//! connection's queue.
//!
//! - **Why.** A message of one piece whose connection is up and has
//!   nothing queued before it would be queued and taken off the queue
//!   again in the same call (`RdmEp::queue_on`, then `RdmEp::pump`): a
//!   move of the whole operation in and out of the queue, and a copy
//!   through its general body (`gather` over an `IoVec` window). That was
//!   most of an 8-byte send's instructions in the soft-RoCE guest's
//!   count.
//! - **What it does.** The same as the queue would, in one step: the
//!   connection's next message number, the header and the caller's bytes
//!   copied into a free transmit slot, the work request posted, and the
//!   send recorded as wholly handed to the connection (so `FI_FENCE`
//!   after it waits for it, and its completion is reported through
//!   `RdmEp::settle` like any other). The caller's buffers are free on
//!   return, so an injected message needs no copy of its own either.
//! - **When not.** Anything else goes through the queue, which keeps the
//!   connection's order: no connection yet, one not up or being closed,
//!   sends already waiting on it, no free transmit slot, a send that
//!   waits for an acknowledgement or a fence (the caller checks those),
//!   or a post the device refuses (the queue retries it, as before), and
//!   a small message of a stream, which waits to be bundled
//!   (`rdm/bundle.rs`).

use super::wire::{Header, HDR};
use super::{bundle, verbs_err, Phase, RdmEp, Sending, State, TxWr, PIECE, SLOT};
use crate::ibv::owned::Op;
use oxifabric::ops::SendOp;
use oxifabric::service::ep_core::TxCtx;
use std::net::SocketAddr;

impl RdmEp {
    /// Posts message `op` of `len` bytes (at most a piece) to `peer` now
    /// if its connection can take it at once; false when nothing was
    /// done and it must be queued.
    pub(super) fn post_now(
        st: &mut State,
        peer: SocketAddr,
        op: &SendOp<'_>,
        len: usize,
        tx: &TxCtx,
    ) -> bool {
        debug_assert!(len <= PIECE);
        let Some(cn) = st.tx_conn.get(&peer) else {
            return false;
        };
        let State {
            conns,
            txbuf,
            tx_free,
            wrs,
            sends,
            tick,
            ..
        } = st;
        let Some(c) = conns.get_mut(&cn) else {
            return false;
        };
        if c.phase != Phase::Up || !c.queue.is_empty() || c.closing.is_some() {
            return false;
        }
        if bundle::waits(c.inflight, len) {
            // A stream: this one waits to be bundled (`rdm/bundle.rs`).
            return false;
        }
        let Some(&slot) = tx_free.last() else {
            return false;
        };
        let h = Header::eager(c.next_seq, op.tag, op.data, len);
        let b = txbuf.buf(slot * SLOT, HDR + len);
        b.write_at(0, &h.encode());
        let mut at = HDR;
        for part in op.iov {
            at += b.write_at(at, part.as_slice());
        }
        let wr = wrs.next_id();
        if let Err(e) = c.id.post_send(
            wr,
            Op::Send(None),
            &[b],
            &[txbuf.lkey()],
            HDR + len <= c.inline,
        ) {
            verbs_err("ibv_post_send", e);
            return false;
        }
        tx_free.pop();
        c.inflight += 1;
        c.next_seq = c.next_seq.wrapping_add(1);
        *tick += 1;
        c.used = *tick;
        let send = sends.insert(Sending::new(Some(*tx), Vec::new(), None));
        Self::count_post(&mut c.unsettled, cn, sends, send, true);
        wrs.insert_as(wr, TxWr::new(slot, send, cn));
        true
    }
}
