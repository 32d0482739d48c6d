//! The sockets provider's wire format.
//!
//! Every message on a TCP connection (and every UDP datagram) starts with a
//! fixed 40-byte header, little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 0 | protocol version ([`VERSION`]) |
//! | 1 | operation ([`Op`]) |
//! | 2..4 | flags ([`FLAG_CQ_DATA`], [`FLAG_TAGGED`], [`FLAG_ACK_REQ`]) |
//! | 4..8 | reserved, must be zero |
//! | 8..16 | payload length in bytes |
//! | 16..24 | tag (tagged messages) |
//! | 24..32 | remote CQ data (with [`FLAG_CQ_DATA`]) |
//! | 32..40 | message id, echoed by acknowledgements |
//!
//! The payload follows the header. [`Header::decode`] validates everything a
//! peer controls before any of it is used: version, operation, flags, the
//! reserved bytes and the length against the receiver's limit. A frame that
//! fails is a protocol error and its connection is closed.
//!
//! RMA: `Write` carries a 16-byte prefix (target address, then key) and
//! the data; `ReadReq` carries only the prefix, with the length to read in
//! `tag`; the target answers each with `RmaResp` echoing `msg_id`: status
//! 0 in `data` and, for a read, the bytes as payload; or a positive
//! `FI_E*` status, no payload, and the refusal's cause in `tag`
//! (`Denied::to_u64`). An RMA operation with several remote pieces travels
//! as one frame per piece; only the last write frame of a `fi_writedata`
//! carries `FLAG_CQ_DATA`. The target checks key, range and access before
//! it touches memory (`MrTable::access`).
//!
//! `Atomic` carries the target prefix, the operands and (compare
//! operations) the compare values; `tag` packs operation, datatype, kind
//! and element count ([`AtomicTag`]); the answer is an `RmaResp` whose
//! payload holds the fetched values (fetch and compare kinds).
//!
//! RDM connections start with a handshake: the connecting side sends
//! `Hello` (its listening address, and a random nonce as the message id)
//! and holds its messages until the peer answers `HelloAck`. When both
//! sides connect at once, the connection opened by the smaller address
//! wins: the other one is answered with `HelloNack` and closed, so each
//! pair of endpoints ends up with one connection and messages never race
//! across two.
//!
//! A `Hello` only claims an address. The accepting side checks the claim
//! before it sends that peer's traffic on the connection or names the peer
//! in completions: it connects to the claimed address itself and sends
//! `Verify` (its own listening address, the nonce); the endpoint listening
//! there answers `VerifyAck` only if it sent that nonce in a `Hello` to
//! that address, else `VerifyNack`. A claim that fails (or carries no
//! nonce) leaves the connection usable but anonymous.
//!
//! When the endpoint has an authorization key (`fi_domain_attr.auth_key`
//! or `fi_ep_attr.auth_key`), every connection, RDM, MSG and claim
//! checks alike, starts with a key proof before any other frame: each
//! side sends `AuthChallenge` (32 random bytes) and answers the peer's
//! with `AuthProof`, HMAC-SHA256(key, label, role, connecting address,
//! accepting address, challenge answered, own challenge). The key itself
//! never travels. A side that receives any other frame before a valid
//! proof, or a proof that does not match, closes the connection; an
//! endpoint without a key closes a connection that opens with a
//! challenge (a keyed endpoint and an unkeyed one never talk).

use oxifabric::service::mr::Denied;

/// Version of this wire format.
pub const VERSION: u8 = 1;
/// Size of the fixed header.
pub const HEADER_LEN: usize = 40;

