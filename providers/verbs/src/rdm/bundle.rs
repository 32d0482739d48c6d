//! Small messages that wait on their connection's queue leave together:
//! several whole messages in one work request, one receive slot at the
//! peer.
//!
//! - **Why.** Every work request costs the device a message and an
//!   acknowledgement, and the peer a receive slot and a completion. On
//!   soft-RoCE that is kernel work per packet, and it bounds a stream of
//!   8-byte sends at one message per round of the kernel's send,
//!   receive and acknowledgement paths, whatever the library does.
//! - **When.** A connection keeps at most [`AHEAD`] work requests in
//!   flight before small messages (whole, at most [`BUNDLED_MAX`] bytes,
//!   not waiting for an acknowledgement or a fence) stop being posted
//!   one by one and wait on its queue; when one completes, the queue's
//!   pump posts what waits as one bundle. A ping-pong never has that
//!   many in flight, so its messages leave at once as before
//!   (`rdm/direct.rs`); only a stream is bundled, and only by what it
//!   would have waited for anyway.
//! - **On the wire.** The pieces of a bundle are ordinary `Eager` pieces
//!   back to back, each header but the last marked as followed
//!   (`wire::Header::decode_next`); the receiver takes them in order, one
//!   at a time, so matching, flow control (a bundle may park part way,
//!   `rdm/flow.rs`) and the connection's order are those of single
//!   pieces.

use super::wire::{Header, HDR};
use super::{gather, Body, Outgoing, Post, SLOT};
use crate::ibv::owned::Op;
use crate::ibv::VerbsError;
use crate::info::NAME;
use oxifabric::abi::*;
use std::collections::VecDeque;
use std::net::SocketAddr;

/// Work requests a connection keeps in flight before small messages wait
/// to be bundled.
pub(super) const AHEAD: usize = 4;

/// Largest message that is bundled (and waits for it).
pub(super) const BUNDLED_MAX: usize = 4096;

/// Whether a message of `len` bytes on a connection with `inflight` work
/// requests in flight waits to be bundled rather than posted now.
pub(super) fn waits(inflight: usize, len: usize) -> bool {
    inflight >= AHEAD && len <= BUNDLED_MAX
}

/// Whether queued operation `o` may go in a bundle: a whole message of
/// at most [`BUNDLED_MAX`] bytes, nothing of it sent, waiting for no
/// acknowledgement or fence.
pub(super) fn takes(o: &Outgoing) -> bool {
    o.rma.is_none()
        && o.frame.is_none()
        && !matches!(o.body, Body::Rts(_))
        && o.off == 0
        && o.len <= BUNDLED_MAX
        && !o.ack
        && !o.fence
}

/// How many operations at the front of `queue` (whose first [`takes`])
/// fit in one transmit slot together.
pub(super) fn count(queue: &VecDeque<Outgoing>) -> usize {
    let mut used = 0;
    queue
        .iter()
        .take_while(|o| {
            used += HDR + o.len;
            takes(o) && used <= SLOT
        })
        .count()
}

/// Posts the first `n` operations of `queue` (counted by [`count`]) as
/// one bundle from the transmit slot of `p`.
pub(super) fn post(p: &Post<'_>, queue: &VecDeque<Outgoing>, n: usize) -> Result<(), VerbsError> {
    let total: usize = queue.iter().take(n).map(|o| HDR + o.len).sum();
    let b = p.txbuf.buf(p.slot * SLOT, total);
    let mut at = 0;
    for (i, o) in queue.iter().take(n).enumerate() {
        let h = Header::eager(o.seq, o.tag, o.data, o.len);
        b.write_at(at, &h.encode_in_bundle(i + 1 < n));
        gather(&o.body, 0, o.len, b.slice(at + HDR, o.len));
        at += HDR + o.len;
    }
    p.id.post_send(
        p.wr,
        Op::Send(None),
        &[b],
        &[p.txbuf.lkey()],
        total <= p.inline,
    )
}

/// Says (once per connection, at info level) that small messages to
/// `peer` now leave in bundles, `n` in the first.
pub(super) fn first(peer: SocketAddr, n: usize) {
    oxifabric::prov_log!(
        NAME,
        FI_LOG_INFO,
        FI_LOG_EP_DATA,
        "small messages to {peer} leave in bundles while {AHEAD} work requests are in flight ({n} in the first)"
    );
}
