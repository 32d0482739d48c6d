//! RDM peering: one TCP connection per peer, made on the first send and
//! introduced with `Hello` (our listening address and a random nonce);
//! sends wait for the `HelloAck`, and simultaneous connects settle on one
//! connection.
//!
//! An accepted connection's `Hello` is a claim, checked before the peer's
//! traffic goes to it or completions name the peer: we connect to the
//! claimed address ourselves and ask (`Verify`) whether the endpoint there
//! sent that nonce to us. Until the answer the connection is anonymous; a
//! claim without a nonce, one that is denied, or one beyond
//! [`MAX_VERIFYING`] checks at once stays anonymous (its messages are
//! delivered with `FI_ADDR_NOTAVAIL` as source) and never displaces the
//! connection of the peer it names.

use super::*;
use crate::conn::Claim;

/// Claim checks an endpoint runs at once; claims beyond stay anonymous.
const MAX_VERIFYING: usize = 64;

/// An RDM peer.
#[derive(Default)]
pub(super) struct Peer {
    /// The connection used with this peer.
    pub(super) conn: Option<usize>,
    /// The handshake on `conn` finished: sends go straight to it.
    pub(super) ready: bool,
    /// Waits for a free connection before it is dialled (`lru.rs`).
    pub(super) slot_wait: bool,
    /// Sends waiting for the handshake.
    pub(super) pending: crate::conn::TxQueue,
    /// Connection attempts that failed before the handshake (`retry.rs`).
    pub(super) retry: super::retry::Retry,
    /// The nonce of our last `Hello` to this peer (0: none sent), which
    /// its claim check asks us to confirm.
    pub(super) nonce: u64,
    /// An accepted connection claiming this address is being checked:
    /// sends wait for the outcome rather than open another connection.
    pub(super) verifying: Option<usize>,
}

/// `a` and `b` name the same listening address (scope and flow labels of
/// IPv6 addresses aside).
fn same_addr(a: &SocketAddr, b: &SocketAddr) -> bool {
    a.ip() == b.ip() && a.port() == b.port()
}

