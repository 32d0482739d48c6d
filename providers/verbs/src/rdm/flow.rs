//! Flow control on the receiving side of RDM connections: a bound on
//! what unexpected messages may hold, kept by leaving pieces in their
//! receive slots.
//!
//! - **Why.** A piece is copied out of its receive slot as soon as it
//!   arrives: into the receive it matches, or into the engine's receive
//!   queue as an unexpected message, and the slot is posted again. A
//!   sender faster than the application's receives would otherwise grow
//!   that queue without end.
//! - **The bound.** The receive queue's `unexpected_limit`
//!   (`FI_VERBS_MAX_UNEXP_SZ`, default `rxq::UNEXPECTED_LIMIT`), counting
//!   each unexpected message's payload plus `rxq::ENTRY_COST`, and the
//!   bytes held for segmented messages that have no receive yet
//!   (`Reassembly::held`).
//! - **Parking.** A message piece that no posted receive takes and that
//!   would pass the bound stays in its slot, which is not posted again;
//!   every later piece of that connection waits behind it (in arrival
//!   order, control frames too: one connection's order is never changed).
//!   Once the connection's slots (64 by default, `rdm/sizes.rs`) are all parked, the sender's queue
//!   pair gets RNR NAKs and retries (rdma-cm's "forever"), so nothing is
//!   dropped and memory stays at the bound plus the slots (1 MiB by default) of each
//!   connection, which exist anyway.
//! - **Resuming.** Each progress call and each posted receive (which may
//!   take an unexpected message, or be what a parked piece is waiting
//!   for) try the parked pieces again, oldest first.
//! - **Faults.** A connection that fails first hands on the pieces it
//!   parked, whatever the bound (they arrived before the failure and
//!   their senders saw them delivered): at most a connection's slots.

use super::wire::{self, Header};
use super::{RdmEp, State};
use crate::info::NAME;
use oxifabric::abi::*;
use oxifabric::service::rxq::MsgInfo;

/// What happened to a piece handed to [`RdmEp::take_piece`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Taken {
    /// Handled (or refused, which closed its connection).
    Done,
    /// Left in its slot until there is room, with the pieces after it
    /// in the same slot: where it starts (0 but in a bundle,
    /// `rdm/bundle.rs`).
    Parked(usize),
}

impl RdmEp {
    /// Whether the piece with header `h` and `n` bytes of body may be
    /// handled now: not a message piece, a posted receive takes it, or
    /// unexpected messages stay within their bound with it.
    pub(super) fn has_room(st: &State, cn: u32, h: &Header, n: usize, msg: &MsgInfo) -> bool {
        let room = |n: usize| st.rxq.unexpected_room(st.partial.held().saturating_add(n));
        match h.op {
            wire::Op::Eager | wire::Op::First | wire::Op::Rts => {
                room(n) || st.rxq.posted_fits(msg.src, msg.tag)
            }
            wire::Op::More => !st.partial.holds(&(cn, h.seq)) || room(n),
            _ => true,
        }
    }

    /// Leaves the pieces in receive slot `slot` of connection `cn` from
    /// byte `at` to `len` parked, behind those parked before them.
    pub(super) fn park(st: &mut State, cn: u32, slot: usize, at: usize, len: usize) {
        let Some(c) = st.conns.get_mut(&cn) else {
            return;
        };
        if c.parked.is_empty() {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_INFO,
                FI_LOG_EP_DATA,
                "unexpected messages are at their bound ({} of {} bytes): pieces from {} wait in their receive slots",
                st.rxq.unexpected_bytes + st.partial.held(),
                st.rxq.unexpected_limit,
                c.peer
            );
        }
        c.parked.push_back((slot, at, len));
        st.parked_any = true;
    }

    /// Hands on parked pieces, oldest first on each connection, while
    /// there is room for them. The check is inline and the work out of
    /// line: every progress call makes it.
    #[inline]
    pub(super) fn resume_parked(&self, st: &mut State) {
        if st.parked_any {
            self.resume_parked_now(st);
        }
    }

    /// [`Self::resume_parked`]'s work.
    #[inline(never)]
    fn resume_parked_now(&self, st: &mut State) {
        let conns: Vec<u32> = st
            .conns
            .iter()
            .filter(|(_, c)| !c.parked.is_empty())
            .map(|(k, _)| k)
            .collect();
        let mut left = false;
        for cn in conns {
            left |= self.resume_conn(st, cn);
        }
        st.parked_any = left;
    }

    /// Hands on connection `cn`'s parked pieces in order while there is
    /// room; true when some are still parked.
    fn resume_conn(&self, st: &mut State, cn: u32) -> bool {
        loop {
            let Some(c) = st.conns.get_mut(&cn) else {
                return false;
            };
            // Out of the queue while it is handled: a piece that is
            // refused closes the connection, which must not see it again.
            let Some((slot, at, len)) = c.parked.pop_front() else {
                return false;
            };
            if let Taken::Parked(at) = self.take_piece(st, cn, slot, at, len, false) {
                if let Some(c) = st.conns.get_mut(&cn) {
                    c.parked.push_front((slot, at, len));
                }
                return true;
            }
        }
    }

    /// Connection `cn` is failing: the pieces it parked are handed on
    /// whatever the bound, their slots not posted again.
    pub(super) fn flush_parked(&self, st: &mut State, cn: u32) {
        let Some(c) = st.conns.get_mut(&cn) else {
            return;
        };
        for (slot, at, len) in std::mem::take(&mut c.parked) {
            self.take_piece(st, cn, slot, at, len, true);
        }
    }
}
