//! A bound on an RDM endpoint's connections (`FI_SOCKETS_MAX_CONNS`): when
//! a new connection takes it over the limit, the least recently used idle
//! connection is closed, and the next send to that peer connects again.
//!
//! Closing must not lose a frame already on its way, so it is agreed on:
//! the endpoint sends `Bye` on an idle connection and holds new sends to
//! that peer; the peer answers `ByeAck` when nothing is in flight on its
//! side either (and then holds its own new sends until the connection is
//! gone), or `ByeNack`, after which the connection is used as before.
//! Frames sent before the `Bye` arrived are read normally (TCP keeps them
//! ahead of the answer). On `ByeAck` the asker closes the socket; the
//! peer sees the end and closes too. Sends held meanwhile go on a fresh
//! connection. Both sides asking at once is an agreement.
//!
//! "Idle" means: the handshake finished and the connection is the peer's
//! one, nothing queued or waiting for it (sends, acknowledgements,
//! rendezvous in either direction, RMA answers), and no frame half read.
//!
//! New connections wait while the limit's worth of descriptors is held
//! (open connections and those being closed; a waiting one makes an idle
//! one start closing):
//! - a dial (a send to a peer without a connection) waits: the peer's
//!   sends queue (`slot_wait`) and progress dials once there is room;
//! - accepting pauses: new connections wait in the kernel's backlog,
//!   holding none of our descriptors. Except while one of our own `Hello`s
//!   waits for its answer: the peer checks it by connecting to our
//!   listener (`rdm.rs`), and that check waits in the same backlog behind
//!   other peers' connections, so a full pause stalls both sides for good
//!   (the stall this design replaced). Then up to [`UNKNOWN_ACCEPTS`]
//!   connections are taken in whose first frame is not read yet; a
//!   `Verify` among them is answered and ends, and a `Hello` while the
//!   limit is held is refused (closed unanswered; its sender tries again
//!   after a pause, `retry.rs`, so its sends fail only after
//!   `FI_SOCKETS_CONN_TIMEOUT` of refusals), unless we are connecting to
//!   that peer ourselves or our sends wait for exactly that connection.
//!
//! So an endpoint with limit L holds at most about L + [`UNKNOWN_ACCEPTS`]
//! connection descriptors counted against the limit (plus one per
//! simultaneous connect being settled), plus short-lived transient ones:
//! one claim check per accepted `Hello` being checked and one incoming
//! check per `Hello` of ours waiting, each at most that many again: in
//! all below 3 (L + 4). `tests/c/t-lru.sh` measures it: limit 8 and 64
//! peers, 11 to 18 descriptors above the idle endpoint's (bound 36;
//! without the limit, 128).
//!
//! A limit below the number of peers an application keeps busy at once
//! makes the others wait (for a free connection, or in our backlog);
//! unset, there is no limit and none of this runs.

use super::{now_ms, EpState, SockEp, PROV};
use crate::conn::{ConnState, RxState};
use crate::wire::Op;
use oxifabric::abi::*;
use oxifabric::prov_log;
use oxifabric::service::ep_core::Failure;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

/// `FI_SOCKETS_MAX_CONNS`; unset or 0 (the default) means no limit, so
/// an endpoint behaves as before the bound existed.
pub(super) fn max_conns() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| match oxifabric::param::get("sockets", "max_conns") {
        Ok(oxifabric::param::Value::Size(n)) if n > 0 => n.max(2),
        _ => usize::MAX,
    })
}

/// Accepted connections not yet identified that an endpoint at its limit
/// takes in while one of its own `Hello`s waits for the peer's check
/// (which arrives through the listener's backlog, behind other peers'
/// connections).
const UNKNOWN_ACCEPTS: usize = 4;

