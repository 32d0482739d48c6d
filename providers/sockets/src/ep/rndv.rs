//! Rendezvous for large messages: `Rts` announces, the receiver answers
//! `Cts` once a receive matches (the announcement waits in the engine's
//! receive queue as a deferred message whose token is [`Announced`]), and
//! `Data` streams the payload straight into that receive.

use super::*;

/// Where an announced (rendezvous) message comes from: the connection and
/// the sender's message id, to answer with `Cts`. The receive queue keeps
/// it as the token of a deferred message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Announced {
    pub slot: usize,
    pub msg_id: u64,
}

/// A receive matched to an announced message.
pub(super) type RndvMatch = DeferredMatch<Token>;

impl SockEp {
    /// A receive matched an announced message: answer `Cts` (with
    /// `FI_DISCARD`, telling the sender to drop it) and wait for its data.
    pub(super) fn clear_to_send(&self, st: &mut EpState, m: RndvMatch) {
        let a = match m.from.token {
            Token::Tcp(a) => a,
            Token::Shm(_) => return self.local_matched(st, m),
        };
        let mut h = Header::control(Op::Cts, a.msg_id);
        if m.discard {
            h.flags = FLAG_DISCARD;
        }
        let item = TxItem {
            hdr: h.encode(),
            data: TxData::Owned(Vec::new()),
            total: HEADER_LEN,
            off: 0,
            done: None,
        };
        if !m.discard {
            st.rndv_rx.insert((a.slot, a.msg_id), m);
        }
        if self.submit(st, a.slot, item).is_err() {
            if let Some(m) = st.rndv_rx.remove(&(a.slot, a.msg_id)) {
                st.core
                    .sinks
                    .rx_err(&m.recv, Failure::code(FI_ECONNRESET), 0, 0);
            }
        }
    }

    /// `Rts`: a large message is announced. A matching receive answers
    /// `Cts` at once; otherwise the announcement waits in the receive queue
    /// as a deferred message (or, when unexpected memory is full, the
    /// connection pauses).
    pub(super) fn on_rts(&self, st: &mut EpState, slot: usize, hdr: Header) -> Option<RxState> {
        let src = self.src_of(st, slot);
        let from = Deferred {
            token: Token::Tcp(Announced {
                slot,
                msg_id: hdr.msg_id,
            }),
            len: hdr.len as usize,
        };
        match self.place(st, src, hdr.tag(), from.len, true) {
            Placement::Posted { recv, region, keep } => {
                let m = RndvMatch {
                    from,
                    src,
                    recv,
                    region,
                    keep,
                    discard: false,
                };
                self.clear_to_send(st, m);
            }
            Placement::Unexpected => {
                if !st.rxq.unexpected_room(0) {
                    // Wait in TCP flow control, as eager messages do.
                    return Some(RxState::Paused { hdr });
                }
                let number = Self::number_unnamed(st, slot, src);
                st.rxq.push_unexpected(Unexpected {
                    msg: MsgInfo {
                        src,
                        tag: hdr.tag(),
                        data: hdr.cq_data(),
                    },
                    payload: Vec::new(),
                    claimed: None,
                    deferred: Some(from),
                    from: number,
                })
            }
        }
        None
    }

    /// `Cts`: the receiver has a buffer; send the held `Data` frame (or,
    /// when it discarded the message, complete the send now).
    ///
    /// Only the peer the message was announced to may clear it: the
    /// connection must be the MSG endpoint's own, or one whose peer
    /// identity is that peer's (a connection we opened to it, or an
    /// incoming one whose handshake was verified, see `rdm.rs`).
    pub(super) fn on_cts(&self, st: &mut EpState, slot: usize, hdr: Header) {
        let from_receiver = st.rndv_tx.get(&hdr.msg_id).is_some_and(|(_, to)| match to {
            Some(sa) => st.conns[slot].as_ref().and_then(|c| c.peer) == Some(*sa),
            None => st.msg == MsgState::Connected(slot),
        });
        let item = from_receiver
            .then(|| st.rndv_tx.remove(&hdr.msg_id))
            .flatten();
        let Some((item, _)) = item else {
            self.close_conn(
                st,
                slot,
                Failure::code(FI_EIO),
                "clear-to-send for no announced message",
            );
            return;
        };
        st.tx_queued = st.tx_queued.saturating_sub(1);
        if hdr.flags & FLAG_DISCARD != 0 {
            // The receiver discarded it: delivered, as far as the
            // sender can tell.
            if let Some(d) = item.done {
                st.core.sinks.tx_done(&d.tx);
            }
        } else {
            let _ = self.submit(st, slot, item);
        }
    }

    /// `Data`: the payload of a cleared message goes into its receive.
    pub(super) fn on_data(&self, st: &mut EpState, slot: usize, hdr: Header) -> Option<RxState> {
        match st.rndv_rx.remove(&(slot, hdr.msg_id)) {
            Some(m) if m.from.len as u64 == hdr.len => Some(RxState::Payload {
                hdr,
                dest: Dest::Posted {
                    recv: m.recv,
                    region: m.region,
                    keep: m.keep,
                },
                got: 0,
            }),
            _ => {
                self.close_conn(
                    st,
                    slot,
                    Failure::code(FI_EIO),
                    "data for no cleared message",
                );
                None
            }
        }
    }
}
