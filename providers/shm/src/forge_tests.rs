//! A hostile peer that speaks the `shm` provider's cell protocol
//! (`proto.rs`) and lies in well-formed cells: the `forger` child role
//! of this crate's test binary, started by `tests/shm/forged.c` (the
//! victim: a real `shm` endpoint, run under memcheck by
//! `tests/shm/t-forged.sh`, which counts the victim's refusals).
//!
//! The ring-level scribbler (`tests.rs`) and `t-scribblepeer` write
//! garbage, which the ring's own checks mostly stop; these cells pass
//! them and reach the path's checks (`path.rs`, `path/bounce.rs`,
//! `path/split.rs`, `path/rma.rs`). The script, in order:
//!
//! 1. Waits for the victim's large tagged send ([`TAG_BIG`]): a `RNDV`
//!    when cross-memory attach works between us, else `FIRST` and
//!    `CHUNK`s through its bounce area (their bytes are checked).
//! 2. Answers the victim's one-sided read of us with the wrong length,
//!    then answers it again; answers its large read (which asks for a
//!    chunk of our area) through chunk 99, then through chunk 0. Rendezvous of its own: one naming memory it
//!    does not have, one with zero-length ranges, a large one with
//!    `PUSH_OK` naming memory it does not have (the victim shares its
//!    copy out, which fails), and four that do not add up (a wrong
//!    total, too many ranges, lengths that overflow, a range that wraps
//!    past the end of the address space). Each posted one is answered
//!    `DONE`: an error, 0, or `FALLBACK` (no cross-memory attach), after
//!    which the bytes follow in `CHUNK` and `MORE` cells.
//! 3. Lies in every other operation (see [`Forger::lies`]; among them
//!    a `FIRST` under the number of a rendezvous still waiting for its
//!    receive, which the victim posts late), with cross-memory attach
//!    a rendezvous held by a chunk we claim in the victim's split slot
//!    and another under its number ([`Forger::race`]), `PUSH`es at
//!    the victim's real rendezvous (slot past the area, stale
//!    generation, chunks past the message, ranges past it, chunk size 0
//!    and huge, memory we do not have, and one honest one whose bytes
//!    are checked), one-sided parts that lie, then one honest `EAGER`.
//! 4. On the victim's `TAG_ACK` (it got that message, so every cell
//!    before it was handled): checks every `ANSWER` and what the victim
//!    did with our split slots, then ends the victim's send honestly
//!    (`DONE` 0, or `FREE` of the chunks it lent) and waits for its
//!    `TAG_BYE`.
//!
//! It prints `forger: N checks, M failed` and exits 1 on a failure.

use crate::proto::{self, Op, RmaHeader, FALLBACK, PUSH_OK, RMA_BOUNCE, RMA_CMA, RMA_LAST};
use crate::ring::{Kind, Meta, CELL_HEADER};
use crate::transport::{Addr, Config, Event, Transport};
use oxifabric::abi::{FI_EACCES, FI_EINVAL, FI_SUM, FI_UINT64};
use oxifabric::error::Error;
use oxifabric::service::atomic::AtomicKind;
use oxifabric::service::rma::AtomicTag;
use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::Ordering::Acquire;
use std::time::{Duration, Instant};

/// Tags shared with `tests/shm/forged.c`: the victim's large send, its
/// "got the honest message" and "my send completed".
const TAG_BIG: u64 = 0xb16;
const TAG_ACK: u64 = 0xacc;
const TAG_BYE: u64 = 0xb1e;
/// The victim's posted receives, one per forged message that the
/// protocol lets start.
const TAG_HONEST: u64 = 0x100;
const TAG_CUT: u64 = 0x101;
const TAG_CHUNK_CUT: u64 = 0x102;
const TAG_RNDV_BAD: u64 = 0x103;
const TAG_RNDV_ZERO: u64 = 0x104;
const TAG_RNDV_SPLIT: u64 = 0x105;
const TAG_INUSE: u64 = 0x106;
/// Cells that must never become a message (only the victim's catch-all
/// receives, of tags 0x100 to 0x1ff and untagged, would take them).
const TAG_PHANTOM: u64 = 0x1ff;
/// A rendezvous nobody has asked for yet and a `FIRST` under its
/// number: the victim posts their receives late.
const TAG_SWAP_RNDV: u64 = 0x201;
const TAG_SWAP_FIRST: u64 = 0x202;
const SWAP: usize = 300;
/// Two rendezvous under one number, the first held by a chunk we
/// claimed in its split slot (the victim posts two receives of this
/// tag); and a message nothing takes, whose `ACK` tells that every
/// cell before it was handled.
const TAG_RACE: u64 = 0x107;
/// Their length: 8 chunks of 512 KiB, a window wide enough for us to
/// claim one while the victim (under memcheck) claims the others.
const RACE: usize = 4 << 20;
const TAG_SYNC: u64 = 0x300;
/// Bytes of the victim's one-sided read of us, which we answer wrongly.
const READ: u64 = 16;
/// Bytes of the victim's large read of us (more than a cell: it asks to
/// be answered through a chunk), which we answer through a bad chunk.
const BIG_READ: u64 = 20000;
/// The victim's large message, and the honest one's length.
const BIG: usize = 256 << 10;
const HONEST: usize = 1000;
/// Our bounce area and split slots: what `CHUNK` and `PUSH` name.
const CHUNKS: usize = 16;
const CHUNK: usize = 64 << 10;
const SLOTS: usize = 4;
/// Chunks of the victim's large message in a `PUSH` of ours.
const BIG_CHUNKS: u64 = (BIG / CHUNK) as u64;
/// An address no process of ours maps (the first page above the zero
/// page).
const UNMAPPED: u64 = 0x1000;
/// How long the whole script may take (the victim runs under memcheck).
const BOUND: Duration = Duration::from_secs(90);