impl SockEp {
    /// A new connection was added (or, while over the limit, progress
    /// runs): start closing least recently used idle connections (not
    /// `keep`) until the endpoint is within its limit. When none is idle
    /// yet, progress looks again (`st.over_limit`).
    pub(super) fn bound_conns(&self, st: &mut EpState, keep: usize) {
        if self.ep_type != FI_EP_RDM || st.max_conns == usize::MAX {
            return;
        }
        let open = Self::open_conns(st);
        // With connections waiting to be accepted, make room for one.
        let target = if st.accept_paused || st.slot_waiting {
            st.max_conns - 1
        } else {
            st.max_conns
        };
        st.over_limit = false;
        for open in (target + 1..=open).rev() {
            if !self.close_one(st, keep, open) {
                st.over_limit = true;
                return;
            }
        }
    }

    /// Descriptors held by connections that count against the limit,
    /// including those being closed: new connections (dials, accepts)
    /// wait for these, so closing ones cannot pile up.
    fn held_conns(st: &EpState) -> usize {
        st.conns.iter().flatten().filter(|c| !c.transient).count()
    }

    /// Connections that count against the limit and are not closing.
    fn open_conns(st: &EpState) -> usize {
        st.conns
            .iter()
            .flatten()
            .filter(|c| !c.closing && !c.transient)
            .count()
    }

    /// RDM at its connection limit: accepting pauses (new connections wait
    /// in the kernel's backlog, holding no descriptor of ours) and idle
    /// connections start closing. True when paused.
    pub(super) fn at_conn_limit(&self, st: &mut EpState) -> bool {
        if self.ep_type != FI_EP_RDM || Self::may_accept(st) {
            return false;
        }
        // (Also when already paused: the accept back-off of resource
        // errors may have watched the listener again meanwhile.)
        if let Some(l) = &st.listener {
            let _ = self
                .epoll
                .set(l.as_raw_fd(), super::TOKEN_LISTENER, false, false);
        }
        st.accept_paused = true;
        self.bound_conns(st, usize::MAX);
        true
    }

    /// Below the limit; or at it while one of our `Hello`s waits for its
    /// answer and fewer than [`UNKNOWN_ACCEPTS`] accepted connections
    /// have not said what they are yet.
    fn may_accept(st: &EpState) -> bool {
        st.max_conns == usize::MAX
            || Self::held_conns(st) < st.max_conns
            || (Self::awaiting_hello_ack(st) && Self::unknown_accepts(st) < UNKNOWN_ACCEPTS)
    }

    /// At the limit, a new connection to `sa` waits (its sends queue)
    /// until one is free; meanwhile an idle one starts closing. True when
    /// the dial waits.
    pub(super) fn dial_must_wait(&self, st: &mut EpState, sa: SocketAddr) -> bool {
        if self.ep_type != FI_EP_RDM
            || st.max_conns == usize::MAX
            || Self::held_conns(st) < st.max_conns
        {
            return false;
        }
        let p = st.peers.entry(sa).or_default();
        p.slot_wait = true;
        p.retry.at = None;
        st.slot_waiting = true;
        self.bound_conns(st, usize::MAX);
        true
    }

    /// Dials the peers waiting for a free connection while there is room
    /// (from progress), in no particular order.
    pub(super) fn dial_waiting(&self, st: &mut EpState) {
        while st.slot_waiting && Self::held_conns(st) < st.max_conns {
            let Some(sa) = st
                .peers
                .iter()
                .find_map(|(sa, p)| p.slot_wait.then_some(*sa))
            else {
                st.slot_waiting = false;
                return;
            };
            let Some(p) = st.peers.get_mut(&sa) else {
                continue;
            };
            p.slot_wait = false;
            if p.conn.is_none() && !p.pending.is_empty() {
                self.dial_pending(st, sa);
            }
        }
    }

    /// Accepted connections whose first frame (`Hello` or `Verify`) has
    /// not been read yet.
    fn unknown_accepts(st: &EpState) -> usize {
        st.conns
            .iter()
            .flatten()
            .filter(|c| !c.outgoing && !c.introduced)
            .count()
    }

