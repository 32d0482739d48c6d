//! Collective operations (fi_collective(3), fi_av_set(3)) for every
//! provider whose endpoints carry tagged messages: AV sets, joining a
//! group, and barrier, broadcast, allreduce, allgather, reduce, scatter,
//! gather, all-to-all and reduce-scatter over the endpoint's own tagged
//! sends and receives.
//!
//! - **Messages.** A collective is a set of tagged messages between the
//!   members (`plan.rs` says which), posted through the endpoint's
//!   ordinary `EndpointOps::send`/`recv` on the caller's thread, all at
//!   the call. Their tag is [`TAG_FLAG`] (bit 63, as upstream's utility
//!   layer uses), the group's number, the collective's number within the
//!   group and the sender's rank, and receives ask for that exact tag: a
//!   message that arrives before its receive waits as any unexpected
//!   message does. Applications of an endpoint with `FI_COLLECTIVE` must
//!   not receive with ignore bits that cover bit 63.
//! - **Completions.** The messages carry `internal::COLLECTIVE` and, as
//!   their context, the key of their collective; `ep_core::Sinks` hands
//!   their completions to [`sub_done`] instead of the application's CQ.
//!   When the last one is in, the collective finishes (a reduction is
//!   computed) and reports on the endpoint's transmit CQ with
//!   `FI_COLLECTIVE` (an error completion if any message failed), or, for
//!   a join, on the endpoint's EQ as `FI_JOIN_COMPLETE`.
//! - **Failures.** A collective whose message fails (a send to a member
//!   that is gone, for one) cannot complete; its receives that still wait
//!   might wait for ever on that member, so they are canceled once all
//!   its messages are posted (by their contexts, marked with
//!   [`CTX_MARK`]), and the collective reports the first failure when every
//!   message is accounted for. A member that only receives from a member
//!   that died sends nothing that could fail: for it, the transports say
//!   when a peer is gone ([`peer_gone`]: its connection or link ended
//!   without the agreed close), and the receives of collectives that wait
//!   for that peer's message are canceled the same way, as are receives
//!   from it posted later.
//! - **Groups.** A join is a barrier among the set's members; the group's
//!   number comes from the members' addresses and how many groups of
//!   those members this endpoint joined before, which every member counts
//!   alike since joins are collective. Ranks are the set's order; the
//!   caller's rank is the member whose address is its own `fi_getname`.
//!   `fi_mc_addr` of the group is its key in the table of groups.
//! - **Roots.** A `root_addr` names a member by its `fi_addr_t`; when no
//!   member has it and it is below the group's size it is taken as a
//!   rank, as upstream's utility layer reads it.

mod plan;
pub mod set;

pub use plan::{query, Bufs, Kind};

use crate::abi::*;
use crate::error::{Error, Result};
use crate::ops::{internal, EndpointOps, IoBuf, RecvOp, SendOp};
use crate::service::av::AddressVector;
use crate::service::ep_core::{Failure, Sinks};
use crate::service::eq::{EqError, Event, EventData, EventQueue};
use crate::service::trigger::{self, Job};
use plan::{Finish, Post, Where};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// The tag bit of collective messages.
pub const TAG_FLAG: u64 = 1 << 63;
/// Set in the context of every collective message (the rest is its
/// collective's key), so that its receives can be canceled through
/// `EndpointOps::cancel` by context without touching an application's
/// receive: an application's contexts are pointers (or small numbers),
/// which never have the top bit set in this process's address space.
pub const CTX_MARK: usize = 1 << (usize::BITS - 1);
/// Most members of a group (the tag's rank field).
pub const MAX_MEMBERS: usize = 1 << 20;
/// A message's context is its collective's key shifted by this much, and
/// for a receive its number among the collective's receives plus one, so
/// that one receive (the one from a member that is gone) can be canceled
/// by its context.
const RECV_BITS: u32 = 24;
const CID_SHIFT: u32 = 40;
const CID_MASK: u64 = (1 << 23) - 1;
const SEQ_SHIFT: u32 = 20;
const SEQ_MASK: u64 = (1 << 20) - 1;

/// The tag of the message member `sender` sends in collective `seq` of
/// group `cid`.
fn tag(cid: u32, seq: u32, sender: usize) -> u64 {
    TAG_FLAG
        | (u64::from(cid) & CID_MASK) << CID_SHIFT
        | (u64::from(seq) & SEQ_MASK) << SEQ_SHIFT
        | (sender as u64 & (MAX_MEMBERS as u64 - 1))
}

