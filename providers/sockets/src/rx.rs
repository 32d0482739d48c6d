//! Receive-side matching shared by every endpoint type: posted receives
//! (untagged and tagged), unexpected messages held in bounded memory,
//! `FI_MULTI_RECV`, `FI_PEEK`/`FI_CLAIM`/`FI_DISCARD`, cancellation, and
//! the completions they produce.

use crate::sinks::Sinks;
use oxifabric::abi::*;
use oxifabric::ops::{IoBuf, RecvOp};
use oxifabric::service::cq::{Completion, CqError};
use std::collections::VecDeque;

/// Bytes of unexpected payload an endpoint holds before it stops reading
/// from its peers (they then wait in TCP flow control).
pub const UNEXPECTED_LIMIT: usize = 256 << 20;

/// A posted receive.
#[derive(Debug, Clone, Copy)]
pub struct Posted {
    pub iov: [IoBuf; crate::attrs::IOV_LIMIT],
    pub n: usize,
    pub src: fi_addr_t,
    pub ctx: usize,
    pub flags: u64,
    pub tag: Option<(u64, u64)>,
    /// Bytes of a multi-receive buffer already consumed.
    pub used: usize,
}

impl Posted {
    /// Captures the application's receive.
    pub fn new(op: &RecvOp<'_>) -> Posted {
        // SAFETY: a zero-length IoBuf at NULL is never dereferenced.
        let mut iov = [unsafe { IoBuf::new(core::ptr::null_mut(), 0) }; crate::attrs::IOV_LIMIT];
        let n = op.iov.len().min(iov.len());
        iov[..n].copy_from_slice(&op.iov[..n]);
        Posted {
            iov,
            n,
            src: op.src,
            ctx: op.context,
            flags: op.flags,
            tag: op.tag,
            used: 0,
        }
    }

    pub fn bufs(&self) -> &[IoBuf] {
        &self.iov[..self.n]
    }

    /// Total capacity.
    pub fn capacity(&self) -> usize {
        self.bufs().iter().map(IoBuf::len).sum()
    }

    /// Whether a message from `src` with `tag` goes here.
    pub fn matches(&self, src: fi_addr_t, tag: Option<u64>) -> bool {
        let src_ok = self.src == FI_ADDR_UNSPEC || self.src == FI_ADDR_NOTAVAIL || self.src == src;
        let tag_ok = match (self.tag, tag) {
            (None, None) => true,
            (Some((want, ignore)), Some(t)) => (want | ignore) == (t | ignore),
            _ => false,
        };
        src_ok && tag_ok
    }

    /// The buffer region for the next message: the whole buffer, or for a
    /// multi-receive buffer what is left of it.
    pub fn region(&self) -> Region {
        let mut skip = self.used;
        let mut out = Region {
            iov: self.iov,
            n: 0,
        };
        for b in self.bufs() {
            if skip >= b.len() {
                skip -= b.len();
                continue;
            }
            out.iov[out.n] = b.slice(skip, b.len() - skip);
            out.n += 1;
            skip = 0;
        }
        out
    }
}

/// Where one arriving message is written: a posted buffer's iovec, or what
/// is left of a multi-receive buffer. Fixed size, so placing a message
/// allocates nothing.
#[derive(Debug, Clone, Copy)]
pub struct Region {
    iov: [IoBuf; crate::attrs::IOV_LIMIT],
    n: usize,
}

impl std::ops::Deref for Region {
    type Target = [IoBuf];
    fn deref(&self) -> &[IoBuf] {
        &self.iov[..self.n]
    }
}

/// Copies `data` into `iov` starting at byte `off`; returns bytes copied.
pub fn scatter(iov: &[IoBuf], mut off: usize, data: &[u8]) -> usize {
    let mut done = 0;
    for b in iov {
        if done == data.len() {
            break;
        }
        if off >= b.len() {
            off -= b.len();
            continue;
        }
        let room = b.len() - off;
        let n = room.min(data.len() - done);
        b.as_mut_slice()[off..off + n].copy_from_slice(&data[done..done + n]);
        done += n;
        off = 0;
    }
    done
}

/// A message that arrived before its receive.
#[derive(Debug)]
pub struct Unexpected {
    pub src: fi_addr_t,
    pub tag: Option<u64>,
    pub data: Option<u64>,
    /// The payload (empty for an announced large message).
    pub payload: Vec<u8>,
    /// Context of the `FI_PEEK | FI_CLAIM` that reserved it.
    pub claimed: Option<usize>,
    /// A large message only announced (`Rts`): its data stays with the
    /// sender until a receive matches.
    pub rndv: Option<Announced>,
}