/// Byte `i` of the victim's large message (as `forged.c` writes it).
fn victim_byte(i: usize) -> u8 {
    ((i * 131 + 7) % 251) as u8
}

/// Byte `i` of what we send as message bytes (as `forged.c` checks it).
fn our_byte(i: usize) -> u8 {
    ((i * 7 + 1) % 253) as u8
}

/// Byte `i` of the victim's registered buffer before anyone writes it.
fn mr_byte(i: usize) -> u8 {
    (i as u8) ^ 0x5a
}

/// A `RNDV`/`PUSH` payload as a liar writes it: any total, any count.
fn rndv_raw(total: u64, count: u64, ranges: &[(u64, u64)]) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + 16 * ranges.len());
    v.extend_from_slice(&total.to_le_bytes());
    v.extend_from_slice(&count.to_le_bytes());
    for (a, l) in ranges {
        v.extend_from_slice(&a.to_le_bytes());
        v.extend_from_slice(&l.to_le_bytes());
    }
    v
}

/// An honest payload of the same shape.
fn rndv(ranges: &[(u64, u64)]) -> Vec<u8> {
    let total = ranges.iter().map(|r| r.1).sum();
    rndv_raw(total, ranges.len() as u64, ranges)
}

/// A cell header: `tag` given means a tagged cell.
fn cell(op: Op, kind: Kind, tag: Option<u64>, data: u64, token: u64) -> Meta {
    Meta {
        kind,
        sender: 0,
        flags: proto::flags(op, tag, None),
        tag: tag.unwrap_or(0),
        data,
        token,
    }
}

/// A one-sided part's header.
fn rma_head(addr: u64, word: u64, flags: u32) -> Vec<u8> {
    let h = RmaHeader {
        addr,
        word,
        total: word,
        flags: RMA_LAST | flags,
    };
    h.encode().to_vec()
}

/// A cell from the victim, owned; a `CHUNK`'s bytes read out of its
/// bounce area.
struct Got {
    meta: Meta,
    bytes: Vec<u8>,
}

impl Got {
    fn is(&self, op: Op, token: u64) -> bool {
        Op::of(self.meta.flags) == Some(op) && self.meta.token == token
    }
}

/// How the victim's large send came: by rendezvous (its token) or in
/// cells and chunks (the chunks it lent us).
enum Big {
    Rndv { token: u64 },
    Cells { lent: u64 },
}

/// A one-sided part we sent and what its answer must say.
struct Part {
    token: u64,
    what: &'static str,
    /// `None`: any error status; `Some((status, cause))` exactly.
    want: Option<(u64, u64)>,
    /// Bytes the answer carries (an honest read's).
    back: Vec<u8>,
}

/// The forger's state: its transport (the victim reaches its bounce
/// area and split slots through it), what the victim sent it, its checks.
struct Forger {
    tp: Transport,
    victim: Addr,
    got: VecDeque<Got>,
    deadline: Instant,
    checks: u32,
    failed: u32,
    next_token: u64,
    parts: Vec<Part>,
    /// The number of the rendezvous a `FIRST` reused.
    swap: u64,
}

impl Forger {
    /// Counts a check; a failure is printed and makes the exit code 1,
    /// the rest goes on (the victim's own checks still run).
    fn check(&mut self, ok: bool, what: &str) {
        self.checks += 1;
        if ok {
            println!("ok: {what}");
        } else {
            self.failed += 1;
            println!("forger: FAIL {what}");
        }
    }

    /// A fresh message number of ours, so that lies share a number only
    /// where they mean to (the victim keys our messages by it).
    fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    /// One progress call; the victim's cells are kept in `got`.
    fn pump(&mut self) {
        let (victim, got) = (self.victim, &mut self.got);
        self.tp.progress(&mut |e| match e {
            Event::Received {
                from,
                meta,
                payload,
                areas,
                ..
            } if from == victim => {
                let mut bytes = payload.to_vec();
                if Op::of(meta.flags) == Some(Op::Chunk) {
                    // Our own check of the victim's chunk (it is honest).
                    let n = usize::try_from(meta.data).unwrap_or(0).min(CHUNK);
                    let k = usize::try_from(meta.tag).unwrap_or(usize::MAX);
                    bytes = vec![0; n];
                    if areas.read_at(from, k, 0, &mut bytes).is_err() {
                        bytes.clear();
                    }
                }
                got.push_back(Got { meta, bytes });
            }
            Event::Refused { why } => println!("forger: our ring refused a cell: {why}"),
            _ => {}
        });
    }