/// A joined group.
pub struct Group {
    ep: Weak<dyn EndpointOps>,
    /// The endpoint (an address naming it).
    ep_key: usize,
    /// Members' addresses by rank.
    pub members: Vec<fi_addr_t>,
    /// The caller's rank.
    pub me: usize,
    cid: u32,
    /// The next collective's number (0 was the join's).
    seq: AtomicU32,
}

/// Groups by their `fi_mc_addr`.
static GROUPS: Mutex<Vec<(u64, Arc<Group>)>> = Mutex::new(Vec::new());
/// Collective addresses start high, far from any AV index an
/// application might pass by mistake.
static NEXT_GROUP: AtomicU64 = AtomicU64::new(0x6f78_0000_0000_0001);
/// Joins per endpoint and member list (see the module's notes).
static JOINS: Mutex<Vec<((usize, u64), u32)>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The group behind a collective address.
pub fn group(addr: fi_addr_t) -> Option<Arc<Group>> {
    lock(&GROUPS)
        .iter()
        .find(|(k, _)| *k == addr)
        .map(|(_, g)| g.clone())
}

/// `fi_close` of a group.
pub fn leave(addr: fi_addr_t) {
    lock(&GROUPS).retain(|(k, _)| *k != addr);
}

/// The key of an endpoint.
pub fn ep_key(ep: &Arc<dyn EndpointOps>) -> usize {
    Arc::as_ptr(ep) as *const () as usize
}

/// The key of an endpoint as its provider sees it (`self`): the same as
/// [`ep_key`] of the `Arc` the application's handle holds.
pub fn key_of<E: ?Sized>(ep: &E) -> usize {
    ep as *const E as *const () as usize
}

/// How a finished collective reports.
enum Done {
    /// On the transmit CQ of these sinks, with this context.
    App { sinks: Box<Sinks>, ctx: usize },
    /// As `FI_JOIN_COMPLETE` for group object `fid` on `eq`.
    Join {
        eq: Arc<EventQueue>,
        fid: usize,
        ctx: usize,
    },
}

/// A collective under way.
struct Op {
    ep_key: usize,
    ep: Weak<dyn EndpointOps>,
    /// Messages not completed, plus one while they are being posted.
    pending: usize,
    /// All its messages were posted (the posting guard is gone).
    posted: bool,
    /// Its receives not yet matched are being canceled (a message failed).
    canceling: bool,
    failed: Option<Failure>,
    /// Why its receives from a member that is gone were canceled
    /// ([`peer_gone`]): what their `FI_ECANCELED` reports instead.
    gone: Option<Failure>,
    /// Its receives: their contexts and the member each waits for.
    recvs: Vec<(usize, fi_addr_t)>,
    temps: Vec<Vec<u8>>,
    finish: Finish,
    done: Done,
}

static OPS: Mutex<Vec<(usize, Op)>> = Mutex::new(Vec::new());
/// Peers the transports reported gone, by endpoint ([`peer_gone`]);
/// `ANY_GONE` keeps the lookup off the posting path while there are none.
static GONE: Mutex<Vec<(usize, fi_addr_t, Failure)>> = Mutex::new(Vec::new());
static ANY_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static NEXT_OP: AtomicUsize = AtomicUsize::new(1);

/// A new collective address (the caller puts it in the group object it
/// makes before [`join`]).
pub fn next_addr() -> fi_addr_t {
    NEXT_GROUP.fetch_add(1, Ordering::Relaxed)
}