/// The payload carries remote CQ data.
pub const FLAG_CQ_DATA: u16 = 1 << 0;
/// The message is tagged (`fi_tsend` family).
pub const FLAG_TAGGED: u16 = 1 << 1;
/// The sender wants an [`Op::Ack`] once the message is delivered.
pub const FLAG_ACK_REQ: u16 = 1 << 2;
/// On [`Op::Cts`]: the receiver discarded the message (`FI_DISCARD`); the
/// sender completes its send without sending the data.
pub const FLAG_DISCARD: u16 = 1 << 3;
/// Bytes of the target prefix of `Write` and `ReadReq` (address, key).
pub const RMA_PREFIX: usize = 16;
/// Flags a message header ([`Op::Msg`], [`Op::Rts`], [`Op::Data`]) may carry.
const MSG_FLAGS: u16 = FLAG_CQ_DATA | FLAG_TAGGED | FLAG_ACK_REQ;
const KNOWN_FLAGS: u16 = MSG_FLAGS | FLAG_DISCARD;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// First frame on a new RDM connection: payload is the sender's
    /// listening address (so the receiver can map it to an AV entry),
    /// `msg_id` a random nonce the receiver verifies the claim with.
    Hello = 1,
    /// A message (tagged or not), payload is the user data.
    Msg = 2,
    /// Delivery acknowledgement of `msg_id`; no payload.
    Ack = 3,
    /// Connection request of an MSG endpoint: payload is CM private data.
    ConnReq = 4,
    /// Connection accepted: payload is CM private data.
    ConnAccept = 5,
    /// Connection rejected: payload is CM private data.
    ConnReject = 6,
    /// Orderly shutdown of an MSG connection.
    Shutdown = 7,
    /// Answer to `Hello`: this connection is the one both sides use.
    HelloAck = 8,
    /// Answer to `Hello`: both sides connected at once and the other
    /// connection won; close this one.
    HelloNack = 9,
    /// Announces a large message (rendezvous): its header, with `len` the
    /// message's length, and no payload. The receiver answers with `Cts`
    /// once a receive matches, so large messages are never buffered.
    Rts = 10,
    /// Clear to send the message `msg_id` announced by `Rts`; no payload.
    Cts = 11,
    /// The payload of the message `msg_id` announced by `Rts`.
    Data = 12,
    /// First and only frame of a connection made to check a `Hello`:
    /// payload is the checker's listening address, `msg_id` the nonce.
    Verify = 13,
    /// Answer to `Verify`: this endpoint sent that nonce to the checker.
    VerifyAck = 14,
    /// Answer to `Verify`: it did not.
    VerifyNack = 15,
    /// RMA write of one remote piece: the target prefix, then the data.
    Write = 16,
    /// RMA read of one remote piece: the target prefix; `tag` is the
    /// length to read.
    ReadReq = 17,
    /// The target's answer to `Write`, `ReadReq` or `Atomic` `msg_id`:
    /// `data` is the status, the payload the bytes read (or fetched).
    RmaResp = 18,
    /// An atomic operation on one remote piece: the target prefix, the
    /// operands, then (compare operations) the compare values; `tag`
    /// says what ([`AtomicTag`]).
    Atomic = 19,
    /// An endpoint closes this idle connection to stay within its
    /// connection limit (`ep/lru.rs`), if the peer agrees; no payload.
    Bye = 20,
    /// Answer to `Bye`: nothing in flight here either; the asker closes.
    ByeAck = 21,
    /// Answer to `Bye`: something is in flight here; the connection stays.
    ByeNack = 22,
    /// First frame each side of a connection sends when its endpoint has
    /// an authorization key: 32 random bytes the peer must answer.
    AuthChallenge = 23,
    /// Answer to the peer's `AuthChallenge`: HMAC-SHA256 under the key of
    /// the connection's addresses, the prover's role and both challenges.
    AuthProof = 24,
}

/// What an `Atomic` frame asks for, packed in its `tag` (the engine's
/// packing, shared with every provider).
pub use oxifabric::service::rma::AtomicTag;

/// Encodes the target prefix of `Write` and `ReadReq`.
pub fn rma_prefix(addr: u64, key: u64) -> [u8; RMA_PREFIX] {
    let mut b = [0u8; RMA_PREFIX];
    b[..8].copy_from_slice(&addr.to_le_bytes());
    b[8..].copy_from_slice(&key.to_le_bytes());
    b
}

/// Decodes the target prefix: (address, key).
pub fn parse_rma_prefix(b: &[u8; RMA_PREFIX]) -> (u64, u64) {
    let mut a = [0u8; 8];
    let mut k = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    k.copy_from_slice(&b[8..]);
    (u64::from_le_bytes(a), u64::from_le_bytes(k))
}