    /// The first cell from the victim that `want` selects, taken out;
    /// `None` after the deadline.
    fn take(&mut self, what: &str, want: impl Fn(&Got) -> bool) -> Option<Got> {
        loop {
            if let Some(i) = self.got.iter().position(&want) {
                return self.got.remove(i);
            }
            if Instant::now() > self.deadline {
                self.check(false, &format!("no {what} from the victim in time"));
                return None;
            }
            self.pump();
            let _ = self.tp.wait(Instant::now() + Duration::from_millis(20));
        }
    }

    /// Sends one cell to the victim, waiting (bounded) for room.
    fn send(&mut self, meta: Meta, payload: &[&[u8]]) {
        loop {
            match self.tp.send(self.victim, meta, payload, 0) {
                Ok(_) => return,
                Err(Error::Again) if Instant::now() < self.deadline => self.pump(),
                Err(e) => {
                    let what = format!("sending a {:?} cell: {e}", Op::of(meta.flags));
                    return self.check(false, &what);
                }
            }
        }
    }

    /// Writes `bytes` into chunk `k` of our bounce area and names them in
    /// a `CHUNK` cell of message `token`.
    fn chunk(&mut self, k: usize, bytes: &[u8], token: u64) {
        let wrote = self.tp.bounce_write(k, &[bytes]);
        self.check(wrote == Ok(bytes.len()), "writing our own chunk");
        let m = cell(Op::Chunk, Kind::Control, None, bytes.len() as u64, token);
        self.send(Meta { tag: k as u64, ..m }, &[]);
    }

    /// The victim's large send, its bytes checked.
    fn big(&mut self) -> Option<Big> {
        let first = self.take("large send", |g| {
            g.meta.tag == TAG_BIG && matches!(Op::of(g.meta.flags), Some(Op::Rndv | Op::First))
        })?;
        let token = first.meta.token;
        if Op::of(first.meta.flags) == Some(Op::Rndv) {
            let r = proto::decode_rndv(&first.bytes);
            self.check(r.is_some_and(|(n, _)| n == BIG), "the victim's rendezvous");
            // Not a check: a first send to a peer not connected yet is
            // queued before the victim knows whether it may write to us.
            let push = first.meta.flags & PUSH_OK != 0;
            println!("forger: the victim's rendezvous offers PUSH_OK: {push}");
            return Some(Big::Rndv { token });
        }
        let len = proto::first_len(&first.bytes).unwrap_or(0);
        self.check(
            len == BIG as u64,
            "the victim's first cell announces its length",
        );
        let mut bytes = first.bytes[proto::FIRST_PREFIX..].to_vec();
        let mut lent = 0u64;
        while bytes.len() < BIG {
            let g = self.take("rest of the large send", |g| {
                g.is(Op::More, token) || g.is(Op::Chunk, token)
            })?;
            if Op::of(g.meta.flags) == Some(Op::Chunk) {
                lent |= 1u64.checked_shl(g.meta.tag as u32).unwrap_or(0);
            }
            bytes.extend_from_slice(&g.bytes);
        }
        let intact =
            bytes.len() == BIG && (bytes.iter().enumerate()).all(|(i, &b)| b == victim_byte(i));
        self.check(
            intact,
            "the victim's large message, by cells and chunks, intact",
        );
        self.check(lent != 0, "the victim lent us chunks of its bounce area");
        Some(Big::Cells { lent })
    }

    /// The victim's one-sided read of us (16 bytes): answered with 5
    /// bytes (the read must fail), then again (no part by then).
    fn answers(&mut self) {
        let Some(read) = self.take("one-sided read", |g| Op::of(g.meta.flags) == Some(Op::Read))
        else {
            return;
        };
        let hdr = RmaHeader::decode(&read.bytes).map(|(h, _)| h.word);
        self.check(hdr == Some(READ), "the victim's read part");
        let m = cell(Op::Answer, Kind::Inline, None, 0, read.meta.token);
        self.send(m, &[&[7; 5]]);
        self.send(m, &[&[7; READ as usize]]);
        // Its large read, which asks to be answered through a chunk of
        // our area: answered through chunk 99 (we have 16), then through
        // chunk 0 (no part by then).
        let big = |g: &Got| {
            Op::of(g.meta.flags) == Some(Op::Read)
                && RmaHeader::decode(&g.bytes).is_some_and(|(h, _)| h.word == BIG_READ)
        };
        let Some(read) = self.take("large one-sided read", big) else {
            return;
        };
        let asked = RmaHeader::decode(&read.bytes).map(|(h, _)| h.flags & proto::RMA_BOUNCE);
        self.check(
            asked == Some(proto::RMA_BOUNCE),
            "the victim's large read asks for a chunk",
        );
        let m = Meta {
            flags: Op::Answer.bits() | proto::ANSWER_BOUNCE,
            ..cell(Op::Answer, Kind::Inline, None, 0, read.meta.token)
        };
        self.send(m, &[&99u64.to_le_bytes()]);
        self.send(m, &[&0u64.to_le_bytes()]);
    }