/// `fi_join_collective` of endpoint `ep` (whose AV is `av`) to the
/// members of an AV set, as group `addr` (from [`next_addr`]); `mc_fid`
/// is the group object the caller made, which the `FI_JOIN_COMPLETE`
/// event names with `context`.
#[allow(clippy::too_many_arguments)]
pub fn join(
    ep: &Arc<dyn EndpointOps>,
    av: &AddressVector,
    members: &[fi_addr_t],
    eq: Arc<EventQueue>,
    mc_fid: usize,
    context: usize,
    addr: fi_addr_t,
) -> Result<()> {
    if members.is_empty() || members.len() > MAX_MEMBERS {
        crate::core_warn!(
            FI_LOG_EP_CTRL,
            "fi_join_collective: a set of {} members (1 to {MAX_MEMBERS})",
            members.len()
        );
        return Err(Error::Inval);
    }
    let mine = ep.getname()?;
    let my_sa = av.format.socket_addr(&mine);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut me = None;
    for (rank, a) in members.iter().enumerate() {
        let Some(e) = av.lookup(*a) else {
            crate::core_warn!(
                FI_LOG_EP_CTRL,
                "fi_join_collective: member {a} is no longer in the AV"
            );
            return Err(Error::Inval);
        };
        if e.raw == mine || (e.sa.is_some() && e.sa == my_sa) {
            me.get_or_insert(rank);
        }
        for b in e.raw.iter().chain(&[0xff]) {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    let Some(me) = me else {
        crate::core_warn!(
            FI_LOG_EP_CTRL,
            "fi_join_collective: this endpoint's address is not in the set"
        );
        return Err(Error::Inval);
    };
    let key = ep_key(ep);
    let nth = {
        let mut j = lock(&JOINS);
        match j.iter_mut().find(|(k, _)| *k == (key, hash)) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                j.push(((key, hash), 0));
                0
            }
        }
    };
    let cid = ((hash ^ u64::from(nth).wrapping_mul(0x9e37_79b9)) & CID_MASK) as u32;
    let g = Arc::new(Group {
        ep: Arc::downgrade(ep),
        ep_key: key,
        members: members.to_vec(),
        me,
        cid,
        seq: AtomicU32::new(1),
    });
    crate::core_info!(
        FI_LOG_EP_CTRL,
        "joining a collective group of {} members as rank {me} (group number {cid:#x})",
        members.len()
    );
    let empty = dangling();
    let p = plan::plan(
        Kind::Barrier,
        g.members.len(),
        me,
        &Bufs {
            buf: empty,
            result: empty,
            count: 0,
            datatype: FI_VOID,
        },
    )?;
    start(
        &g,
        0,
        p,
        Done::Join {
            eq,
            fid: mc_fid,
            ctx: context,
        },
    )?;
    lock(&GROUPS).push((addr, g));
    Ok(())
}

/// An empty buffer.
fn dangling() -> IoBuf {
    // SAFETY: a zero-length range is never read or written.
    unsafe { IoBuf::new(std::ptr::NonNull::dangling().as_ptr(), 0) }
}

/// The rank `root_addr` names in `g` (see the module's notes).
pub fn root_rank(g: &Group, root_addr: fi_addr_t) -> Result<usize> {
    if let Some(r) = g.members.iter().position(|m| *m == root_addr) {
        return Ok(r);
    }
    match usize::try_from(root_addr) {
        Ok(r) if r < g.members.len() => Ok(r),
        _ => {
            crate::core_warn!(
                FI_LOG_EP_DATA,
                "collective: root {root_addr:#x} is not a member of the group"
            );
            Err(Error::Inval)
        }
    }
}

/// Starts collective `kind` on group `g` for endpoint `ep` (which must be
/// the one that joined it); it reports on the endpoint's transmit CQ
/// with `context`.
pub fn post(
    ep: &Arc<dyn EndpointOps>,
    g: &Arc<Group>,
    kind: Kind,
    bufs: &Bufs,
    context: usize,
) -> Result<()> {
    if ep_key(ep) != g.ep_key {
        crate::core_warn!(
            FI_LOG_EP_DATA,
            "collective: the group was joined by another endpoint"
        );
        return Err(Error::Inval);
    }
    let Some(sinks) = ep.completion_sinks() else {
        return Err(Error::NoCq);
    };
    if sinks.tx_cq.is_none() {
        crate::core_warn!(
            FI_LOG_EP_DATA,
            "collective: the endpoint has no transmit CQ to report on"
        );
        return Err(Error::NoCq);
    }
    let p = plan::plan(kind, g.members.len(), g.me, bufs)?;
    let seq = g.seq.fetch_add(1, Ordering::Relaxed);
    start(
        g,
        seq,
        p,
        Done::App {
            sinks: Box::new(sinks),
            ctx: context,
        },
    )
}

/// One message ready to post.
#[derive(Clone, Copy)]
struct Ready {
    send: bool,
    peer: fi_addr_t,
    tag: u64,
    buf: IoBuf,
    /// Its context (without [`CTX_MARK`]).
    ctx: usize,
}

