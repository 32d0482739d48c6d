//! A bound on an RDM endpoint's connections: when a new one takes the
//! endpoint over it, the least recently used idle connection is closed by
//! agreement with its peer, and the next send to that peer connects anew.
//!
//! Closing must lose nothing that is on its way, so it is agreed on (as
//! the sockets provider's `ep/lru.rs` does over TCP): the endpoint sends
//! `Bye` (`wire::BYE_ASK`) on an idle connection and holds its new sends
//! to that peer in the connection's queue (nothing more is posted on it);
//! the peer answers `BYE_AGREE` when the connection is idle on its side
//! too (and holds its own new sends from then on), or `BYE_BUSY`, after
//! which the connection is used as before. RC delivers the answer after
//! whatever the peer sent before it, so both sides have processed all
//! traffic when the asker disconnects. Both sides asking at once is an
//! agreement. A closing connection that ends (the asker's disconnect, or
//! a failure meanwhile) is not an error: nothing was in flight on it, and
//! the sends held for its peer go to a new connection (where they fail in
//! bounded time if the peer is really gone, `rdm/retry.rs`).
//!
//! "Idle": established, not closing, nothing queued or posted on it, no
//! message of ours waiting for its `Delivered` on it, no message coming
//! in on it incomplete, no rendezvous read or announcement of it pending,
//! no atomic waiting for that peer's answer.
//!
//! The bound is soft: connecting never waits for a close (no stall); the
//! endpoint is over its bound while a close is being agreed, or while no
//! connection is idle (then progress looks again). The hard limit is
//! `sizes::max_conns()`, what the shared completion queue holds. The default
//! bound leaves room below it for closes in progress; upstream has no
//! variable for it (neither its verbs nor its rxm), so the test knob
//! `OXI_VERBS_MAX_CONNS` sets a smaller one.

use super::*;

/// The bound by default: what the completion queue holds
/// (`sizes::max_conns`) less room for connections being closed (32, or
/// a quarter when it holds few).
fn default_bound() -> usize {
    let max = super::sizes::max_conns();
    (max - 32.min(max / 4)).max(1)
}

/// The bound (`OXI_VERBS_MAX_CONNS`, at least 1 and at most the
/// default), read once.
pub(super) fn bound() -> usize {
    static B: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *B.get_or_init(|| {
        let most = default_bound();
        std::env::var("OXI_VERBS_MAX_CONNS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .map_or(most, |n| n.clamp(1, most))
    })
}

/// Where a connection is in being closed by agreement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closing {
    /// We sent `BYE_ASK` and wait for the answer.
    Asked,
    /// We agreed: the asker disconnects.
    Agreed,
}

impl RdmEp {
    /// While more connections than the bound are open (not closing), the
    /// least recently used idle ones start closing; when none is idle,
    /// progress looks again (`st.over_bound`).
    pub(super) fn bound_conns(&self, st: &mut State) {
        let open = st.conns.values().filter(|c| c.closing.is_none()).count();
        let mut excess = open.saturating_sub(bound());
        st.over_bound = false;
        while excess > 0 {
            let victim = st
                .conns
                .iter()
                .filter(|(k, _)| Self::idle(st, *k))
                .min_by_key(|(_, c)| c.used)
                .map(|(k, _)| k);
            let Some(cn) = victim else {
                st.over_bound = true;
                return;
            };
            oxifabric::prov_log!(
                NAME,
                FI_LOG_INFO,
                FI_LOG_EP_CTRL,
                "{open} connections, bound {}: closing the least recently used idle one (to {:?})",
                bound(),
                st.conns.get(&cn).map(|c| c.peer)
            );
            if let Some(c) = st.conns.get_mut(&cn) {
                c.closing = Some(Closing::Asked);
            }
            Self::bye(st, cn, wire::BYE_ASK);
            excess -= 1;
        }
    }

    /// Connection `cn` is idle (module docs).
    fn idle(st: &State, cn: u32) -> bool {
        let Some(c) = st.conns.get(&cn) else {
            return false;
        };
        c.phase == Phase::Up
            && c.closing.is_none()
            && c.queue.is_empty()
            && c.parked.is_empty()
            && !st.wrs.iter().any(|(_, w)| w.conn == cn)
            && !st.acks.keys().any(|k| k.0 == cn)
            && !st.pulls.keys().any(|k| k.0 == cn)
            && !st.announced.keys().any(|k| k.0 == cn)
            && !st.partial.arriving(|k| k.0 == cn)
            && !st.atomics.values().any(|w| w.peer == c.peer)
    }

    /// Queues a `Bye` of `kind` on connection `cn` (it goes out even
    /// while the connection holds everything else).
    fn bye(st: &mut State, cn: u32, kind: u32) {
        let out = Outgoing {
            id: 0,
            seq: kind,
            tag: None,
            data: None,
            body: Body::Copy(Vec::new()),
            len: 0,
            off: 0,
            rma: None,
            frame: Some(wire::Op::Bye),
            ack: false,
            fence: false,
        };
        if let Err(e) = Self::queue_on(st, cn, out, None, Vec::new()) {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "closing connection {cn}: {e:?}"
            );
        }
    }

    /// A `Bye` of `kind` on connection `cn`; why it is refused otherwise.
    pub(super) fn on_bye(
        &self,
        st: &mut State,
        cn: u32,
        kind: u32,
    ) -> std::result::Result<(), &'static str> {
        let closing = st.conns.get(&cn).and_then(|c| c.closing);
        match (kind, closing) {
            // Both asked: agreed.
            (wire::BYE_ASK, Some(Closing::Asked)) => self.close_idle(st, cn),
            (wire::BYE_ASK, _) if Self::idle(st, cn) => {
                if let Some(c) = st.conns.get_mut(&cn) {
                    c.closing = Some(Closing::Agreed);
                }
                Self::bye(st, cn, wire::BYE_AGREE);
            }
            (wire::BYE_ASK, _) => Self::bye(st, cn, wire::BYE_BUSY),
            (wire::BYE_AGREE, Some(Closing::Asked)) => self.close_idle(st, cn),
            (wire::BYE_AGREE, _) => return Err("an agreement to close that nobody asked for"),
            (_, Some(Closing::Asked)) => {
                // Busy: the connection stays, and what it held goes.
                st.tick += 1;
                if let Some(c) = st.conns.get_mut(&cn) {
                    c.closing = None;
                    c.used = st.tick;
                }
                Self::pump(st, cn);
            }
            _ => {}
        }
        Ok(())
    }

    /// Closes connection `cn` (agreed, or closing and ended): no error;
    /// the sends it held go to a new connection to its peer.
    pub(super) fn close_idle(&self, st: &mut State, cn: u32) {
        let Some(c) = st.conns.get(&cn) else {
            return;
        };
        let (peer, held, up) = (c.peer, !c.queue.is_empty(), c.phase == Phase::Up);
        if up {
            let _ = c.id.disconnect();
        }
        st.tx_conn.remove_if(&peer, cn);
        oxifabric::prov_log!(
            NAME,
            FI_LOG_INFO,
            FI_LOG_EP_CTRL,
            "idle connection to {peer} closed"
        );
        if held {
            if let Ok(n) = self.connect_to(st, peer) {
                Self::move_queue(st, cn, n);
            }
        }
        // What could not move fails here.
        Self::drop_attempt(st, cn);
    }
}
