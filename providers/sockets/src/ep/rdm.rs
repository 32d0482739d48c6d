//! RDM peering: one TCP connection per peer, made on the first send and
//! introduced with `Hello` (our listening address); sends wait for the
//! `HelloAck`, and simultaneous connects settle on one connection.

use super::*;

/// An RDM peer.
#[derive(Default)]
pub(super) struct Peer {
    /// The connection used with this peer.
    pub(super) conn: Option<usize>,
    /// The handshake on `conn` finished: sends go straight to it.
    pub(super) ready: bool,
    /// Sends waiting for the handshake.
    pub(super) pending: std::collections::VecDeque<TxItem>,
    /// Connection attempts that failed before the handshake (`retry.rs`).
    pub(super) retry: super::retry::Retry,
}

impl SockEp {
    /// The peer behind an RDM destination, connecting if needed.
    pub(super) fn rdm_peer(&self, st: &mut EpState, dest: fi_addr_t) -> Result<SocketAddr> {
        let av = st.core.av.as_ref().ok_or(Error::NoAv)?;
        let Some(sa) = av.sockaddr(dest) else {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "destination {dest:#x} is not in the AV"
            );
            return Err(Error::Inval);
        };
        // Connected, connecting, or waiting for the next attempt: the send
        // joins the queue.
        if st
            .peers
            .get(&sa)
            .is_some_and(|p| p.conn.is_some() || p.retry.at.is_some())
        {
            return Ok(sa);
        }
        self.rdm_connect(st, sa, dest)
            .map_err(|e| Error::os(FI_ECONNREFUSED, &e))?;
        Ok(sa)
    }

    /// Starts a connection to the peer listening at `sa` (`dest`: its
    /// `fi_addr_t`, when known) and queues our `Hello` on it.
    pub(super) fn rdm_connect(
        &self,
        st: &mut EpState,
        sa: SocketAddr,
        dest: fi_addr_t,
    ) -> std::io::Result<()> {
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
        let me = st.local.map(|l| addr::to_sockaddr(&l)).unwrap_or_default();
        conn.txq.push_back(Self::control_item(Op::Hello, me, 0));
        st.tx_queued += 1;
        let slot = self.add_conn(st, conn, true);
        let peer = st.peers.entry(sa).or_default();
        peer.conn = Some(slot);
        peer.ready = false;
        Ok(())
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
                peer.pending.push_back(item);
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
            peer.pending.drain(..).collect()
        };
        st.tx_queued = st.tx_queued.saturating_sub(items.len());
        for item in items {
            let _ = self.submit(st, slot, item);
        }
    }

    /// `HelloAck`: our handshake finished; waiting sends go.
    pub(super) fn on_hello_ack(&self, st: &mut EpState, slot: usize) {
        if let Some(sa) = st.conns[slot].as_ref().and_then(|c| c.peer) {
            self.peer_ready(st, sa, slot);
        }
    }

    /// `HelloNack`: the peer's own connection won; its Hello brings it.
    pub(super) fn on_hello_nack(&self, st: &mut EpState, slot: usize) {
        if let Some(c) = st.conns[slot].take() {
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

    /// `Hello`: a peer introduces itself with its listening address.
    pub(super) fn on_hello(&self, st: &mut EpState, slot: usize, b: &[u8]) {
        let Some(peer) = sockaddr(b) else {
            self.close_conn(st, slot, Failure::code(FI_EIO), "malformed hello");
            return;
        };
        if let Some(c) = st.conns[slot].as_mut() {
            c.peer = Some(peer);
            c.fi_addr = FI_ADDR_NOTAVAIL;
        }
        if st.local == Some(peer) {
            // An endpoint talking to itself (fi_write to its own address):
            // its outgoing connection stays the one it sends on, this
            // accepted one only receives; no simultaneous-connect race.
            let ack = Self::control_item(Op::HelloAck, Vec::new(), 0);
            let _ = self.submit(st, slot, ack);
            return;
        }
        // Another connection with this peer that we opened: both
        // sides connected at once. The connection opened by the
        // smaller address wins, the same decision on both sides.
        let ours = st.peers.get(&peer).and_then(|p| p.conn).filter(|&o| {
            o != slot
                && st
                    .conns
                    .get(o)
                    .and_then(Option::as_ref)
                    .is_some_and(|c| c.outgoing)
        });
        let we_win = match (ours, st.local) {
            (Some(_), Some(me)) => (me.ip(), me.port()) < (peer.ip(), peer.port()),
            _ => false,
        };
        if we_win {
            let nack = Self::control_item(Op::HelloNack, Vec::new(), 0);
            let _ = self.submit(st, slot, nack);
        } else {
            if let Some(o) = ours.filter(|&o| o != slot) {
                // Our own attempt lost: drop it, keep its messages.
                if let Some(c) = st.conns[o].take() {
                    self.epoll.remove(c.stream.as_raw_fd());
                    st.tx_queued = st.tx_queued.saturating_sub(c.txq.len());
                }
            }
            let ack = Self::control_item(Op::HelloAck, Vec::new(), 0);
            let _ = self.submit(st, slot, ack);
            self.peer_ready(st, peer, slot);
        }
    }
}