impl Ready {
    /// Posts it, or, for a receive from a member the endpoint's
    /// transport reported gone, fails it at once.
    fn post(&self, ep: &dyn EndpointOps, ep_key: usize) -> Result<()> {
        if !self.send {
            if let Some(f) = gone(ep_key, self.peer) {
                sub_done(self.ctx, Some(f));
                return Ok(());
            }
        }
        self.issue(ep)
    }

    fn issue(&self, ep: &dyn EndpointOps) -> Result<()> {
        let iov = [self.buf];
        let iov: &[IoBuf] = if self.buf.is_empty() { &[] } else { &iov };
        if self.send {
            ep.send(&SendOp {
                iov,
                desc: &[],
                dest: self.peer,
                context: CTX_MARK | self.ctx,
                flags: FI_COMPLETION | FI_TRANSMIT_COMPLETE,
                internal: internal::COLLECTIVE,
                data: None,
                tag: Some(self.tag),
            })
        } else {
            ep.recv(&RecvOp {
                iov,
                desc: &[],
                src: FI_ADDR_UNSPEC,
                context: CTX_MARK | self.ctx,
                flags: FI_COMPLETION,
                internal: internal::COLLECTIVE,
                tag: Some((self.tag, 0)),
            })
        }
    }
}

/// Registers the collective, posts its messages, and lets it finish when
/// they complete. An error before any message went out is returned (and
/// nothing remains); later ones end in an error completion.
fn start(g: &Arc<Group>, seq: u32, p: plan::Plan, done: Done) -> Result<()> {
    let ep = g.ep.upgrade().ok_or(Error::OpBadState)?;
    let key = NEXT_OP.fetch_add(1, Ordering::Relaxed) & (usize::MAX >> (RECV_BITS + 1));
    let mut op = Op {
        ep_key: g.ep_key,
        ep: Arc::downgrade(&ep),
        pending: p.posts.len() + 1,
        posted: false,
        canceling: false,
        failed: None,
        gone: None,
        recvs: Vec::new(),
        temps: p.temps,
        finish: p.finish,
        done,
    };
    let mut nrecv = 0usize;
    // The receive buffers of contributions are the operation's; the
    // Vecs move into the table below, their heap memory does not.
    let ready: VecDeque<Ready> = p
        .posts
        .iter()
        .map(|Post { peer, send, buf }| {
            let mut ctx = key << RECV_BITS;
            if !*send {
                nrecv += 1;
                ctx |= nrecv & ((1 << RECV_BITS) - 1);
                op.recvs.push((ctx, g.members[*peer]));
            }
            Ready {
                send: *send,
                peer: g.members[*peer],
                tag: tag(g.cid, seq, if *send { g.me } else { *peer }),
                buf: match buf {
                    Where::App(b) => *b,
                    Where::Temp(r) => {
                        let t = &mut op.temps[*r];
                        // SAFETY: the operation owns the Vec until it
                        // finishes, after every message into it completed.
                        unsafe { IoBuf::new(t.as_mut_ptr(), t.len()) }
                    }
                    Where::Empty => dangling(),
                },
                ctx,
            }
        })
        .collect();
    lock(&OPS).push((key, op));
    let mut left = ready;
    let mut first = true;
    while let Some(r) = left.front().copied() {
        match r.post(&*ep, g.ep_key) {
            Ok(()) => {
                left.pop_front();
                first = false;
            }
            Err(Error::Again) => {
                // The endpoint's queue is full: the rest go from the
                // trigger runner, which retries while it is.
                // It releases the posting guard once they are posted.
                trigger::run_due(
                    vec![Box::new(PostRest {
                        ep: Arc::downgrade(&ep),
                        ep_key: g.ep_key,
                        key,
                        left,
                    })],
                    false,
                );
                return Ok(());
            }
            Err(e) if first => {
                lock(&OPS).retain(|(k, _)| *k != key);
                return Err(e);
            }
            Err(e) => {
                crate::core_warn!(
                    FI_LOG_EP_DATA,
                    "collective: a message could not be posted: {e:?}"
                );
                let n = left.len();
                left.clear();
                fail_some(key, n, Failure::code(e.code().abs()));
            }
        }
    }
    release(key)
}

/// The posting guard of collective `key` is released.
fn release(key: usize) -> Result<()> {
    settle(key, None, true);
    Ok(())
}

