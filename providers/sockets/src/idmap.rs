//! Maps keyed by ids the endpoint hands out itself (message, operation and
//! piece ids, counted up from 1).
//!
//! std's default hasher (SipHash) resists keys chosen to collide; these
//! keys are ours, and a peer can only look one up (an answer naming an id),
//! never insert one, so a multiplicative hash serves and costs a fraction
//! of SipHash on every send, answer and completion of the data path.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing: the odd constant nearest 2^64 / phi spreads
/// consecutive ids over the high bits the table's control bytes use.
const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// The hasher behind [`IdMap`].
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(K);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map from one of our own ids.
pub type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_ids_spread_over_high_and_low_bits() {
        let hash = |n: u64| {
            let mut h = IdHasher::default();
            h.write_u64(n);
            h.finish()
        };
        let top: std::collections::HashSet<u64> = (1..=128).map(|n| hash(n) >> 57).collect();
        let low: std::collections::HashSet<u64> = (1..=128).map(|n| hash(n) & 127).collect();
        assert!(
            top.len() > 64 && low.len() > 64,
            "{} {}",
            top.len(),
            low.len()
        );
    }
}
