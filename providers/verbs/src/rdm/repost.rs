//! Receive slots posted again after the application has seen what came
//! in them, not before.
//!
//! - **Why.** A piece is handled in a progress pass that the application
//!   waits on (its `fi_cq_read`): the receive's completion reaches the
//!   application only when that pass returns. Posting the slot again in
//!   the same pass (the provider's post plus rxe's, about 250
//!   instructions in the guest's count) put that work between the
//!   message's arrival and the application's answer, on both sides of a
//!   ping-pong.
//! - **When.** A slot whose pieces were all taken is owed to its
//!   connection and posted at the start of the next progress pass, which
//!   for a waiting application is the poll after it has answered. So that
//!   a stream cannot run a connection short of receives, a connection
//!   with a quarter of its slots out of the device (owed or parked,
//!   `rdm/flow.rs`) gets its owed slots back at once.
//! - **Faults.** A slot that cannot be posted fails its connection, as
//!   before; a connection that goes takes its owed slots with it (its
//!   queue pair and receive buffer are gone).

use super::{rx_wr, sizes, verbs_err, RdmEp, State, SLOT};
use oxifabric::abi::FI_EIO;
use oxifabric::service::ep_core::Failure;

impl RdmEp {
    /// Receive slot `slot` of connection `cn` is free again: owed until
    /// the next progress pass, or posted now when the connection is
    /// running short.
    pub(super) fn give_back(&self, st: &mut State, cn: u32, slot: usize) {
        let Some(c) = st.conns.get_mut(&cn) else {
            return;
        };
        if c.owed.is_empty() {
            st.owing.push(cn);
        }
        c.owed.push(slot);
        if c.owed.len() + c.parked.len() >= sizes::rx_slots() / 4 {
            self.repost(st, cn);
        }
    }

    /// Posts every connection's owed slots (the start of a progress pass).
    pub(super) fn repost_owed(&self, st: &mut State) {
        while let Some(cn) = st.owing.pop() {
            self.repost(st, cn);
        }
    }

    /// Posts connection `cn`'s owed slots; a failed post fails it.
    fn repost(&self, st: &mut State, cn: u32) {
        let Some(c) = st.conns.get_mut(&cn) else {
            return;
        };
        let mut owed = std::mem::take(&mut c.owed);
        let Some(rx) = c.rx.as_ref() else {
            return;
        };
        let lkey = rx.lkey();
        let failed = owed.iter().any(|&slot| {
            c.id.post_recv(rx_wr(cn, slot), &[rx.buf(slot * SLOT, SLOT)], &[lkey])
                .map_err(|e| verbs_err("ibv_post_recv", e))
                .is_err()
        });
        if failed {
            return self.conn_failed(
                st,
                cn,
                Failure::cause(FI_EIO, "could not repost a receive buffer"),
            );
        }
        owed.clear();
        c.owed = owed;
    }
}
