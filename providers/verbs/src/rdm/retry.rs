//! Connection setup retries on RDM endpoints. A reliable endpoint may send
//! to any address in its AV, also to a peer whose endpoint is not open
//! yet (the ranks of a job start at slightly different times): rdma-cm
//! answers a request to a port nobody listens on with a rejection, which
//! must not fail the sends. So a connection we are making that fails
//! before it is established is made again after a pause (growing from
//! 10 to 500 ms), with a new rdma-cm id and a new
//! connection number (the old queue pair's flushed receives then name no
//! connection), its queued sends moved over in order; they fail with error
//! completions only once the peer's series of attempts is over. The
//! pauses and limits are the engine's policy (`service::conn_retry`, as
//! for the sockets provider): 5 s, and 1 s for a peer we were connected
//! with once whose listener now refuses (most likely a killed process).

use super::*;
use oxifabric::service::conn_retry::{ConnRetry, DEFAULT_CONN_TIMEOUT};
use std::time::{Duration, Instant};

impl RdmEp {
    /// Starts resolving `peer`'s address on `id`, from our listening
    /// address's IP when it has one (the first step of a connection).
    pub(super) fn dial(st: &State, id: &Id, peer: &SocketAddr) -> Result<()> {
        if let Some(me) = Self::addr(st).filter(|a| !a.ip().is_unspecified()) {
            id.bind(&SocketAddr::new(me.ip(), 0))
                .map_err(|e| verbs_err("rdma_bind_addr", e))?;
        }
        id.resolve_addr(peer, RESOLVE_MS)
            .map_err(|e| verbs_err("rdma_resolve_addr", e))
    }

    /// A connection was established with `peer`: its next failure starts a
    /// new series, as for a peer we had reached.
    pub(super) fn reached(st: &mut State, peer: SocketAddr) {
        st.attempts.insert(
            peer,
            ConnRetry {
                lost: true,
                ..ConnRetry::default()
            },
        );
    }

    /// Connection `cn` failed with `f` (`refused`: rejected by the peer's
    /// host). One we were making is made again after a pause while its
    /// peer's series lasts; otherwise (or for one we accepted, or one that
    /// was established) it is gone ([`RdmEp::conn_failed`]).
    pub(super) fn dial_failed(&self, st: &mut State, cn: u32, f: Failure, refused: bool) {
        self.dial_again(st, cn, f, refused, Duration::ZERO);
    }

    /// As [`RdmEp::dial_failed`], pausing at least `at_least`.
    pub(super) fn dial_again(
        &self,
        st: &mut State,
        cn: u32,
        f: Failure,
        refused: bool,
        at_least: Duration,
    ) {
        let peer = match st.conns.get(&cn) {
            Some(c)
                if matches!(
                    c.phase,
                    Phase::Resolving | Phase::Routing | Phase::Connecting
                ) =>
            {
                c.peer
            }
            _ => return self.conn_failed(st, cn, f),
        };
        let at = st
            .attempts
            .entry(peer)
            .or_default()
            .next(DEFAULT_CONN_TIMEOUT, refused);
        let (Some(at), Ok(id)) = (at, Id::new(&self.chan)) else {
            return self.conn_failed(st, cn, f);
        };
        let at = at.max(Instant::now() + at_least);
        let n = st.conns.next_key();
        st.by_id.insert(id.addr(), n);
        st.conns
            .insert(n, Conn::new(id, None, Phase::Paused, peer, 0));
        st.pending += 1;
        let was_tx = st.tx_conn.get(&peer) == Some(cn);
        // Nothing was posted on it: its sends move over as they are.
        Self::move_queue(st, cn, n);
        Self::drop_attempt(st, cn);
        if was_tx {
            st.tx_conn.insert(peer, n);
        }
        st.paused.push((n, at));
        oxifabric::prov_log!(
            NAME,
            FI_LOG_INFO,
            FI_LOG_EP_CTRL,
            "connection to {peer} failed ({}): trying again",
            f.describe()
        );
    }

    /// Makes the connections whose pause is over again (each progress call
    /// while there are any).
    pub(super) fn redial_due(&self, st: &mut State) {
        if st.paused.is_empty() {
            return;
        }
        let now = Instant::now();
        let (due, wait): (Vec<_>, Vec<_>) = st.paused.drain(..).partition(|(_, at)| *at <= now);
        st.paused = wait;
        for (cn, _) in due {
            let Some(c) = st.conns.get(&cn).filter(|c| c.phase == Phase::Paused) else {
                continue;
            };
            match Self::dial(st, &c.id, &c.peer) {
                Ok(()) => {
                    if let Some(c) = st.conns.get_mut(&cn) {
                        c.phase = Phase::Resolving;
                    }
                }
                Err(_) => self.conn_failed(
                    st,
                    cn,
                    Failure::cause(FI_EHOSTUNREACH, "could not connect to the peer"),
                ),
            }
        }
    }
}
