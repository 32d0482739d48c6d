//! The receive queue every provider shares (libfabric's `util_srx`):
//! posted receives (untagged and tagged), unexpected messages held in
//! bounded memory, `FI_MULTI_RECV`, `FI_PEEK`/`FI_CLAIM`/`FI_DISCARD`,
//! cancellation, truncation, and the completions they produce.
//!
//! Transports feed it arriving messages. A message whose data came along
//! is matched (or queued) at once; one whose data is still at the sender
//! (a rendezvous announcement, a remote buffer to read) is queued as
//! *deferred*, carrying a token `T` the transport chose. When a receive
//! matches it, the queue hands the token back in a [`DeferredMatch`] and
//! the transport fetches the data. One queue may therefore be fed by
//! several transports, each recognising its own tokens.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::ops::{IoBuf, IoVec, OptValue, RecvOp};
use crate::service::cq::{Completion, CqError};
use crate::service::ep_core::{Failure, Sinks};
use std::collections::VecDeque;

mod tagged;
mod unnamed;
pub use tagged::TaggedList;
pub use unnamed::Unnamed;

/// Default bound on the memory an endpoint holds for unexpected messages
/// (payload plus [`ENTRY_COST`] per message) before its transport stops
/// reading from peers (they then wait in flow control).
pub const UNEXPECTED_LIMIT: usize = 256 << 20;

/// What every held message counts against the bound on top of its
/// payload: its queue entry, the allocator's overhead for its buffer and
/// the queue's growth slack. So empty messages and rendezvous
/// announcements, which carry no payload here, cannot grow memory without
/// bound either.
pub const ENTRY_COST: usize = 288;

const _: () = assert!(core::mem::size_of::<Unexpected<[u64; 4]>>() * 2 <= ENTRY_COST);

/// A posted receive.
#[derive(Debug, Clone, Copy)]
pub struct Posted {
    pub iov: IoVec,
    pub src: fi_addr_t,
    pub ctx: usize,
    pub flags: u64,
    /// The engine's own flags of the receive (`ops::internal`).
    pub internal: u64,
    pub tag: Option<(u64, u64)>,
    /// Bytes of a multi-receive buffer already consumed.
    pub used: usize,
}

/// Whether a receive posted for source `wanted` takes a message from
/// `src` (`FI_ADDR_UNSPEC` and `FI_ADDR_NOTAVAIL` take any).
pub fn source_fits(wanted: fi_addr_t, src: fi_addr_t) -> bool {
    wanted == src || wanted == FI_ADDR_UNSPEC || wanted == FI_ADDR_NOTAVAIL
}

impl Posted {
    /// Captures the application's receive (the C boundary has already
    /// checked its iov count against the endpoint's limit). Inlined, so a
    /// provider can build it where it keeps it (a few hundred bytes).
    #[inline]
    pub fn new(op: &RecvOp<'_>) -> Posted {
        let n = op.iov.len().min(IoVec::CAP);
        Posted {
            iov: IoVec::from_slice(&op.iov[..n]).unwrap_or_default(),
            src: op.src,
            ctx: op.context,
            flags: op.flags,
            internal: op.internal,
            tag: op.tag,
            used: 0,
        }
    }

    /// Total capacity.
    pub fn capacity(&self) -> usize {
        self.iov.total_len()
    }

    /// Whether a message from `src` with `tag` goes here.
    pub fn matches(&self, src: fi_addr_t, tag: Option<u64>) -> bool {
        let src_ok = source_fits(self.src, src);
        let tag_ok = match (self.tag, tag) {
            (None, None) => true,
            (Some((want, ignore)), Some(t)) => (want | ignore) == (t | ignore),
            _ => false,
        };
        src_ok && tag_ok
    }

    /// The buffer region for the next message: the whole buffer, or for a
    /// multi-receive buffer what is left of it.
    pub fn region(&self) -> IoVec {
        self.iov.skip(self.used)
    }
}

/// Where one arriving message is written.
pub type Region = IoVec;

