//! Same-host peers by shared memory (issue 26).
//!
//! An RDM endpoint owns, besides its TCP listener, a same-host path
//! (`oxifabric_shm::path`: the `shm` provider's own, not a copy) listening
//! under an id derived from its TCP listener's address and our user id
//! (`id_for_sockaddr`), in the abstract socket namespace, which is the
//! network namespace's. At the first operation to a peer, the endpoint
//! tries to reach the id derived from the peer's address in the AV: if
//! something listens there, it is an endpoint of ours in the same network
//! namespace, run by the same user, on this kernel, and once the
//! handshake this starts has finished, every message and one-sided
//! operation to it goes by shared memory; if nothing listens (a remote
//! host, another container, another user, an endpoint with the path off),
//! or the handshake fails (the peer could not take us on: descriptors,
//! memory; or it did not answer within [`HANDSHAKE`]), by TCP. Operations
//! posted meanwhile wait in order (`parked.rs`). Each direction chooses
//! for itself (ordering is per sender), once per peer address for the
//! endpoint's life, and the choice is logged at info level.
//!
//! Both transports feed one receive queue (the deferred messages are
//! [`Token`]s of either), one endpoint core (CQs, counters), one MR table
//! (a key a remote peer uses works for a local one), and `FI_SOURCE`
//! names a local sender by the AV entry of the TCP address its handshake
//! gives (checked against its id), as for a TCP sender.
//!
//! Waiting: the path's descriptors sit in the endpoint's epoll set under
//! [`TOKEN_SHM`], and every request for that set's descriptor (a blocking
//! wait, `fi_trywait`, the auto-progress thread) arms the path, so that
//! peers ring its doorbell while we sleep; progress disarms it.
//!
//! Off: `FI_SOCKETS_SHM=0`; endpoints with an authorization key (peers
//! prove keys on TCP connections only), a shared receive context (whose
//! queue is not the endpoint's) or a connection limit
//! (`FI_SOCKETS_MAX_CONNS`, which bounds the descriptors peers take); or
//! when the path cannot be made (logged: every peer then goes by TCP).

use super::parked::Parked;
use super::rndv::Announced;
use super::*;
use oxifabric::service::keyhash::KeyedU64;
use oxifabric_shm::path::{self as shm, Host, Key, Limits, Naming, Path, Reached};
use oxifabric_shm::transport::Addr;
use std::collections::VecDeque;

/// The epoll token of the path's descriptors (connection tokens count up
/// from `TOKEN_CONN`).
pub(super) const TOKEN_SHM: u64 = u64::MAX;
/// How long a local peer has to answer our handshake (its progress
/// answers it) before it is reached by TCP instead: long enough for a
/// peer busy elsewhere at startup, short enough that operations to a
/// peer that cannot take us on (and so never answers) do not wait long.
const HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(30);

/// Which way operations to a peer go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    Tcp,
    /// By shared memory, to this peer of the path.
    Shm(Addr),
    /// Not known yet: our handshake with the peer at this address is
    /// under way, and operations to it wait (`Parked`).
    Wait(SocketAddr),
}

/// Operations to a peer whose handshake is under way.
struct Waiting {
    to: Addr,
    ops: VecDeque<Parked>,
    /// The way decided, while operations that waited are still going
    /// out (a full queue leaves some for the next progress).
    then: Option<Route>,
}

/// What the receive queue holds for a message whose receive is not
/// posted yet and whose bytes stay with the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Token {
    /// A TCP rendezvous (`rndv.rs`).
    Tcp(Announced),
    /// A same-host message (`oxifabric_shm::path`).
    Shm(Key),
}

impl shm::Token for Token {
    fn shm(key: Key) -> Token {
        Token::Shm(key)
    }
    fn as_shm(&self) -> Option<Key> {
        match self {
            Token::Shm(k) => Some(*k),
            Token::Tcp(_) => None,
        }
    }
}