    /// Step 2: rendezvous that lie about the sender's memory, and ones
    /// that do not add up; then the bytes of any the victim asks for in
    /// cells.
    fn rendezvous(&mut self, ours: &[u8]) {
        let at = ours.as_ptr() as u64;
        let unmapped = [(UNMAPPED, 4096), (2 * UNMAPPED, 4096)];
        let zero = [(at, 0), (at, 100), (0, 0)];
        let split = [(UNMAPPED, BIG as u64)];
        let mut asked = Vec::new();
        for (tag, ranges, push) in [
            (TAG_RNDV_BAD, &unmapped[..], 0),
            (TAG_RNDV_ZERO, &zero[..], 0),
            (TAG_RNDV_SPLIT, &split[..], PUSH_OK),
        ] {
            let t = self.token();
            let m = cell(Op::Rndv, Kind::Rendezvous, Some(tag), 0, t);
            let m = Meta {
                flags: m.flags | push,
                ..m
            };
            self.send(m, &[&rndv(ranges)]);
            let len: u64 = ranges.iter().map(|r| r.1).sum();
            asked.push((t, tag, len as usize));
        }
        for lie in [
            rndv_raw(101, 1, &[(at, 100)]),
            rndv_raw(9 * 8, 9, &[(at, 8); 9]),
            rndv_raw(1, 2, &[(at, u64::MAX), (at, 2)]),
            rndv(&[(UNMAPPED, 4096), (u64::MAX - 2047, 4096)]),
        ] {
            let t = self.token();
            let m = cell(Op::Rndv, Kind::Rendezvous, Some(TAG_PHANTOM), 0, t);
            self.send(m, &[&lie]);
        }
        let mut next_chunk = 4;
        for (t, tag, len) in asked {
            let Some(done) = self.take("answer to our rendezvous", |g| g.is(Op::Done, t)) else {
                continue;
            };
            let status = done.meta.data;
            if status == FALLBACK {
                // The victim may not read us: the bytes follow in cells.
                if len <= 4096 - 64 {
                    let m = cell(Op::More, Kind::Inline, None, 0, t);
                    self.send(m, &[&ours[..len]]);
                } else {
                    for piece in ours[..len].chunks(CHUNK) {
                        self.chunk(next_chunk, piece, t);
                        next_chunk += 1;
                    }
                }
                self.check(
                    true,
                    &format!("rendezvous {tag:#x} answered FALLBACK, bytes sent in cells"),
                );
                continue;
            }
            let want_ok = tag == TAG_RNDV_ZERO;
            let what = format!(
                "rendezvous {tag:#x} answered {status:#x} (error: {})",
                !want_ok
            );
            self.check((status == 0) == want_ok, &what);
        }
    }

