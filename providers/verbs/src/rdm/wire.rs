//! What an RDM endpoint's peers say to it: the private data of a
//! connection request (the requester's listening address, so `FI_SOURCE`
//! can name it), of its acceptance and of a rejection (each side's
//! [`Intro`]: flags and nonce; why a request was refused), and the header
//! in front of every message piece and RMA notice.
//! Everything here comes from a peer: it is decoded into plain values and
//! checked before anything else looks at it.

use oxifabric::addr;
use std::net::SocketAddr;

/// Version of the header and of the connection request's data (2: small
/// messages may share a work request, [`Header::decode_next`]).
pub const VERSION: u8 = 2;

/// Bytes of the header in front of every piece.
pub const HDR: usize = 32;

/// The first bytes of a connection request's private data.
const HELLO_MAGIC: [u8; 2] = *b"oR";
/// The first bytes of an acceptance's private data.
const ANSWER_MAGIC: [u8; 2] = *b"oA";
/// The first bytes of a rejection's private data.
const REFUSAL_MAGIC: [u8; 2] = *b"oJ";

/// A flag of the request and the answer: the side sending it wants a
/// notice after every RMA access into its memory (its endpoint has
/// `FI_RMA_EVENT`: its counters count remote accesses).
pub const NOTICES: u8 = 1;
/// A flag of the request and the answer: the side sending it issues no
/// RDMA access of its application (its endpoint has no `FI_RMA`), so a
/// refused access can never take the connection down; a connection both
/// sides say this of carries both directions (`rdm/conns.rs`).
pub const SHARED: u8 = 2;

/// Why a request was refused: both sides asked at once and the other
/// side's request wins (`rdm/conns.rs`); the requester keeps its sends
/// for the connection that request makes.
pub const CROSSED: u8 = 1;

/// What a piece is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A whole message (`len`: its length, the piece's body).
    Eager = 1,
    /// The first piece of a longer message (`len`: the message's length;
    /// more pieces of it follow on the same connection).
    First = 2,
    /// A further piece (`len`: this piece's body).
    More = 3,
    /// No message: the RDMA WRITE before it on the same connection (RC
    /// places its bytes first) is done: `seq` its key, `tag` its address,
    /// `len` its length, `data` its remote CQ data (`fi_writedata`), if
    /// any; no body.
    Written = 4,
    /// No message: the RDMA READ before it on the same connection is
    /// done (`seq`, `tag`, `len` as for [`Op::Written`]; no data, no body).
    Read = 5,
    /// An atomic request (`rdm/atomic.rs`): `seq` its number, `tag` what
    /// it asks for, `len` its body (address, key, operands).
    Atomic = 6,
    /// An atomic request's answer: `seq` its number, `data` its status,
    /// `len` its body (the values found).
    AtomicDone = 7,
    /// A message sent with [`Header::ack`] has been processed here (placed
    /// into its receive, or held for one), or an announced one
    /// ([`Op::Rts`]) has been read: `seq` its number, on the connection it
    /// came in on, back to its sender (`FI_DELIVERY_COMPLETE`,
    /// `rdm/delivery.rs`, `rdm/rndv.rs`); no tag or body; `data`, when
    /// present, the receiver's error code for an announced message it
    /// could not read.
    Delivered = 8,
    /// A message whose bytes wait at the sender (`rdm/rndv.rs`): `seq`
    /// its number, `tag` and `data` as for [`Op::Eager`], `len` its
    /// length; the body names the sender's buffers, [`REMOTE`] bytes each
    /// (address, length, remote key), their lengths adding up to `len`.
    Rts = 9,
    /// Closing an idle connection by agreement (`rdm/lru.rs`): `seq` one
    /// of [`BYE_ASK`], [`BYE_AGREE`], [`BYE_BUSY`]; no tag, data or body.
    Bye = 10,
}