/// Who sent a message and what it carries besides its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsgInfo {
    /// The sender as the application names it (`FI_ADDR_NOTAVAIL` if
    /// unknown).
    pub src: fi_addr_t,
    /// Tag of a tagged message.
    pub tag: Option<u64>,
    /// Remote CQ data.
    pub data: Option<u64>,
}

/// A message whose data is still at the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deferred<T> {
    /// The transport's handle on the data (which connection, which
    /// message), given back on match.
    pub token: T,
    /// The message's length.
    pub len: usize,
}

/// A message that arrived before its receive.
#[derive(Debug)]
pub struct Unexpected<T> {
    pub msg: MsgInfo,
    /// The payload (empty for a deferred message).
    pub payload: Vec<u8>,
    /// Context of the `FI_PEEK | FI_CLAIM` that reserved it.
    pub claimed: Option<usize>,
    /// Set when the data is still at the sender.
    pub deferred: Option<Deferred<T>>,
    /// The transport's number for a sender the AV did not name when the
    /// message arrived (`msg.src` is `FI_ADDR_NOTAVAIL`); 0 when none
    /// ([`RxQueues::name_sources`]).
    pub from: u32,
}

impl<T> Unexpected<T> {
    /// Bytes it holds here, as counted against the bound.
    pub fn held(&self) -> usize {
        ENTRY_COST + self.payload.capacity()
    }

    /// The message's length.
    pub fn len(&self) -> usize {
        self.deferred.as_ref().map_or(self.payload.len(), |d| d.len)
    }

    /// Whether the message is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The checks every receive passes before it reaches a queue: a tag
/// needs `FI_TAGGED` among the endpoint's `caps` (`NoSys`), and a
/// multi-receive buffer takes no tag (`BadFlags`).
pub fn check_recv(op: &RecvOp<'_>, caps: u64) -> Result<()> {
    if op.tag.is_some() && caps & FI_TAGGED == 0 {
        return Err(Error::NoSys);
    }
    if op.flags & FI_MULTI_RECV != 0 && op.tag.is_some() {
        return Err(Error::BadFlags);
    }
    Ok(())
}

/// A receive as it is queued: without `FI_DIRECTED_RECV` among the
/// endpoint's `caps` its source address is ignored.
pub fn as_posted<'a>(op: &RecvOp<'a>, caps: u64) -> RecvOp<'a> {
    if caps & FI_DIRECTED_RECV == 0 {
        RecvOp {
            src: FI_ADDR_UNSPEC,
            ..*op
        }
    } else {
        *op
    }
}

/// A receive matched to a deferred message: the transport fetches the data
/// into `region` (or, when `discard`, tells the sender to drop it) and then
/// completes `recv`.
#[derive(Debug, Clone, Copy)]
pub struct DeferredMatch<T> {
    pub from: Deferred<T>,
    /// The message's sender as the queue names it at the match: named
    /// since it arrived if it was unnamed then ([`RxQueues::name_sources`]),
    /// so what the transport kept of the message is brought up to date.
    pub src: fi_addr_t,
    pub recv: Posted,
    pub region: Region,
    /// A multi-receive buffer stays posted.
    pub keep: bool,
    /// `FI_DISCARD`: no data is wanted.
    pub discard: bool,
}

impl<T> DeferredMatch<T> {
    fn whole(from: Deferred<T>, src: fi_addr_t, recv: Posted) -> DeferredMatch<T> {
        DeferredMatch {
            from,
            src,
            region: recv.region(),
            recv,
            keep: false,
            discard: false,
        }
    }

