//! Maps keyed by peer socket addresses (an RDM endpoint's peers).
//!
//! Every send to an RDM peer looks its address up (twice: whether it is
//! connected, then its queue), and std's SipHash cost about 225
//! instructions per lookup, a tenth of our user-space instructions per
//! 8-byte ping-pong message. Remote processes can choose some keys (a
//! handshake claims an address), so the hash stays keyed: each map draws
//! a random key, and each word the address hashes as is mixed in with a
//! bijective finalizer. Two addresses differing in one word (an IPv4
//! address, a port) never hash alike, and which ones share a bucket
//! depends on a key the peer never sees.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;

/// A map from a peer's socket address.
pub type AddrMap<V> = HashMap<SocketAddr, V, AddrKey>;

/// The random key of one [`AddrMap`].
#[derive(Clone, Copy)]
pub struct AddrKey(u64);

impl Default for AddrKey {
    fn default() -> AddrKey {
        AddrKey(crate::sock::random_u64())
    }
}

impl BuildHasher for AddrKey {
    type Hasher = AddrHasher;

    fn build_hasher(&self) -> AddrHasher {
        AddrHasher(self.0)
    }
}

/// Mixes each word written into the state with a bijective 64-bit
/// finalizer (MurmurHash3's).
pub struct AddrHasher(u64);

fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(n.into());
    }

    fn write_u16(&mut self, n: u16) {
        self.write_u64(n.into());
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(n.into());
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = fmix(self.0 ^ n);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

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