    /// A `Hello` on accepted `slot` claiming `claim` while over the limit
    /// with nothing idle to close: refused (the connection is closed
    /// unanswered, and its sender tries again after a pause, `retry.rs`),
    /// unless we are connecting to that peer ourselves or our sends wait
    /// for this very connection (our `Hello` lost the tie-break). Sends
    /// that wait for a free connection (`slot_wait`) do not count: we dial
    /// ourselves once one is free. True when refused.
    pub(super) fn refuse_hello(&self, st: &mut EpState, slot: usize, claim: SocketAddr) -> bool {
        if self.ep_type != FI_EP_RDM || st.max_conns == usize::MAX {
            return false;
        }
        if Self::held_conns(st) <= st.max_conns {
            return false;
        }
        // Room comes once an idle connection has closed.
        self.bound_conns(st, slot);
        let wanted = st
            .peers
            .get(&claim)
            .is_some_and(|p| p.conn.is_some() || (!p.pending.is_empty() && !p.slot_wait));
        if wanted {
            return false;
        }
        prov_log!(
            PROV,
            FI_LOG_DEBUG,
            FI_LOG_EP_CTRL,
            "connection from {claim} refused: limit {} reached, none idle",
            st.max_conns
        );
        self.close_conn(
            st,
            slot,
            Failure::code(0),
            "refused at the connection limit",
        );
        true
    }

    /// One of our own connections waits for its `HelloAck`: the peer
    /// checks our claim by connecting to our listener, so accepting must
    /// go on or both sides wait for each other.
    fn awaiting_hello_ack(st: &EpState) -> bool {
        st.conns.iter().flatten().any(|c| {
            c.outgoing
                && c.verifies.is_none()
                && !c.transient
                && c.peer.is_some_and(|sa| {
                    st.peers
                        .get(&sa)
                        .is_some_and(|p| !p.ready && p.conn.is_some())
                })
        })
    }

    /// Watches the listener again once below the limit.
    pub(super) fn resume_accepting(&self, st: &mut EpState) {
        if st.accept_paused && Self::may_accept(st) {
            st.accept_paused = false;
            if let Some(l) = &st.listener {
                let _ = self
                    .epoll
                    .set(l.as_raw_fd(), super::TOKEN_LISTENER, true, false);
            }
            self.accept_all(st);
        }
    }

    /// Starts closing the least recently used idle connection; false when
    /// none is idle.
    fn close_one(&self, st: &mut EpState, keep: usize, open: usize) -> bool {
        let victim = (0..st.conns.len())
            .filter(|&s| s != keep)
            .filter_map(|s| Self::idle_peer(st, s).map(|_| s))
            .min_by_key(|&s| st.conns[s].as_ref().map_or(u64::MAX, |c| c.last_used));
        let Some(slot) = victim else {
            if keep != usize::MAX {
                prov_log!(
                    PROV,
                    FI_LOG_DEBUG,
                    FI_LOG_EP_CTRL,
                    "{open} connections, limit {}: none idle to close yet",
                    st.max_conns
                );
            }
            return false;
        };
        prov_log!(
            PROV,
            FI_LOG_DEBUG,
            FI_LOG_EP_CTRL,
            "{open} connections, limit {}: closing the least recently used idle one",
            st.max_conns
        );
        self.start_closing(st, slot);
        let _ = self.submit(st, slot, Self::control_item(Op::Bye, Vec::new(), 0));
        true
    }

    /// The peer of `slot` when the connection is idle (module docs).
    fn idle_peer(st: &EpState, slot: usize) -> Option<SocketAddr> {
        let c = st.conns.get(slot)?.as_ref()?;
        let quiet = c.state == ConnState::Open
            && !c.closing
            && !c.transient
            && c.claim.is_none()
            && c.verifies.is_none()
            && c.txq.is_empty()
            && c.staged().is_empty()
            && matches!(c.rx, RxState::Header { got: 0, .. });
        let sa = c.peer.filter(|_| quiet)?;
        let p = st.peers.get(&sa)?;
        let busy = p.conn != Some(slot)
            || !p.ready
            || !p.pending.is_empty()
            || st.acks.values().any(|(s, _)| *s == slot)
            || st.rndv_rx.keys().any(|k| k.0 == slot)
            || st.rndv_tx.values().any(|(_, to)| *to == Some(sa))
            || Self::rma_busy_with(st, sa);
        (!busy).then_some(sa)
    }

