//! The retry policy of connection-based RDM endpoints (the sockets
//! provider's TCP connections, the verbs provider's RC connections): a
//! reliable-datagram endpoint promises delivery to any address in its AV,
//! also to a peer whose endpoint is not listening yet (the processes of a
//! job start at slightly different times). So a connection that fails
//! before it is established is tried again, with a pause growing from
//! [`FIRST_PAUSE`] to [`MAX_PAUSE`], until a time limit since the series'
//! first attempt is used up; the provider keeps the peer's sends queued
//! meanwhile and fails them once [`ConnRetry::next`] says the series is
//! over. A peer reached once (a connection to it was established) whose
//! listener now refuses is most likely dead: its series ends after
//! [`LOST_PEER_RETRY`], so its senders hear so within about a second,
//! while a peer that restarts at once is still found. One policy, so both
//! providers' endpoints behave alike towards a job's late or dead ranks.

use std::time::{Duration, Instant};

/// The default limit of a series: long enough for the ranks of a job to
/// open their endpoints, short enough that a send to a dead peer fails
/// well within the 10 s that fabtests-style programs allow.
pub const DEFAULT_CONN_TIMEOUT: Duration = Duration::from_secs(5);
/// The first pause between attempts; each failure doubles it up to
/// [`MAX_PAUSE`].
pub const FIRST_PAUSE: Duration = Duration::from_millis(10);
pub const MAX_PAUSE: Duration = Duration::from_millis(500);
/// How long a lost peer (see the module text) is tried once its listener
/// refuses, unless the limit is shorter.
pub const LOST_PEER_RETRY: Duration = Duration::from_millis(1000);

/// The connection attempts to one peer.
#[derive(Default, Debug)]
pub struct ConnRetry {
    /// When the current series started (its first attempt, or else its
    /// first failure).
    pub started: Option<Instant>,
    /// Failed attempts in this series.
    pub failures: u32,
    /// When the next attempt is due (None: no attempt is waiting).
    pub at: Option<Instant>,
    /// A connection to this peer was established: refused attempts are
    /// tried for [`LOST_PEER_RETRY`] at most. Cleared by [`ConnRetry::reset`].
    pub lost: bool,
}

impl ConnRetry {
    /// Notes the start of an attempt (the first one starts the series).
    pub fn attempt(&mut self) {
        self.started.get_or_insert_with(Instant::now);
        self.at = None;
    }

    /// A connection was established: the next failure starts a new series.
    pub fn reset(&mut self) {
        *self = ConnRetry::default();
    }

    /// After a failed attempt (`refused`: the peer's address refused the
    /// connection): when to try again, or None when `limit` since the
    /// series started (shortened for a lost peer that refuses) is used up;
    /// the next attempt then starts a new series.
    pub fn next(&mut self, limit: Duration, refused: bool) -> Option<Instant> {
        let now = Instant::now();
        let limit = if self.lost && refused {
            limit.min(LOST_PEER_RETRY)
        } else {
            limit
        };
        let deadline = *self.started.get_or_insert(now) + limit;
        if now >= deadline {
            *self = ConnRetry {
                lost: self.lost,
                ..ConnRetry::default()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_and_stop_at_the_limit() {
        let mut r = ConnRetry::default();
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
        let mut r = ConnRetry::default();
        r.attempt();
        assert_eq!(r.next(Duration::ZERO, true), None, "no time left: give up");
        assert!(r.started.is_none(), "giving up starts a new series");
    }

    #[test]
    fn a_series_without_attempt_notes_starts_at_its_first_failure() {
        let mut a = ConnRetry::default();
        let t0 = Instant::now();
        let first = a
            .next(DEFAULT_CONN_TIMEOUT, true)
            .expect("a first failure is retried");
        assert!(first - t0 < FIRST_PAUSE * 2 + Duration::from_millis(50));
        let second = a
            .next(DEFAULT_CONN_TIMEOUT, true)
            .expect("retried within the timeout");
        assert!(second - first >= FIRST_PAUSE, "the pause grows");
        a.started = Some(t0 - DEFAULT_CONN_TIMEOUT);
        assert!(
            a.next(DEFAULT_CONN_TIMEOUT, false).is_none(),
            "the series is over"
        );
        assert!(
            a.next(DEFAULT_CONN_TIMEOUT, false).is_some(),
            "the next failure starts a new series"
        );
    }

    #[test]
    fn a_lost_peer_gets_a_short_series_until_a_reset() {
        let mut r = ConnRetry {
            lost: true,
            ..ConnRetry::default()
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
        assert!(!r.lost, "an established connection forgets it");
        r.attempt();
        r.started = Some(Instant::now() - LOST_PEER_RETRY);
        assert!(
            r.next(Duration::from_secs(60), true).is_some(),
            "the full limit again"
        );
    }
}
