//! Which connection each peer's sends go on, with the last answer kept.
//!
//! Every send looks its peer up here. Hashing a socket address (its
//! variant, the length and bytes of its IP address, its port) and probing
//! the map cost about a hundred instructions of an 8-byte send in the
//! soft-RoCE guest's count; a ping-pong, and a burst to one peer, ask for
//! the same peer again and again. The last peer found and its connection
//! are kept, and forgotten whenever the map changes, so a kept answer is
//! always the map's.

use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;

type Map = HashMap<SocketAddr, u32, oxifabric::service::keyhash::KeyedU64>;

#[derive(Default)]
pub(super) struct TxConns {
    map: Map,
    /// The last lookup that found a connection.
    last: Cell<Option<(SocketAddr, u32)>>,
}

impl TxConns {
    /// The connection `peer`'s sends go on.
    #[inline]
    pub(super) fn get(&self, peer: &SocketAddr) -> Option<u32> {
        if let Some((p, cn)) = self.last.get() {
            if p == *peer {
                return Some(cn);
            }
        }
        let cn = *self.map.get(peer)?;
        self.last.set(Some((*peer, cn)));
        Some(cn)
    }

    /// `peer`'s sends go on `cn` from now on.
    pub(super) fn insert(&mut self, peer: SocketAddr, cn: u32) {
        self.last.set(None);
        self.map.insert(peer, cn);
    }

    /// `peer`'s sends go on `cn` unless they already go on another.
    pub(super) fn insert_if_none(&mut self, peer: SocketAddr, cn: u32) {
        self.last.set(None);
        self.map.entry(peer).or_insert(cn);
    }

    /// `peer`'s sends no longer go on `cn` (nothing changes when they go
    /// on another).
    pub(super) fn remove_if(&mut self, peer: &SocketAddr, cn: u32) {
        if self.map.get(peer) == Some(&cn) {
            self.last.set(None);
            self.map.remove(peer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_answer_follows_every_change() {
        let a: SocketAddr = "10.0.0.1:7000".parse().unwrap();
        let b: SocketAddr = "10.0.0.2:7000".parse().unwrap();
        let mut t = TxConns::default();
        assert_eq!(t.get(&a), None);
        t.insert(a, 1);
        assert_eq!(t.get(&a), Some(1));
        assert_eq!(t.get(&a), Some(1), "kept");
        t.insert(a, 2);
        assert_eq!(t.get(&a), Some(2), "replaced");
        t.insert_if_none(a, 3);
        assert_eq!(t.get(&a), Some(2), "already set");
        t.insert_if_none(b, 4);
        assert_eq!(t.get(&b), Some(4));
        t.remove_if(&a, 9);
        assert_eq!(t.get(&a), Some(2), "another connection's removal");
        t.remove_if(&a, 2);
        assert_eq!(t.get(&a), None, "removed after it was kept");
        assert_eq!(t.get(&b), Some(4));
    }
}
