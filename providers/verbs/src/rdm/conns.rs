//! Which connection carries an RDM endpoint's traffic to a peer: one per
//! pair when both sides connect at once, and a fresh one when a peer
//! comes back after a restart.
//!
//! - **Shared connections.** A connection may carry both directions only
//!   when neither side issues RDMA accesses of its application on it
//!   (`wire::SHARED` in the request and in the acceptance: endpoints
//!   without `FI_RMA`). A peer's access that the target's device refuses
//!   puts the queue pair in the error state on *both* sides (RC's rule for
//!   remote access errors; rxe and hardware alike), flushing whatever the
//!   target had in flight on it: sends the peer may well have received,
//!   reported to the target's application as failed because of the
//!   peer's mistake. So an endpoint with `FI_RMA` keeps sending only on
//!   connections it made, one per direction (`fi_rma_badaccess -e rdm`
//!   found this), and what follows applies to endpoints without it (what
//!   Open MPI's `mtl ofi` opens).
//! - **Crossing requests.** When a peer's request arrives while ours to
//!   it is under way, the request of the endpoint with the lower
//!   listening address (IP, then port) wins; both sides compare the same
//!   two addresses, so they agree without another message. The side
//!   whose own request wins refuses the peer's with `wire::CROSSED`; the
//!   other side accepts the
//!   winning request, moves the sends queued on its own attempt onto the
//!   accepted connection in order (renumbered there) and drops the
//!   attempt (nothing of it was posted: sends wait until a connection is
//!   up). A refused side keeps its queued sends paused until the winning
//!   request arrives (it usually has), and asks again after
//!   [`CROSSED_PAUSE`] if it has not, within the usual retry limits
//!   (`rdm/retry.rs`). An attempt of ours that is paused (it failed and
//!   waits to be made again) does not compete: the peer's request is taken.
//! - **A request while a connection is up.** From a peer with the same
//!   nonce: the peer lost that connection (it asks only when it has none),
//!   so the new one takes our sends from now on and the old one ends by
//!   itself; except that a request from a higher address while our own
//!   connection to it is up is a crossing we won (its request left before
//!   it took ours) and is refused as above. From a peer with another nonce
//!   (`wire::Intro`): the endpoint at that address was restarted, so every
//!   connection with its former self fails at once (error completions for
//!   what was queued or in flight on them, as for a peer that closed) and
//!   the request is served like a first one.

use super::*;
use std::time::Duration;

/// How long a side whose request lost a crossing waits for the winning
/// request before asking again.
pub(super) const CROSSED_PAUSE: Duration = Duration::from_millis(200);

impl RdmEp {
    /// A connection with a peer that introduced itself with `intro` may
    /// carry our sends too (module docs).
    pub(super) fn shares(&self, intro: wire::Intro) -> bool {
        self.info.caps & FI_RMA == 0 && intro.flags & wire::SHARED != 0
    }

    /// A request from `peer` with `nonce`: the connections with a former
    /// incarnation of that peer (another nonce) fail now.
    pub(super) fn forget_restarted(&self, st: &mut State, peer: SocketAddr, nonce: u64) {
        if nonce == 0 {
            return;
        }
        let stale: Vec<u32> = st
            .conns
            .iter()
            .filter(|(_, c)| c.peer == peer && c.peer_nonce != 0 && c.peer_nonce != nonce)
            .map(|(k, _)| k)
            .collect();
        if stale.is_empty() {
            return;
        }
        oxifabric::prov_log!(
            NAME,
            FI_LOG_INFO,
            FI_LOG_EP_CTRL,
            "peer {peer} was restarted: its {} former connection(s) fail",
            stale.len()
        );
        for cn in stale {
            self.conn_failed(
                st,
                cn,
                Failure::cause(FI_ECONNRESET, "the peer was restarted"),
            );
        }
    }

