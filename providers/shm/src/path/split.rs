//! Large rendezvous copied by both sides at once.
//!
//! A rendezvous is one copy, `process_vm_readv` by the receiver, so one
//! processor moves all the bytes while the sender's waits for the answer.
//! A copy runs at what one processor can move (measured here: about
//! 15 GB/s per processor-second whether one or two processors copy at
//! once), so for a large message the receiver shares the copy out with
//! the sender: it arms one of its split slots (`slots.rs`) with the
//! message's chunks, sends `PUSH` naming the slot and the receive's
//! buffers, and copies chunks from the front while the sender, once it
//! sees the `PUSH`, writes chunks from the back straight into the
//! receive (`process_vm_writev`). Each chunk is claimed by one side with
//! a compare-and-swap, so each byte is still copied once. The receive
//! completes when the receiver has no chunk left to claim and the slot's
//! count says the sender finished the chunks it claimed; then the
//! receiver answers `DONE`, which completes the send.
//!
//! A sender that is busy elsewhere (not in progress) claims nothing, and
//! the receiver copies every chunk itself without waiting: the receive
//! never depends on the sender's progress, as with a plain rendezvous.
//!
//! Only when both may: the sender says in its `RNDV` that it can write
//! into the receiver (`PUSH_OK`), and the receiver can read the sender.
//! The sender checks a `PUSH` before it writes a byte: it must name one
//! of its own rendezvous to that peer still waiting for the answer, and
//! the ranges and chunks must fit that message; the addresses are the
//! receiver's own, which the kernel checks. A chunk the sender fails to
//! write is counted as failed, and the receive fails.

use super::*;
use crate::proto::{decode_rndv, encode_rndv, RNDV_MAX};
use crate::slots::MAX_CHUNKS;
use std::io::IoSlice;

/// From this many bytes on, a rendezvous is split (below it, the `PUSH`
/// costs more than the second processor saves: measured under `chrt`,
/// 64 KiB messages gain 1.1x to 1.4x, 128 KiB ones 1.5x).
const SPLIT_MIN: usize = 64 << 10;
/// Split slots of each endpoint: splits at once.
pub(super) const SLOTS: usize = 16;

/// A receive whose rendezvous both sides are copying.
pub(super) struct Split {
    recv: Posted,
    region: Region,
    msg: MsgInfo,
    /// Bytes that fit the receive, and the message's length.
    n: usize,
    len: usize,
    keep: bool,
    /// How our chunks went (0, or an `FI_E*` code).
    own: u64,
    /// Our slot, and the chunks the sender claimed in it.
    slot: usize,
    theirs: u64,
}

/// The first `len` bytes of `ranges` from byte `off` on.
fn clip(ranges: &[RemoteIov], mut off: usize, mut len: usize) -> Vec<RemoteIov> {
    let mut out = Vec::with_capacity(ranges.len());
    for r in ranges {
        if len == 0 {
            break;
        }
        if off >= r.len {
            off -= r.len;
            continue;
        }
        let l = (r.len - off).min(len);
        out.push(RemoteIov {
            // No wrap (`decode_rndv` refuses ranges that wrap, and off <
            // r.len); wrapping anyway, so a peer's address never panics
            // a build with overflow checks: the kernel checks it.
            addr: r.addr.wrapping_add(off),
            len: l,
        });
        len -= l;
        off = 0;
    }
    out
}

fn status_of(e: Error) -> u64 {
    u64::try_from(e.errno()).unwrap_or(u64::from(FI_EIO as u32))
}

/// The chunk size for `n` bytes: an eighth, page-aligned, from 64 KiB
/// (or half the message, if less) to 1 MiB (fewer system calls for large
/// messages, enough chunks for both sides to share).
fn chunk_size(n: usize) -> usize {
    let least = (64 << 10).min((n / 2) & !4095);
    ((n / 8) & !4095).clamp(least, 1 << 20)
}

/// Where slots are free (bit `k`), and the next generation.
pub(super) struct Slots {
    free: u64,
    gen: u64,
}

impl Default for Slots {
    fn default() -> Slots {
        Slots {
            free: (1u64 << SLOTS) - 1,
            gen: 0,
        }
    }
}

