//! RDM connection setup retries. A reliable-datagram endpoint promises
//! delivery to any address in its AV, also to a peer whose endpoint is not
//! listening yet (processes of one job start at slightly different
//! times). So a connection that fails before its `Hello` handshake
//! finished (refused, reset, timed out) is tried again, with a growing
//! pause, for the time the `conn_timeout` parameter allows
//! (`FI_SOCKETS_CONN_TIMEOUT`, milliseconds); the sends waiting for that
//! peer stay queued meanwhile and fail with error completions only once
//! that time is up. A connection that dies after the handshake (a killed
//! peer) fails its sends at once; the next send starts a new series of
//! attempts. A peer we had reached (a connection to it was established)
//! whose listener now refuses connections is most likely dead: its
//! attempts stop after [`LOST_PEER_RETRY`], so its senders hear so within
//! about a second, while a peer that restarts at once is still found and
//! a busy peer that closes connections it cannot serve (`lru.rs`, which
//! does not refuse them) keeps the whole window.

use super::*;
use std::time::{Duration, Instant};

/// How long connection setup to a peer is retried unless
/// `FI_SOCKETS_CONN_TIMEOUT` says otherwise: long enough for the ranks of
/// a job to open their endpoints, short enough that a send to a dead peer
/// fails well within the 10 s that fabtests-style programs allow.
pub const DEFAULT_CONN_TIMEOUT: Duration = Duration::from_secs(5);
/// The first pause between attempts; each failure doubles it up to
/// [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const MAX_PAUSE: Duration = Duration::from_millis(500);
/// How long connection setup is retried to a lost peer (see the module
/// text) once its listener refuses, unless the timeout is shorter.
pub const LOST_PEER_RETRY: Duration = Duration::from_millis(1000);

/// The retry state of one peer.
#[derive(Default, Debug)]
pub(super) struct Retry {
    /// When the first attempt of the current series started.
    started: Option<Instant>,
    /// Failed attempts in this series.
    failures: u32,
    /// When the next attempt is due (None: no attempt is waiting).
    pub(super) at: Option<Instant>,
    /// A connection to this peer was established and died: refused
    /// attempts are retried for [`LOST_PEER_RETRY`] at most. Cleared by
    /// the next handshake that finishes.
    pub(super) lost: bool,
}

impl Retry {
    /// Notes the start of an attempt (the first one starts the series).
    pub(super) fn attempt(&mut self) {
        self.started.get_or_insert_with(Instant::now);
        self.at = None;
    }

    /// The handshake finished: the next failure starts a new series.
    pub(super) fn reset(&mut self) {
        *self = Retry::default();
    }

    /// After a failed attempt (`refused`: the peer's address refused the
    /// connection): when to try again, or None when `limit` since the
    /// first attempt (shortened for a lost peer that refuses) is used up.
    fn next(&mut self, limit: Duration, refused: bool) -> Option<Instant> {
        let now = Instant::now();
        let limit = if self.lost && refused {
            limit.min(LOST_PEER_RETRY)
        } else {
            limit
        };
        let deadline = self.started.unwrap_or(now) + limit;
        if now >= deadline {
            *self = Retry {
                lost: self.lost,
                ..Retry::default()
            };
            return None;
        }
        let pause = FIRST_PAUSE
            .saturating_mul(1u32 << self.failures.min(16))
            .min(MAX_PAUSE);
        self.failures += 1;
        let at = (now + pause).min(deadline);
        self.at = Some(at);
        Some(at)
    }
}

/// The connection timeout of endpoints opened now: the parameter, else
/// the default.
pub(super) fn conn_timeout() -> Duration {
    match oxifabric::param::get(PROV, "conn_timeout") {
        Ok(oxifabric::param::Value::Int(ms)) if ms >= 0 => Duration::from_millis(ms as u64),
        _ => DEFAULT_CONN_TIMEOUT,
    }
}

/// Failures worth another attempt: the peer is not (yet) there.
fn transient(f: &Failure) -> bool {
    [
        FI_ECONNREFUSED,
        FI_ECONNRESET,
        FI_ECONNABORTED,
        FI_ETIMEDOUT,
        FI_EHOSTUNREACH,
        FI_ENETUNREACH,
    ]
    .contains(&f.err)
}