/// `FI_SOCKETS_SHM` (default on).
pub(super) fn enabled() -> bool {
    !matches!(
        oxifabric::param::get(PROV, "shm"),
        Ok(oxifabric::param::Value::Bool(false))
    )
}

/// An endpoint's same-host path and which peers take it.
pub(super) struct Local {
    path: Path<Token>,
    /// Each AV entry's route, for one AV generation, and the last one
    /// looked up.
    by_dest: HashMap<fi_addr_t, Route, KeyedU64>,
    last: Option<(fi_addr_t, Route)>,
    av_gen: u64,
    /// The choice made for each peer address, for the endpoint's life.
    by_sa: HashMap<SocketAddr, Route>,
    waiting: HashMap<SocketAddr, Waiting>,
    /// `local_decide` is running (posting what waited may run progress).
    deciding: bool,
}

impl SockEp {
    /// Opens the path at `fi_enable` (RDM endpoints that want it).
    pub(super) fn local_open(&self, st: &mut EpState) {
        if !self.local_wanted || st.local_path.is_some() || st.srx.is_some() {
            return;
        }
        if st.max_conns != usize::MAX {
            // FI_SOCKETS_MAX_CONNS bounds the descriptors peers take;
            // same-host peers would take theirs outside that bound.
            prov_log!(
                PROV,
                FI_LOG_INFO,
                FI_LOG_EP_CTRL,
                "a connection limit is set: every peer is reached by TCP"
            );
            return;
        }
        let Some(me) = st.local else { return };
        let limits = Limits {
            queue_size: attrs::QUEUE_SIZE,
            inject_size: attrs::INJECT_SIZE,
            rma_iov_limit: attrs::RMA_IOV_LIMIT,
            handshake: HANDSHAKE,
            fallback: true,
        };
        let id = shm::id_for_sockaddr(&me);
        let name = me.to_string();
        match Path::new(
            id,
            self.domain.mr.clone(),
            Naming::Sockaddr,
            name.as_bytes(),
            limits,
        ) {
            Ok(mut path) => {
                path.watch_in(&self.epoll, TOKEN_SHM);
                path.set_owner(oxifabric::service::coll::key_of(self));
                self.quick.watch(path.peek());
                st.local_path = Some(Box::new(Local {
                    path,
                    by_dest: HashMap::default(),
                    last: None,
                    av_gen: u64::MAX,
                    by_sa: HashMap::new(),
                    waiting: HashMap::new(),
                    deciding: false,
                }));
            }
            Err(e) => prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "endpoint {me}: no shared-memory path ({e:?}); every peer is reached by TCP"
            ),
        }
    }

    /// Which way operations to `dest` go: decided at the first operation
    /// to each peer address.
    pub(super) fn local_dest(&self, st: &mut EpState, dest: fi_addr_t) -> Route {
        let Some(l) = st.local_path.as_deref_mut() else {
            return Route::Tcp;
        };
        let Some(av) = st.core.av.as_ref() else {
            return Route::Tcp;
        };
        let g = av.generation();
        if g != l.av_gen {
            l.av_gen = g;
            l.by_dest.clear();
            l.last = None;
        }
        if let Some((d, to)) = l.last {
            if d == dest {
                return to;
            }
        }
        if let Some(&to) = l.by_dest.get(&dest) {
            l.last = Some((dest, to));
            return to;
        }
        let Some(sa) = sep::ctx_sockaddr(av, dest) else {
            return Route::Tcp;
        };
        let to = match l.by_sa.get(&sa) {
            Some(&to) => to,
            None => {
                let to = Self::local_choose(&mut l.path, sa);
                if let Route::Wait(_) = to {
                    l.waiting.entry(sa).or_insert(Waiting {
                        to: Addr(shm::id_for_sockaddr(&sa)),
                        ops: VecDeque::new(),
                        then: None,
                    });
                }
                l.by_sa.insert(sa, to);
                to
            }
        };
        l.by_dest.insert(dest, to);
        l.last = Some((dest, to));
        to
    }

    /// Whether the endpoint at `sa` listens on our path: one attempt to
    /// reach it, which starts its handshake when it does (the way is then
    /// decided when the handshake ends, `local_decide`).
    fn local_choose(path: &mut Path<Token>, sa: SocketAddr) -> Route {
        let to = Addr(shm::id_for_sockaddr(&sa));
        let why = match path.reach(to, Some(sa)) {
            Ok(true) if path.reached(to) == Reached::Up => {
                // It reached us first.
                Self::log_route(sa, Route::Shm(to), "");
                return Route::Shm(to);
            }
            Ok(true) => return Route::Wait(sa),
            Ok(false) => "no endpoint of ours under its address in this network namespace".into(),
            Err(e) => format!("shared memory refused: {e:?}"),
        };
        Self::log_route(sa, Route::Tcp, &why);
        Route::Tcp
    }

    /// The info line that says which way a peer is reached.
    fn log_route(sa: SocketAddr, route: Route, why: &str) {
        if let Route::Shm(_) = route {
            prov_log!(
                PROV,
                FI_LOG_INFO,
                FI_LOG_EP_CTRL,
                "peer {sa} reached by shared memory"
            );
        } else {
            prov_log!(
                PROV,
                FI_LOG_INFO,
                FI_LOG_EP_CTRL,
                "peer {sa} reached by TCP ({why})"
            );
        }
    }

    /// An operation to a peer whose handshake is under way waits.
    pub(super) fn park(st: &mut EpState, sa: SocketAddr, op: Parked) -> Result<()> {
        let w = st
            .local_path
            .as_deref_mut()
            .and_then(|l| l.waiting.get_mut(&sa))
            .ok_or(Error::OpBadState)?;
        w.ops.push_back(op);
        st.tx_queued += 1;
        Ok(())
    }

    /// Decides the way to each peer whose handshake ended, and posts what
    /// waited for it, in order.
    fn local_decide(&self, st: &mut EpState) {
        let Some(l) = st.local_path.as_deref_mut() else {
            return;
        };
        if l.waiting.is_empty() || l.deciding {
            return;
        }
        l.deciding = true;
        let peers: Vec<SocketAddr> = l.waiting.keys().copied().collect();
        for sa in peers {
            let Some(l) = st.local_path.as_deref_mut() else {
                return;
            };
            let Some(w) = l.waiting.get_mut(&sa) else {
                continue;
            };
            let route = match w.then {
                Some(route) => route,
                None => {
                    let route = match l.path.reached(w.to) {
                        Reached::Pending => continue,
                        // A dead peer stays on the path, which fails what
                        // goes to it at once, naming it.
                        Reached::Up | Reached::Gone => Route::Shm(w.to),
                        Reached::Refused(e) => {
                            let why = match e {
                                Error::TimedOut => {
                                    "no answer to the shared-memory handshake in time".to_string()
                                }
                                e => format!("shared-memory handshake failed: {e:?}"),
                            };
                            Self::log_route(sa, Route::Tcp, &why);
                            Route::Tcp
                        }
                    };
                    if let Route::Shm(_) = route {
                        Self::log_route(sa, route, "");
                    }
                    w.then = Some(route);
                    route
                }
            };
            let mut ops = std::mem::take(&mut w.ops);
            while let Some(op) = ops.pop_front() {
                st.tx_queued = st.tx_queued.saturating_sub(1);
                if op.post(self, st, route).is_err() {
                    // Again: the rest goes at a later progress.
                    st.tx_queued += 1;
                    ops.push_front(op);
                    break;
                }
            }
            let Some(l) = st.local_path.as_deref_mut() else {
                return;
            };
            if ops.is_empty() {
                l.waiting.remove(&sa);
                l.by_sa.insert(sa, route);
                l.by_dest.clear();
                l.last = None;
            } else if let Some(w) = l.waiting.get_mut(&sa) {
                w.ops = ops;
            }
        }
        if let Some(l) = st.local_path.as_deref_mut() {
            l.deciding = false;
        }
    }

    /// Runs `f` on the path with the receive queue and core it borrows.
    fn with_local<R>(
        st: &mut EpState,
        f: impl FnOnce(&mut Path<Token>, &mut Host<'_, Token>) -> R,
    ) -> Option<R> {
        let l = st.local_path.as_deref_mut()?;
        let mut h = Host {
            core: &mut st.core,
            rxq: &mut st.rxq,
        };
        Some(f(&mut l.path, &mut h))
    }

    /// An operation (`Path::send`, `rma`, `atomic`) to a same-host peer
    /// `local_dest` named.
    pub(super) fn on_local(
        st: &mut EpState,
        f: impl FnOnce(&mut Path<Token>, &mut Host<'_, Token>) -> Result<()>,
    ) -> Result<()> {
        Self::with_local(st, f).unwrap_or(Err(Error::OpBadState))
    }

    /// A receive matched a same-host message the queue held.
    pub(super) fn local_matched(&self, st: &mut EpState, m: DeferredMatch<Token>) {
        Self::with_local(st, |p, h| p.matched(h, m));
    }

    /// After receives were posted: what they matched is pulled.
    /// Before a receive is posted (`Path::before_post`).
    pub(super) fn local_before_post(&self, st: &mut EpState) {
        Self::with_local(st, |p, h| p.before_post(h));
    }

    pub(super) fn local_after_post(&self, st: &mut EpState) {
        Self::with_local(st, |p, h| p.after_post(h));
    }

    /// Progress's share.
    pub(super) fn local_progress(&self, st: &mut EpState) {
        Self::with_local(st, |p, h| p.progress(h));
        self.local_decide(st);
    }

    /// Someone is about to sleep on our epoll set: it watches the path's
    /// descriptors and peers ring our doorbell until the next progress.
    pub(super) fn local_arm(&self, st: &mut EpState) {
        if let Some(l) = st.local_path.as_deref_mut() {
            // The next pass disarms it.
            self.quick.busy(true);
            l.path.watch_in(&self.epoll, TOKEN_SHM);
            l.path.arm();
        }
    }

    /// Whether only input on the path and timers can give progress work
    /// (see `oxifabric_shm::path::Quick`): no connection, nothing queued
    /// or in flight on TCP, and the path quiet.
    pub(super) fn quiet(st: &EpState) -> bool {
        // An endpoint without the path never skips: nothing to work out.
        st.local_path.as_ref().is_some_and(|l| l.path.quiet())
            && st.solo.is_none()
            && st.tx_queued == 0
            && st.dirty.is_empty()
            && st.rma_ops.is_empty()
            && st.fenced.is_empty()
            && st.rndv_tx.is_empty()
            && st.next_retry.is_none()
            && !(st.over_limit || st.slot_waiting || st.accept_paused)
    }

    /// Transmit operations the path holds.
    pub(super) fn local_used(st: &EpState) -> usize {
        st.local_path.as_ref().map_or(0, |l| l.path.tx_used())
    }

    /// Closes the path (peers see it hang up), saying how much went
    /// each way.
    pub(super) fn local_close(&self, st: &mut EpState) {
        let shm_ops = match st.local_path.take() {
            Some(mut l) => {
                l.path.unwatch(&self.epoll);
                for op in l.waiting.values().flat_map(|w| &w.ops) {
                    st.tx_queued = st.tx_queued.saturating_sub(1);
                    op.cancel(st);
                }
                l.path.posted()
            }
            None => 0,
        };
        if self.ep_type == FI_EP_RDM {
            let me = st.local.map(|a| a.to_string()).unwrap_or_default();
            prov_log!(
                PROV,
                FI_LOG_INFO,
                FI_LOG_EP_CTRL,
                "endpoint {me} closed: {} TCP data frames sent, {shm_ops} shared-memory messages sent",
                st.tcp_data
            );
        }
    }
}