    /// Step 3: lies in every other operation (and the parts of messages
    /// that the protocol lets start, whose completions the victim
    /// checks).
    fn lies(&mut self, ours: &[u8]) {
        let junk = [0xeeu8; 256];
        // An operation nobody knows; operations in cells of the wrong kind.
        let t = self.token();
        let unknown = Meta {
            flags: 8 << 8 | proto::HAS_TAG,
            ..cell(Op::Eager, Kind::Inline, Some(TAG_PHANTOM), 0, t)
        };
        self.send(unknown, &[&junk[..16]]);
        let t = self.token();
        let m = cell(Op::Eager, Kind::Control, Some(TAG_PHANTOM), 0, t);
        self.send(m, &[&junk[..16]]);
        let t = self.token();
        let m = cell(Op::Rndv, Kind::Inline, Some(TAG_PHANTOM), 0, t);
        self.send(m, &[&rndv(&[(ours.as_ptr() as u64, 16)])]);
        // FIRST without its length, FIRST longer than it says.
        let t = self.token();
        let m = cell(Op::First, Kind::Inline, Some(TAG_PHANTOM), 0, t);
        self.send(m, &[&junk[..4]]);
        let t = self.token();
        let m = cell(Op::First, Kind::Inline, Some(TAG_PHANTOM), 0, t);
        self.send(m, &[&10u64.to_le_bytes(), &junk[..100]]);
        // FIRST of 100 bytes, then MORE with 100 more than it has room
        // for: the message ends where it said.
        let t = self.token();
        let m = cell(Op::First, Kind::Inline, Some(TAG_CUT), 0, t);
        self.send(m, &[&100u64.to_le_bytes(), &ours[..50]]);
        self.send(cell(Op::More, Kind::Inline, None, 0, t), &[&ours[50..150]]);
        // MORE of a message never started.
        let t = self.token();
        self.send(cell(Op::More, Kind::Inline, None, 0, t), &[&junk[..64]]);
        // A message number in use, by FIRST and by RNDV, between the
        // first and the last bytes of a message.
        let t = self.token();
        let m = cell(Op::First, Kind::Inline, Some(TAG_INUSE), 0, t);
        self.send(m, &[&200u64.to_le_bytes(), &ours[..100]]);
        let m = cell(Op::First, Kind::Inline, Some(TAG_PHANTOM), 0, t);
        self.send(m, &[&50u64.to_le_bytes(), &junk[..50]]);
        let m = cell(Op::Rndv, Kind::Rendezvous, Some(TAG_PHANTOM), 0, t);
        self.send(m, &[&rndv(&[(ours.as_ptr() as u64, 100)])]);
        self.send(cell(Op::More, Kind::Inline, None, 0, t), &[&ours[100..200]]);
        // CHUNKs: of a message never started; past our area and past a
        // chunk, for a message under way (a read would land in its
        // receive); more than that message has room for.
        let t = self.token();
        self.chunk(9, &junk[..100], t);
        let t = self.token();
        let m = cell(Op::First, Kind::Inline, Some(TAG_CHUNK_CUT), 0, t);
        self.send(m, &[&5000u64.to_le_bytes(), &ours[..1000]]);
        // (Chunk 63 is the last a bounce area may have, far past ours:
        // read unchecked, it would be outside the victim's mapping.)
        let beyond: [(u64, u64); 5] = [
            (CHUNKS as u64, 16),
            (63, 16),
            (u64::MAX, 16),
            (0, CHUNK as u64 + 1),
            (0, u64::MAX),
        ];
        for (k, n) in beyond {
            let m = cell(Op::Chunk, Kind::Control, None, n, t);
            self.send(Meta { tag: k, ..m }, &[]);
        }
        self.chunk(10, &ours[1000..1000 + 4096], t);
        // A rendezvous waiting for its receive, then a FIRST under its
        // number (their receives come later).
        let t = self.token();
        self.swap = t;
        let m = cell(Op::Rndv, Kind::Rendezvous, Some(TAG_SWAP_RNDV), 0, t);
        self.send(m, &[&rndv(&[(ours.as_ptr() as u64, SWAP as u64)])]);
        let m = cell(Op::First, Kind::Inline, Some(TAG_SWAP_FIRST), 0, t);
        self.send(m, &[&50u64.to_le_bytes(), &ours[..50]]);
        // Chunks given back that were never lent (one past any area);
        // answers to nothing of the victim's.
        let m = cell(Op::Free, Kind::Control, None, 1 << 15 | 1 << 63, 0);
        self.send(m, &[]);
        self.send(cell(Op::Done, Kind::Control, None, 0, 0xdead), &[]);
        self.send(
            cell(Op::Push, Kind::Rendezvous, None, 1 << 16, 0xdead),
            &[&rndv(&[(ours.as_ptr() as u64, 4096)])],
        );
        self.send(cell(Op::Answer, Kind::Inline, None, 0, 0x9999), &[]);
    }