impl Op {
    fn from_u8(v: u8) -> Option<Op> {
        Some(match v {
            1 => Op::Hello,
            2 => Op::Msg,
            3 => Op::Ack,
            4 => Op::ConnReq,
            5 => Op::ConnAccept,
            6 => Op::ConnReject,
            7 => Op::Shutdown,
            8 => Op::HelloAck,
            9 => Op::HelloNack,
            10 => Op::Rts,
            11 => Op::Cts,
            12 => Op::Data,
            13 => Op::Verify,
            14 => Op::VerifyAck,
            15 => Op::VerifyNack,
            16 => Op::Write,
            17 => Op::ReadReq,
            18 => Op::RmaResp,
            19 => Op::Atomic,
            20 => Op::Bye,
            21 => Op::ByeAck,
            22 => Op::ByeNack,
            23 => Op::AuthChallenge,
            24 => Op::AuthProof,
            _ => return None,
        })
    }
}

/// A decoded, validated header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub op: Op,
    pub flags: u16,
    pub len: u64,
    pub tag: u64,
    pub data: u64,
    pub msg_id: u64,
}

/// Why a frame was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Fewer than [`HEADER_LEN`] bytes.
    Short,
    /// Unknown protocol version.
    Version(u8),
    /// Unknown operation.
    Op(u8),
    /// Unknown flag bits.
    Flags(u16),
    /// Reserved bytes are not zero.
    Reserved,
    /// Payload longer than the receiver accepts.
    TooLong(u64),
    /// A control frame (ack, shutdown) carries a payload it must not have.
    UnexpectedPayload,
    /// An RMA frame whose lengths or status do not fit together.
    BadRma,
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WireError::Short => write!(f, "short header"),
            WireError::Version(v) => write!(f, "unknown protocol version {v}"),
            WireError::Op(o) => write!(f, "unknown operation {o}"),
            WireError::Flags(x) => write!(f, "unknown flags {x:#x}"),
            WireError::Reserved => write!(f, "reserved header bytes are not zero"),
            WireError::TooLong(n) => write!(f, "payload of {n} bytes exceeds the limit"),
            WireError::UnexpectedPayload => write!(f, "control frame with a payload"),
            WireError::BadRma => write!(f, "inconsistent RMA frame"),
        }
    }
}

impl Header {
    /// A message header.
    pub fn msg(len: u64, tag: Option<u64>, data: Option<u64>, msg_id: u64, ack: bool) -> Header {
        let mut flags = 0;
        if tag.is_some() {
            flags |= FLAG_TAGGED;
        }
        if data.is_some() {
            flags |= FLAG_CQ_DATA;
        }
        if ack {
            flags |= FLAG_ACK_REQ;
        }
        Header {
            op: Op::Msg,
            flags,
            len,
            tag: tag.unwrap_or(0),
            data: data.unwrap_or(0),
            msg_id,
        }
    }

    /// A control header with no payload.
    pub fn control(op: Op, msg_id: u64) -> Header {
        Header {
            op,
            flags: 0,
            len: 0,
            tag: 0,
            data: 0,
            msg_id,
        }
    }

    /// The same header as another operation (a message's `Rts` and `Data`).
    pub fn with_op(self, op: Op) -> Header {
        Header { op, ..self }
    }

    /// The operation byte of encoded header bytes (what [`Header::encode`]
    /// wrote; not validated, as [`Header::decode`] does).
    pub fn op_byte(b: &[u8; HEADER_LEN]) -> u8 {
        b[1]
    }