    /// Marks `slot` closing: its peer's new sends wait in the peer's queue.
    fn start_closing(&self, st: &mut EpState, slot: usize) {
        let Some(c) = st.conns[slot].as_mut() else {
            return;
        };
        c.closing = true;
        if let Some(p) = c.peer.and_then(|sa| st.peers.get_mut(&sa)) {
            p.ready = false;
        }
    }

    /// `Bye`: agree when idle here too (or when we asked as well).
    pub(super) fn on_bye(&self, st: &mut EpState, slot: usize) {
        let asked_too = st.conns[slot].as_ref().is_some_and(|c| c.closing);
        if asked_too {
            self.close_idle(st, slot);
            return;
        }
        let answer = if Self::idle_peer(st, slot).is_some() {
            self.start_closing(st, slot);
            Op::ByeAck
        } else {
            Op::ByeNack
        };
        let _ = self.submit(st, slot, Self::control_item(answer, Vec::new(), 0));
    }

    /// `ByeAck`: the peer agreed; close.
    pub(super) fn on_bye_ack(&self, st: &mut EpState, slot: usize) {
        if st.conns[slot].as_ref().is_some_and(|c| c.closing) {
            self.close_idle(st, slot);
        } else {
            let f = oxifabric::service::ep_core::Failure::code(FI_EIO);
            self.close_conn(st, slot, f, "unexpected close answer");
        }
    }

    /// `ByeNack`: the peer is busy; the connection stays and the sends
    /// held meanwhile go on it.
    pub(super) fn on_bye_nack(&self, st: &mut EpState, slot: usize) {
        let Some(c) = st.conns[slot].as_mut().filter(|c| c.closing) else {
            return;
        };
        c.closing = false;
        c.last_used = now_ms();
        if let Some(sa) = c.peer {
            self.peer_ready(st, sa, slot);
        }
    }

    /// Closes an agreed-on idle connection without reporting an error.
    fn close_idle(&self, st: &mut EpState, slot: usize) {
        let f = oxifabric::service::ep_core::Failure::code(0);
        self.close_conn(st, slot, f, "idle connection closed");
    }

    /// Before a closing connection is torn down (agreed, or its peer went
    /// away meanwhile): its end is not an error, and the sends held for
    /// its peer are taken out, to go on a new connection afterwards.
    pub(super) fn detach_closing(
        &self,
        st: &mut EpState,
        slot: usize,
    ) -> Option<(SocketAddr, crate::conn::TxQueue)> {
        let c = st.conns.get_mut(slot)?.as_mut().filter(|c| c.closing)?;
        c.transient = true;
        let sa = c.peer?;
        let p = st.peers.get_mut(&sa)?;
        if p.conn != Some(slot) {
            return None;
        }
        p.conn = None;
        p.ready = false;
        Some((sa, std::mem::take(&mut p.pending)))
    }

    /// After [`Self::detach_closing`]: the held sends go to a new
    /// connection (they fail if it cannot be opened).
    pub(super) fn redial(&self, st: &mut EpState, sa: SocketAddr, held: crate::conn::TxQueue) {
        if held.is_empty() {
            return;
        }
        st.peers.entry(sa).or_default().pending = held;
        self.dial_pending(st, sa);
    }

    /// Connects to `sa` for the sends waiting for it (which fail if it
    /// cannot even start).
    fn dial_pending(&self, st: &mut EpState, sa: SocketAddr) {
        if let Err(e) = self.rdm_connect(st, sa, FI_ADDR_NOTAVAIL) {
            let items: Vec<_> = st
                .peers
                .get_mut(&sa)
                .map(|p| p.pending.take_all().into())
                .unwrap_or_default();
            let f = oxifabric::service::ep_core::Failure::os(FI_ECONNREFUSED, &e);
            self.fail_items(st, items, f);
        }
    }
}