impl SockEp {
    /// Called as connection `slot` fails with `f`: when it is our RDM
    /// connection to a peer whose handshake has not finished and the
    /// peer's time is not up, drops the connection, keeps the peer's
    /// waiting sends and schedules the next attempt. Returns whether it
    /// did (the caller then fails nothing).
    pub(super) fn retry_later(&self, st: &mut EpState, slot: usize, f: &Failure) -> bool {
        if self.ep_type != FI_EP_RDM || !transient(f) {
            return false;
        }
        let Some(sa) = st
            .conns
            .get(slot)
            .and_then(Option::as_ref)
            .filter(|c| c.outgoing)
            .and_then(|c| c.peer)
        else {
            return false;
        };
        let limit = self.conn_timeout;
        let Some(p) = st.peers.get_mut(&sa) else {
            return false;
        };
        if p.conn != Some(slot) || p.ready {
            return false;
        }
        let established = st.conns[slot]
            .as_ref()
            .is_some_and(|c| c.state != ConnState::Connecting);
        p.retry.lost |= established;
        let Some(at) = p.retry.next(limit, f.err == FI_ECONNREFUSED) else {
            return false;
        };
        p.conn = None;
        prov_log!(
            PROV,
            FI_LOG_INFO,
            FI_LOG_EP_CTRL,
            "connection to {sa} failed ({}); trying again in {:?}",
            f.describe(),
            at.saturating_duration_since(Instant::now())
        );
        if let Some(c) = Self::take_conn(st, slot) {
            self.epoll.remove(c.stream.as_raw_fd());
            st.tx_queued = st.tx_queued.saturating_sub(c.txq.len());
        }
        st.next_retry = Some(st.next_retry.map_or(at, |n| n.min(at)));
        true
    }

    /// Makes the attempts that are due (from progress).
    pub(super) fn retry_due(&self, st: &mut EpState) {
        let Some(next) = st.next_retry else {
            return;
        };
        let now = Instant::now();
        if next > now {
            return;
        }
        st.next_retry = None;
        let due: Vec<SocketAddr> = st
            .peers
            .iter()
            .filter(|(_, p)| p.retry.at.is_some_and(|at| at <= now))
            .map(|(sa, _)| *sa)
            .collect();
        for sa in due {
            if let Err(e) = self.rdm_connect(st, sa, FI_ADDR_NOTAVAIL) {
                // Could not even start: counts as a failed attempt.
                let f = Failure {
                    peer: Some(sa),
                    cause: "connect failed",
                    ..Failure::os(FI_ECONNREFUSED, &e)
                };
                let limit = self.conn_timeout;
                let Some(p) = st.peers.get_mut(&sa) else {
                    continue;
                };
                if let Some(at) = p.retry.next(limit, f.err == FI_ECONNREFUSED) {
                    st.next_retry = Some(st.next_retry.map_or(at, |n| n.min(at)));
                } else {
                    let items: Vec<TxItem> = p.pending.take_all().into();
                    self.fail_items(st, items, f);
                    self.fail_rma_to(st, |to| to == Some(sa), f);
                }
            }
        }
        let later = st.peers.values().filter_map(|p| p.retry.at).min();
        if let Some(at) = later {
            st.next_retry = Some(st.next_retry.map_or(at, |n| n.min(at)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_and_stop_at_the_limit() {
        let mut r = Retry::default();
        r.attempt();
        let a = r
            .next(Duration::from_secs(60), true)
            .expect("within the limit");
        let b = r
            .next(Duration::from_secs(60), true)
            .expect("within the limit");
        assert!(b > a, "the second pause is longer");
        r.attempt();
        assert!(r.at.is_none(), "an attempt clears the due time");
        let mut r = Retry::default();
        r.attempt();
        assert_eq!(r.next(Duration::ZERO, true), None, "no time left: give up");
        assert!(r.started.is_none(), "giving up starts a new series");
    }

    #[test]
    fn a_lost_peer_gets_a_short_series_until_a_handshake() {
        let mut r = Retry {
            lost: true,
            ..Retry::default()
        };
        r.attempt();
        r.started = Some(Instant::now() - LOST_PEER_RETRY);
        assert!(
            r.next(Duration::from_secs(60), false).is_some(),
            "lost but not refused: the full limit"
        );
        r.attempt();
        assert_eq!(
            r.next(Duration::from_secs(60), true),
            None,
            "lost and refused: the short limit"
        );
        assert!(r.lost, "giving up keeps the peer lost");
        r.reset();
        assert!(!r.lost, "a finished handshake forgets it");
        r.attempt();
        r.started = Some(Instant::now() - LOST_PEER_RETRY);
        assert!(
            r.next(Duration::from_secs(60), true).is_some(),
            "the full limit again"
        );
    }
}