/// [`Op::Bye`]: the sender would close this connection (it is idle on its
/// side, and it holds its new sends to us meanwhile).
pub const BYE_ASK: u32 = 0;
/// [`Op::Bye`]: agreed (idle here too; new sends held until it is gone).
pub const BYE_AGREE: u32 = 1;
/// [`Op::Bye`]: not now (something is under way here); the connection
/// stays.
pub const BYE_BUSY: u32 = 2;

/// Bytes of one buffer an [`Op::Rts`] names: address (u64), length and
/// remote key (u32 each), little-endian.
pub const REMOTE: usize = 16;
/// Most buffers an [`Op::Rts`] names (the endpoint's `iov_limit`).
pub const RTS_BUFS: usize = 8;

/// A sender's buffer that an [`Op::Rts`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remote {
    pub addr: u64,
    pub len: u32,
    pub rkey: u32,
}

/// The body of an [`Op::Rts`] naming `bufs`.
pub fn rts_body(bufs: &[Remote]) -> Vec<u8> {
    let mut v = Vec::with_capacity(bufs.len() * REMOTE);
    for b in bufs {
        v.extend_from_slice(&b.addr.to_le_bytes());
        v.extend_from_slice(&b.len.to_le_bytes());
        v.extend_from_slice(&b.rkey.to_le_bytes());
    }
    v
}

/// The buffers a received [`Op::Rts`] names (its header checked the
/// body's size), or why they are refused: an empty buffer, one whose
/// addresses wrap, or lengths that do not add up to the message's `len`.
pub fn parse_rts(body: &[u8], len: u64) -> Result<Vec<Remote>, &'static str> {
    let mut v = Vec::with_capacity(body.len() / REMOTE);
    let mut total = 0u64;
    for c in body.chunks_exact(REMOTE) {
        let mut a = [0u8; 8];
        a.copy_from_slice(&c[..8]);
        let mut l = [0u8; 4];
        l.copy_from_slice(&c[8..12]);
        let mut k = [0u8; 4];
        k.copy_from_slice(&c[12..16]);
        let r = Remote {
            addr: u64::from_le_bytes(a),
            len: u32::from_le_bytes(l),
            rkey: u32::from_le_bytes(k),
        };
        if r.len == 0 || r.addr.checked_add(u64::from(r.len)).is_none() {
            return Err("an announced buffer that is empty or wraps");
        }
        total += u64::from(r.len);
        v.push(r);
    }
    if total != len {
        return Err("announced buffers that do not add up to the message");
    }
    Ok(v)
}

const HAS_TAG: u8 = 1;
const HAS_DATA: u8 = 2;
/// The flag of [`Header::ack`].
const ACK: u8 = 4;
/// Another piece follows this one's body in the same receive
/// (`rdm/bundle.rs`): set on every whole message of a bundle but its last.
const FOLLOWED: u8 = 8;

/// A piece's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub op: Op,
    /// The sender's number for the message on this connection.
    pub seq: u32,
    pub tag: Option<u64>,
    pub data: Option<u64>,
    pub len: u64,
    /// A message piece whose sender waits for [`Op::Delivered`] once the
    /// whole message has been processed (set on each of its pieces).
    pub ack: bool,
}

impl Header {
    /// The header of a whole message of `len` bytes that asks for no
    /// acknowledgement.
    pub fn eager(seq: u32, tag: Option<u64>, data: Option<u64>, len: usize) -> Header {
        Header {
            op: Op::Eager,
            seq,
            tag,
            data,
            len: len as u64,
            ack: false,
        }
    }

