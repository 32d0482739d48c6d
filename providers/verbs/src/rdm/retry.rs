//! Connection setup retries on RDM endpoints. A reliable endpoint may send
//! to any address in its AV, also to a peer whose endpoint is not open
//! yet (the ranks of a job start at slightly different times): rdma-cm
//! answers a request to a port nobody listens on with a rejection, which
//! must not fail the sends. So a connection we are making that fails
//! before it is established is made again after a pause (growing from
//! [`FIRST_PAUSE`] to [`MAX_PAUSE`]), with a new rdma-cm id and a new
//! connection number (the old queue pair's flushed receives then name no
//! connection), its queued sends moved over in order; they fail with error
//! completions only once the peer's series of attempts has lasted
//! [`CONN_TIMEOUT`].
//!
//! A peer we were connected with once, whose listener now refuses, is most
//! likely dead (a killed process): its series ends after [`LOST_PEER`], so
//! that a send to it fails well within the bounds fabtests-style programs
//! allow, while a peer that comes back at once is still found.

use super::*;
use std::time::{Duration, Instant};

/// How long connection setup to a peer is tried: long enough for a job's
/// ranks to open their endpoints, short enough that a send to a peer that
/// never comes fails within the 10 s fabtests-style programs allow.
pub(super) const CONN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a peer we had reached is tried once its listener refuses.
pub(super) const LOST_PEER: Duration = Duration::from_secs(1);
/// The first pause between attempts; each failure doubles it.
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const MAX_PAUSE: Duration = Duration::from_millis(500);

/// A peer's series of connection attempts.
#[derive(Default, Debug)]
pub(super) struct Attempts {
    /// When the series' first failure was seen.
    since: Option<Instant>,
    failures: u32,
    /// A connection with this peer was established once.
    reached: bool,
}

impl Attempts {
    /// After a failed attempt (`refused`: the peer's host answered that
    /// nobody listens): when to try again, or None when the series is over
    /// (the next send starts a new one).
    fn next(&mut self, refused: bool) -> Option<Instant> {
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        let limit = if self.reached && refused {
            LOST_PEER
        } else {
            CONN_TIMEOUT
        };
        if now.duration_since(since) >= limit {
            self.since = None;
            self.failures = 0;
            return None;
        }
        let pause = FIRST_PAUSE
            .saturating_mul(1 << self.failures.min(16))
            .min(MAX_PAUSE);
        self.failures += 1;
        Some(now + pause)
    }
}

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
            Attempts {
                reached: true,
                ..Attempts::default()
            },
        );
    }

    /// Connection `cn` failed with `f` (`refused`: rejected by the peer's
    /// host). One we were making is made again after a pause while its
    /// peer's series lasts; otherwise (or for one we accepted, or one that
    /// was established) it is gone ([`RdmEp::conn_failed`]).
    pub(super) fn dial_failed(&self, st: &mut State, cn: u32, f: Failure, refused: bool) {
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
        let at = st.attempts.entry(peer).or_default().next(refused);
        let (Some(at), Ok(id)) = (at, Id::new(&self.chan)) else {
            return self.conn_failed(st, cn, f);
        };
        let Some(mut old) = st.conns.remove(&cn) else {
            return;
        };
        st.by_id.remove(&old.id.addr());
        let n = st.next_conn;
        st.next_conn += 1;
        let mut c = Conn::new(id, None, Phase::Paused, peer, 0);
        c.queue = std::mem::take(&mut old.queue);
        c.next_seq = old.next_seq;
        st.by_id.insert(c.id.addr(), n);
        st.conns.insert(n, c);
        if st.tx_conn.get(&peer) == Some(&cn) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_and_a_series_ends() {
        let mut a = Attempts::default();
        let t0 = Instant::now();
        let first = a.next(true).expect("a first failure is retried");
        assert!(first - t0 < FIRST_PAUSE * 2 + Duration::from_millis(50));
        let second = a.next(true).expect("retried within the timeout");
        assert!(second - first >= FIRST_PAUSE, "the pause grows");
        a.since = Some(t0 - CONN_TIMEOUT);
        assert!(a.next(false).is_none(), "the series is over");
        assert!(a.next(false).is_some(), "the next send starts a new series");
    }

    #[test]
    fn a_lost_peer_that_refuses_is_given_up_sooner() {
        for (refused, more) in [(true, false), (false, true)] {
            let mut a = Attempts {
                reached: true,
                ..Attempts::default()
            };
            a.next(refused);
            a.since = Some(Instant::now() - LOST_PEER);
            // Refused: the short bound; unreachable: the whole timeout.
            assert_eq!(a.next(refused).is_some(), more, "refused: {refused}");
        }
    }
}
