//! `FI_DELIVERY_COMPLETE` on the RDM endpoint (fi_cq(3): a completion
//! only once the target has processed the operation).
//!
//! - **Messages.** An RC send completes when the peer's device has put
//!   the piece into one of our receive slots, before the peer's endpoint
//!   has looked at it. So a message sent with `FI_DELIVERY_COMPLETE` (the
//!   flag, or the endpoint's default `op_flags`) carries [`Header::ack`]
//!   on each piece; once the receiver has processed the whole message
//!   (placed into the receive it matched, or held whole for one not
//!   posted yet: `Reassembly::arrived`), it answers
//!   [`wire::Op::Delivered`] with the message's number on the connection
//!   the message came in on, and the sender reports the send only then.
//!   The answer goes back on that same connection (the sender's), so it
//!   is keyed by the sender's own connection and message number; when
//!   that connection fails, the sends still waiting on it fail with it.
//! - **RMA and atomics** need nothing more: an RDMA WRITE or READ
//!   completes on RC once the target's device has placed the bytes (or
//!   sent them back), and an atomic completes when the target's answer
//!   arrives, after the engine applied it. A notice that follows an
//!   access (`rdm/rma.rs`: remote CQ data, `FI_RMA_EVENT`) is in the
//!   target's receive slot when the operation completes, but the
//!   target's endpoint may not have reported it yet.

use super::wire::{self, Header};
use super::{Body, Outgoing, RdmEp, State};
use crate::info::NAME;
use oxifabric::abi::*;
use oxifabric::service::ep_core::Failure;

impl RdmEp {
    /// After a message piece was processed: when it asked for an
    /// acknowledgement and its message has now wholly arrived, the answer
    /// is queued on connection `cn` (where it came in).
    pub(super) fn acknowledge(&self, st: &mut State, cn: u32, h: &Header) {
        if !h.ack || !st.partial.arrived(&(cn, h.seq)) {
            return;
        }
        Self::answer(st, (cn, h.seq), None);
    }

    /// `Delivered` for message `key` (connection, number) back to its
    /// sender, on that connection; with `err` for an announced message
    /// that could not be read (`rdm/rndv.rs`).
    pub(super) fn answer(st: &mut State, key: (u32, u32), err: Option<i32>) {
        let (cn, seq) = key;
        let out = Outgoing {
            id: 0,
            seq,
            tag: None,
            data: err.map(|e| e as u64),
            body: Body::Copy(Vec::new()),
            len: 0,
            off: 0,
            rma: None,
            frame: Some(wire::Op::Delivered),
            ack: false,
            fence: false,
        };
        if let Err(e) = Self::queue_on(st, cn, out, None, Vec::new()) {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "the acknowledgement of message {seq} is lost: {e:?}"
            );
        }
    }

    /// A `Delivered` on connection `cn`: the send of that number on it
    /// completes (once its own pieces have too), with the receiver's
    /// error when it carries one (an announced message it could not read,
    /// `rdm/rndv.rs`); an answer to no message waiting is refused.
    pub(super) fn delivered(
        st: &mut State,
        cn: u32,
        h: &Header,
    ) -> std::result::Result<(), &'static str> {
        let id = st
            .acks
            .remove(&(cn, h.seq))
            .ok_or("an acknowledgement of no message waiting for one")?;
        if let Some(s) = st.sends.get_mut(id) {
            s.ack = None;
        }
        match h.data {
            Some(err) => {
                let err = i32::try_from(err).ok().filter(|e| *e > 0).unwrap_or(FI_EIO);
                Self::fail_send(
                    st,
                    id,
                    Failure::cause(err, "the receiver could not read the message"),
                );
            }
            None => Self::settle(st, id),
        }
        Ok(())
    }

    /// The sends waiting for an acknowledgement on connection `cn`.
    pub(super) fn awaiting_acks(st: &State, cn: u32) -> Vec<u64> {
        st.acks
            .iter()
            .filter(|((c, _), _)| *c == cn)
            .map(|(_, id)| *id)
            .collect()
    }
}