/// What an announced message counts against `UNEXPECTED_LIMIT`: its
/// entry, so a peer cannot announce without bound either.
pub const ANNOUNCED_COST: usize = 128;

impl Unexpected {
    /// Bytes it holds here, as counted against `UNEXPECTED_LIMIT`.
    pub fn held(&self) -> usize {
        if self.rndv.is_some() {
            ANNOUNCED_COST
        } else {
            self.payload.len()
        }
    }

    /// The message's length.
    pub fn len(&self) -> usize {
        self.rndv.map_or(self.payload.len(), |r| r.len)
    }
}

/// Where an announced message comes from: the connection and the
/// sender's message id, to answer with `Cts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Announced {
    pub slot: usize,
    pub msg_id: u64,
    pub len: usize,
}

/// A receive matched to an announced message: the endpoint sends `Cts`
/// and places the `Data` frame into `region` (or, for a discarded
/// message, tells the sender to drop it).
#[derive(Debug, Clone, Copy)]
pub struct RndvMatch {
    pub from: Announced,
    pub recv: Posted,
    pub region: Region,
    /// A multi-receive buffer stays posted.
    pub keep: bool,
    /// `FI_DISCARD`: no data is wanted.
    pub discard: bool,
}

/// Everything on the receive side of one endpoint.
#[derive(Default)]
pub struct RxQueues {
    pub posted: VecDeque<Posted>,
    pub posted_tagged: VecDeque<Posted>,
    pub unexpected: VecDeque<Unexpected>,
    pub unexpected_bytes: usize,
    /// `FI_OPT_MIN_MULTI_RECV`.
    pub min_multi_recv: usize,
}

/// Where an arriving message goes.
#[allow(clippy::large_enum_variant)] // short-lived return value
pub enum Placement {
    /// Into a posted receive (removed from its queue unless it is a
    /// multi-receive buffer with room left); `region` is where to write.
    Posted {
        recv: Posted,
        region: Region,
        keep: bool,
    },
    /// Into a new unexpected buffer.
    Unexpected,
}

impl RxQueues {
    /// Number of receives posted.
    pub fn posted_count(&self) -> usize {
        self.posted.len() + self.posted_tagged.len()
    }

    /// Finds the receive for an arriving message.
    pub fn place(&mut self, src: fi_addr_t, tag: Option<u64>, len: usize) -> Placement {
        self.place_inner(src, tag, len, false)
    }

    /// `place` for an announced large message, whose data comes later: a
    /// multi-receive buffer it lands in is released with it, so no later
    /// message can complete (and hand the buffer back) before its data.
    pub fn place_last(&mut self, src: fi_addr_t, tag: Option<u64>, len: usize) -> Placement {
        self.place_inner(src, tag, len, true)
    }

    fn place_inner(
        &mut self,
        src: fi_addr_t,
        tag: Option<u64>,
        len: usize,
        last: bool,
    ) -> Placement {
        let q = if tag.is_some() {
            &mut self.posted_tagged
        } else {
            &mut self.posted
        };
        let Some(i) = q.iter().position(|p| p.matches(src, tag)) else {
            return Placement::Unexpected;
        };
        let p = q[i];
        let region = p.region();
        if p.flags & FI_MULTI_RECV != 0 {
            let left = p.capacity() - p.used;
            let after = left.saturating_sub(len);
            let keep = !last && after >= self.min_multi_recv.max(1);
            if keep {
                q[i].used += len.min(left);
            } else {
                q.remove(i);
            }
            Placement::Posted {
                recv: p,
                region,
                keep,
            }
        } else {
            q.remove(i);
            Placement::Posted {
                recv: p,
                region,
                keep: false,
            }
        }
    }

    /// Whether more unexpected payload of `len` bytes fits.
    pub fn unexpected_room(&self, len: usize) -> bool {
        self.unexpected_bytes + len <= UNEXPECTED_LIMIT
    }

    /// Queues an unexpected message.
    pub fn push_unexpected(&mut self, u: Unexpected) {
        self.unexpected_bytes += u.held();
        self.unexpected.push_back(u);
    }

    fn take_unexpected(&mut self, i: usize) -> Unexpected {
        let u = self.unexpected.remove(i).expect("index checked");
        self.unexpected_bytes -= u.held();
        u
    }