/// `n` messages of collective `key` will never complete.
fn fail_some(key: usize, n: usize, f: Failure) {
    for _ in 0..n {
        settle(key, Some(f), false);
    }
}

/// The messages of a collective that the endpoint refused with
/// `-FI_EAGAIN` at the call, posted by the trigger runner; it holds the
/// collective's posting guard until they are.
struct PostRest {
    ep: Weak<dyn EndpointOps>,
    ep_key: usize,
    key: usize,
    left: VecDeque<Ready>,
}

impl Job for PostRest {
    fn issue(&mut self) -> Result<()> {
        let Some(ep) = self.ep.upgrade() else {
            return Err(Error::OpBadState);
        };
        while let Some(r) = self.left.front().copied() {
            match r.post(&*ep, self.ep_key) {
                Ok(()) => {
                    self.left.pop_front();
                }
                Err(Error::Again) => return Err(Error::Again),
                Err(e) => {
                    self.left.pop_front();
                    sub_done(r.ctx, Some(Failure::code(e.code().abs())));
                }
            }
        }
        settle(self.key, None, true);
        Ok(())
    }

    fn fail(&mut self, e: Error) {
        for r in self.left.drain(..) {
            sub_done(r.ctx, Some(Failure::code(e.code().abs())));
        }
        settle(self.key, None, true);
    }
}

/// One message of a collective completed (`Some`: failed); `ctx` is its
/// context. Called by `ep_core::Sinks` for operations with
/// `internal::COLLECTIVE`, and here.
pub fn sub_done(ctx: usize, f: Option<Failure>) {
    settle((ctx & !CTX_MARK) >> RECV_BITS, f, false);
}

/// How a transport reports that the peer `addr` (the endpoint's AV
/// address for it) of the endpoint whose key is `ep_key` ([`key_of`]) is
/// gone: its connection or link
/// ended without the close both sides agree on, so no message of it is
/// still to come (the transport calls this after taking in what had
/// arrived). Receives of collectives under way that still wait for its
/// message are canceled, which fails those collectives with `f`, and
/// receives from it that collectives post later fail at once: a member
/// reported gone stays gone for that endpoint's collectives. Does
/// nothing for an endpoint that never joined a group.
pub fn peer_gone(ep_key: usize, addr: fi_addr_t, f: Failure) {
    if ep_key == 0
        || addr == FI_ADDR_NOTAVAIL
        || !lock(&GROUPS).iter().any(|(_, g)| g.ep_key == ep_key)
    {
        return;
    }
    {
        let mut gone = lock(&GONE);
        if !gone.iter().any(|(k, a, _)| *k == ep_key && *a == addr) {
            gone.push((ep_key, addr, f));
        }
        ANY_GONE.store(true, Ordering::Release);
    }
    let mut cancel = Vec::new();
    for (_, op) in lock(&OPS).iter_mut().filter(|(_, o)| o.ep_key == ep_key) {
        let from: Vec<usize> = op
            .recvs
            .iter()
            .filter(|(_, a)| *a == addr)
            .map(|(c, _)| CTX_MARK | *c)
            .collect();
        if !from.is_empty() {
            // A receive already matched is not found by the cancel, and
            // the collective goes on: the member's message was in.
            op.gone.get_or_insert(f);
            cancel.push((op.ep.clone(), from));
        }
    }
    if cancel.is_empty() {
        return;
    }
    crate::core_warn!(
        FI_LOG_EP_DATA,
        "collective: member {addr:#x} is gone ({}); the receives that wait for it are canceled",
        f.describe()
    );
    let jobs: Vec<Box<dyn Job>> = cancel
        .into_iter()
        .map(|(ep, ctxs)| Box::new(CancelRest { ep, ctxs }) as Box<dyn Job>)
        .collect();
    trigger::run_due(jobs, false);
}

/// Whether the transport of endpoint `ep_key` reported `addr` gone, and
/// how.
fn gone(ep_key: usize, addr: fi_addr_t) -> Option<Failure> {
    if !ANY_GONE.load(Ordering::Acquire) {
        return None;
    }
    lock(&GONE)
        .iter()
        .find(|(k, a, _)| *k == ep_key && *a == addr)
        .map(|(_, _, f)| *f)
}