impl SockEp {
    /// The peer behind an RDM destination, connecting if needed, and its
    /// connection when the handshake on it is done (sends may go out on
    /// it at once).
    pub(super) fn rdm_peer(
        &self,
        st: &mut EpState,
        dest: fi_addr_t,
    ) -> Result<(SocketAddr, Option<usize>)> {
        let av = st.core.av.as_ref().ok_or(Error::NoAv)?;
        let Some(sa) = super::sep::ctx_sockaddr(av, dest) else {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "destination {dest:#x} is not in the AV"
            );
            return Err(Error::Inval);
        };
        // Connected, connecting, waiting for the next attempt, or for the
        // check of a connection claiming that address: the send joins the
        // queue.
        if let Some(p) = st.peers.get(&sa) {
            if p.conn.is_some() || p.retry.at.is_some() || p.verifying.is_some() || p.slot_wait {
                return Ok((sa, p.conn.filter(|_| p.ready)));
            }
        }
        self.rdm_connect(st, sa, dest)
            .map_err(|e| Error::os(FI_ECONNREFUSED, &e))?;
        Ok((sa, None))
    }

    /// Starts a connection to the peer listening at `sa` (`dest`: its
    /// `fi_addr_t`, when known) and queues our `Hello` on it.
    pub(super) fn rdm_connect(
        &self,
        st: &mut EpState,
        sa: SocketAddr,
        dest: fi_addr_t,
    ) -> std::io::Result<()> {
        if self.dial_must_wait(st, sa) {
            return Ok(());
        }
        st.peers.entry(sa).or_default().retry.attempt();
        let stream = sock::connect_nonblocking(&sa).inspect_err(|e| {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "connect to {sa} failed: {e}"
            );
        })?;
        let mut conn = Conn::new(stream, ConnState::Connecting, Some(sa));
        conn.fi_addr = dest;
        conn.fi_addr_gen = st.core.av.as_ref().map_or(0, |a| a.generation());
        let nonce = oxifabric::service::random::random_u64();
        let me = st.local.map(|l| addr::to_sockaddr(&l)).unwrap_or_default();
        conn.txq
            .push_back(Self::control_item(Op::Hello, me, nonce), &st.copies);
        st.tx_queued += 1;
        let slot = self.add_conn(st, conn, true);
        let peer = st.peers.entry(sa).or_default();
        peer.conn = Some(slot);
        peer.ready = false;
        peer.nonce = nonce;
        Ok(())
    }

    /// Sends that wait for `sa` get a connection of their own when nothing
    /// else will carry them (a claim of that address failed or vanished).
    fn redial_if_waiting(&self, st: &mut EpState, sa: SocketAddr) {
        let waiting = st.peers.get(&sa).is_some_and(|p| {
            p.conn.is_none()
                && p.verifying.is_none()
                && p.retry.at.is_none()
                && !p.slot_wait
                && !p.pending.is_empty()
        });
        if !waiting {
            return;
        }
        if let Err(e) = self.rdm_connect(st, sa, FI_ADDR_NOTAVAIL) {
            let items: Vec<TxItem> = st
                .peers
                .get_mut(&sa)
                .map(|p| p.pending.take_all().into())
                .unwrap_or_default();
            let f = Failure {
                peer: Some(sa),
                cause: "connect failed",
                ..Failure::os(FI_ECONNREFUSED, &e)
            };
            self.fail_items(st, items, f);
        }
    }

    /// Sends an item to an RDM peer now, or queues it until the handshake
    /// on its connection finishes.
    pub(super) fn rdm_submit(
        &self,
        st: &mut EpState,
        sa: SocketAddr,
        mut item: TxItem,
    ) -> Result<()> {
        let peer = st.peers.entry(sa).or_default();
        match (peer.conn, peer.ready) {
            (Some(slot), true) => self.submit(st, slot, item),
            _ => {
                // The application may reuse inject buffers at once.
                if item
                    .done
                    .is_some_and(|d| d.tx.flags & (FI_INJECT | FI_INJECT_COMPLETE) != 0)
                {
                    item.own_rest();
                }
                peer.pending.push_back(item, &st.copies);
                st.tx_queued += 1;
                Ok(())
            }
        }
    }

    /// The handshake with `sa` finished on `slot`: release waiting sends.
    pub(super) fn peer_ready(&self, st: &mut EpState, sa: SocketAddr, slot: usize) {
        let items: Vec<TxItem> = {
            let peer = st.peers.entry(sa).or_default();
            peer.conn = Some(slot);
            peer.ready = true;
            peer.retry.reset();
            peer.pending.take_all().into()
        };
        st.tx_queued = st.tx_queued.saturating_sub(items.len());
        for item in items {
            let _ = self.submit(st, slot, item);
        }
    }

    /// Whether `slot` is a connection we opened (handshake answers are
    /// only meaningful there).
    fn is_outgoing(st: &EpState, slot: usize) -> bool {
        st.conns
            .get(slot)
            .and_then(Option::as_ref)
            .is_some_and(|c| c.outgoing && c.verifies.is_none())
    }

    /// `HelloAck`: our handshake finished; waiting sends go.
    pub(super) fn on_hello_ack(&self, st: &mut EpState, slot: usize) {
        if !Self::is_outgoing(st, slot) {
            self.close_conn(st, slot, Failure::code(FI_EIO), "unexpected hello answer");
            return;
        }
        if let Some(sa) = st.conns[slot].as_ref().and_then(|c| c.peer) {
            self.peer_ready(st, sa, slot);
        }
    }

    /// `HelloNack`: the peer's own connection won; its Hello brings it.
    pub(super) fn on_hello_nack(&self, st: &mut EpState, slot: usize) {
        if !Self::is_outgoing(st, slot) {
            self.close_conn(st, slot, Failure::code(FI_EIO), "unexpected hello answer");
            return;
        }
        if let Some(c) = Self::take_conn(st, slot) {
            self.epoll.remove(c.stream.as_raw_fd());
            st.tx_queued = st.tx_queued.saturating_sub(c.txq.len());
            if let Some(sa) = c.peer {
                if let Some(p) = st.peers.get_mut(&sa) {
                    if p.conn == Some(slot) {
                        p.conn = None;
                        p.ready = false;
                    }
                }
            }
        }
    }

    /// Our own connection to `peer`, other than `slot`, when we opened
    /// one and the connection of the smaller address wins: `Some(true)`
    /// when ours wins (both sides connected at once and decide alike).
    fn tie_break(&self, st: &EpState, peer: SocketAddr, slot: usize) -> Option<(usize, bool)> {
        let ours = st.peers.get(&peer).and_then(|p| p.conn).filter(|&o| {
            o != slot
                && st
                    .conns
                    .get(o)
                    .and_then(Option::as_ref)
                    .is_some_and(|c| c.outgoing)
        })?;
        let we_win = st
            .local
            .is_some_and(|me| (me.ip(), me.port()) < (peer.ip(), peer.port()));
        Some((ours, we_win))
    }

    fn answer_hello(&self, st: &mut EpState, slot: usize, op: Op) {
        let _ = self.submit(st, slot, Self::control_item(op, Vec::new(), 0));
    }

    /// `Hello`: a connecting peer claims a listening address. When we
    /// connected to it at the same time and our connection wins, the claim
    /// is refused at once (`HelloNack`); otherwise it is checked (now, or
    /// once fewer than [`MAX_VERIFYING`] checks run).
    pub(super) fn on_hello(&self, st: &mut EpState, slot: usize, nonce: u64, b: &[u8]) {
        let Some(claim) = sockaddr(b) else {
            self.close_conn(st, slot, Failure::code(FI_EIO), "malformed hello");
            return;
        };
        let fresh = st.conns[slot]
            .as_ref()
            .is_some_and(|c| !c.outgoing && c.claim.is_none() && c.peer.is_none() && !c.transient);
        if !fresh {
            self.close_conn(st, slot, Failure::code(FI_EIO), "unexpected hello");
            return;
        }
        if let Some(c) = st.conns[slot].as_mut() {
            c.introduced = true;
        }
        if st.local.is_some_and(|me| same_addr(&me, &claim)) {
            // An endpoint talking to itself (fi_write to its own address):
            // the claim is checked against the nonce of our own Hello, no
            // connection back is needed. The accepted connection only
            // receives; our outgoing one keeps sending. A claim of our
            // address with another nonce stays anonymous.
            let ours = nonce != 0 && st.peers.get(&claim).is_some_and(|p| p.nonce == nonce);
            if let Some(c) = st.conns[slot].as_mut().filter(|_| ours) {
                c.peer = Some(claim);
                c.fi_addr = FI_ADDR_NOTAVAIL;
            }
            self.answer_hello(st, slot, Op::HelloAck);
            return;
        }
        if let Some((_, true)) = self.tie_break(st, claim, slot) {
            self.answer_hello(st, slot, Op::HelloNack);
            return;
        }
        if self.refuse_hello(st, slot, claim) {
            return;
        }
        if nonce == 0 {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "connection claiming {claim} offers no way to check it; it stays anonymous"
            );
            self.answer_hello(st, slot, Op::HelloAck);
            return;
        }
        if let Some(c) = st.conns[slot].as_mut() {
            c.claim = Some(Claim {
                addr: claim,
                nonce,
                checking: false,
            });
        }
        st.peers.entry(claim).or_default().verifying = Some(slot);
        self.start_checks(st);
    }

    /// Starts the checks of waiting claims while fewer than
    /// [`MAX_VERIFYING`] run: a connection to the claimed address carrying
    /// `Verify`.
    pub(super) fn start_checks(&self, st: &mut EpState) {
        while st.verifying < MAX_VERIFYING {
            let next = st.conns.iter().enumerate().find_map(|(i, c)| {
                let c = c.as_ref()?;
                c.claim.filter(|cl| !cl.checking).map(|cl| (i, c.id, cl))
            });
            let Some((slot, id, cl)) = next else {
                return;
            };
            if let Some(c) = st.conns[slot].as_mut().and_then(|c| c.claim.as_mut()) {
                c.checking = true;
            }
            let stream = match sock::connect_nonblocking(&cl.addr) {
                Ok(s) => s,
                Err(e) => {
                    prov_log!(
                        PROV,
                        FI_LOG_WARN,
                        FI_LOG_EP_CTRL,
                        "cannot check the claim of {} ({e})",
                        cl.addr
                    );
                    self.claim_checked(st, slot, id, false);
                    continue;
                }
            };
            let mut v = Conn::new(stream, ConnState::Connecting, None);
            v.verifies = Some((slot, id, cl.nonce));
            v.transient = true;
            let me = st.local.map(|l| addr::to_sockaddr(&l)).unwrap_or_default();
            v.txq
                .push_back(Self::control_item(Op::Verify, me, cl.nonce), &st.copies);
            st.tx_queued += 1;
            self.add_conn(st, v, true);
            st.verifying += 1;
        }
    }

    /// `Verify`: another endpoint checks a claim of our address; confirm
    /// only a nonce we sent to that endpoint ourselves.
    pub(super) fn on_verify(&self, st: &mut EpState, slot: usize, nonce: u64, b: &[u8]) {
        let fresh = st.conns[slot]
            .as_ref()
            .is_some_and(|c| !c.outgoing && c.claim.is_none() && c.peer.is_none());
        if !fresh {
            self.close_conn(st, slot, Failure::code(FI_EIO), "unexpected verify");
            return;
        }
        if let Some(c) = st.conns[slot].as_mut() {
            c.transient = true;
            c.introduced = true;
        }
        let ok = nonce != 0
            && sockaddr(b).is_some_and(|checker| {
                st.peers
                    .iter()
                    .any(|(a, p)| same_addr(a, &checker) && p.nonce == nonce)
            });
        let op = if ok { Op::VerifyAck } else { Op::VerifyNack };
        let _ = self.submit(st, slot, Self::control_item(op, Vec::new(), nonce));
    }

    /// `VerifyAck`/`VerifyNack` on a connection we made to check a claim:
    /// the check is over, and so is that connection.
    pub(super) fn on_verified(&self, st: &mut EpState, slot: usize, nonce: u64, ok: bool) {
        let Some((claimer, id, sent)) = st.conns[slot].as_ref().and_then(|c| c.verifies) else {
            self.close_conn(st, slot, Failure::code(FI_EIO), "unexpected verify answer");
            return;
        };
        if let Some(c) = Self::take_conn(st, slot) {
            self.epoll.remove(c.stream.as_raw_fd());
            st.tx_queued = st.tx_queued.saturating_sub(c.txq.len());
        }
        st.verifying = st.verifying.saturating_sub(1);
        self.claim_checked(st, claimer, id, ok && nonce == sent);
        self.start_checks(st);
    }

    /// The outcome of the check of `claimer`'s claim (if that connection,
    /// identified by `id`, is still there): confirmed, it becomes the
    /// peer's connection as an accepted `Hello` always did; denied, it
    /// stays anonymous.
    pub(super) fn claim_checked(&self, st: &mut EpState, claimer: usize, id: u64, ok: bool) {
        let Some(c) = st
            .conns
            .get_mut(claimer)
            .and_then(Option::as_mut)
            .filter(|c| c.id == id)
        else {
            return;
        };
        let Some(peer) = c.claim.take().map(|cl| cl.addr) else {
            return;
        };
        if ok {
            c.peer = Some(peer);
            c.fi_addr = FI_ADDR_NOTAVAIL;
        }
        if let Some(p) = st.peers.get_mut(&peer) {
            if p.verifying == Some(claimer) {
                p.verifying = None;
            }
        }
        if !ok {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "the endpoint at {peer} denies the connection claiming its address; it stays anonymous"
            );
            self.answer_hello(st, claimer, Op::HelloAck);
            self.redial_if_waiting(st, peer);
            return;
        }
        match self.tie_break(st, peer, claimer) {
            Some((_, true)) => {
                self.answer_hello(st, claimer, Op::HelloNack);
                return;
            }
            Some((o, false)) => {
                // Our own attempt lost: drop it, keep its messages.
                if let Some(c) = Self::take_conn(st, o) {
                    self.epoll.remove(c.stream.as_raw_fd());
                    st.tx_queued = st.tx_queued.saturating_sub(c.txq.len());
                }
            }
            None => {}
        }
        self.answer_hello(st, claimer, Op::HelloAck);
        self.peer_ready(st, peer, claimer);
    }

    /// A connection whose claim of `sa` was being checked is gone.
    pub(super) fn claim_dropped(&self, st: &mut EpState, sa: SocketAddr, slot: usize) {
        if let Some(p) = st.peers.get_mut(&sa) {
            if p.verifying == Some(slot) {
                p.verifying = None;
            }
        }
        self.redial_if_waiting(st, sa);
    }
}
