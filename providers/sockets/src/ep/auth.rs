//! Authorization keys: when the application gives its endpoint a key
//! (`fi_ep_attr.auth_key`, else `fi_domain_attr.auth_key`), a connection
//! carries nothing until both sides have proven they hold it.
//!
//! Each side writes `AuthChallenge` (32 random bytes) as soon as the
//! connection is up and answers the peer's challenge with `AuthProof`:
//! HMAC-SHA256 under the key of a label, the prover's role (connecting or
//! accepting side), both TCP addresses of the connection, the challenge
//! answered and the prover's own challenge. The addresses and the role
//! bind a proof to one connection and one direction, so a proof obtained
//! on one connection (or reflected back at its author) is worthless on
//! another. The connection stays `Authenticating` (queued frames wait)
//! until the peer's proof checks; any other frame before that, or a
//! wrong proof, closes it with a warning and the sends waiting for it
//! fail with `FI_EACCES`, at once (a refusal is not worth retrying). The
//! peer on the other end sees its connection closed and fails its sends
//! like any connection lost before its handshake (`FI_ECONNRESET`, after
//! the `conn_timeout` retries). An endpoint without a key closes
//! connections that open with a challenge: keyed and unkeyed endpoints
//! never exchange traffic.

use super::*;
use oxifabric::service::hmac::{hmac_sha256, same_bytes, DIGEST_LEN};

/// Bytes of a challenge and of a proof.
pub(crate) const AUTH_LEN: usize = DIGEST_LEN;
const LABEL: &[u8] = b"oxifabric sockets auth v1";

/// Why a connection failed its key proof (all end it).
const NO_PROOF: &str = "peer did not prove the authorization key";

/// A fresh random challenge.
pub(crate) fn challenge() -> [u8; AUTH_LEN] {
    let mut c = [0u8; AUTH_LEN];
    for w in c.chunks_exact_mut(8) {
        w.copy_from_slice(&oxifabric::service::random::random_u64().to_ne_bytes());
    }
    c
}

/// The proof the side that `connector` names (true: the connecting side)
/// gives on `stream` (which we opened when `outgoing`) for the challenge
/// `answered`, `own` being the prover's own challenge. None when the
/// connection is gone.
pub(crate) fn proof(
    key: &[u8],
    stream: &std::net::TcpStream,
    outgoing: bool,
    connector: bool,
    answered: &[u8],
    own: &[u8],
) -> Option<[u8; AUTH_LEN]> {
    let (local, remote) = (stream.local_addr().ok()?, stream.peer_addr().ok()?);
    let (conn_side, acc_side) = if outgoing {
        (local, remote)
    } else {
        (remote, local)
    };
    let addrs = format!("{conn_side}|{acc_side}");
    Some(hmac_sha256(
        key,
        &[LABEL, &[connector as u8], addrs.as_bytes(), answered, own],
    ))
}

/// Whether `got` is the proof the peer on `stream` owes for our challenge
/// `mine`, given the challenge it sent (`theirs`), in constant time.
pub(crate) fn proof_ok(
    key: &[u8],
    stream: &std::net::TcpStream,
    outgoing: bool,
    mine: &[u8],
    theirs: &[u8],
    got: &[u8],
) -> bool {
    proof(key, stream, outgoing, !outgoing, mine, theirs).is_some_and(|want| same_bytes(&want, got))
}

impl SockEp {
    /// The connection on `slot` is up: with a key, it starts proving it
    /// (nothing else is written until the peer's proof checks).
    pub(super) fn start_auth(&self, st: &mut EpState, slot: usize) {
        if self.auth_key.is_none() {
            return;
        }
        let challenge = challenge();
        let Some(c) = st.conns[slot].as_mut() else {
            return;
        };
        c.state = ConnState::Authenticating;
        c.challenge = Some(challenge);
        self.write_auth(st, slot, Op::AuthChallenge, challenge.to_vec());
    }

    /// Writes a key-proof frame at once: it is the first thing written on
    /// the connection (or follows the challenge), and a fresh socket's
    /// send buffer always takes a few dozen bytes.
    fn write_auth(&self, st: &mut EpState, slot: usize, op: Op, payload: Vec<u8>) {
        let Some(c) = st.conns[slot].as_mut() else {
            return;
        };
        let mut item = Self::control_item(op, payload, 0);
        if c.write_item(&mut item).is_err() || !item.finished() {
            self.auth_failed(st, slot, "cannot write the key proof");
        }
    }