    /// Handles a newly posted receive: against unexpected messages first
    /// (completing it at once), else queues it. `FI_PEEK`, `FI_CLAIM` and
    /// `FI_DISCARD` are handled here too. Matches with announced large
    /// messages are returned for the endpoint to answer (an empty Vec, which
    /// does not allocate, in every other case).
    pub fn post(&mut self, op: &RecvOp<'_>, sinks: &Sinks) -> Vec<RndvMatch> {
        let p = Posted::new(op);
        let tagged = op.tag.is_some();
        let discard = op.flags & FI_DISCARD != 0;
        if op.flags & FI_CLAIM != 0 && op.flags & FI_PEEK == 0 {
            // Take the message a previous FI_PEEK|FI_CLAIM reserved.
            let Some(i) = self
                .unexpected
                .iter()
                .position(|u| u.claimed == Some(op.context))
            else {
                sinks.rx_err(&p, FI_ENOMSG, 0, 0, tagged);
                return Vec::new();
            };
            let u = self.take_unexpected(i);
            if discard {
                sinks.rx_done(&p, 0, 0, u.data, u.tag, u.src, tagged, 0);
                return u
                    .rndv
                    .map(|from| RndvMatch::discard(from, p))
                    .into_iter()
                    .collect();
            }
            return match u.rndv {
                Some(from) => vec![RndvMatch::whole(from, p)],
                None => {
                    deliver_unexpected(&p, u, sinks, tagged);
                    Vec::new()
                }
            };
        }
        let found = self
            .unexpected
            .iter()
            .position(|u| u.claimed.is_none() && p.matches(u.src, u.tag));
        if op.flags & FI_PEEK != 0 {
            let Some(i) = found else {
                sinks.rx_err(&p, FI_ENOMSG, 0, 0, tagged);
                return Vec::new();
            };
            let (len, data, tag, src, rndv) = {
                let u = &self.unexpected[i];
                (u.len(), u.data, u.tag, u.src, u.rndv)
            };
            let mut answer = Vec::new();
            if discard {
                self.take_unexpected(i);
                answer.extend(rndv.map(|from| RndvMatch::discard(from, p)));
            } else if op.flags & FI_CLAIM != 0 {
                self.unexpected[i].claimed = Some(op.context);
            }
            sinks.rx_done(&p, len, 0, data, tag, src, tagged, 0);
            return answer;
        }
        let Some(i) = found else {
            if tagged {
                self.posted_tagged.push_back(p);
            } else {
                self.posted.push_back(p);
            }
            return Vec::new();
        };
        if p.flags & FI_MULTI_RECV == 0 {
            let u = self.take_unexpected(i);
            return match u.rndv {
                Some(from) => vec![RndvMatch::whole(from, p)],
                None => {
                    deliver_unexpected(&p, u, sinks, tagged);
                    Vec::new()
                }
            };
        }
        // Fill the multi-receive buffer with as many queued messages as
        // fit, then keep it posted if room is left.
        let mut out = Vec::new();
        let mut p = p;
        let mut i = Some(i);
        while let Some(idx) = i {
            let len = self.unexpected[idx].len();
            let left = p.capacity() - p.used;
            if len > left && p.used > 0 {
                break;
            }
            let u = self.take_unexpected(idx);
            let region = p.region();
            let n = len.min(left);
            let release = left - n < self.min_multi_recv.max(1);
            match u.rndv {
                // Its bytes arrive later: it is the buffer's last message
                // (see `place_last`).
                Some(from) => {
                    out.push(RndvMatch {
                        from,
                        recv: p,
                        region,
                        keep: false,
                        discard: false,
                    });
                    return out;
                }
                None => {
                    scatter(&region, 0, &u.payload);
                    complete_into(
                        &p,
                        &region,
                        n,
                        len - n,
                        u.data,
                        u.tag,
                        u.src,
                        sinks,
                        tagged,
                        release,
                    );
                }
            }
            p.used += n;
            if release {
                return out;
            }
            i = self
                .unexpected
                .iter()
                .position(|u| u.claimed.is_none() && p.matches(u.src, u.tag));
        }
        self.posted.push_back(p);
        out
    }

    /// Forgets announced messages from a connection that is gone: their
    /// data can no longer come.
    pub fn drop_announced(&mut self, slot: usize) {
        let before = self.unexpected.len();
        self.unexpected
            .retain(|u| u.rndv.is_none_or(|r| r.slot != slot));
        self.unexpected_bytes -= (before - self.unexpected.len()) * ANNOUNCED_COST;
    }

