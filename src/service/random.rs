//! Random numbers from the kernel, for what a process that does not see
//! the traffic must not guess: message ids, handshake nonces, the nonce
//! by which a restarted endpoint is told from its former self.

/// 64 random bits from the kernel (`getrandom`), never 0 (0 means "not
/// said" where these travel).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: b is a live writable buffer of b.len() bytes.
    let n = unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, b.len(), 0) };
    let v = u64::from_ne_bytes(b);
    if n == b.len() as isize && v != 0 {
        return v;
    }
    // getrandom cannot fail for 8 bytes once the pool is initialised; a
    // fallback that still differs per process and per call.
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(v);
    h.finish() | 1
}

#[cfg(test)]
mod tests {
    #[test]
    fn draws_differ_and_are_never_zero() {
        let a = super::random_u64();
        let b = super::random_u64();
        assert!(a != 0 && b != 0 && a != b);
    }
}