    /// The header's bytes (little-endian):
    /// version, op, flags, 0, seq (u32), tag, data, len (u64 each).
    pub fn encode(&self) -> [u8; HDR] {
        let mut b = [0u8; HDR];
        b[0] = VERSION;
        b[1] = self.op as u8;
        b[2] = if self.tag.is_some() { HAS_TAG } else { 0 }
            | if self.data.is_some() { HAS_DATA } else { 0 }
            | if self.ack { ACK } else { 0 };
        b[4..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..16].copy_from_slice(&self.tag.unwrap_or(0).to_le_bytes());
        b[16..24].copy_from_slice(&self.data.unwrap_or(0).to_le_bytes());
        b[24..32].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// The header's bytes for a whole message in a bundle
    /// (`rdm/bundle.rs`): `followed` when another follows its body.
    pub fn encode_in_bundle(&self, followed: bool) -> [u8; HDR] {
        let mut b = self.encode();
        if followed {
            b[2] |= FOLLOWED;
        }
        b
    }

    /// The first piece in `bytes` (a receive's bytes from where the
    /// pieces before it ended): its header, its body and how many bytes
    /// it takes, or why it is refused. A piece marked as followed is a
    /// whole message (`Eager`, no acknowledgement asked) whose body is its
    /// `len` bytes, and bytes must be left after it; any other piece is
    /// the rest of the receive ([`Header::decode`]).
    pub fn decode_next(bytes: &[u8]) -> Result<(Header, &[u8], usize), &'static str> {
        let Some((h, rest)) = bytes
            .split_first_chunk::<HDR>()
            .filter(|(h, _)| h[2] & FOLLOWED != 0)
        else {
            return Self::decode(bytes).map(|(h, body)| (h, body, bytes.len()));
        };
        let mut len = [0u8; 8];
        len.copy_from_slice(&h[24..32]);
        let body = usize::try_from(u64::from_le_bytes(len))
            .ok()
            .and_then(|n| rest.get(..n))
            .filter(|body| body.len() < rest.len())
            .ok_or("a bundled message past its receive, or the last of it marked followed")?;
        let hdr = Self::parse(h, body.len() as u64, FOLLOWED)?;
        if hdr.op != Op::Eager || hdr.ack {
            return Err("a bundled piece that is not a whole message");
        }
        Ok((hdr, body, HDR + body.len()))
    }

    /// A received piece's header and body, or why it is refused.
    pub fn decode(piece: &[u8]) -> Result<(Header, &[u8]), &'static str> {
        let (h, body) = piece
            .split_first_chunk::<HDR>()
            .ok_or("a piece shorter than its header")?;
        Ok((Self::parse(h, body.len() as u64, 0)?, body))
    }

    /// The header `h` of a piece whose body has `body_len` bytes, or why
    /// it is refused; `more_flags` are flags allowed besides the usual.
    fn parse(h: &[u8; HDR], body_len: u64, more_flags: u8) -> Result<Header, &'static str> {
        if h[0] != VERSION {
            return Err("a header of another version");
        }
        let op = match h[1] {
            1 => Op::Eager,
            2 => Op::First,
            3 => Op::More,
            4 => Op::Written,
            5 => Op::Read,
            6 => Op::Atomic,
            7 => Op::AtomicDone,
            8 => Op::Delivered,
            9 => Op::Rts,
            10 => Op::Bye,
            _ => return Err("an unknown operation"),
        };
        if h[2] & !(HAS_TAG | HAS_DATA | ACK | more_flags) != 0 || h[3] != 0 {
            return Err("unknown header flags");
        }
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&h[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let mut seq = [0u8; 4];
        seq.copy_from_slice(&h[4..8]);
        let hdr = Header {
            op,
            seq: u32::from_le_bytes(seq),
            tag: (h[2] & HAS_TAG != 0).then(|| u64_at(8)),
            data: (h[2] & HAS_DATA != 0).then(|| u64_at(16)),
            len: u64_at(24),
            ack: h[2] & ACK != 0,
        };
        let fits = match op {
            Op::Eager | Op::More => hdr.len == body_len,
            Op::First => hdr.len > body_len,
            Op::Written => body_len == 0 && hdr.tag.is_some(),
            Op::Read => body_len == 0 && hdr.tag.is_some() && hdr.data.is_none(),
            Op::Atomic => hdr.len == body_len && hdr.tag.is_some(),
            Op::AtomicDone => hdr.len == body_len && hdr.data.is_some() && hdr.tag.is_none(),
            Op::Delivered => hdr.len == 0 && body_len == 0 && hdr.tag.is_none(),
            Op::Bye => {
                hdr.len == 0
                    && body_len == 0
                    && hdr.tag.is_none()
                    && hdr.data.is_none()
                    && hdr.seq <= BYE_BUSY
            }
            Op::Rts => {
                hdr.len > 0
                    && body_len > 0
                    && body_len.is_multiple_of(REMOTE as u64)
                    && body_len <= (REMOTE * RTS_BUFS) as u64
            }
        };
        let message = matches!(op, Op::Eager | Op::First | Op::More);
        if hdr.ack && !message {
            return Err("an acknowledgement asked for what is not a message");
        }
        if !fits {
            return Err("a length that does not match the piece");
        }
        Ok(hdr)
    }
}

