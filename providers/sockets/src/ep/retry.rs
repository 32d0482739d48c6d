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
//! attempts stop after [`oxifabric::service::conn_retry::LOST_PEER_RETRY`], so its senders hear so within
//! about a second, while a peer that restarts at once is still found and
//! a busy peer that closes connections it cannot serve (`lru.rs`, which
//! does not refuse them) keeps the whole window.

use super::*;
use std::time::{Duration, Instant};

/// The engine's retry policy (`service::conn_retry`), shared with the
/// verbs provider's RDM connections.
pub(super) use oxifabric::service::conn_retry::{ConnRetry as Retry, DEFAULT_CONN_TIMEOUT};

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