    fn discard(from: Deferred<T>, src: fi_addr_t, recv: Posted) -> DeferredMatch<T> {
        DeferredMatch {
            discard: true,
            ..DeferredMatch::whole(from, src, recv)
        }
    }
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

/// Everything on the receive side of one endpoint; `T` is the
/// transport's token for deferred messages.
pub struct RxQueues<T> {
    pub posted: VecDeque<Posted>,
    pub posted_tagged: TaggedList,
    pub unexpected: VecDeque<Unexpected<T>>,
    pub unexpected_bytes: usize,
    /// Bound on `unexpected_bytes` ([`UNEXPECTED_LIMIT`] by default).
    pub unexpected_limit: usize,
    /// `FI_OPT_MIN_MULTI_RECV`.
    pub min_multi_recv: usize,
}

impl<T> Default for RxQueues<T> {
    fn default() -> RxQueues<T> {
        RxQueues {
            posted: VecDeque::new(),
            posted_tagged: TaggedList::default(),
            unexpected: VecDeque::new(),
            unexpected_bytes: 0,
            unexpected_limit: UNEXPECTED_LIMIT,
            min_multi_recv: 0,
        }
    }
}

impl<T: Copy> RxQueues<T> {
    /// Whether a receive `op` would take a queued unexpected message
    /// (without taking it).
    pub fn has_match(&self, op: &RecvOp<'_>) -> bool {
        let p = Posted::new(op);
        self.unexpected
            .iter()
            .any(|u| u.claimed.is_none() && p.matches(u.msg.src, u.msg.tag))
    }

    /// Whether a receive may be queued now: `FI_PEEK` and `FI_CLAIM`
    /// always (they queue nothing); others while fewer than `limit`
    /// receives are posted and the CQ has room for their completions.
    pub fn recv_room(&self, op: &RecvOp<'_>, limit: usize, sinks: &Sinks) -> bool {
        op.flags & (FI_PEEK | FI_CLAIM) != 0
            || (self.posted_count() < limit && sinks.rx_room(op.flags))
    }

    /// Number of receives posted.
    pub fn posted_count(&self) -> usize {
        self.posted.len() + self.posted_tagged.len()
    }

    /// Finds the receive for an arriving message.
    pub fn place(&mut self, src: fi_addr_t, tag: Option<u64>, len: usize) -> Placement {
        self.place_inner(src, tag, len, false)
    }

    /// `place` for a deferred message, whose data comes later: a
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
        let min_multi = self.min_multi_recv.max(1);
        // Takes `len` bytes of a multi-receive buffer; true when it stays
        // posted.
        let keep = |p: &mut Posted| {
            if p.flags & FI_MULTI_RECV == 0 {
                return false;
            }
            let left = p.capacity() - p.used;
            let keep = !last && left.saturating_sub(len) >= min_multi;
            if keep {
                p.used += len.min(left);
            }
            keep
        };
        let found = match tag {
            Some(t) => self.posted_tagged.with_match(src, t, |p| {
                let before = *p;
                let kept = keep(p);
                (!kept, (before, kept))
            }),
            None => {
                let q = &mut self.posted;
                q.iter().position(|p| p.matches(src, None)).map(|i| {
                    let before = q[i];
                    let kept = keep(&mut q[i]);
                    if !kept {
                        q.remove(i);
                    }
                    (before, kept)
                })
            }
        };
        let Some((p, keep)) = found else {
            return Placement::Unexpected;
        };
        Placement::Posted {
            recv: p,
            region: p.region(),
            keep,
        }
    }

    /// Whether a message from `src` with `tag` would go to a posted
    /// receive (nothing changes): a transport whose unexpected messages
    /// fill their bound still takes the messages receives wait for.
    pub fn posted_fits(&self, src: fi_addr_t, tag: Option<u64>) -> bool {
        match tag {
            Some(t) => self.posted_tagged.fits_any(src, t),
            None => self.posted.iter().any(|p| p.matches(src, None)),
        }
    }

    /// Whether one more unexpected message with `len` bytes of payload
    /// here (0 for a deferred one) fits.
    pub fn unexpected_room(&self, len: usize) -> bool {
        self.unexpected_bytes
            .saturating_add(ENTRY_COST)
            .saturating_add(len)
            <= self.unexpected_limit
    }

    /// Queues an unexpected message.
    pub fn push_unexpected(&mut self, u: Unexpected<T>) {
        self.unexpected_bytes += u.held();
        self.unexpected.push_back(u);
    }

    /// Queues a message whose data is not here yet (see [`Deferred`]):
    /// `token` is what the transport fetches it by once a receive
    /// matches.
    pub fn push_deferred(&mut self, msg: MsgInfo, token: T, len: usize) {
        self.push_deferred_from(msg, 0, token, len);
    }

