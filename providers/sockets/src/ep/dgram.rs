//! DGRAM endpoints: one UDP socket, one datagram per message.

use super::*;

impl SockEp {
    pub(super) fn read_udp(&self, st: &mut EpState) {
        // The endpoint's datagram buffer, lent out while reading.
        let mut buf = std::mem::take(&mut st.udp_buf);
        if buf.is_empty() {
            buf = vec![0u8; 65536];
        }
        while let Some(u) = &st.udp {
            let (n, from) = match u.recv_from(&mut buf) {
                Ok(x) => x,
                Err(_) => break,
            };
            let Ok(hdr) = Header::decode(&buf[..n], attrs::DGRAM_MAX_MSG as u64) else {
                prov_log!(
                    PROV,
                    FI_LOG_WARN,
                    FI_LOG_EP_DATA,
                    "dropped a malformed datagram from {from}"
                );
                continue;
            };
            if hdr.op != Op::Msg || hdr.len as usize != n - HEADER_LEN {
                prov_log!(
                    PROV,
                    FI_LOG_WARN,
                    FI_LOG_EP_DATA,
                    "dropped an inconsistent datagram from {from}"
                );
                continue;
            }
            let payload = &buf[HEADER_LEN..n];
            let src = st
                .core
                .av
                .as_ref()
                .map_or(FI_ADDR_NOTAVAIL, |av| av.reverse(&from));
            let msg = MsgInfo {
                src,
                tag: hdr.tag(),
                data: hdr.cq_data(),
            };
            match self.place(st, src, hdr.tag(), payload.len(), false) {
                Placement::Posted { recv, region, keep } => {
                    let k = region.scatter(0, payload);
                    complete_into(
                        &recv,
                        &region,
                        k,
                        payload.len() - k,
                        msg,
                        &st.core.sinks,
                        !keep,
                    );
                }
                Placement::Unexpected => {
                    if st.rxq.unexpected.len() < DGRAM_UNEXPECTED {
                        st.rxq.push_unexpected(Unexpected {
                            msg,
                            payload: payload.to_vec(),
                            claimed: None,
                            deferred: None,
                            from: 0,
                        });
                    }
                }
            }
        }
        st.udp_buf = buf;
    }

    /// Sends one datagram: header and payload in one `sendmsg`.
    pub(super) fn send_dgram(
        &self,
        st: &mut EpState,
        op: &SendOp<'_>,
        tx: &TxCtx,
        hdr: &Header,
    ) -> Result<()> {
        let av = st.core.av.as_ref().ok_or(Error::NoAv)?;
        let dest = super::sep::ctx_sockaddr(av, op.dest).ok_or(Error::Inval)?;
        let h = hdr.encode();
        let mut pieces: [&[u8]; 1 + IoVec::CAP] = [&[]; 1 + IoVec::CAP];
        pieces[0] = &h;
        let n = op.iov.len().min(IoVec::CAP);
        for (p, b) in pieces[1..].iter_mut().zip(&op.iov[..n]) {
            *p = b.as_slice();
        }
        let u = st.udp.as_ref().ok_or(Error::OpBadState)?;
        match sock::writev_to(u.as_raw_fd(), &pieces[..1 + n], Some(&dest)) {
            Ok(_) => st.core.sinks.tx_done(tx),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Err(Error::Again),
            Err(e) => {
                prov_log!(
                    PROV,
                    FI_LOG_WARN,
                    FI_LOG_EP_DATA,
                    "datagram to {dest} failed: {e}"
                );
                let f = Failure {
                    peer: Some(dest),
                    ..Failure::os(FI_EIO, &e)
                };
                st.core.sinks.tx_err(tx, f);
            }
        }
        Ok(())
    }
}