/// What each side of a connection says about itself when it is made: in
/// the request (with the requester's listening address) and in the
/// acceptance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Intro {
    /// [`NOTICES`], [`SHARED`].
    pub flags: u8,
    /// The endpoint's incarnation: a random number drawn when it was
    /// opened, so that a peer restarted at the same address is told from
    /// the one it replaces (0: not said).
    pub nonce: u64,
}

/// A connection request's private data: who is asking, by the address
/// it listens at (what its `fi_getname` gives), its flags and nonce.
pub fn hello(listen: &SocketAddr, me: Intro) -> Vec<u8> {
    let a = addr::to_sockaddr(listen);
    let mut v = Vec::with_capacity(13 + a.len());
    v.extend_from_slice(&HELLO_MAGIC);
    v.push(VERSION);
    v.push(a.len() as u8);
    v.extend_from_slice(&a);
    v.push(me.flags);
    v.extend_from_slice(&me.nonce.to_le_bytes());
    v
}

/// The nonce at `at` of private data (rdma-cm pads it with zeros; a
/// shorter one is 0, "not said").
fn nonce_at(data: &[u8], at: usize) -> u64 {
    data.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The listening address, flags and nonce in a request's private data,
/// or None when it is not ours or does not add up.
pub fn parse_hello(data: &[u8]) -> Option<(SocketAddr, Intro)> {
    let (head, rest) = data.split_first_chunk::<4>()?;
    if head[..2] != HELLO_MAGIC || head[2] != VERSION {
        return None;
    }
    let n = usize::from(head[3]);
    let a = addr::sockaddr_from_bytes(rest.get(..n)?)?;
    let flags = rest.get(n).copied().unwrap_or(0);
    Some((
        a,
        Intro {
            flags,
            nonce: nonce_at(rest, n + 1),
        },
    ))
}

/// An acceptance's private data: the accepting side's flags and nonce.
pub fn answer(me: Intro) -> [u8; 12] {
    let mut v = [0; 12];
    v[..4].copy_from_slice(&[ANSWER_MAGIC[0], ANSWER_MAGIC[1], VERSION, me.flags]);
    v[4..].copy_from_slice(&me.nonce.to_le_bytes());
    v
}

/// The flags and nonce of an acceptance's private data; nothing said
/// when it is not ours.
pub fn parse_answer(data: &[u8]) -> Intro {
    match data.split_first_chunk::<4>() {
        Some((h, rest)) if h[..2] == ANSWER_MAGIC && h[2] == VERSION => Intro {
            flags: h[3],
            nonce: nonce_at(rest, 0),
        },
        _ => Intro::default(),
    }
}

/// A rejection's private data: why (one of [`CROSSED`]).
pub fn refusal(why: u8) -> [u8; 4] {
    [REFUSAL_MAGIC[0], REFUSAL_MAGIC[1], VERSION, why]
}

/// Why a rejection's private data says the request was refused; None
/// when it says nothing of ours (nobody listening, a full endpoint, a
/// host that is not ours).
pub fn parse_refusal(data: &[u8]) -> Option<u8> {
    match data.split_first_chunk::<4>() {
        Some((h, _)) if h[..2] == REFUSAL_MAGIC && h[2] == VERSION && h[3] != 0 => Some(h[3]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_lengths_are_checked() {
        let h = Header {
            op: Op::Eager,
            seq: 7,
            tag: Some(0x1234),
            data: None,
            len: 3,
            ack: false,
        };
        let mut piece = h.encode().to_vec();
        piece.extend_from_slice(b"abc");
        assert_eq!(Header::decode(&piece), Ok((h, &b"abc"[..])));
        piece.push(0);
        assert!(Header::decode(&piece).is_err(), "a body past its length");
        let first = Header {
            op: Op::First,
            len: 3,
            ..h
        };
        let mut p = first.encode().to_vec();
        p.extend_from_slice(b"abc");
        assert!(Header::decode(&p).is_err(), "a first piece holding it all");
        let mut p = first.encode().to_vec();
        p.extend_from_slice(b"ab");
        assert_eq!(Header::decode(&p).map(|x| x.1), Ok(&b"ab"[..]));
    }

    #[test]
    fn bundled_pieces_are_taken_one_by_one_and_checked() {
        let h = |seq, len| Header {
            op: Op::Eager,
            seq,
            tag: Some(9),
            data: None,
            len,
            ack: false,
        };
        let mut b = h(1, 2).encode_in_bundle(true).to_vec();
        b.extend_from_slice(b"ab");
        b.extend_from_slice(&h(2, 3).encode_in_bundle(false));
        b.extend_from_slice(b"cde");
        let (first, body, used) = Header::decode_next(&b).unwrap();
        assert_eq!((first, body, used), (h(1, 2), &b"ab"[..], HDR + 2));
        let (second, body, used) = Header::decode_next(&b[used..]).unwrap();
        assert_eq!((second, body, used), (h(2, 3), &b"cde"[..], HDR + 3));
        // A lone piece decodes as before, and takes the whole receive.
        let mut one = h(3, 1).encode().to_vec();
        one.push(b'x');
        assert_eq!(Header::decode_next(&one).map(|x| x.2), Ok(HDR + 1));

        let followed = |hd: Header, body: &[u8], tail: &[u8]| {
            let mut v = hd.encode_in_bundle(true).to_vec();
            v.extend_from_slice(body);
            v.extend_from_slice(tail);
            Header::decode_next(&v).map(|x| x.2)
        };
        assert!(
            followed(h(1, 2), b"ab", b"").is_err(),
            "the last one marked followed"
        );
        assert!(
            followed(h(1, 5), b"ab", b"c").is_err(),
            "a length past the receive"
        );
        assert!(
            followed(h(1, u64::MAX), b"ab", b"c").is_err(),
            "a length that wraps"
        );
        let ack = Header {
            ack: true,
            ..h(1, 2)
        };
        assert!(followed(ack, b"ab", b"c").is_err(), "an acknowledged one");
        let first = Header {
            op: Op::First,
            ..h(1, 2)
        };
        assert!(
            followed(first, b"ab", b"c").is_err(),
            "a piece of a longer message"
        );
        let bye = Header {
            op: Op::Bye,
            seq: BYE_ASK,
            tag: None,
            data: None,
            len: 0,
            ack: false,
        };
        assert!(followed(bye, b"", b"c").is_err(), "a frame");
    }

    #[test]
    fn forged_headers_are_refused() {
        let h = Header {
            op: Op::More,
            seq: 0,
            tag: None,
            data: Some(9),
            len: 0,
            ack: false,
        }
        .encode();
        assert!(Header::decode(&h[..HDR - 1]).is_err(), "short");
        for (i, v) in [(0, 9u8), (1, 0), (1, 9), (2, 8), (3, 1)] {
            let mut b = h;
            b[i] = v;
            assert!(Header::decode(&b).is_err(), "byte {i} = {v}");
        }
        assert!(Header::decode(&h).is_ok());
    }

    #[test]
    fn notices_name_the_access_and_carry_no_body() {
        let w = Header {
            op: Op::Written,
            seq: 0x1234,
            tag: Some(0x7f00_0000_1000),
            data: Some(u64::MAX - 1),
            len: 1 << 20,
            ack: false,
        };
        assert_eq!(Header::decode(&w.encode()), Ok((w, &[][..])));
        let plain = Header { data: None, ..w };
        assert!(
            Header::decode(&plain.encode()).is_ok(),
            "a write without data"
        );
        let mut body = w.encode().to_vec();
        body.push(0);
        assert!(Header::decode(&body).is_err(), "a notice with a body");
        let no_addr = Header { tag: None, ..w };
        assert!(
            Header::decode(&no_addr.encode()).is_err(),
            "a notice without address"
        );
        let r = Header {
            op: Op::Read,
            ..plain
        };
        assert!(Header::decode(&r.encode()).is_ok());
        let rd = Header { op: Op::Read, ..w };
        assert!(Header::decode(&rd.encode()).is_err(), "a read with CQ data");
    }

    #[test]
    fn delivery_acknowledgements_are_asked_by_messages_only() {
        let m = Header {
            op: Op::First,
            seq: 3,
            tag: None,
            data: None,
            len: 100,
            ack: true,
        };
        let mut p = m.encode().to_vec();
        p.push(1);
        assert_eq!(Header::decode(&p).map(|x| x.0), Ok(m), "the flag survives");
        let no = Header { ack: false, ..m };
        let mut p = no.encode().to_vec();
        p.push(1);
        assert_eq!(Header::decode(&p).map(|x| x.0.ack), Ok(false));
        let d = Header {
            op: Op::Delivered,
            len: 0,
            ack: false,
            ..m
        };
        assert_eq!(Header::decode(&d.encode()), Ok((d, &[][..])));
        let asks = Header { ack: true, ..d };
        assert!(
            Header::decode(&asks.encode()).is_err(),
            "an ack asking for an ack"
        );
        let mut body = d.encode().to_vec();
        body.push(0);
        assert!(Header::decode(&body).is_err(), "an ack with a body");
        let tagged = Header { tag: Some(1), ..d };
        assert!(
            Header::decode(&tagged.encode()).is_err(),
            "an ack with a tag"
        );
        let notice = Header {
            op: Op::Written,
            tag: Some(0x1000),
            len: 8,
            ack: true,
            ..m
        };
        assert!(
            Header::decode(&notice.encode()).is_err(),
            "a notice asking for an ack"
        );
    }

    #[test]
    fn announcements_are_checked_before_their_buffers_are_used() {
        let bufs = [
            Remote {
                addr: 0x7000_0000,
                len: 100_000,
                rkey: 5,
            },
            Remote {
                addr: 0x9000_0000,
                len: 1,
                rkey: 6,
            },
        ];
        let h = Header {
            op: Op::Rts,
            seq: 4,
            tag: Some(9),
            data: None,
            len: 100_001,
            ack: false,
        };
        let mut p = h.encode().to_vec();
        p.extend_from_slice(&rts_body(&bufs));
        let (got, body) = Header::decode(&p).unwrap();
        assert_eq!(got, h);
        assert_eq!(parse_rts(body, got.len), Ok(bufs.to_vec()));
        assert!(
            parse_rts(body, got.len + 1).is_err(),
            "a length past the buffers"
        );
        assert!(
            parse_rts(body, got.len - 1).is_err(),
            "buffers past the length"
        );
        let wraps = [Remote {
            addr: u64::MAX - 10,
            len: 100,
            rkey: 1,
        }];
        assert!(
            parse_rts(&rts_body(&wraps), 100).is_err(),
            "an address that wraps"
        );
        let empty = [Remote { len: 0, ..wraps[0] }];
        assert!(parse_rts(&rts_body(&empty), 0).is_err(), "an empty buffer");
        let mut odd = p.clone();
        odd.push(0);
        assert!(
            Header::decode(&odd).is_err(),
            "a body that is no count of buffers"
        );
        let mut many = h.encode().to_vec();
        many.extend_from_slice(&rts_body(&[bufs[1]; RTS_BUFS + 1]));
        assert!(
            Header::decode(&many).is_err(),
            "more buffers than an iov holds"
        );
        assert!(Header::decode(&h.encode()).is_err(), "no buffers");
        let asks = Header { ack: true, ..h };
        let mut p = asks.encode().to_vec();
        p.extend_from_slice(&rts_body(&bufs));
        assert!(
            Header::decode(&p).is_err(),
            "an announcement asking for an ack"
        );
    }

    #[test]
    fn answers_carry_flags_and_nonce() {
        let me = Intro {
            flags: NOTICES | SHARED,
            nonce: 0x1122_3344_5566_7788,
        };
        let mut d = answer(me).to_vec();
        d.resize(56, 0);
        assert_eq!(parse_answer(&d), me);
        assert_eq!(parse_answer(&d[..4]).nonce, 0, "no nonce said");
        assert_eq!(
            parse_answer(&[0; 56]),
            Intro::default(),
            "rdma-cm's padding alone"
        );
        assert_eq!(parse_answer(b"oA"), Intro::default());
    }

    #[test]
    fn byes_are_header_only_and_known() {
        let bye = |seq, data| Header {
            op: Op::Bye,
            seq,
            tag: None,
            data,
            len: 0,
            ack: false,
        };
        for kind in [BYE_ASK, BYE_AGREE, BYE_BUSY] {
            let p = bye(kind, None).encode();
            assert_eq!(Header::decode(&p).map(|(h, _)| h), Ok(bye(kind, None)));
        }
        assert!(
            Header::decode(&bye(3, None).encode()).is_err(),
            "an unknown kind"
        );
        assert!(
            Header::decode(&bye(BYE_ASK, Some(1)).encode()).is_err(),
            "data"
        );
        let mut p = bye(BYE_ASK, None).encode().to_vec();
        p.push(0);
        assert!(Header::decode(&p).is_err(), "a body");
    }

    #[test]
    fn refusals_say_why() {
        let mut d = refusal(CROSSED).to_vec();
        d.resize(148, 0);
        assert_eq!(parse_refusal(&d), Some(CROSSED));
        assert_eq!(parse_refusal(&[0; 148]), None, "rdma-cm's padding alone");
        assert_eq!(parse_refusal(&refusal(0)), None, "no reason");
        assert_eq!(
            parse_refusal(b"oA\x01\x01"),
            None,
            "an answer, not a refusal"
        );
        assert_eq!(parse_refusal(&[]), None);
    }

    #[test]
    fn hello_carries_the_listening_address() {
        let me = Intro {
            flags: NOTICES,
            nonce: 42,
        };
        for a in ["10.77.0.1:4000", "[fd77::1]:5"] {
            let a: SocketAddr = a.parse().unwrap();
            let mut d = hello(&a, me);
            assert!(d.len() <= 56, "rdma-cm's request carries 56 bytes");
            d.resize(56, 0);
            assert_eq!(parse_hello(&d), Some((a, me)));
            let d = hello(&a, Intro { flags: 0, nonce: 7 });
            assert_eq!(
                parse_hello(&d[..d.len() - 9]),
                Some((a, Intro::default())),
                "no flags byte, no nonce"
            );
            assert_eq!(
                parse_hello(&d[..d.len() - 1]),
                Some((a, Intro::default())),
                "a nonce cut short"
            );
        }
        assert_eq!(parse_hello(b"xR\x01\x10"), None);
        let mut d = hello(&"10.0.0.1:1".parse().unwrap(), me);
        d[3] = 200;
        assert_eq!(parse_hello(&d), None, "a length past the data");
        assert_eq!(parse_hello(&[]), None);
    }
}