    /// [`RxQueues::push_deferred`] of a message from a sender the
    /// transport numbers `from` ([`Unexpected::from`]).
    pub fn push_deferred_from(&mut self, msg: MsgInfo, from: u32, token: T, len: usize) {
        self.push_unexpected(Unexpected {
            msg,
            payload: Vec::new(),
            claimed: None,
            deferred: Some(Deferred { token, len }),
            from,
        });
    }

    /// Names the senders of unexpected messages that arrived before the
    /// application inserted them into its AV: each message whose source
    /// is `FI_ADDR_NOTAVAIL` and whose transport numbered its sender
    /// ([`Unexpected::from`]) takes `name(from)` when that is an address,
    /// so a directed receive posted after the insert finds it (as
    /// upstream's utility layer looks its unexpected messages up again on
    /// an insert; fabtests' `fi_unexpected_msg` does exactly this).
    pub fn name_sources(&mut self, mut name: impl FnMut(u32) -> fi_addr_t) {
        for u in self.unexpected.iter_mut() {
            if u.from != 0 && u.msg.src == FI_ADDR_NOTAVAIL {
                let a = name(u.from);
                if a != FI_ADDR_NOTAVAIL {
                    u.msg.src = a;
                    u.from = 0;
                }
            }
        }
    }

    /// Delivers a message whose whole payload is here: into a matching
    /// receive (completing it), else queued as unexpected. The payload is
    /// copied (or, given as a `Vec`, kept) only in the unexpected case.
    #[inline]
    pub fn deliver<P: AsRef<[u8]> + Into<Vec<u8>>>(
        &mut self,
        msg: MsgInfo,
        payload: P,
        sinks: &Sinks,
    ) {
        self.deliver_from(msg, 0, payload, sinks)
    }

    /// [`RxQueues::deliver`] of a message from a sender the transport
    /// numbers `from` ([`Unexpected::from`]).
    #[inline]
    pub fn deliver_from<P: AsRef<[u8]> + Into<Vec<u8>>>(
        &mut self,
        msg: MsgInfo,
        from: u32,
        payload: P,
        sinks: &Sinks,
    ) {
        let bytes = payload.as_ref();
        if self.deliver_posted(msg, bytes, sinks) {
            return;
        }
        match self.place(msg.src, msg.tag, bytes.len()) {
            Placement::Posted { recv, region, keep } => {
                let n = region.scatter(0, bytes);
                complete_into(&recv, &region, n, bytes.len() - n, msg, sinks, !keep);
            }
            Placement::Unexpected => self.push_unexpected(Unexpected {
                msg,
                payload: payload.into(),
                claimed: None,
                deferred: None,
                from,
            }),
        }
    }

    /// [`Self::deliver`] of a message whose whole payload is `bytes`, for
    /// the case that matters to latency: an ordinary (not multi-receive)
    /// posted receive matches. It is filled and completed where it sits in
    /// the queue, not moved out first (the generic path copies the receive
    /// and its region, some 350 bytes, three times per message). False,
    /// with nothing changed, when no such receive is posted.
    pub fn deliver_posted(&mut self, msg: MsgInfo, bytes: &[u8], sinks: &Sinks) -> bool {
        let fill = |p: &Posted| {
            if p.flags & FI_MULTI_RECV != 0 {
                return false;
            }
            let n = p.iov.scatter(0, bytes);
            complete_into(p, &p.iov, n, bytes.len() - n, msg, sinks, true);
            true
        };
        match msg.tag {
            Some(t) => self
                .posted_tagged
                .with_match(msg.src, t, |p| {
                    let done = fill(p);
                    (done, done)
                })
                .unwrap_or(false),
            None => {
                let q = &mut self.posted;
                let Some(i) = q.iter().position(|p| p.matches(msg.src, None)) else {
                    return false;
                };
                if !fill(&q[i]) {
                    return false;
                }
                q.remove(i);
                true
            }
        }
    }

    fn take_unexpected(&mut self, i: usize) -> Unexpected<T> {
        let u = self.unexpected.remove(i).expect("index checked");
        self.unexpected_bytes -= u.held();
        u
    }

