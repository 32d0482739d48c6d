//! A keyed hash for maps whose keys a remote peer names: memory
//! registration keys, which every RMA or atomic request carries, and
//! peer addresses (the sockets provider's `AddrMap`).
//!
//! std's default hasher (SipHash) cost about 150 instructions per lookup,
//! a few percent of an 8-byte RMA round trip. A peer may also pick keys
//! (a requested key is the application's, and any key can be tried), so
//! the hash stays keyed: each map draws a random key, and the lookup key
//! is mixed with it through a bijective finalizer. Distinct keys never
//! hash alike, and which ones share a bucket depends on a secret the peer
//! never sees.

use std::hash::{BuildHasher, Hasher};

/// The random key of one map.
#[derive(Clone, Copy)]
pub struct KeyedU64(u64);

impl Default for KeyedU64 {
    fn default() -> KeyedU64 {
        // std's RandomState is seeded from the OS once per thread and
        // stepped per instance: a fresh secret for every map.
        KeyedU64(std::collections::hash_map::RandomState::new().hash_one(0u64))
    }
}

impl BuildHasher for KeyedU64 {
    type Hasher = KeyedHasher;

    fn build_hasher(&self) -> KeyedHasher {
        KeyedHasher(self.0)
    }
}

/// MurmurHash3's 64-bit finalizer: a bijection that spreads every input
/// bit over the output.
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The hasher behind [`KeyedU64`].
pub struct KeyedHasher(u64);

impl Hasher for KeyedHasher {
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
    use std::collections::{HashMap, HashSet};

    #[test]
    fn sequential_keys_spread_and_maps_differ() {
        let k = KeyedU64::default();
        let h: Vec<u64> = (0..256u64).map(|i| k.hash_one(i)).collect();
        // 256 sequential keys over 509 buckets: a good spread fills ~200.
        let buckets: HashSet<u64> = h.iter().map(|v| v % 509).collect();
        assert!(buckets.len() > 150, "{} buckets", buckets.len());
        assert_ne!(KeyedU64::default().hash_one(1u64), k.hash_one(1u64));
        let mut m: HashMap<u64, u64, KeyedU64> = HashMap::default();
        for i in 0..1000u64 {
            m.insert(i * 4096, i);
        }
        assert!((0..1000u64).all(|i| m.get(&(i * 4096)) == Some(&i)));
        assert_eq!(m.get(&1), None);
    }
}
