//! How many receive buffers each connection of an RDM endpoint posts, and
//! so how many connections an endpoint can keep.
//!
//! - **Why a knob.** Each connection posts its receive buffers up front
//!   (`RdmEp::setup_qp`): 64 of 16 KiB by default, 1 MiB per connection,
//!   so a rank with a few hundred peers holds a few hundred MiB. Upstream's
//!   rxm has the same cost (128 buffers by default) and the variable users
//!   know for it, `FI_OFI_RXM_MSG_RX_SIZE`, read here with the same
//!   meaning: fewer buffers cost less memory, and a fast sender meets the
//!   receiver's RNR retries sooner (`rdm/flow.rs`).
//! - **The bound.** Every connection's receives and the endpoint's
//!   transmit slots share one completion queue of `CQ_SIZE` entries, so
//!   the number of connections an endpoint keeps follows from the count.
//! - **Read once**, when the first endpoint needs it, like the other rxm
//!   variables.

use super::{rxm_param, CQ_SIZE, TX_SLOTS};
use crate::info::NAME;
use oxifabric::abi::*;
use std::sync::OnceLock;

/// Receive buffers per connection when `FI_OFI_RXM_MSG_RX_SIZE` is unset.
const DEFAULT_RX_SLOTS: usize = 64;
/// The range a setting is brought into: enough buffers to keep a
/// connection streaming, and no more than leave room in the completion
/// queue for a few connections.
const MIN_RX_SLOTS: usize = 16;
const MAX_RX_SLOTS: usize = 1024;

/// The receive buffers a connection posts for a setting of `asked`.
fn slots_for(asked: Option<usize>) -> usize {
    match asked {
        None => DEFAULT_RX_SLOTS,
        Some(n) => n.clamp(MIN_RX_SLOTS, MAX_RX_SLOTS),
    }
}

/// Receive buffers each connection posts (`FI_OFI_RXM_MSG_RX_SIZE`).
pub(super) fn rx_slots() -> usize {
    static SLOTS: OnceLock<usize> = OnceLock::new();
    *SLOTS.get_or_init(|| {
        let asked = rxm_param("msg_rx_size");
        let n = slots_for(asked);
        if asked.is_some_and(|a| a != n) {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "FI_OFI_RXM_MSG_RX_SIZE={} is outside {MIN_RX_SLOTS}..={MAX_RX_SLOTS}: {n} receive buffers per connection",
                asked.unwrap_or_default()
            );
        }
        oxifabric::prov_log!(
            NAME,
            FI_LOG_INFO,
            FI_LOG_EP_CTRL,
            "RDM endpoints post {n} receive buffers per connection and keep at most {} connections",
            conns_for(n)
        );
        n
    })
}

/// Connections an endpoint keeps at most with `slots` receive buffers
/// each: their receives and the transmit slots fit the completion queue.
fn conns_for(slots: usize) -> usize {
    ((CQ_SIZE - TX_SLOTS) / slots).max(1)
}

/// Connections an endpoint keeps at most.
pub(super) fn max_conns() -> usize {
    conns_for(rx_slots())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_brought_into_range_and_bound_the_connections() {
        assert_eq!(slots_for(None), 64);
        assert_eq!(slots_for(Some(128)), 128);
        assert_eq!(slots_for(Some(1)), MIN_RX_SLOTS);
        assert_eq!(slots_for(Some(1 << 20)), MAX_RX_SLOTS);
        assert_eq!(conns_for(64), 255);
        assert_eq!(conns_for(16), 1020);
        assert_eq!(conns_for(MAX_RX_SLOTS), 15);
        // Every connection's receives and the transmit slots fit.
        for s in [MIN_RX_SLOTS, 64, 128, MAX_RX_SLOTS] {
            assert!(conns_for(s) * s + TX_SLOTS <= CQ_SIZE);
        }
    }
}