    /// Handles a newly posted receive: against unexpected messages first
    /// (completing it at once), else queues it. `FI_PEEK`, `FI_CLAIM` and
    /// `FI_DISCARD` are handled here too. Matches with deferred messages are
    /// returned for the transport to fetch (an empty Vec, which does not
    /// allocate, in every other case).
    pub fn post(&mut self, op: &RecvOp<'_>, sinks: &Sinks) -> Vec<DeferredMatch<T>> {
        let p = Posted::new(op);
        let discard = op.flags & FI_DISCARD != 0;
        if op.flags & FI_CLAIM != 0 && op.flags & FI_PEEK == 0 {
            // Take the message a previous FI_PEEK|FI_CLAIM reserved.
            let Some(i) = self
                .unexpected
                .iter()
                .position(|u| u.claimed == Some(op.context))
            else {
                sinks.rx_err(&p, Failure::code(FI_ENOMSG), 0, 0);
                return Vec::new();
            };
            let u = self.take_unexpected(i);
            if discard {
                sinks.rx_done(&p, completion(&p, 0, 0, u.msg), 0);
                return u
                    .deferred
                    .map(|from| DeferredMatch::discard(from, u.msg.src, p))
                    .into_iter()
                    .collect();
            }
            return match u.deferred {
                Some(from) => vec![DeferredMatch::whole(from, u.msg.src, p)],
                None => {
                    deliver_unexpected(&p, u, sinks);
                    Vec::new()
                }
            };
        }
        let found = self
            .unexpected
            .iter()
            .position(|u| u.claimed.is_none() && p.matches(u.msg.src, u.msg.tag));
        if op.flags & FI_PEEK != 0 {
            let Some(i) = found else {
                sinks.rx_err(&p, Failure::code(FI_ENOMSG), 0, 0);
                return Vec::new();
            };
            let (len, msg, deferred) = {
                let u = &self.unexpected[i];
                (u.len(), u.msg, u.deferred)
            };
            let mut answer = Vec::new();
            if discard {
                self.take_unexpected(i);
                answer.extend(deferred.map(|from| DeferredMatch::discard(from, msg.src, p)));
            } else if op.flags & FI_CLAIM != 0 {
                self.unexpected[i].claimed = Some(op.context);
            }
            sinks.rx_done(&p, completion(&p, len, 0, msg), 0);
            return answer;
        }
        let Some(i) = found else {
            if op.tag.is_some() {
                self.posted_tagged.push_back(p);
            } else {
                self.posted.push_back(p);
            }
            return Vec::new();
        };
        if p.flags & FI_MULTI_RECV == 0 {
            let u = self.take_unexpected(i);
            return match u.deferred {
                Some(from) => vec![DeferredMatch::whole(from, u.msg.src, p)],
                None => {
                    deliver_unexpected(&p, u, sinks);
                    Vec::new()
                }
            };
        }
        // Fill the multi-receive buffer with as many queued messages as
        // fit, then keep it posted if room is left.
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
            if let Some(from) = u.deferred {
                // Its bytes arrive later: it is the buffer's last message
                // (see `place_last`).
                return vec![DeferredMatch {
                    from,
                    src: u.msg.src,
                    recv: p,
                    region,
                    keep: false,
                    discard: false,
                }];
            }
            region.scatter(0, &u.payload);
            complete_into(&p, &region, n, len - n, u.msg, sinks, release);
            p.used += n;
            if release {
                return Vec::new();
            }
            i = self
                .unexpected
                .iter()
                .position(|u| u.claimed.is_none() && p.matches(u.msg.src, u.msg.tag));
        }
        self.posted.push_back(p);
        Vec::new()
    }

    /// Forgets deferred messages whose token `gone` says can no longer
    /// deliver (their connection died).
    pub fn drop_deferred(&mut self, mut gone: impl FnMut(&T) -> bool) {
        let before = self.unexpected.len();
        self.unexpected
            .retain(|u| u.deferred.as_ref().is_none_or(|d| !gone(&d.token)));
        self.unexpected_bytes -= (before - self.unexpected.len()) * ENTRY_COST;
    }

    /// `fi_cancel`: removes the receive posted with `ctx` and reports it
    /// `FI_ECANCELED`; `NoEnt` when there is none.
    pub fn cancel(&mut self, ctx: usize, sinks: &Sinks) -> Result<()> {
        let p = match self.posted.iter().position(|p| p.ctx == ctx) {
            Some(i) => self.posted.remove(i),
            None => self.posted_tagged.remove_where(|p| p.ctx == ctx),
        };
        let p = p.ok_or(Error::NoEnt)?;
        sinks.rx_err(&p, Failure::code(FI_ECANCELED), 0, 0);
        Ok(())
    }

    /// `fi_getopt` for the options the receive queue owns
    /// (`FI_OPT_MIN_MULTI_RECV`); `NoProtoOpt` for any other.
    pub fn getopt(&self, level: c_int, name: c_int) -> Result<OptValue> {
        match (level, name) {
            (FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV) => Ok(OptValue::Size(self.min_multi_recv)),
            _ => Err(Error::NoProtoOpt),
        }
    }

    /// `fi_setopt` for the options the receive queue owns.
    pub fn setopt(&mut self, level: c_int, name: c_int, v: OptValue) -> Result<()> {
        match (level, name, v) {
            (FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, OptValue::Size(n)) => {
                self.min_multi_recv = n;
                Ok(())
            }
            _ => Err(Error::NoProtoOpt),
        }
    }

    /// Fails every posted receive (endpoint shut down or closed).
    pub fn fail_all(&mut self, f: Failure, sinks: &Sinks) {
        for p in self.posted.drain(..).chain(self.posted_tagged.drain()) {
            sinks.rx_err(&p, f, 0, 0);
        }
    }
}

