//! MSG connection management: `fi_connect`, `fi_accept` (adopting the
//! connection a passive endpoint handed over), `fi_shutdown`, and the
//! `ConnAccept`/`ConnReject` answers.

use super::*;

/// Connection state of an MSG endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MsgState {
    Idle,
    Connecting(usize),
    Connected(usize),
    Down,
}

impl SockEp {
    /// Takes a connection handed over by a passive endpoint (`fi_accept`).
    pub(super) fn adopt(
        &self,
        st: &mut EpState,
        pending: crate::pep::PendingConn,
        data: &[u8],
    ) -> Result<()> {
        let mut conn = Conn::new(pending.stream, ConnState::Open, Some(pending.peer));
        conn.rx = pending.rx;
        let slot = self.add_conn(st, conn, false);
        st.msg = MsgState::Connected(slot);
        self.submit(
            st,
            slot,
            Self::control_item(Op::ConnAccept, data.to_vec(), 0),
        )?;
        st.core.cm_event(FI_CONNECTED as u32, Vec::new());
        // Anything the peer sent right after its request is already queued.
        self.read_conn(st, slot);
        Ok(())
    }

    /// `ConnAccept`: our connection request was accepted.
    pub(super) fn on_conn_accept(&self, st: &mut EpState, slot: usize, data: Vec<u8>) {
        if st.msg == MsgState::Connecting(slot) {
            st.msg = MsgState::Connected(slot);
            st.core.cm_event(FI_CONNECTED as u32, data);
        }
    }

    /// `ConnReject`: our connection request was rejected.
    pub(super) fn on_conn_reject(&self, st: &mut EpState, slot: usize, data: Vec<u8>) {
        if st.msg == MsgState::Connecting(slot) {
            st.msg = MsgState::Down;
            st.core.cm_error(Failure::code(FI_ECONNREFUSED), data);
            if let Some(c) = Self::take_conn(st, slot) {
                self.epoll.remove(c.stream.as_raw_fd());
            }
        }
    }

    /// Enables the endpoint unless it is enabled (`fi_enable`'s checks
    /// apply: a CQ and an EQ must be bound).
    fn enable_implicitly(&self) -> Result<()> {
        if self.lock().core.enabled {
            return Ok(());
        }
        self.enable()
    }

    /// `fi_connect`.
    pub(super) fn cm_connect(&self, a: &[u8], data: &[u8]) -> Result<()> {
        if self.ep_type != FI_EP_MSG {
            return Err(Error::NoSys);
        }
        if data.len() > attrs::CM_DATA_SIZE {
            return Err(Error::Inval);
        }
        let sa = sockaddr(a).ok_or(Error::Inval)?;
        // fi_cm(3): connecting enables an endpoint not enabled yet.
        self.enable_implicitly()?;
        let mut st = self.lock();
        if st.msg != MsgState::Idle {
            return Err(Error::IsConn);
        }
        // From the entry's (or fi_setname's) address when it names a port,
        // so the peer sees the address fi_getname reported before.
        let from = st.local.unwrap_or_else(|| self.bind_addr());
        let stream = sock::connect_from(&sa, Some(&from)).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                Error::os(FI_EADDRINUSE, &e)
            } else {
                Error::os(FI_ECONNREFUSED, &e)
            }
        })?;
        let mut conn = Conn::new(stream, ConnState::Connecting, Some(sa));
        conn.txq.push_back(
            Self::control_item(Op::ConnReq, data.to_vec(), 0),
            &st.copies,
        );
        st.tx_queued += 1;
        let slot = self.add_conn(&mut st, conn, true);
        st.msg = MsgState::Connecting(slot);
        Ok(())
    }

    /// `fi_accept`.
    pub(super) fn cm_accept(&self, data: &[u8]) -> Result<()> {
        if self.ep_type != FI_EP_MSG {
            return Err(Error::NoSys);
        }
        if data.len() > attrs::CM_DATA_SIZE {
            return Err(Error::Inval);
        }
        if self.lock().core.eq.is_none() {
            return Err(Error::NoEq);
        }
        // As for fi_connect: accepting enables the endpoint.
        self.enable_implicitly()?;
        let mut st = self.lock();
        if st.msg != MsgState::Idle {
            return Err(Error::IsConn);
        }
        let Some(pending) = crate::pep::take_pending(self.info.handle) else {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "fi_accept: info->handle is not a pending connection request"
            );
            return Err(Error::Inval);
        };
        self.adopt(&mut st, pending, data)
    }

    /// `fi_shutdown`: tells the peer, cancels what is outstanding and
    /// reports `FI_SHUTDOWN` on the endpoint's own EQ too (the application
    /// that shuts down first waits for that event as its peer does). An
    /// endpoint whose connection is already down (the peer's shutdown was
    /// reported, or ours) has nothing more to report: 0, as upstream.
    pub(super) fn cm_shutdown(&self) -> Result<()> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let slot = match st.msg {
            MsgState::Connected(slot) => slot,
            MsgState::Down => return Ok(()),
            MsgState::Idle | MsgState::Connecting(_) => return Err(Error::NotConn),
        };
        // What the peer is owed (sends already accepted, answers) goes
        // before the `Shutdown`; only what cannot be written in time is
        // canceled below.
        self.drain_for_close(st);
        if st.msg != MsgState::Connected(slot) {
            // The connection broke meanwhile: that was reported.
            return Ok(());
        }
        let canceled = Failure::code(FI_ECANCELED);
        let item = Self::control_item(Op::Shutdown, Vec::new(), 0);
        if let Some(c) = st.conns[slot].as_mut() {
            let mut item = item;
            let _ = c.write_item(&mut item);
        }
        if let Some(mut c) = Self::take_conn(st, slot) {
            self.epoll.remove(c.stream.as_raw_fd());
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
            for item in c.txq.take_all() {
                if let Some(d) = item.done {
                    st.core.sinks.tx_err(&d.tx, canceled);
                }
            }
        }
        st.msg = MsgState::Down;
        st.core.cm_event(FI_SHUTDOWN as u32, Vec::new());
        for (_, (item, _)) in std::mem::take(&mut st.rndv_tx) {
            if let Some(d) = item.done {
                st.core.sinks.tx_err(&d.tx, canceled);
            }
        }
        for (_, m) in std::mem::take(&mut st.rndv_rx) {
            st.core.sinks.rx_err(&m.recv, canceled, 0, 0);
        }
        st.rxq
            .drop_deferred(|t| matches!(t, Token::Tcp(a) if a.slot == slot));
        st.rxq.fail_all(canceled, &st.core.sinks);
        Ok(())
    }
}