    /// Step 3, one-sided: parts that lie about their header, key,
    /// bounds, lengths, ranges and chunks, and three honest ones.
    fn one_sided(&mut self, key: u64, base: u64, mr_len: u64) {
        let eight = *b"FORGEDOK";
        let mut reserved = rma_head(base, 8, 0);
        reserved[31] = 1;
        let sum = AtomicTag {
            kind: AtomicKind::Base,
            op: FI_SUM,
            datatype: FI_UINT64,
            count: 1,
        }
        .encode();
        let inval = Some((FI_EINVAL as u64, 0));
        let denied = |cause| Some((FI_EACCES as u64, cause));
        let w8 = |at: u64| [&rma_head(at, 8, 0)[..], &eight].concat();
        self.part(
            "a write of 10 bytes, no header",
            Op::Write,
            key,
            &[0; 10],
            inval,
        );
        let m = [&reserved[..], &eight].concat();
        self.part(
            "a header with reserved bytes set",
            Op::Write,
            key,
            &m,
            inval,
        );
        let m = w8(base);
        self.part(
            "a write under a wrong key",
            Op::Write,
            key ^ 0x5a5a,
            &m,
            denied(1),
        );
        let m = w8(base + mr_len - 4);
        self.part(
            "a write past the registration",
            Op::Write,
            key,
            &m,
            denied(2),
        );
        let m = [&rma_head(base, 100, 0)[..], &eight].concat();
        self.part("a write of 100 bytes carrying 8", Op::Write, key, &m, inval);
        let m = rma_head(base, 8192, 0);
        self.part("an inline read of 8 KiB", Op::Read, key, &m, inval);
        let m = [&rma_head(base, 8, 0)[..], &eight[..4]].concat();
        self.part("a read carrying bytes", Op::Read, key, &m, inval);
        let what = "a cross-memory write with malformed ranges";
        let m = [&rma_head(base, 64, RMA_CMA)[..], &eight[..5]].concat();
        self.part(what, Op::Write, key, &m, inval);
        let what = "a cross-memory write whose ranges do not cover it";
        let m = [rma_head(base, 4096, RMA_CMA), rndv(&[(UNMAPPED, 100)])].concat();
        self.part(what, Op::Write, key, &m, inval);
        // Any error: the victim's read fails (cross-memory attach), or it
        // asks for the bytes in cells (without).
        let what = "a cross-memory write from memory we do not have";
        let m = [rma_head(base, 4096, RMA_CMA), rndv(&[(UNMAPPED, 4096)])].concat();
        self.part(what, Op::Write, key, &m, None);
        let m = rma_head(base, 0xff << 24, 0);
        self.part("an atomic of an unknown kind", Op::Atomic, key, &m, inval);
        let m = [&rma_head(base, sum, 0)[..], &[1, 2, 3]].concat();
        self.part(
            "an atomic with 3 bytes of operand",
            Op::Atomic,
            key,
            &m,
            inval,
        );
        // Writes whose bytes are in a chunk of ours (`RMA_BOUNCE`): its
        // index cut short, past our area, a length past a chunk; and one
        // honest, from chunk 11.
        let bounced =
            |at: u64, len: u64, ix: &[u8]| [&rma_head(at, len, RMA_BOUNCE)[..], ix].concat();
        let what = "a write from a chunk named in 5 bytes";
        self.part(what, Op::Write, key, &bounced(base, 8, &[0; 5]), inval);
        let what = "a write from a chunk past our area";
        self.part(
            what,
            Op::Write,
            key,
            &bounced(base, 8, &63u64.to_le_bytes()),
            inval,
        );
        let what = "a write from a chunk, longer than a chunk";
        let m = bounced(base, CHUNK as u64 + 1, &0u64.to_le_bytes());
        self.part(what, Op::Write, key, &m, inval);
        let what = "a read through a chunk, longer than any chunk";
        let m = rma_head(base, 2 << 20, RMA_BOUNCE);
        self.part(what, Op::Read, key, &m, inval);
        let wrote = self.tp.bounce_write(11, &[b"BOUNCEOK"]);
        self.check(wrote == Ok(8), "writing our own chunk");
        let m = bounced(base + 200, 8, &11u64.to_le_bytes());
        self.part(
            "an honest write from a chunk",
            Op::Write,
            key,
            &m,
            Some((0, 0)),
        );
        let m = w8(base + 128);
        self.part("an honest write", Op::Write, key, &m, Some((0, 0)));
        let m = rma_head(base + 64, 16, 0);
        self.part("an honest read", Op::Read, key, &m, Some((0, 0)));
        if let Some(p) = self.parts.last_mut() {
            p.back = (64..80).map(mr_byte).collect();
        }
    }

    /// Sends one one-sided part under `key` and remembers what its
    /// answer must say.
    fn part(
        &mut self,
        what: &'static str,
        op: Op,
        key: u64,
        payload: &[u8],
        want: Option<(u64, u64)>,
    ) {
        let token = self.token();
        self.parts.push(Part {
            token,
            what,
            want,
            back: Vec::new(),
        });
        let m = cell(op, Kind::Inline, None, 0, token);
        self.send(Meta { tag: key, ..m }, &[payload]);
    }

    /// Step 3, at the victim's real rendezvous `token`: `PUSH`es that
    /// lie, and one honest one, each naming one of our slots (armed
    /// here) and buffers, which must stay until [`Forger::slots`].
    fn pushes(&mut self, token: u64) -> Pushed {
        let (area, region) = self.tp.slots();
        let mut armed = true;
        for (k, n) in [
            (0, BIG_CHUNKS),
            (1, BIG_CHUNKS + 2),
            (2, BIG_CHUNKS),
            (3, BIG_CHUNKS),
        ] {
            armed &= area.arm(region, k, gen(k), n).is_ok();
        }
        self.check(armed, "arming our own split slots");
        let mut p = Pushed {
            clean: vec![0u8; BIG],
            written: vec![0u8; BIG],
        };
        let (c, w) = (p.clean.as_mut_ptr() as u64, p.written.as_mut_ptr() as u64);
        let tag = |k: usize, g: u64| k as u64 | g << 16;
        let (cs, big) = (CHUNK as u64, BIG as u64);
        let pushes: [(u64, u64, Vec<u8>); 10] = [
            // Does not add up; more than the message; chunk sizes 0 and 1 GiB.
            (tag(0, gen(0)), cs, rndv_raw(5, 1, &[(c, 4)])),
            (tag(0, gen(0)), cs, rndv(&[(c, big), (c, 4096)])),
            (tag(0, gen(0)), 0, rndv(&[(c, big)])),
            (tag(0, gen(0)), 1 << 30, rndv(&[(c, big)])),
            // Past our slot area; a stale generation; chunks past the message.
            (tag(SLOTS, gen(0)), cs, rndv(&[(c, big)])),
            (tag(0xffff, gen(0)), cs, rndv(&[(c, big)])),
            (tag(0, gen(0) + 1), cs, rndv(&[(c, big)])),
            (tag(1, gen(1)), cs, rndv(&[(c, big)])),
            // Honest; then into memory we do not have.
            (tag(2, gen(2)), cs, rndv(&[(w, big)])),
            (tag(3, gen(3)), cs, rndv(&[(UNMAPPED, big)])),
        ];
        for (tag, cs, payload) in pushes {
            let m = cell(Op::Push, Kind::Rendezvous, None, cs, token);
            self.send(Meta { tag, ..m }, &[&payload]);
        }
        p
    }