    /// Decides a request from `peer` against the connection our sends to
    /// it use: None when it is refused here (a crossing our request wins);
    /// else the connection whose queued sends the accepted one takes over,
    /// if any.
    pub(super) fn settle_crossing(
        &self,
        st: &mut State,
        id: &Id,
        peer: SocketAddr,
        intro: wire::Intro,
    ) -> Option<Option<u32>> {
        let me = Self::addr(st).filter(|me| *me != peer);
        let (Some(me), true) = (me, self.shares(intro)) else {
            return Some(None);
        };
        let Some(cur) = st.tx_conn.get(&peer) else {
            return Some(None);
        };
        let Some(c) = st.conns.get(&cur) else {
            return Some(None);
        };
        let we_win = (me.ip(), me.port()) < (peer.ip(), peer.port());
        let competing = c.ours && c.phase != Phase::Paused;
        if competing && we_win {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_INFO,
                FI_LOG_EP_CTRL,
                "connection requests crossed with {peer}: ours wins, the peer's is refused"
            );
            let _ = id.reject(&wire::refusal(wire::CROSSED));
            return None;
        }
        if competing && c.phase != Phase::Up {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_INFO,
                FI_LOG_EP_CTRL,
                "connection requests crossed with {peer}: the peer's wins, ours is dropped"
            );
        }
        Some(Some(cur))
    }

    /// The accepted connection `cn` from `peer` carries our sends to it
    /// from now on, taking over those queued on `replaced`: our attempt,
    /// dropped; or a connection the peer has given up (it asks only when
    /// it has none), which ends by itself.
    pub(super) fn take_over(
        &self,
        st: &mut State,
        peer: SocketAddr,
        cn: u32,
        replaced: Option<u32>,
    ) {
        let Some(old) = replaced.filter(|o| st.conns.contains_key(o)) else {
            st.tx_conn.insert_if_none(peer, cn);
            return;
        };
        Self::move_queue(st, old, cn);
        st.tx_conn.insert(peer, cn);
        if st
            .conns
            .get(&old)
            .is_some_and(|c| c.ours && c.phase != Phase::Up)
        {
            Self::drop_attempt(st, old);
        }
    }

    /// Our request on `cn` lost a crossing (`wire::CROSSED`): its sends
    /// wait for the winning request; asked again later if none comes.
    pub(super) fn crossed(&self, st: &mut State, cn: u32, f: Failure) {
        oxifabric::prov_log!(
            NAME,
            FI_LOG_INFO,
            FI_LOG_EP_CTRL,
            "connection request to {:?} lost a crossing: waiting for the peer's",
            st.conns.get(&cn).map(|c| c.peer)
        );
        self.dial_again(st, cn, f, false, CROSSED_PAUSE);
    }

    /// Moves what is queued on connection `from` to the end of `to`'s
    /// queue, in order: messages take `to`'s next numbers (the
    /// acknowledgements they wait for are keyed by connection and number);
    /// acknowledgements of messages that came in on `from` are dropped
    /// (they answer that connection's numbers), as are `Bye` frames
    /// (`rdm/lru.rs`: about closing `from`).
    pub(super) fn move_queue(st: &mut State, from: u32, to: u32) {
        let Some(mut moving) = st
            .conns
            .get_mut(&from)
            .map(|c| std::mem::take(&mut c.queue))
        else {
            return;
        };
        let mut dropped = Vec::new();
        let Some(dest) = st.conns.get_mut(&to) else {
            st.queued -= moving.len();
            dropped.extend(moving.drain(..).map(|o| o.id));
            for id in dropped {
                Self::fail_send(st, id, Failure::cause(FI_ECONNRESET, "connection gone"));
            }
            return;
        };
        for mut o in moving {
            // Answers about `from`'s own traffic, or its closing.
            if matches!(o.frame, Some(wire::Op::Delivered | wire::Op::Bye)) {
                st.queued -= 1;
                dropped.push(o.id);
                continue;
            }
            if o.rma.is_none() && o.frame.is_none() {
                let seq = dest.next_seq;
                dest.next_seq = dest.next_seq.wrapping_add(1);
                if let Some(send) = st.acks.remove(&(from, o.seq)) {
                    st.acks.insert((to, seq), send);
                    if let Some(s) = st.sends.get_mut(send) {
                        s.ack = Some((to, seq));
                    }
                }
                o.seq = seq;
            }
            dest.queue.push_back(o);
        }
        for id in dropped {
            Self::fail_send(st, id, Failure::cause(FI_ECONNRESET, "connection gone"));
        }
        Self::pump(st, to);
    }

    /// Forgets connection `cn` without an error: an attempt of ours that
    /// nothing was posted on, or an idle connection closed by agreement
    /// (`rdm/lru.rs`), whose queue was moved; what is still queued or
    /// posted on it (our own frames) is dropped.
    pub(super) fn drop_attempt(st: &mut State, cn: u32) {
        let Some(c) = st.conns.remove(&cn) else {
            return;
        };
        for id in Self::release_wrs(st, cn) {
            Self::fail_send(st, id, Failure::cause(FI_ECONNRESET, "connection closed"));
        }
        st.by_id.remove(&c.id.addr());
        if c.phase != Phase::Up {
            st.pending -= 1;
        }
        st.tx_conn.remove_if(&c.peer, cn);
        st.paused.retain(|(p, _)| *p != cn);
        st.queued -= c.queue.len();
        for o in &c.queue {
            Self::fail_send(st, o.id, Failure::cause(FI_ECONNRESET, "connection gone"));
        }
    }
}
