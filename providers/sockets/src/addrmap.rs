//! Maps keyed by peer socket addresses (an RDM endpoint's peers).
//!
//! Every send to an RDM peer looks its address up, and std's SipHash cost about 225
//! instructions per lookup, a tenth of our user-space instructions per
//! 8-byte ping-pong message. Remote processes can choose some keys (a
//! handshake claims an address), so the hash stays keyed: each map draws
//! a random key, and each word the address hashes as is mixed in with a
//! bijective finalizer. Two addresses differing in one word (an IPv4
//! address, a port) never hash alike, and which ones share a bucket
//! depends on a key the peer never sees.

use std::collections::HashMap;
use std::net::SocketAddr;

// The random key of one `AddrMap`: the engine's keyed hash, which
// registration keys use too.
pub use oxifabric::service::keyhash::KeyedU64 as AddrKey;

/// A map from a peer's socket address.
pub type AddrMap<V> = HashMap<SocketAddr, V, AddrKey>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    fn hash(k: &AddrKey, sa: &str) -> u64 {
        k.hash_one(sa.parse::<SocketAddr>().unwrap())
    }

    #[test]
    fn ports_and_hosts_spread_over_the_bits_a_table_uses() {
        let k = AddrKey::default();
        let ports: Vec<u64> = (0..256)
            .map(|p| hash(&k, &format!("127.0.0.1:{}", 40000 + p)))
            .collect();
        let hosts: Vec<u64> = (0..256)
            .map(|h| hash(&k, &format!("10.0.0.{h}:5000")))
            .collect();
        for v in [&ports, &hosts] {
            let top: HashSet<u64> = v.iter().map(|h| h >> 57).collect();
            let low: HashSet<u64> = v.iter().map(|h| h & 255).collect();
            assert!(
                top.len() > 96 && low.len() > 128,
                "{} {}",
                top.len(),
                low.len()
            );
            assert_eq!(v.iter().collect::<HashSet<_>>().len(), v.len());
        }
    }

    #[test]
    fn each_map_has_its_own_key() {
        let (a, b) = (AddrKey::default(), AddrKey::default());
        assert_ne!(hash(&a, "127.0.0.1:1"), hash(&b, "127.0.0.1:1"));
        assert_eq!(hash(&a, "[::1]:7"), hash(&a, "[::1]:7"));
    }

    #[test]
    fn a_map_finds_what_it_holds() {
        let mut m: AddrMap<u32> = AddrMap::default();
        for p in 1..=1000u16 {
            m.insert(SocketAddr::from(([127, 0, 0, 1], p)), p.into());
        }
        m.insert("[fe80::1%2]:9".parse().unwrap(), 9999);
        for p in 1..=1000u16 {
            assert_eq!(
                m.get(&SocketAddr::from(([127, 0, 0, 1], p))),
                Some(&p.into())
            );
        }
        assert_eq!(m.get(&"[fe80::1%2]:9".parse().unwrap()), Some(&9999));
        assert_eq!(m.get(&"[fe80::1%3]:9".parse().unwrap()), None);
    }
}