    /// Step 3, with cross-memory attach: a rendezvous the victim shares
    /// out with us, one chunk of whose split slot we claim (a race with
    /// the victim's own claims) and hold; then another rendezvous under
    /// its number, which must be refused while the first waits for our
    /// chunk (accepted, its split replaced the first's, whose receive
    /// never completed); then we report our chunk failed. Whether we won
    /// the race is printed: the script counts the refusal only then.
    fn race(&mut self) {
        // Zeros, never touched: the victim's reads fault its pages in,
        // which widens the window.
        let zeros = vec![0u8; RACE];
        let src = rndv(&[(zeros.as_ptr() as u64, RACE as u64)]);
        let before = self.victim_slots();
        let t = self.token();
        let m = cell(Op::Rndv, Kind::Rendezvous, Some(TAG_RACE), 0, t);
        let m = Meta {
            flags: m.flags | PUSH_OK,
            ..m
        };
        self.send(m, &[&src]);
        let end = Instant::now() + Duration::from_secs(5);
        let won = loop {
            let claimed = self.claim_new(&before);
            if claimed.is_some() || Instant::now() > end {
                break claimed;
            }
            std::hint::spin_loop();
        };
        let Some((k, i)) = won else {
            println!("forger: lost the race for a chunk of the victim's split slot");
            return;
        };
        println!("forger: won the race for chunk {i} of the victim's split slot {k}");
        // As large: shared out too, were it accepted.
        self.send(m, &[&src]);
        let s = self.token();
        let sync = cell(Op::Eager, Kind::Inline, Some(TAG_SYNC), 0, s);
        let sync = Meta {
            flags: sync.flags | proto::ACK,
            ..sync
        };
        self.send(sync, &[]);
        self.take("the victim's ack", |g| g.is(Op::Done, s));
        let areas = self.tp.areas();
        let reported = (areas.slots(self.victim)).and_then(|(a, r)| a.add_done(r, k, true));
        self.check(
            reported.is_ok(),
            "reporting our chunk of the victim's slot failed",
        );
    }

    /// The claim words of the victim's split slots (empty before we are
    /// connected).
    fn victim_slots(&self) -> Vec<u64> {
        let areas = self.tp.areas();
        let Ok((area, region)) = areas.slots(self.victim) else {
            return Vec::new();
        };
        let off = area.end() - area.count() * 64;
        (0..area.count())
            .map(|k| region.load_u64(off + k * 64, Acquire).unwrap_or(0))
            .collect()
    }

    /// A chunk claimed from the back of the first of the victim's split
    /// slots armed since `before` (its word changed, chunks are left):
    /// (slot, chunk).
    fn claim_new(&self, before: &[u64]) -> Option<(usize, u64)> {
        let areas = self.tp.areas();
        let (area, region) = areas.slots(self.victim).ok()?;
        let now = self.victim_slots();
        for (k, (&old, &w)) in before.iter().zip(&now).enumerate() {
            let (gen, front, back) = (w >> 24, (w >> 12) & 0xfff, w & 0xfff);
            if w != old && back > front {
                if let Ok(Some(i)) = area.claim(region, k, gen, true) {
                    return Some((k, i));
                }
            }
        }
        None
    }

    /// What the victim did with our slots and buffers (once it has
    /// handled every `PUSH`).
    fn slots(&mut self, p: &Pushed) {
        let cases = [
            (
                0,
                (0, false),
                "slot 0 (lies, a stale generation): nothing written",
            ),
            (
                1,
                (0, false),
                "slot 1 (chunks past the message): nothing written",
            ),
            (
                2,
                (BIG_CHUNKS, false),
                "slot 2 (honest): every chunk written, intact",
            ),
            (
                3,
                (BIG_CHUNKS, true),
                "slot 3 (memory we do not have): every chunk failed",
            ),
        ];
        for (k, want, what) in cases {
            let (area, region) = self.tp.slots();
            let done = area.done(region, k);
            let bytes = if k == 2 {
                (p.written.iter().enumerate()).all(|(i, &b)| b == victim_byte(i))
            } else {
                p.clean.iter().all(|&b| b == 0)
            };
            self.check(
                done == Ok(want) && bytes,
                &format!("{what} (done {done:?})"),
            );
        }
        // The stale generation's slot: every chunk still unclaimed.
        let (area, region) = self.tp.slots();
        let back = area.claim(region, 0, gen(0), true);
        let what = "the victim claimed nothing under a stale generation";
        self.check(back == Ok(Some(BIG_CHUNKS - 1)), what);
    }

