//! Senders the AV did not name when their messages arrived.
//!
//! A message from a peer the application has not inserted yet is queued
//! with source `FI_ADDR_NOTAVAIL`. If the application inserts that peer
//! afterwards and posts a receive directed at the new address, the
//! receive must find the message (upstream's utility layer looks its
//! unexpected messages up again on an insert; fabtests' `fi_unexpected_msg`
//! does exactly this). Transports number such senders here by whatever
//! identifies the peer on the wire (a socket address, a shared-memory
//! name), queue their messages with that number
//! ([`Unexpected::from`](super::Unexpected)), and before each receive
//! post ask [`Unnamed::to_name`] whether the AV changed since; if it did,
//! they look the peers up and hand the names to [`Unnamed::apply`].
//! Transports whose peers are socket addresses the AV knows do both with
//! [`Unnamed::refresh`].
//!
//! Numbers start at 1 (0 means "named") and are never reused: a peer
//! keeps its number for the endpoint's life, so a message still finds
//! its name after the connection it came on was closed.

use super::RxQueues;
use crate::abi::{fi_addr_t, FI_ADDR_NOTAVAIL};
use crate::service::av::AddressVector;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::SocketAddr;

/// The numbered senders of one receive queue, and the AV generation they
/// were last looked up in.
#[derive(Debug)]
pub struct Unnamed<A> {
    peers: Vec<A>,
    ids: HashMap<A, u32>,
    gen: u64,
}

impl<A> Default for Unnamed<A> {
    fn default() -> Self {
        Unnamed {
            peers: Vec::new(),
            ids: HashMap::new(),
            gen: 0,
        }
    }
}

impl<A: Copy + Eq + Hash> Unnamed<A> {
    /// The number a message from `peer` whose source is `src` carries: 0
    /// when the AV named it, else the peer's number (given on its first
    /// unnamed message).
    pub fn number(&mut self, peer: A, src: fi_addr_t) -> u32 {
        if src != FI_ADDR_NOTAVAIL {
            return 0;
        }
        if let Some(n) = self.ids.get(&peer) {
            return *n;
        }
        let Ok(n) = u32::try_from(self.peers.len() + 1) else {
            return 0;
        };
        self.peers.push(peer);
        self.ids.insert(peer, n);
        n
    }

    /// Before a receive is posted: the peers to look up again, in number
    /// order, when some were numbered and the AV's generation (`av_gen`,
    /// read only then) differs from the one they were last looked up in;
    /// `None` (nothing to do, the common case: one comparison, no
    /// allocation) otherwise.
    pub fn to_name(&mut self, av_gen: impl FnOnce() -> u64) -> Option<Vec<A>> {
        if self.peers.is_empty() {
            return None;
        }
        let g = av_gen();
        if g == self.gen {
            return None;
        }
        self.gen = g;
        Some(self.peers.clone())
    }

    /// Gives the unexpected messages of the peers [`Unnamed::to_name`]
    /// returned the addresses found for them (`names[i]` for peer `i`,
    /// `FI_ADDR_NOTAVAIL` where the AV still has none).
    pub fn apply<T: Copy>(&self, rxq: &mut RxQueues<T>, names: &[fi_addr_t]) {
        rxq.name_sources(|n| {
            names
                .get((n as usize).wrapping_sub(1))
                .copied()
                .unwrap_or(FI_ADDR_NOTAVAIL)
        });
    }
}

impl Unnamed<SocketAddr> {
    /// [`Unnamed::to_name`] and [`Unnamed::apply`] at once for peers
    /// numbered by the socket address `av` knows them by (the endpoint's
    /// AV; `None`: nothing to name them with).
    pub fn refresh<T: Copy>(&mut self, rxq: &mut RxQueues<T>, av: Option<&AddressVector>) {
        let Some(av) = av else {
            return;
        };
        if let Some(peers) = self.to_name(|| av.generation()) {
            let names: Vec<fi_addr_t> = peers.iter().map(|p| av.reverse(p)).collect();
            self.apply(rxq, &names);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_unnamed_peers_once_and_asks_again_only_after_the_av_changed() {
        let mut u = Unnamed::<u16>::default();
        assert_eq!(u.number(7, 3), 0, "a named message carries no number");
        assert!(
            u.to_name(|| 1).is_none(),
            "nothing numbered: nothing to name"
        );
        assert_eq!(u.number(7, FI_ADDR_NOTAVAIL), 1);
        assert_eq!(u.number(9, FI_ADDR_NOTAVAIL), 2);
        assert_eq!(u.number(7, FI_ADDR_NOTAVAIL), 1);
        assert_eq!(u.to_name(|| 1), Some(vec![7, 9]));
        assert!(u.to_name(|| 1).is_none(), "same generation: no second look");
        assert_eq!(u.to_name(|| 2), Some(vec![7, 9]));
    }
}