    /// `fi_cancel`: removes the receive posted with `ctx`.
    pub fn cancel(&mut self, ctx: usize, sinks: &Sinks) -> bool {
        for tagged in [false, true] {
            let q = if tagged {
                &mut self.posted_tagged
            } else {
                &mut self.posted
            };
            if let Some(i) = q.iter().position(|p| p.ctx == ctx) {
                let p = q.remove(i).expect("index checked");
                sinks.rx_err(&p, FI_ECANCELED, 0, 0, tagged);
                return true;
            }
        }
        false
    }

    /// Fails every posted receive (endpoint shut down or closed).
    pub fn fail_all(&mut self, err: c_int, sinks: &Sinks) {
        for (q, tagged) in [(&mut self.posted, false), (&mut self.posted_tagged, true)] {
            for p in q.drain(..) {
                sinks.rx_err(&p, err, 0, 0, tagged);
            }
        }
    }
}

impl RndvMatch {
    /// A whole receive buffer for an announced message.
    fn whole(from: Announced, recv: Posted) -> RndvMatch {
        RndvMatch {
            from,
            region: recv.region(),
            recv,
            keep: false,
            discard: false,
        }
    }

    /// An announced message the application discarded.
    fn discard(from: Announced, recv: Posted) -> RndvMatch {
        RndvMatch {
            discard: true,
            ..RndvMatch::whole(from, recv)
        }
    }
}

fn deliver_unexpected(p: &Posted, u: Unexpected, sinks: &Sinks, tagged: bool) {
    let region = p.region();
    let n = scatter(&region, 0, &u.payload);
    let trunc = u.payload.len() - n;
    complete_into(
        p,
        &region,
        n,
        trunc,
        u.data,
        u.tag,
        u.src,
        sinks,
        tagged,
        p.flags & FI_MULTI_RECV != 0,
    );
}

/// Reports a delivered message: an error completion when truncated.
#[allow(clippy::too_many_arguments)]
pub fn complete_into(
    p: &Posted,
    region: &[IoBuf],
    n: usize,
    truncated: usize,
    data: Option<u64>,
    tag: Option<u64>,
    src: fi_addr_t,
    sinks: &Sinks,
    tagged: bool,
    release_multi: bool,
) {
    let buf = region.first().map_or(0, IoBuf::addr);
    let extra = if p.flags & FI_MULTI_RECV != 0 && release_multi {
        FI_MULTI_RECV
    } else {
        0
    };
    if truncated > 0 {
        sinks.rx_err_full(
            p,
            CqError {
                comp: Completion {
                    op_context: p.ctx,
                    flags: rx_flags(tagged, data) | extra,
                    len: n,
                    buf,
                    data: data.unwrap_or(0),
                    tag: tag.unwrap_or(0),
                    src,
                },
                olen: truncated,
                err: FI_ETRUNC,
                prov_errno: 0,
                err_data: Vec::new(),
            },
        );
    } else {
        sinks.rx_done(p, n, buf, data, tag, src, tagged, extra);
    }
}

/// Completion flags of a receive.
pub fn rx_flags(tagged: bool, data: Option<u64>) -> u64 {
    FI_RECV
        | if tagged { FI_TAGGED } else { FI_MSG }
        | if data.is_some() { FI_REMOTE_CQ_DATA } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_matching_with_ignore_and_source() {
        let mut buf = [0u8; 4];
        let iov = [unsafe { IoBuf::new(buf.as_mut_ptr(), 4) }];
        let op = RecvOp {
            iov: &iov,
            src: 3,
            context: 1,
            flags: 0,
            tag: Some((0x10, 0x0f)),
        };
        let p = Posted::new(&op);
        assert!(p.matches(3, Some(0x1f)));
        assert!(!p.matches(3, Some(0x20)));
        assert!(!p.matches(4, Some(0x10)));
        assert!(!p.matches(3, None));
    }

    #[test]
    fn scatter_spans_iovs_and_offsets() {
        let mut a = [0u8; 3];
        let mut b = [0u8; 3];
        let iov = unsafe { [IoBuf::new(a.as_mut_ptr(), 3), IoBuf::new(b.as_mut_ptr(), 3)] };
        assert_eq!(scatter(&iov, 2, &[1, 2, 3, 4, 5]), 4);
        assert_eq!((a, b), ([0, 0, 1], [2, 3, 4]));
    }
}