impl<K: Token> Side<'_, K> {
    /// Whether a matched rendezvous is worth copying from both sides.
    pub(super) fn split_wanted(&self, p: &Pull) -> bool {
        p.push_ok
            && !p.discard
            && !self.p.no_cma
            && self.p.slots.free != 0
            && p.len.min(p.region.total_len()) >= SPLIT_MIN
    }

    /// Shares the copy of `p` (from process `pid`) out with its sender
    /// and copies our chunks; without room for the `PUSH`, pulls it all.
    pub(super) fn split_pull(&mut self, tp: &mut Transport, p: Pull, pid: libc::pid_t) {
        let n = p.len.min(p.region.total_len());
        let cs = chunk_size(n);
        let chunks = n.div_ceil(cs) as u64;
        let ours: Vec<(usize, usize)> = (p.region.window(0, n).iter())
            .map(|b| (b.addr(), b.len()))
            .collect();
        let mut buf = [0u8; RNDV_MAX];
        let k = self.p.slots.free.trailing_zeros() as usize;
        let gen = self.p.slots.gen.wrapping_add(1) & crate::slots::GEN_MASK;
        let (area, region) = tp.slots();
        let armed = chunks <= MAX_CHUNKS && area.arm(region, k, gen, chunks).is_ok();
        let Some(len) = encode_rndv(&ours, &mut buf).filter(|_| armed) else {
            return self.pull(p, Some(pid));
        };
        let meta = Meta {
            kind: Kind::Rendezvous,
            sender: 0,
            flags: Op::Push.bits(),
            tag: k as u64 | gen << 16,
            data: cs as u64,
            token: p.token,
        };
        if tp.send(p.from, meta, &[&buf[..len]], NO_SEND).is_err() {
            return self.pull(p, Some(pid));
        }
        self.p.slots.gen = gen;
        self.p.slots.free &= !(1 << k);
        self.p.split_asked += 1;
        let (area, region) = tp.slots();
        let (mut own, mut mine) = (0, 0);
        while let Ok(Some(i)) = area.claim(region, k, gen, false) {
            let off = i as usize * cs;
            let l = cs.min(n - off);
            let r = crate::cma::read_into(pid, &p.region.window(off, l), &clip(&p.ranges, off, l));
            if let (Err(e), 0) = (r, own) {
                own = status_of(e);
            }
            mine += 1;
        }
        let s = Split {
            recv: p.recv,
            region: p.region,
            msg: p.msg,
            n,
            len: p.len,
            keep: p.keep,
            own,
            slot: k,
            theirs: chunks - mine,
        };
        self.p.splits.insert((p.from, p.token), s);
        self.splits_check(tp);
    }

    /// Completes every split receive whose sender has finished its
    /// chunks, and sends their `DONE`s now: the application may stop
    /// calling us once it has its completion, and the sender's send must
    /// not wait for that.
    pub(super) fn splits_check(&mut self, tp: &mut Transport) {
        let (area, region) = tp.slots();
        let ready: Vec<(Key, u64)> = (self.p.splits.iter())
            .filter_map(|(key, s)| match area.done(region, s.slot) {
                Ok((done, failed)) if done >= s.theirs => {
                    Some((*key, if failed { u64::from(FI_EIO as u32) } else { 0 }))
                }
                Ok(_) => None,
                Err(_) => Some((*key, u64::from(FI_EIO as u32))),
            })
            .collect();
        if ready.is_empty() {
            return;
        }
        for (key, theirs) in ready {
            if let Some(s) = self.p.splits.remove(&key) {
                self.split_done(key.0, key.1, s, theirs);
            }
        }
        self.flush_answers(tp);
    }

    /// Split receive `token` from `from` is over: it completes (or fails
    /// with the first error of either side), the slot is free again, and
    /// the sender gets its `DONE`.
    fn split_done(&mut self, from: Addr, token: u64, s: Split, theirs: u64) {
        self.p.slots.free |= 1 << s.slot;
        let status = if s.own != 0 { s.own } else { theirs };
        if status == 0 {
            let sinks = &self.core.sinks;
            complete_into(&s.recv, &s.region, s.n, s.len - s.n, s.msg, sinks, !s.keep);
        } else {
            let err = c_int::try_from(status).unwrap_or(FI_EIO);
            let f = Failure {
                peer_name: Some(self.p.label(from)),
                ..Failure::cause(err, "could not copy the sender's buffer")
            };
            self.core.sinks.rx_err(&s.recv, f, 0, s.len);
        }
        self.p.answers.push_back((from, Op::Done, token, status));
    }

    /// A `PUSH` from `from` (whose memory we may write when `pid` is
    /// given) for our rendezvous `meta.token`: writes the chunks we can
    /// claim in its slot.
    pub(super) fn push_in(
        &mut self,
        from: Addr,
        pid: Option<libc::pid_t>,
        meta: &Meta,
        bytes: &[u8],
        areas: Areas<'_>,
    ) {
        let id = meta.token;
        let iov = match self.p.inflight.get(&id) {
            Some(Inflight {
                to,
                wait: Some(Wait::Rndv(iov, len)),
                ..
            }) if *to == from => Some((*iov, *len)),
            _ => None,
        };
        let Some((iov, len)) = iov else {
            return self.refuse(from, "a request for no rendezvous of ours");
        };
        let Some((n, ranges)) = decode_rndv(bytes) else {
            return self.refuse(from, "a request that does not add up");
        };
        let cs = usize::try_from(meta.data).unwrap_or(0);
        if n > len || !(4096..=1 << 24).contains(&cs) || n.div_ceil(cs) as u64 > MAX_CHUNKS {
            return self.refuse(from, "a request that does not fit the message");
        }
        let chunks = n.div_ceil(cs) as u64;
        let (k, gen) = ((meta.tag & 0xffff) as usize, meta.tag >> 16);
        // Without cross-memory attach we claim nothing: the receiver
        // copies every chunk itself.
        let (Some(pid), false, Ok((area, region))) = (pid, self.p.no_cma, areas.slots(from)) else {
            return;
        };
        while let Ok(Some(i)) = area.claim(region, k, gen, true) {
            if i >= chunks {
                return self.refuse(from, "a slot holding chunks past the message");
            }
            let off = i as usize * cs;
            let l = cs.min(n - off);
            let window = iov.window(off, l);
            let local: Vec<IoSlice<'_>> =
                window.iter().map(|b| IoSlice::new(b.as_slice())).collect();
            let failed = crate::cma::writev(pid, &local, &clip(&ranges, off, l)).is_err();
            if area.add_done(region, k, failed).is_err() {
                break;
            }
            self.p.split_served += 1;
        }
    }

    /// `addr` is gone: the receives it was copying into fail.
    pub(super) fn splits_gone(&mut self, addr: Addr) {
        let keys: Vec<Key> = self
            .p
            .splits
            .keys()
            .filter(|k| k.0 == addr)
            .copied()
            .collect();
        for k in keys {
            if let Some(s) = self.p.splits.remove(&k) {
                self.p.slots.free |= 1 << s.slot;
                self.core
                    .sinks
                    .rx_err(&s.recv, gone(self.p.label(addr)), 0, s.len);
            }
        }
    }
}