fn deliver_unexpected<T>(p: &Posted, u: Unexpected<T>, sinks: &Sinks) {
    let region = p.region();
    let n = region.scatter(0, &u.payload);
    let trunc = u.payload.len() - n;
    complete_into(
        p,
        &region,
        n,
        trunc,
        u.msg,
        sinks,
        p.flags & FI_MULTI_RECV != 0,
    );
}

fn completion(p: &Posted, len: usize, buf: usize, msg: MsgInfo) -> Completion {
    Completion {
        op_context: p.ctx,
        flags: rx_flags(msg.tag.is_some() || p.tag.is_some(), msg.data),
        len,
        buf,
        data: msg.data.unwrap_or(0),
        tag: msg.tag.unwrap_or(0),
        src: msg.src,
    }
}

/// Reports a delivered message of which `n` bytes landed in `region` and
/// `truncated` did not fit (an `FI_ETRUNC` error completion then);
/// `release_multi` says a multi-receive buffer is handed back with it.
pub fn complete_into(
    p: &Posted,
    region: &[IoBuf],
    n: usize,
    truncated: usize,
    msg: MsgInfo,
    sinks: &Sinks,
    release_multi: bool,
) {
    let buf = region.first().map_or(0, IoBuf::addr);
    let extra = if p.flags & FI_MULTI_RECV != 0 && release_multi {
        FI_MULTI_RECV
    } else {
        0
    };
    let mut comp = completion(p, n, buf, msg);
    comp.flags |= extra;
    if truncated > 0 {
        sinks.rx_err_full(
            p,
            CqError {
                comp,
                olen: truncated,
                err: FI_ETRUNC,
                // What `fi_cq_strerror` explains: the message was longer than
                // the buffer ("Message too long"), not "Success".
                prov_errno: FI_EMSGSIZE as c_int,
                err_data: Vec::new(),
            },
        );
    } else {
        sinks.rx_done(p, comp, extra);
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

    fn buf(b: &mut [u8]) -> IoBuf {
        // SAFETY: the test keeps `b` alive and untouched while the IoBuf is used.
        unsafe { IoBuf::new(b.as_mut_ptr(), b.len()) }
    }

    /// A receive from source 3 of tags 0x10-0x1f into `iov`.
    fn tagged_from_3(iov: &[IoBuf]) -> RecvOp<'_> {
        RecvOp {
            iov,
            desc: &[],
            src: 3,
            context: 1,
            flags: 0,
            internal: 0,
            tag: Some((0x10, 0x0f)),
        }
    }

    #[test]
    fn tag_matching_with_ignore_and_source() {
        let mut b = [0u8; 4];
        let iov = [buf(&mut b)];
        let op = tagged_from_3(&iov);
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
        let iov = IoVec::from_slice(&[buf(&mut a), buf(&mut b)]).unwrap();
        assert_eq!(iov.scatter(2, &[1, 2, 3, 4, 5]), 4);
        assert_eq!((a, b), ([0, 0, 1], [2, 3, 4]));
    }

    #[test]
    fn fill_at_hands_out_each_buffers_piece_in_order() {
        let mut a = [0u8; 3];
        let mut b = [0u8; 3];
        let iov = IoVec::from_slice(&[buf(&mut a), buf(&mut b)]).unwrap();
        let mut next = 1u8;
        let n = iov.fill_at(1, 4, |d| {
            for x in d.iter_mut() {
                *x = next;
                next += 1;
            }
        });
        assert_eq!(n, 4);
        assert_eq!((a, b), ([0, 1, 2], [3, 4, 0]));
        assert_eq!(iov.fill_at(5, 9, |d| d.fill(9)), 1, "clamped to the list");
        assert_eq!(b, [3, 4, 9]);
    }

    #[test]
    fn deferred_message_hands_its_token_back_on_match() {
        let mut q: RxQueues<u32> = RxQueues::default();
        let msg = MsgInfo {
            src: 7,
            tag: None,
            data: None,
        };
        q.push_unexpected(Unexpected {
            msg,
            payload: Vec::new(),
            claimed: None,
            deferred: Some(Deferred { token: 42, len: 9 }),
            from: 0,
        });
        let mut b = [0u8; 16];
        let iov = [buf(&mut b)];
        let op = RecvOp {
            iov: &iov,
            desc: &[],
            src: FI_ADDR_UNSPEC,
            context: 5,
            flags: 0,
            internal: 0,
            tag: None,
        };
        let m = q.post(&op, &Sinks::default());
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].from.token, m[0].from.len, m[0].recv.ctx), (42, 9, 5));
        assert_eq!(q.unexpected_bytes, 0);
    }

    #[test]
    fn posted_fits_looks_without_taking() {
        let mut q: RxQueues<u32> = RxQueues::default();
        let mut b = [0u8; 4];
        let iov = [buf(&mut b)];
        let op = tagged_from_3(&iov);
        assert!(q.post(&op, &Sinks::default()).is_empty());
        assert!(q.posted_fits(3, Some(0x1f)));
        assert!(q.posted_fits(3, Some(0x10)), "asked twice: still there");
        assert!(!q.posted_fits(4, Some(0x10)), "another source");
        assert!(!q.posted_fits(3, None), "untagged: none posted");
        assert_eq!(q.posted_count(), 1);
    }

    #[test]
    fn an_unnamed_sender_is_named_after_an_insert() {
        let mut q: RxQueues<u32> = RxQueues::default();
        let sinks = Sinks::default();
        let unnamed = MsgInfo {
            src: FI_ADDR_NOTAVAIL,
            tag: Some(0x10),
            data: None,
        };
        q.deliver_from(unnamed, 3, [1u8, 2], &sinks);
        q.deliver_from(unnamed, 4, [3u8], &sinks);
        q.push_deferred_from(unnamed, 3, 9, 100);
        // The AV names sender 3 (as fi_addr 3), not sender 4.
        q.name_sources(|n| if n == 3 { 3 } else { FI_ADDR_NOTAVAIL });
        let srcs: Vec<_> = q.unexpected.iter().map(|u| (u.msg.src, u.from)).collect();
        assert_eq!(srcs, [(3, 0), (FI_ADDR_NOTAVAIL, 4), (3, 0)]);
        let mut b = [0u8; 4];
        let iov = [buf(&mut b)];
        let op = tagged_from_3(&iov);
        assert!(
            q.post(&op, &sinks).is_empty(),
            "the directed receive took it"
        );
        assert_eq!(q.unexpected.len(), 2);
        assert_eq!(b[..2], [1, 2]);
        // The deferred one goes to the next, with its new name.
        let m = q.post(&op, &sinks);
        assert_eq!((m.len(), m[0].src, m[0].from.token), (1, 3, 9));
    }
}