    /// Step 4: the answers to our one-sided parts, the waiting
    /// rendezvous (its receive is posted by now), then the honest end of
    /// the victim's send.
    fn after(&mut self, big: &Big, ours: &[u8]) {
        for p in std::mem::take(&mut self.parts) {
            let Some(a) = self.take("answer to a one-sided part", |g| g.is(Op::Answer, p.token))
            else {
                continue;
            };
            let got = (a.meta.data, a.meta.tag);
            let ok = match p.want {
                None => got.0 != 0,
                Some(w) => got == w && a.bytes == p.back,
            };
            let what = format!("{}: answered status {}, cause {}", p.what, got.0, got.1);
            self.check(ok, &what);
        }
        let t = self.swap;
        if let Some(done) = self.take("answer to the waiting rendezvous", |g| g.is(Op::Done, t)) {
            let status = done.meta.data;
            self.check(
                status == 0 || status == FALLBACK,
                "the waiting rendezvous answered",
            );
            if status == FALLBACK {
                self.send(cell(Op::More, Kind::Inline, None, 0, t), &[&ours[..SWAP]]);
            }
        }
        match *big {
            Big::Rndv { token } => self.send(cell(Op::Done, Kind::Control, None, 0, token), &[]),
            Big::Cells { lent } => self.send(cell(Op::Free, Kind::Control, None, lent, 0), &[]),
        }
    }

    /// Waits for the victim's `EAGER` cell of `tag`.
    fn hear(&mut self, tag: u64, what: &str) {
        self.take(what, |g| {
            g.meta.tag == tag && Op::of(g.meta.flags) == Some(Op::Eager)
        });
    }
}

/// Our slot `k`'s generation.
fn gen(k: usize) -> u64 {
    100 + k as u64
}

/// The buffers our `PUSH`es name: one nobody may write, one the honest
/// `PUSH` has the victim write.
struct Pushed {
    clean: Vec<u8>,
    written: Vec<u8>,
}

/// The forger's script; its exit code.
fn forge() -> i32 {
    let var = |n: &str| std::env::var(n).unwrap_or_default();
    let victim: Addr = match var("OXI_FORGE_VICTIM").parse() {
        Ok(a) => a,
        Err(_) => {
            println!("forger: FAIL no victim address in OXI_FORGE_VICTIM");
            return 1;
        }
    };
    let mr: Vec<u64> = (var("OXI_FORGE_MR").split(','))
        .filter_map(|w| w.parse().ok())
        .collect();
    let [key, base, mr_len] = mr[..] else {
        println!("forger: FAIL no key,base,len in OXI_FORGE_MR");
        return 1;
    };
    let cfg = Config {
        cells: 256,
        cell_size: CELL_HEADER + crate::provider::INJECT_SIZE,
        handshake_timeout: Duration::from_secs(30),
        bounce_chunks: CHUNKS,
        bounce_size: CHUNK,
        split_slots: SLOTS,
        ..Config::default()
    };
    let tp = Transport::new(cfg).expect("our transport");
    println!("forger-addr {}", tp.addr());
    let _ = std::io::stdout().flush();
    let mut f = Forger {
        tp,
        victim,
        got: VecDeque::new(),
        deadline: Instant::now() + BOUND,
        checks: 0,
        failed: 0,
        next_token: 1000,
        parts: Vec::new(),
        swap: 0,
    };
    let ours: Vec<u8> = (0..BIG).map(our_byte).collect();
    if let Some(big) = f.big() {
        f.answers();
        f.rendezvous(&ours);
        f.lies(&ours);
        f.one_sided(key, base, mr_len);
        let pushed = match big {
            Big::Rndv { token } => {
                f.race();
                Some(f.pushes(token))
            }
            Big::Cells { .. } => None,
        };
        let m = cell(Op::Eager, Kind::Inline, Some(TAG_HONEST), 0, f.token());
        f.send(m, &[&ours[..HONEST]]);
        // Every cell before it has been handled once the victim has it.
        f.hear(TAG_ACK, "answer to our honest message");
        if let Some(p) = &pushed {
            f.slots(p);
        }
        f.after(&big, &ours);
        f.hear(TAG_BYE, "goodbye");
    }
    println!("forger: {} checks, {} failed", f.checks, f.failed);
    i32::from(f.failed > 0)
}

/// The child role of this module; false for a role that is not ours.
pub(crate) fn child(role: &str) -> bool {
    if role != "forger" {
        return false;
    }
    std::process::exit(forge());
}

/// A range that wraps past the end of the address space names no
/// memory of the sender's, and the receiver adds chunk offsets to its
/// start (`path/split.rs`): such a rendezvous does not add up.
#[test]
fn a_rendezvous_whose_range_wraps_does_not_add_up() {
    let wraps = rndv(&[(u64::MAX - 2047, 4096)]);
    assert_eq!(proto::decode_rndv(&wraps), None);
    let near_the_top = rndv(&[(u64::MAX - 8191, 4096)]);
    assert!(proto::decode_rndv(&near_the_top).is_some());
}