    fn auth_failed(&self, st: &mut EpState, slot: usize, why: &'static str) {
        let peer = st.conns[slot]
            .as_ref()
            .and_then(|c| c.stream.peer_addr().ok())
            .map_or_else(|| "a closed connection".to_string(), |a| a.to_string());
        prov_log!(
            PROV,
            FI_LOG_WARN,
            FI_LOG_EP_CTRL,
            "connection with {peer} refused: {why}"
        );
        // RDM: sends fail at once (a refusal is not worth retrying); MSG:
        // the connect fails as a refused one, as a rejection would.
        let code = if self.ep_type == FI_EP_RDM {
            FI_EACCES
        } else {
            FI_ECONNREFUSED
        };
        let f = Failure {
            cause: why,
            ..Failure::code(code)
        };
        self.close_conn(st, slot, f, why);
    }

    /// Whether a frame's header may be read on `slot` now: while the
    /// connection proves the key only key-proof frames may, and an
    /// endpoint without a key takes none. Closes the connection (and
    /// returns false) otherwise.
    pub(super) fn auth_admits(&self, st: &mut EpState, slot: usize, hdr: &Header) -> bool {
        let authenticating = st.conns[slot]
            .as_ref()
            .is_some_and(|c| c.state == ConnState::Authenticating);
        let auth_frame = matches!(hdr.op, Op::AuthChallenge | Op::AuthProof);
        if auth_frame && self.auth_key.is_none() {
            self.auth_failed(st, slot, "peer requires an authorization key, we have none");
            return false;
        }
        if authenticating != auth_frame {
            self.auth_failed(st, slot, NO_PROOF);
            return false;
        }
        if auth_frame && hdr.len != AUTH_LEN as u64 {
            self.auth_failed(st, slot, "malformed key proof");
            return false;
        }
        true
    }

    /// A whole `AuthChallenge` or `AuthProof` frame.
    pub(super) fn on_auth(&self, st: &mut EpState, slot: usize, op: Op, b: &[u8]) {
        let (Some(key), Some(c)) = (self.auth_key.as_deref(), st.conns[slot].as_ref()) else {
            return;
        };
        let Some(mine) = c.challenge else {
            return;
        };
        match op {
            Op::AuthChallenge => {
                let Ok(theirs) = <[u8; AUTH_LEN]>::try_from(b) else {
                    return;
                };
                let proof = proof(key, &c.stream, c.outgoing, c.outgoing, &theirs, &mine);
                if let Some(c) = st.conns[slot].as_mut() {
                    c.peer_challenge = Some(theirs);
                }
                match proof {
                    Some(p) => self.write_auth(st, slot, Op::AuthProof, p.to_vec()),
                    None => self.auth_failed(st, slot, "connection lost during the key proof"),
                }
            }
            _ => {
                // The proof answers our challenge, under the peer's role,
                // and binds the challenge the peer sent before it.
                let ok = c
                    .peer_challenge
                    .is_some_and(|pc| proof_ok(key, &c.stream, c.outgoing, &mine, &pc, b));
                if !ok {
                    self.auth_failed(st, slot, NO_PROOF);
                    return;
                }
                if let Some(c) = st.conns[slot].as_mut() {
                    c.state = ConnState::Open;
                    c.challenge = None;
                    c.peer_challenge = None;
                }
                self.flush(st, slot);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (a, _) = l.accept().unwrap();
        (c, a)
    }

    /// Both ends of one connection agree on each side's proof; a proof is
    /// bound to the key, the role and the connection.
    #[test]
    fn proofs_bind_key_role_and_connection() {
        let (c, a) = pair();
        let (cc, ac) = (challenge(), challenge());
        assert_ne!(cc, ac);
        let key = b"k";
        // The connector answers the acceptor's challenge; the acceptor
        // checks it with its own challenge and the connector's.
        let p = proof(key, &c, true, true, &ac, &cc).unwrap();
        assert!(proof_ok(key, &a, false, &ac, &cc, &p));
        let q = proof(key, &a, false, false, &cc, &ac).unwrap();
        assert!(proof_ok(key, &c, true, &cc, &ac, &q));
        // Another key, a reflected proof, another connection: refused.
        assert!(!proof_ok(b"other", &a, false, &ac, &cc, &p));
        assert!(!proof_ok(key, &c, true, &cc, &ac, &p));
        let (c2, a2) = pair();
        assert!(!proof_ok(key, &a2, false, &ac, &cc, &p));
        drop((c2, a2));
    }
}