    /// Encodes into the fixed-size header bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0] = VERSION;
        b[1] = self.op as u8;
        b[2..4].copy_from_slice(&self.flags.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..24].copy_from_slice(&self.tag.to_le_bytes());
        b[24..32].copy_from_slice(&self.data.to_le_bytes());
        b[32..40].copy_from_slice(&self.msg_id.to_le_bytes());
        b
    }

    /// Decodes and validates a header; `max_len` bounds the payload.
    pub fn decode(b: &[u8], max_len: u64) -> Result<Header, WireError> {
        if b.len() < HEADER_LEN {
            return Err(WireError::Short);
        }
        if b[0] != VERSION {
            return Err(WireError::Version(b[0]));
        }
        let op = Op::from_u8(b[1]).ok_or(WireError::Op(b[1]))?;
        let flags = u16::from_le_bytes([b[2], b[3]]);
        if flags & !KNOWN_FLAGS != 0 {
            return Err(WireError::Flags(flags));
        }
        if b[4..8] != [0, 0, 0, 0] {
            return Err(WireError::Reserved);
        }
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let len = u64_at(8);
        if len > max_len {
            return Err(WireError::TooLong(len));
        }
        if matches!(
            op,
            Op::Ack
                | Op::Shutdown
                | Op::HelloAck
                | Op::HelloNack
                | Op::Cts
                | Op::VerifyAck
                | Op::VerifyNack
                | Op::Bye
                | Op::ByeAck
                | Op::ByeNack
        ) && len != 0
        {
            return Err(WireError::UnexpectedPayload);
        }
        let allowed = match op {
            Op::Msg | Op::Rts | Op::Data => MSG_FLAGS,
            Op::Cts => FLAG_DISCARD,
            Op::Write | Op::Atomic => FLAG_CQ_DATA,
            _ => 0,
        };
        if flags & !allowed != 0 {
            return Err(WireError::Flags(flags));
        }
        let h = Header {
            op,
            flags,
            len,
            tag: u64_at(16),
            data: u64_at(24),
            msg_id: u64_at(32),
        };
        let rma_ok = match op {
            Op::Write => len >= RMA_PREFIX as u64,
            Op::ReadReq => len == RMA_PREFIX as u64 && h.tag <= max_len,
            Op::Atomic => AtomicTag::decode(h.tag)
                .and_then(|t| t.payload())
                .is_some_and(|p| Some(len) == p.checked_add(RMA_PREFIX as u64)),
            // A refusal names its cause and carries nothing; a success
            // names none.
            Op::RmaResp => match h.data {
                0 => h.tag == 0,
                s => s <= i32::MAX as u64 && len == 0 && Denied::from_u64(h.tag).is_some(),
            },
            _ => true,
        };
        if !rma_ok {
            return Err(WireError::BadRma);
        }
        Ok(h)
    }

    /// The tag, for tagged messages.
    pub fn tag(&self) -> Option<u64> {
        (self.flags & FLAG_TAGGED != 0).then_some(self.tag)
    }

    /// The remote CQ data, when sent.
    pub fn cq_data(&self) -> Option<u64> {
        (self.flags & FLAG_CQ_DATA != 0).then_some(self.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let h = Header::msg(12345, Some(7), Some(0xdead), 99, true);
        assert_eq!(Header::decode(&h.encode(), 1 << 20), Ok(h));
        assert_eq!(h.tag(), Some(7));
        assert_eq!(h.cq_data(), Some(0xdead));
        let c = Header::control(Op::Ack, 5);
        assert_eq!(Header::decode(&c.encode(), 0), Ok(c));
        let r = h.with_op(Op::Rts);
        assert_eq!(Header::decode(&r.encode(), 1 << 20), Ok(r));
        let mut cts = Header::control(Op::Cts, 99);
        cts.flags = FLAG_DISCARD;
        assert_eq!(Header::decode(&cts.encode(), 0), Ok(cts));
    }

    #[test]
    fn rendezvous_frames_are_checked() {
        // A clear-to-send carries neither a payload nor message flags.
        let mut cts = Header::control(Op::Cts, 1);
        cts.len = 5;
        assert_eq!(
            Header::decode(&cts.encode(), 100),
            Err(WireError::UnexpectedPayload)
        );
        cts.len = 0;
        cts.flags = FLAG_TAGGED;
        assert!(matches!(
            Header::decode(&cts.encode(), 100),
            Err(WireError::Flags(_))
        ));
        // Discard is only meaningful on a clear-to-send.
        let mut m = Header::msg(10, None, None, 1, false);
        m.flags = FLAG_DISCARD;
        assert!(matches!(
            Header::decode(&m.encode(), 100),
            Err(WireError::Flags(_))
        ));
    }

    #[test]
    fn claim_check_frames() {
        let mut v = Header::control(Op::Verify, 0x1234_5678_9abc_def0);
        v.len = 16;
        assert_eq!(Header::decode(&v.encode(), MAX_TEST), Ok(v));
        for op in [Op::VerifyAck, Op::VerifyNack] {
            let a = Header::control(op, 7);
            assert_eq!(Header::decode(&a.encode(), 0), Ok(a));
            let mut b = a;
            b.len = 1;
            assert_eq!(
                Header::decode(&b.encode(), 100),
                Err(WireError::UnexpectedPayload)
            );
        }
    }

    const MAX_TEST: u64 = 1024;

    #[test]
    fn rma_frames_are_checked() {
        let mut w = Header::control(Op::Write, 3);
        w.len = 16 + 100;
        w.flags = FLAG_CQ_DATA;
        assert_eq!(Header::decode(&w.encode(), 1 << 20), Ok(w));
        w.len = 15;
        assert_eq!(Header::decode(&w.encode(), 1 << 20), Err(WireError::BadRma));
        w.len = 16;
        w.flags = FLAG_TAGGED;
        assert!(matches!(
            Header::decode(&w.encode(), 1 << 20),
            Err(WireError::Flags(_))
        ));
        let mut r = Header::control(Op::ReadReq, 4);
        r.len = 16;
        r.tag = 1 << 20;
        assert_eq!(Header::decode(&r.encode(), 1 << 20), Ok(r));
        r.tag = (1 << 20) + 1;
        assert_eq!(Header::decode(&r.encode(), 1 << 20), Err(WireError::BadRma));
        r.tag = 5;
        r.len = 17;
        assert_eq!(Header::decode(&r.encode(), 1 << 20), Err(WireError::BadRma));
        let mut a = Header::control(Op::RmaResp, 4);
        a.len = 9;
        assert_eq!(Header::decode(&a.encode(), 1 << 20), Ok(a));
        a.data = 13;
        assert_eq!(Header::decode(&a.encode(), 1 << 20), Err(WireError::BadRma));
        a.len = 0;
        a.tag = Denied::Range.to_u64();
        assert_eq!(Header::decode(&a.encode(), 1 << 20), Ok(a));
        a.tag = 9;
        assert_eq!(Header::decode(&a.encode(), 1 << 20), Err(WireError::BadRma));
        a.tag = 0;
        a.data = 0;
        a.tag = 1;
        assert_eq!(Header::decode(&a.encode(), 1 << 20), Err(WireError::BadRma));
        assert_eq!(parse_rma_prefix(&rma_prefix(7, 9)), (7, 9));
        let t = AtomicTag {
            kind: oxifabric::service::atomic::AtomicKind::Compare,
            op: oxifabric::abi::FI_CSWAP,
            datatype: oxifabric::abi::FI_UINT64,
            count: 3,
        };
        let mut at = Header::control(Op::Atomic, 9);
        at.tag = t.encode();
        at.len = 16 + 48;
        assert_eq!(Header::decode(&at.encode(), 1 << 20), Ok(at));
        at.len = 16 + 47;
        assert_eq!(
            Header::decode(&at.encode(), 1 << 20),
            Err(WireError::BadRma)
        );
    }

    #[test]
    fn rejects_bad_frames() {
        let good = Header::msg(10, None, None, 1, false).encode();
        assert_eq!(Header::decode(&good[..39], 100), Err(WireError::Short));
        let mut b = good;
        b[0] = 2;
        assert_eq!(Header::decode(&b, 100), Err(WireError::Version(2)));
        let mut b = good;
        b[1] = 0;
        assert_eq!(Header::decode(&b, 100), Err(WireError::Op(0)));
        let mut b = good;
        b[3] = 0x80;
        assert!(matches!(Header::decode(&b, 100), Err(WireError::Flags(_))));
        let mut b = good;
        b[5] = 1;
        assert_eq!(Header::decode(&b, 100), Err(WireError::Reserved));
        assert_eq!(Header::decode(&good, 9), Err(WireError::TooLong(10)));
        let mut b = Header::control(Op::Ack, 1).encode();
        b[8] = 1;
        assert_eq!(Header::decode(&b, 100), Err(WireError::UnexpectedPayload));
    }
}