/// Accounts for one message of collective `key`, or with `guard` for its
/// posting guard (every message is posted). Once one failed and all are
/// posted, the receives still waiting are canceled ([`CancelRest`]);
/// once none is left, the collective finishes.
fn settle(key: usize, f: Option<Failure>, guard: bool) {
    let cancel = {
        let mut ops = lock(&OPS);
        let Some(at) = ops.iter().position(|(k, _)| *k == key) else {
            return;
        };
        let op = &mut ops[at].1;
        if let Some(f) = f {
            let f = match op.gone {
                Some(g) if f.err == FI_ECANCELED => g,
                _ => f,
            };
            op.failed.get_or_insert(f);
        }
        op.posted |= guard;
        op.pending -= 1;
        if op.pending > 0 {
            if op.posted && !op.canceling && op.failed.is_some() {
                op.canceling = true;
                let ctxs = op.recvs.iter().map(|(c, _)| CTX_MARK | *c).collect();
                Some((op.ep.clone(), ctxs))
            } else {
                None
            }
        } else {
            return finish(ops.swap_remove(at).1);
        }
    };
    if let Some((ep, ctxs)) = cancel {
        crate::core_warn!(
            FI_LOG_EP_DATA,
            "collective: a message failed; the receives it still waits for are canceled"
        );
        trigger::run_due(vec![Box::new(CancelRest { ep, ctxs })], false);
    }
}

/// A collective one of whose messages failed: it cannot complete, and
/// its receives not yet matched might wait for ever for a member that
/// is gone (a member whose send failed may be dead). They are canceled
/// (each reports `FI_ECANCELED` back here), so the collective ends with
/// the first failure once every message it posted has been accounted
/// for (its buffers stay in use until then). Run by the trigger thread,
/// out of the provider's lock that a completion runs under.
struct CancelRest {
    ep: Weak<dyn EndpointOps>,
    /// The contexts of the receives to cancel (those already matched are
    /// not found, and complete as they will).
    ctxs: Vec<usize>,
}

impl Job for CancelRest {
    fn issue(&mut self) -> Result<()> {
        if let Some(ep) = self.ep.upgrade() {
            for c in &self.ctxs {
                while ep.cancel(*c).is_ok() {}
            }
        }
        Ok(())
    }

    fn fail(&mut self, _e: Error) {}
}

/// Reports a collective whose messages all completed.
fn finish(mut op: Op) {
    let failed = match op.failed {
        Some(f) => Some(f),
        None => plan::run_finish(&op.finish, &mut op.temps)
            .err()
            .map(|e| Failure::code(e.code().abs())),
    };
    match (op.done, failed) {
        (Done::App { sinks, ctx }, f) => sinks.tx_cq_report(ctx, FI_COLLECTIVE, f),
        (Done::Join { eq, fid, ctx }, None) => {
            let _ = eq.push(Event {
                event: FI_JOIN_COMPLETE as u32,
                data: EventData::Entry {
                    fid,
                    context: ctx,
                    data: 0,
                },
            });
        }
        (Done::Join { eq, fid, ctx }, Some(f)) => eq.push_err(EqError {
            fid,
            context: ctx,
            err: f.err,
            prov_errno: f.prov_errno,
            ..Default::default()
        }),
    }
}

/// Endpoint `key` is closing: its collectives under way are dropped
/// without a report (their messages were dropped with it), and so are its
/// groups and its count of joins.
pub fn drop_ep(key: usize) {
    lock(&OPS).retain(|(_, o)| o.ep_key != key);
    lock(&GROUPS).retain(|(_, g)| g.ep_key != key);
    {
        let mut gone = lock(&GONE);
        gone.retain(|(k, _, _)| *k != key);
        // Posting goes back to skipping the lookup.
        if gone.is_empty() {
            ANY_GONE.store(false, Ordering::Release);
        }
    }
    // A new endpoint at the same address counts its joins from 0, as its
    // peers' new endpoints do.
    lock(&JOINS).retain(|((k, _), _)| *k != key);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_keep_group_number_and_sender_apart() {
        let a = tag(5, 1, 2);
        assert_ne!(a & TAG_FLAG, 0);
        assert_ne!(a, tag(5, 1, 3));
        assert_ne!(a, tag(5, 2, 2));
        assert_ne!(a, tag(6, 1, 2));
        assert_eq!(tag(5, 1, MAX_MEMBERS + 2), a, "ranks wrap at the field");
    }
}
