//! An `FI_EP_MSG` endpoint: one RC queue pair made by rdma-cm on the
//! endpoint's own id and event channel.
//!
//! - **Connections.** An endpoint from `fi_getinfo` binds its id to the
//!   entry's source address at once (so it knows its device), creates its
//!   queue pair at `fi_enable` and, at `fi_connect`, resolves the peer's
//!   address and route (short bounded waits on its own channel) before
//!   `rdma_connect`. An endpoint opened on a connection request takes the
//!   request's id from the passive endpoint and moves it to its own channel
//!   (`rdma_migrate_id`); `fi_accept` answers with `rdma_accept`. The CM
//!   events that follow (established, rejected, unreachable, disconnected)
//!   become `FI_CONNECTED`, EQ errors and `FI_SHUTDOWN` in progress.
//! - **Private data** carries one byte of ours first: how many of the
//!   following bytes are the application's (rdma-cm pads the request's
//!   private data to a fixed size).
//! - **Data.** A send is one work request over the application's buffers
//!   with their local keys (`fi_mr_desc`); `fi_senddata` sends with
//!   immediate data (4 bytes, `cq_data_size`); sends and writes no
//!   larger than `inject_size` (`fi_inject` included) go inline, copied
//!   at post. Every work request is signaled, so the send queue never fills
//!   with unreaped requests; the completion of an inject is not reported
//!   (the engine's `Sinks` drops it, counters still count it). Receives
//!   are posted straight to the queue pair (kept until it exists).
//! - **Progress** polls the completion queue (rdma-core serves it from
//!   user space) and reads the CM channel's events and the completion
//!   channel's notifications every few calls, before a blocking wait and
//!   in `fi_trywait` (on every call once an application's epoll set holds
//!   the descriptor); the wait descriptor is an epoll set of the two
//!   channels.
//! - **Shared receive contexts** (`ep/srx.rs`): an endpoint bound to one
//!   makes its queue pair on the context's shared receive queue and posts
//!   no receives of its own; a receive of the context that a message to
//!   this endpoint consumed completes here.

pub mod atomic;

use crate::domain::{LkeySet, VerbsDomain};
use crate::ibv::owned::{
    wc_status_text, Channel, Cq, DevCtx, Id, Op, Pd, QpCap, RegBuf, SendFlags, WcBuf, MAX_SGE,
};
use crate::ibv::*;
use crate::info::{CM_DATA_SIZE, NAME};
use crate::mr_cache::{Hold, MrCache};
use crate::watch::Watch;
use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::{
    internal, iov_len, AtomicReq, Binding, EndpointOps, IoBuf, OptValue, RecvOp, RmaOp, SendOp,
};
use oxifabric::service::atomic::AtomicKind;
use oxifabric::service::cq::Completion;
use oxifabric::service::ep_core::{self, EpCore, Failure, Sinks, TxCtx};
use oxifabric::service::progress::Progress;
use oxifabric::service::quicklock::{QuickGuard, QuickLock};
use oxifabric::service::rxq::{rx_flags, Posted};
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

mod slots;
mod srx;
use slots::Slots;
pub(crate) use srx::VerbsSrx;

/// The tags of send and receive work request ids ([`Slots`]); a shared
/// receive context's carry their own (`srx.rs`).
const TX_WR: u64 = 1 << 32;
const RX_WR: u64 = 2 << 32;

/// How long one step of address or route resolution may take.
const RESOLVE_MS: i32 = 2000;

/// Endpoints that accepted a request and wait for `ESTABLISHED`. Each
/// endpoint has its own CM channel, so nothing orders its `FI_CONNECTED`
/// against the next `FI_CONNREQ` its passive endpoint reports on the same
/// EQ: a peer that connects its endpoints one after the other (upstream's
/// fi_multi_ep) could see the second request first. rdma-cm delivers the
/// first connection's `ESTABLISHED` before the second's request reaches
/// the listener, so a passive endpoint about to report a request first
/// lets these report theirs ([`settle_accepting`]).
static ACCEPTING: Mutex<Vec<Weak<VerbsEp>>> = Mutex::new(Vec::new());

/// Runs the CM progress of every endpoint still waiting for its accepted
/// connection (before a passive endpoint reports a new request).
pub(crate) fn settle_accepting() {
    let eps: Vec<Arc<VerbsEp>> = {
        let mut l = ACCEPTING.lock().unwrap_or_else(|p| p.into_inner());
        l.retain(|w| w.strong_count() > 0);
        l.iter().filter_map(Weak::upgrade).collect()
    };
    // Their CM channels read now, whatever the pacing of progress (which
    // reads the channels only every few calls, and skips an endpoint
    // another thread is in): an `ESTABLISHED` that came in before the new
    // request becomes `FI_CONNECTED` first.
    for ep in &eps {
        ep.read_cm();
    }
    // Endpoint locks are never taken under ACCEPTING (`accept` takes
    // ACCEPTING under its endpoint's lock).
    let done: Vec<&Arc<VerbsEp>> = eps
        .iter()
        .filter(|ep| ep.lock().conn != Conn::Accepting)
        .collect();
    let mut l = ACCEPTING.lock().unwrap_or_else(|p| p.into_inner());
    l.retain(|w| {
        !done
            .iter()
            .any(|ep| std::ptr::eq(w.as_ptr(), Arc::as_ptr(ep)))
    });
}

/// What `info->handle` of a connection request stands for.
pub struct Request {
    /// The request's id (on the passive endpoint's channel until taken).
    pub id: Id,
}

/// Private data with our length byte in front.
pub fn cm_data_out(data: &[u8]) -> Result<Vec<u8>> {
    if data.len() > CM_DATA_SIZE {
        oxifabric::prov_log!(
            NAME,
            FI_LOG_WARN,
            FI_LOG_EP_CTRL,
            "{} bytes of connection data, at most {CM_DATA_SIZE}",
            data.len()
        );
        return Err(Error::Inval);
    }
    let mut v = Vec::with_capacity(data.len() + 1);
    v.push(data.len() as u8);
    v.extend_from_slice(data);
    Ok(v)
}

/// The application's part of private data that arrived.
pub fn cm_data_in(raw: &[u8]) -> Vec<u8> {
    match raw.split_first() {
        Some((&n, rest)) => rest[..usize::from(n).min(rest.len())].to_vec(),
        None => Vec::new(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conn {
    Idle,
    /// `rdma_connect` sent, waiting for the answer.
    Connecting,
    /// `rdma_accept` sent, waiting for the connection to form.
    Accepting,
    Up,
    Down,
}

/// A receive and the local keys of its buffers.
struct Rx {
    posted: Posted,
    lkeys: [u32; MAX_SGE],
    /// Registrations of its buffers (no `FI_MR_LOCAL`), held until it
    /// completes.
    _mrs: Vec<Hold>,
}

/// A send-queue work request in flight: its completion context and the
/// registrations of its buffers (held until it completes).
struct Tx {
    ctx: TxCtx,
    _mrs: Vec<Hold>,
}

struct State {
    core: EpCore,
    id: Option<Id>,
    cq: Option<Arc<Cq>>,
    conn: Conn,
    /// Work requests in flight; a request's id names its slot.
    tx: Slots<Tx>,
    rx: Slots<Rx>,
    /// Receives (held in `rx`) posted before the queue pair existed.
    early_rx: Vec<u64>,
    /// The address resolved for `fi_connect`, once done.
    resolved: Option<SocketAddr>,
    peer: Option<SocketAddr>,
    /// The queue pair's sizes as granted.
    cap: QpCap,
    /// Progress calls since the descriptors were last read.
    polls: u32,
    /// The shared receive context bound (`fi_ep_bind`), if any.
    srx: Option<Arc<VerbsSrx>>,
    /// The address `fi_setname` gave (a passive endpoint's, inherited
    /// through `info->handle`): the id is bound to it when it connects,
    /// by which time that passive endpoint has usually closed.
    bind_to: Option<SocketAddr>,
    /// Where the device puts the old value of an `fi_atomic` (no result
    /// buffer): made at the first one (`ep/atomic.rs`).
    atomic_scratch: Option<RegBuf>,
}

/// A verbs MSG endpoint.
pub struct VerbsEp {
    me: Weak<VerbsEp>,
    info: Info,
    dev: Arc<DevCtx>,
    pd: Arc<Pd>,
    /// The domain's registration cache (buffers without descriptors).
    cache: Arc<MrCache>,
    /// The domain's registrations' local keys (descriptor checks).
    lkeys: Arc<LkeySet>,
    chan: Arc<Channel>,
    /// The CM channel's and the completion channel's descriptors.
    waits: Watch,
    st: QuickLock<State>,
    /// Made on a connection request's id (`fi_accept` applies).
    requested: bool,
}

/// The `FI_E*` code for a failed work completion.
pub(crate) fn wc_error(status: u32) -> c_int {
    match status {
        IBV_WC_WR_FLUSH_ERR => FI_ECANCELED,
        IBV_WC_LOC_LEN_ERR => FI_ETRUNC,
        IBV_WC_REM_ACCESS_ERR | 4 | 8 => FI_EACCES,
        IBV_WC_RETRY_EXC_ERR | 20 => FI_ETIMEDOUT,
        IBV_WC_RNR_RETRY_EXC_ERR => FI_ENORX,
        _ => FI_EIO,
    }
}

/// A failed work completion as the error entry reports it: the peer and
/// the verbs status; logged unless it is a flush (the queue pair went
/// down, which is reported on its own).
pub(crate) fn wc_failure(status: u32, peer: Option<SocketAddr>, what: &str) -> Failure {
    let f = Failure {
        err: wc_error(status),
        prov_errno: status as c_int,
        peer,
        cause: wc_status_text(status),
        prov_errno_kind: "verbs status",
        ..Default::default()
    };
    if status != IBV_WC_WR_FLUSH_ERR {
        oxifabric::prov_log!(
            NAME,
            FI_LOG_WARN,
            FI_LOG_EP_DATA,
            "{what}: {}",
            f.describe()
        );
    }
    f
}

fn verbs_err(what: &str, e: VerbsError) -> Error {
    oxifabric::prov_log!(NAME, FI_LOG_WARN, FI_LOG_EP_CTRL, "{what}: {e}");
    Error::from(e)
}

/// A post's outcome: a full queue (`ENOMEM`) is `-FI_EAGAIN`; any other
/// failure the call's error, logged.
fn post_result(r: std::result::Result<(), VerbsError>, what: &str) -> Result<()> {
    match r {
        Err(VerbsError::Call {
            errno: libc::ENOMEM,
            ..
        }) => Err(Error::Again),
        r => r.map_err(|e| verbs_err(what, e)),
    }
}

impl VerbsEp {
    /// An endpoint for `info` in domain `d`: on a connection request's id
    /// when `info.handle` names one, else on a new id bound to the source
    /// address.
    pub fn new(info: &Info, d: &VerbsDomain) -> Result<Arc<VerbsEp>> {
        let chan = Channel::new().map_err(|e| verbs_err("rdma_create_event_channel", e))?;
        let request = match info.handle {
            0 => None,
            // Not a request: a passive endpoint, whose address the C
            // boundary hands over through `setname`.
            h => oxifabric::service::connreq::take(h),
        };
        let requested = request.is_some();
        let mut bind_to = None;
        let id = if let Some(Request { mut id }) = request {
            id.migrate(&chan)
                .map_err(|e| verbs_err("rdma_migrate_id", e))?;
            id
        } else {
            let id = Id::new(&chan).map_err(|e| verbs_err("rdma_create_id", e))?;
            if let Some(src) = info.src_addr.as_deref().and_then(addr::sockaddr_from_bytes) {
                if info.handle == 0 {
                    id.bind(&src).map_err(|e| verbs_err("rdma_bind_addr", e))?;
                } else {
                    // The passive endpoint still holds it.
                    bind_to = Some(src);
                }
            }
            id
        };
        let waits = Watch::new()?;
        waits.fds.add(chan.fd(), 0, false)?;
        Ok(Arc::new_cyclic(|me| VerbsEp {
            me: me.clone(),
            info: info.clone(),
            dev: d.dev.clone(),
            pd: d.pd.clone(),
            cache: d.cache.clone(),
            lkeys: d.lkeys.clone(),
            chan,
            waits,
            st: QuickLock::new(State {
                core: EpCore::new(info, NAME),
                id: Some(id),
                cq: None,
                conn: Conn::Idle,
                tx: Slots::new(TX_WR),
                rx: Slots::new(RX_WR),
                early_rx: Vec::new(),
                resolved: None,
                peer: None,
                cap: QpCap::default(),
                polls: 0,
                srx: None,
                bind_to,
                atomic_scratch: None,
            }),
            requested,
        }))
    }

    fn lock(&self) -> QuickGuard<'_, State> {
        self.st.lock()
    }

    /// Resolves the address `dest` on the id, waiting for the answer.
    fn resolve(&self, st: &mut State, dest: SocketAddr) -> Result<()> {
        let id = st.id.as_ref().ok_or(Error::OpBadState)?;
        id.resolve_addr(&dest, RESOLVE_MS)
            .map_err(|e| verbs_err("rdma_resolve_addr", e))?;
        self.expect(id, RDMA_CM_EVENT_ADDR_RESOLVED, "address resolution")?;
        st.resolved = Some(dest);
        Ok(())
    }

    /// Waits for the event `want` on the id (the steps of resolution);
    /// anything else is the peer being unreachable.
    fn expect(&self, id: &Id, want: u32, what: &str) -> Result<()> {
        let ev = self
            .chan
            .wait(Duration::from_millis(RESOLVE_MS as u64 + 500))
            .map_err(|e| verbs_err(what, e))?;
        if ev.kind == want && ev.status == 0 && ev.id == id.addr() {
            return Ok(());
        }
        oxifabric::prov_log!(
            NAME,
            FI_LOG_WARN,
            FI_LOG_EP_CTRL,
            "{what}: {} (status {})",
            ev.name(),
            ev.status
        );
        Err(Error::Other(FI_EHOSTUNREACH))
    }

    /// Creates the completion queue and queue pair (the id must know its
    /// device), then posts the receives that waited for them.
    fn create_qp(&self, st: &mut State) -> Result<()> {
        if st.cq.is_some() {
            return Ok(());
        }
        let id = st.id.as_mut().ok_or(Error::OpBadState)?;
        if id.device_name().is_none() {
            return Ok(());
        }
        let (tx, rx) = (self.info.tx.size.max(1), self.info.rx.size.max(1));
        // With a shared receive context, up to its size of receives may
        // complete here.
        let rx_cqe = st.srx.as_ref().map_or(rx, |s| s.size());
        let cq = self
            .dev
            .create_cq(tx + rx_cqe)
            .map_err(|e| verbs_err("ibv_create_cq", e))?;
        let mut cap = QpCap {
            max_send_wr: tx as u32,
            max_recv_wr: rx as u32,
            max_send_sge: self.info.tx.iov_limit.clamp(1, MAX_SGE) as u32,
            max_recv_sge: self.info.rx.iov_limit.clamp(1, MAX_SGE) as u32,
            max_inline_data: self.info.tx.inject_size as u32,
        };
        match &st.srx {
            Some(s) => s.make_qp(id, &self.pd, &cq, &mut cap)?,
            None => id
                .create_qp(&self.pd, &cq, &mut cap)
                .map_err(|e| verbs_err("rdma_create_qp", e))?,
        }
        self.waits.fds.add(cq.fd(), 1, false)?;
        st.cap = cap;
        st.cq = Some(cq);
        // After a failed post the rest leave their slots too (they would
        // otherwise count against rx_size for good).
        let mut r = Ok(());
        for wr in std::mem::take(&mut st.early_rx) {
            match r {
                Ok(()) => r = Self::post_rx(st, wr),
                Err(_) => {
                    st.rx.free(wr);
                }
            }
        }
        r
    }

    /// Posts the receive held in slot `wr` of `st.rx`; one that cannot be
    /// posted leaves its slot.
    fn post_rx(st: &mut State, wr: u64) -> Result<()> {
        let r = match (&st.id, st.rx.get(wr)) {
            (Some(id), Some(rx)) => {
                let n = rx.posted.iov.len();
                id.post_recv(wr, &rx.posted.iov, &rx.lkeys[..n])
                    .map_err(|e| verbs_err("ibv_post_recv", e))
            }
            _ => Err(Error::OpBadState),
        };
        if r.is_err() {
            st.rx.free(wr);
        }
        r
    }

    /// One work completion. The request is reported from its slot and
    /// then dropped there (a receive is a few hundred bytes: moving it out
    /// cost two copies per message).
    fn complete(&self, st: &mut State, wc: &ibv_wc) {
        if let Some(Tx { ctx: tx, .. }) = st.tx.get(wc.wr_id) {
            if wc.status == IBV_WC_SUCCESS {
                st.core.sinks.tx_done(tx);
            } else {
                let f = wc_failure(wc.status, st.peer, "send");
                st.core.sinks.tx_err(tx, f);
            }
            st.tx.free(wc.wr_id);
        } else if let Some(rx) = st.rx.get(wc.wr_id) {
            Self::complete_rx(&st.core.sinks, st.peer, &rx.posted, wc);
            st.rx.free(wc.wr_id);
        } else if let Some(rx) = st.srx.as_ref().and_then(|s| s.take(wc.wr_id)) {
            Self::complete_rx(&st.core.sinks, st.peer, &rx.posted, wc);
        }
    }

    /// A receive's work completion, reported.
    fn complete_rx(sinks: &Sinks, peer: Option<SocketAddr>, p: &Posted, wc: &ibv_wc) {
        if wc.status != IBV_WC_SUCCESS {
            let f = wc_failure(wc.status, peer, "receive");
            return sinks.rx_err(p, f, 0, 0);
        }
        let data =
            (wc.wc_flags & IBV_WC_WITH_IMM != 0).then(|| u64::from(u32::from_be(wc.imm_data)));
        // A peer's fi_writedata consumed this receive (FI_RX_CQ_DATA):
        // it reports the write, its length and data, not a message.
        let flags = if wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM {
            FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA
        } else {
            rx_flags(false, data)
        };
        let comp = Completion {
            op_context: p.ctx,
            flags,
            len: wc.byte_len as usize,
            buf: p.iov.first().map_or(0, |b| b.addr()),
            data: data.unwrap_or(0),
            src: FI_ADDR_NOTAVAIL,
            ..Default::default()
        };
        sinks.rx_done(p, comp, 0);
    }

    /// One CM event on the endpoint's channel.
    fn cm_event(&self, st: &mut State, ev: crate::ibv::owned::Event) {
        let mine = st.id.as_ref().is_some_and(|id| id.addr() == ev.id);
        if !mine {
            return;
        }
        let peer = st.peer.or(st.resolved);
        match (ev.kind, st.conn) {
            (RDMA_CM_EVENT_ESTABLISHED, Conn::Connecting | Conn::Accepting) => {
                let data = if st.conn == Conn::Connecting {
                    cm_data_in(&ev.data)
                } else {
                    Vec::new()
                };
                st.conn = Conn::Up;
                if let Some(id) = &st.id {
                    crate::info::set_rnr_timer(id);
                }
                st.peer = st.id.as_ref().and_then(Id::peer_addr).or(peer);
                st.core.cm_event(FI_CONNECTED as u32, data);
            }
            (RDMA_CM_EVENT_REJECTED, Conn::Connecting) => {
                st.conn = Conn::Down;
                let f = Failure {
                    peer,
                    prov_errno: ev.status,
                    prov_errno_kind: "reject reason",
                    ..Failure::cause(FI_ECONNREFUSED, "connection rejected")
                };
                st.core.cm_error(f, cm_data_in(&ev.data));
            }
            (
                RDMA_CM_EVENT_CONNECT_ERROR
                | RDMA_CM_EVENT_UNREACHABLE
                | RDMA_CM_EVENT_ADDR_ERROR
                | RDMA_CM_EVENT_ROUTE_ERROR,
                Conn::Connecting | Conn::Accepting,
            ) => {
                st.conn = Conn::Down;
                // rdma-cm gives these a negative errno.
                let f = Failure {
                    peer,
                    prov_errno: ev.status.saturating_abs(),
                    ..Failure::cause(FI_ECONNREFUSED, "peer unreachable")
                };
                st.core.cm_error(f, Vec::new());
            }
            (RDMA_CM_EVENT_DISCONNECTED, Conn::Up) => {
                st.conn = Conn::Down;
                // Completes the disconnect on this side too.
                if let Some(id) = &st.id {
                    let _ = id.disconnect();
                }
                st.core.cm_event(FI_SHUTDOWN as u32, Vec::new());
            }
            (RDMA_CM_EVENT_DEVICE_REMOVAL, _) => {
                st.conn = Conn::Down;
                st.core
                    .cm_error(Failure::cause(FI_ENODEV, "device removed"), Vec::new());
            }
            _ => {}
        }
    }

    /// Inlined into [`Progress::progress`]: an empty poll is most of a
    /// busy-polling reader's calls, and each call layer costs it a
    /// prologue and an epilogue.
    #[inline]
    fn progress_locked(&self, st: &mut State) {
        // When the descriptors are read: crate::watch.
        let due = self.waits.due(&mut st.polls, false);
        if due.read {
            self.read_channels(st, due.arm);
        }
        // The completions are copied out of the queue's borrow, so the
        // queue is neither cloned (an atomic pair per call) nor the
        // buffer cleared before each poll.
        let mut wc = WcBuf::<16>::default();
        loop {
            let Some(cq) = &st.cq else { return };
            let found = match wc.poll(cq) {
                Ok(found) => found,
                Err(e) => {
                    oxifabric::prov_log!(NAME, FI_LOG_WARN, FI_LOG_CQ, "{e}");
                    return;
                }
            };
            let n = found.len();
            for w in found {
                self.complete(st, w);
            }
            if n < WcBuf::<16>::ROOM {
                break;
            }
        }
    }

    /// The CM channel's events only, under the endpoint's lock (see
    /// [`settle_accepting`]).
    fn read_cm(&self) {
        let mut st = self.lock();
        while let Some(ev) = self.chan.next() {
            self.cm_event(&mut st, ev);
        }
    }

    /// The CM channel's events, then the completion channel's
    /// notifications (the queue armed again when `arm`: before the poll
    /// that follows, so a completion after that poll makes the descriptor
    /// readable).
    #[cold]
    fn read_channels(&self, st: &mut State, arm: bool) {
        while let Some(ev) = self.chan.next() {
            self.cm_event(st, ev);
        }
        if let Some(cq) = &st.cq {
            cq.settle_events(arm);
        }
    }

    /// [`desc_lkeys`] against this endpoint's domain.
    fn lkeys(&self, desc: &[usize], n: usize, what: &str) -> Result<Option<[u32; MAX_SGE]>> {
        desc_lkeys(&self.lkeys, desc, n, what)
    }

    /// [`register_bufs`] under this endpoint's `mr_mode`.
    fn register_iov(
        &self,
        iov: &[IoBuf],
        access: i32,
        what: &str,
    ) -> Result<([u32; MAX_SGE], Vec<Hold>)> {
        register_bufs(&self.cache, self.info.domain.mr_mode, iov, access, what)
    }

    /// Posts one send-queue work request for the application: sizes and
    /// descriptors checked (a send or write up to `inject_size` goes
    /// inline; anything larger needs `fi_mr_desc` per buffer under
    /// `FI_MR_LOCAL`, or is registered for the operation without it), the
    /// queue and the CQ have room, and the connection is up.
    fn post(&self, tx: TxCtx, op: Op, iov: &[IoBuf], desc: &[usize], what: &str) -> Result<()> {
        let len = iov_len(iov);
        if len > self.info.ep.max_msg_size {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "{what} of {len} bytes, max_msg_size is {}",
                self.info.ep.max_msg_size
            );
            return Err(Error::MsgSize);
        }
        let n = iov.len();
        let keys = self.lkeys(desc, n, what)?;
        let inject = tx.flags & FI_INJECT != 0 || tx.internal & internal::NO_COMPLETION != 0;
        let can_inline = !matches!(op, Op::Read { .. }) && len <= self.info.tx.inject_size;
        // Small sends and writes go inline even with descriptors: the
        // device then reads no registered memory for them.
        let inline = can_inline;
        if inject && !inline {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "inject {what} of {len} bytes, inject_size is {}",
                self.info.tx.inject_size
            );
            return Err(Error::MsgSize);
        }
        let (lkeys, mrs) = match keys {
            Some(k) => (k, Vec::new()),
            None if inline || len == 0 => ([0; MAX_SGE], Vec::new()),
            None => {
                let access = match op {
                    Op::Read { .. } => IBV_ACCESS_LOCAL_WRITE,
                    _ => 0,
                };
                self.register_iov(iov, access, what)?
            }
        };
        let mut g = self.lock();
        self.submit(&mut g, tx, op, iov, &lkeys[..n.min(MAX_SGE)], inline, mrs)
    }

    /// Posts one send-queue work request whose buffers and keys are
    /// settled, once the connection is up and the queue and the CQ have
    /// room; `mrs` (registrations for this request alone) are released
    /// when it completes.
    #[allow(clippy::too_many_arguments)]
    fn submit(
        &self,
        st: &mut State,
        tx: TxCtx,
        op: Op,
        iov: &[IoBuf],
        lkeys: &[u32],
        inline: bool,
        mrs: Vec<Hold>,
    ) -> Result<()> {
        if st.conn != Conn::Up {
            return Err(Error::NotConn);
        }
        if st.tx.len() >= Self::send_slots(st, &self.info) || !st.core.sinks.tx_room(&tx) {
            self.progress_locked(st);
            return Err(Error::Again);
        }
        let id = st.id.as_ref().ok_or(Error::OpBadState)?;
        let fence = tx.flags & FI_FENCE != 0;
        let wr = st.tx.insert(Tx { ctx: tx, _mrs: mrs });
        let r = post_result(
            id.post_send(wr, op, iov, lkeys, SendFlags { inline, fence }),
            "ibv_post_send",
        );
        if r.is_err() {
            st.tx.free(wr);
        }
        r
    }

    /// Send work requests the endpoint lets be in flight: `tx_size`, even
    /// when the device granted a deeper send queue (rxe rounds 384 up to
    /// 511). The completion queue holds `tx_size + rx_size` entries and
    /// every work request is signaled, so with sends capped here and
    /// receives capped at `rx_size` it cannot overrun.
    fn send_slots(st: &State, info: &Info) -> usize {
        (st.cap.max_send_wr as usize).min(info.tx.size).max(1)
    }

    fn enable_locked(&self, st: &mut State) -> Result<()> {
        if st.core.start_enable(ep_core::BOTH)? {
            self.create_qp(st)?;
            st.core.finish_enable(ep_core::BOTH);
        }
        Ok(())
    }
}

impl Progress for VerbsEp {
    #[inline]
    fn progress(&self) {
        if let Some(mut st) = self.st.try_lock() {
            self.progress_locked(&mut st);
        }
    }

    /// The caller sleeps on the descriptor next: a pass now arms the
    /// completion queue (and finds what came before it was armed).
    fn wait_fd(&self) -> Option<RawFd> {
        self.progress_settled();
        Some(self.waits.fds.raw())
    }

    /// Someone (an application's epoll set, `FI_GETWAIT`) may sleep on the
    /// descriptor at any time: every progress reads it, so it is readable
    /// only while there is something to do.
    fn pin_watch(&self) {
        self.waits.pin();
    }

    /// `fi_trywait`: a full pass that reads the descriptors, waiting for
    /// one another thread is running.
    fn progress_settled(&self) {
        self.waits.wanted();
        let mut st = self.lock();
        self.progress_locked(&mut st);
    }
}

impl EndpointOps for VerbsEp {
    fn bind(&self, b: Binding) -> Result<()> {
        match b {
            Binding::Av(_) => Err(Error::NoSys),
            Binding::Srx(ops) => self.bind_srx(ops),
            b => self.lock().core.bind(b, self.me.clone()),
        }
    }

    fn enable(&self) -> Result<()> {
        let mut st = self.lock();
        self.enable_locked(&mut st)
    }

    fn close(&self) {
        let mut st = self.lock();
        if matches!(st.conn, Conn::Up | Conn::Accepting | Conn::Connecting) {
            if let Some(id) = &st.id {
                let _ = id.disconnect();
            }
        }
        st.conn = Conn::Down;
        // The queue pair goes before its completion queue (the id holds it).
        st.id = None;
        Self::release_shared_rx(&mut st);
        st.cq = None;
        st.tx.clear();
        st.rx.clear();
        st.core.unbind_all(self.me.clone());
    }

    fn getopt(&self, level: c_int, name: c_int) -> Result<OptValue> {
        match (level, name) {
            (FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE) => Ok(OptValue::Size(CM_DATA_SIZE)),
            _ => Err(Error::NoProtoOpt),
        }
    }

    fn getname(&self) -> Result<Vec<u8>> {
        let st = self.lock();
        match st.id.as_ref().and_then(Id::local_addr).or(st.bind_to) {
            Some(a) => Ok(addr::to_sockaddr(&a)),
            None => self.info.src_addr.clone().ok_or(Error::OpBadState),
        }
    }

    /// The address to connect from (before `fi_connect`): what the C
    /// boundary gives an endpoint made from a passive endpoint's
    /// `fi_info` (`info->handle`), as upstream's verbs endpoints take
    /// over their passive endpoint's address.
    fn setname(&self, a: &[u8]) -> Result<()> {
        let src = addr::sockaddr_from_bytes(a).ok_or(Error::Inval)?;
        let mut st = self.lock();
        if st.conn != Conn::Idle || st.resolved.is_some() {
            return Err(Error::OpBadState);
        }
        st.bind_to = Some(src);
        Ok(())
    }

    fn getpeer(&self) -> Result<Vec<u8>> {
        let st = self.lock();
        match (st.conn, st.peer) {
            (Conn::Up, Some(p)) => Ok(addr::to_sockaddr(&p)),
            _ => Err(Error::NotConn),
        }
    }

    fn connect(&self, a: &[u8], data: &[u8]) -> Result<()> {
        let dest = addr::sockaddr_from_bytes(a).ok_or_else(|| {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "fi_connect: not a socket address"
            );
            Error::Inval
        })?;
        let data = cm_data_out(data)?;
        let mut g = self.lock();
        let st = &mut *g;
        if !st.core.enabled {
            return Err(Error::OpBadState);
        }
        if st.conn != Conn::Idle {
            return Err(Error::IsConn);
        }
        if let Some(src) = st.bind_to.take() {
            let id = st.id.as_ref().ok_or(Error::OpBadState)?;
            id.bind(&src).map_err(|e| verbs_err("rdma_bind_addr", e))?;
        }
        if st.resolved != Some(dest) {
            self.resolve(st, dest)?;
        }
        {
            let id = st.id.as_ref().ok_or(Error::OpBadState)?;
            id.resolve_route(RESOLVE_MS)
                .map_err(|e| verbs_err("rdma_resolve_route", e))?;
            self.expect(id, RDMA_CM_EVENT_ROUTE_RESOLVED, "route resolution")?;
        }
        self.create_qp(st)?;
        let id = st.id.as_ref().ok_or(Error::OpBadState)?;
        id.connect(&data)
            .map_err(|e| verbs_err("rdma_connect", e))?;
        st.conn = Conn::Connecting;
        st.peer = Some(dest);
        Ok(())
    }

    fn accept(&self, data: &[u8]) -> Result<()> {
        let data = cm_data_out(data)?;
        let mut g = self.lock();
        let st = &mut *g;
        if !self.requested {
            return Err(Error::Inval);
        }
        if st.conn != Conn::Idle {
            return Err(Error::IsConn);
        }
        self.enable_locked(st)?;
        self.create_qp(st)?;
        let id = st.id.as_ref().ok_or(Error::OpBadState)?;
        id.accept(&data).map_err(|e| verbs_err("rdma_accept", e))?;
        st.peer = id.peer_addr();
        st.conn = Conn::Accepting;
        ACCEPTING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(self.me.clone());
        Ok(())
    }

    fn shutdown(&self, _flags: u64) -> Result<()> {
        let mut st = self.lock();
        if st.conn != Conn::Up {
            return Err(Error::NotConn);
        }
        st.conn = Conn::Down;
        if let Some(id) = &st.id {
            id.disconnect()
                .map_err(|e| verbs_err("rdma_disconnect", e))?;
        }
        // The local side learns of its own shutdown as the peer does (as
        // upstream's providers report it; upstream's fi_cm_data waits for
        // it). rdma-cm's own DISCONNECTED for this side then finds the
        // endpoint down and says nothing more.
        st.core.cm_event(FI_SHUTDOWN as u32, Vec::new());
        Ok(())
    }

    fn recv(&self, op: &RecvOp<'_>) -> Result<()> {
        if op.tag.is_some() || op.flags & FI_MULTI_RECV != 0 {
            return Err(Error::NoSys);
        }
        let (lkeys, mrs) = match self.lkeys(op.desc, op.iov.len(), "receive")? {
            Some(k) => (k, Vec::new()),
            None if iov_len(op.iov) == 0 => ([0; MAX_SGE], Vec::new()),
            None => self.register_iov(op.iov, IBV_ACCESS_LOCAL_WRITE, "receive")?,
        };
        let mut g = self.lock();
        let st = &mut *g;
        if st.srx.is_some() {
            return Err(srx::own_receive_refused());
        }
        if st.rx.len() >= self.info.rx.size.max(1) || !st.core.sinks.rx_room(op.flags) {
            return Err(Error::Again);
        }
        let wr = st.rx.insert_with(|| Rx {
            posted: Posted::new(op),
            lkeys,
            _mrs: mrs,
        });
        if st.cq.is_none() {
            st.early_rx.push(wr);
            return Ok(());
        }
        Self::post_rx(st, wr)
    }

    fn send(&self, op: &SendOp<'_>) -> Result<()> {
        if op.tag.is_some() {
            return Err(Error::NoSys);
        }
        let imm = op.data.map(|d| d as u32);
        self.post(TxCtx::of(op), Op::Send(imm), op.iov, op.desc, "send")
    }

    fn rma(&self, op: &RmaOp<'_>) -> Result<()> {
        let [r] = op.rma else {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "RMA with {} remote pieces, rma_iov_limit is 1",
                op.rma.len()
            );
            return Err(Error::Inval);
        };
        let Ok(rkey) = u32::try_from(r.key) else {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "RMA key {:#x} is wider than the 4-byte mr_key_size",
                r.key
            );
            return Err(Error::Other(FI_EKEYREJECTED));
        };
        let what = if op.write { "write" } else { "read" };
        let rma_op = if op.write {
            let imm = (op.flags & FI_REMOTE_CQ_DATA != 0 || op.data.is_some())
                .then(|| op.data.unwrap_or(0) as u32);
            Op::Write {
                addr: r.addr,
                rkey,
                imm,
            }
        } else {
            Op::Read { addr: r.addr, rkey }
        };
        self.post(TxCtx::of_rma(op), rma_op, op.iov, op.desc, what)
    }

    fn atomic(&self, op: &AtomicReq<'_>) -> Result<()> {
        self.post_atomic(op)
    }

    /// One 64-bit element where the device has atomics (`ep/atomic.rs`).
    fn atomic_limit(&self) -> usize {
        if self.info.caps & FI_ATOMIC != 0 {
            atomic::ATOMIC_SIZE
        } else {
            0
        }
    }

    fn atomic_offers(&self, kind: AtomicKind, op: fi_op, dt: fi_datatype) -> bool {
        atomic::offers(kind, op, dt)
    }

    fn rx_size_left(&self) -> Result<usize> {
        let st = self.lock();
        if let Some(s) = &st.srx {
            return s.rx_size_left();
        }
        Ok(self.info.rx.size.saturating_sub(st.rx.len()))
    }

    fn tx_size_left(&self) -> Result<usize> {
        let st = self.lock();
        Ok(Self::send_slots(&st, &self.info).saturating_sub(st.tx.len()))
    }

    fn completion_sinks(&self) -> Option<Sinks> {
        Some(self.lock().core.sinks.clone())
    }

    fn as_progress(&self) -> Option<Weak<dyn Progress>> {
        Some(self.me.clone())
    }

    fn set_fid(&self, fid: usize) {
        self.lock().core.fid = fid;
    }
}

/// The local keys of an operation's buffers from its descriptors;
/// None when it has none (only inline sends need none). A descriptor that
/// is not one of the domain's registrations (`set`) is refused
/// (`-FI_EINVAL`, warn line).
#[inline]
pub(crate) fn desc_lkeys(
    set: &LkeySet,
    desc: &[usize],
    n: usize,
    what: &str,
) -> Result<Option<[u32; MAX_SGE]>> {
    let Some(desc) = desc.get(..n) else {
        return Ok(None);
    };
    if desc.contains(&0) {
        return Ok(None);
    }
    let mut k = [0u32; MAX_SGE];
    for (key, &d) in k.iter_mut().zip(desc) {
        match u32::try_from(d) {
            Ok(l) if set.contains(l) => *key = l,
            _ => return Err(foreign_desc(what, d)),
        }
    }
    Ok(Some(k))
}

/// [`desc_lkeys`]' refusal, logged (out of the posting path's way).
#[cold]
fn foreign_desc(what: &str, d: usize) -> Error {
    oxifabric::prov_log!(
        NAME,
        FI_LOG_WARN,
        FI_LOG_EP_DATA,
        "{what}: descriptor {d:#x} is not a registration of this domain"
    );
    Error::Inval
}

/// Local keys for buffers the application gave no descriptors for: under
/// `FI_MR_LOCAL` (`mr_mode`) that is refused (`-FI_EINVAL`); otherwise each
/// buffer's registration comes from the domain's cache (`mr_cache`), held
/// until the operation completes. `access` is what the device does with
/// the memory (local write for receives and reads).
pub(crate) fn register_bufs(
    cache: &MrCache,
    mr_mode: i32,
    iov: &[IoBuf],
    access: i32,
    what: &str,
) -> Result<([u32; MAX_SGE], Vec<Hold>)> {
    if mr_mode & FI_MR_LOCAL != 0 {
        oxifabric::prov_log!(
            NAME,
            FI_LOG_WARN,
            FI_LOG_EP_DATA,
            "{what}: FI_MR_LOCAL: each buffer needs its fi_mr_desc"
        );
        return Err(Error::Inval);
    }
    let mut lkeys = [0u32; MAX_SGE];
    let mut held = Vec::with_capacity(iov.len());
    for (i, b) in iov.iter().enumerate().take(MAX_SGE) {
        if b.is_empty() {
            continue;
        }
        let h = cache.get(*b, access).map_err(|e| verbs_err(what, e))?;
        lkeys[i] = h.lkey();
        held.push(h);
    }
    Ok((lkeys, held))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cm_data_carries_its_length_and_refuses_more_than_the_limit() {
        let out = cm_data_out(b"hello").unwrap();
        assert_eq!(out[0], 5);
        // rdma-cm pads a request's private data: the padding is not the
        // application's.
        let mut padded = out.clone();
        padded.resize(56, 0);
        assert_eq!(cm_data_in(&padded), b"hello");
        assert_eq!(cm_data_in(&[]), b"");
        assert_eq!(cm_data_in(&[9, 1, 2]), [1, 2], "a short buffer is clamped");
        assert!(cm_data_out(&[0; CM_DATA_SIZE]).is_ok());
        assert_eq!(cm_data_out(&[0; CM_DATA_SIZE + 1]), Err(Error::Inval));
    }

    #[test]
    fn work_completion_errors_map_to_fi_codes() {
        assert_eq!(wc_error(IBV_WC_WR_FLUSH_ERR), FI_ECANCELED);
        assert_eq!(wc_error(IBV_WC_REM_ACCESS_ERR), FI_EACCES);
        assert_eq!(wc_error(IBV_WC_RETRY_EXC_ERR), FI_ETIMEDOUT);
        assert_eq!(wc_error(IBV_WC_RNR_RETRY_EXC_ERR), FI_ENORX);
        assert_eq!(wc_error(IBV_WC_LOC_LEN_ERR), FI_ETRUNC);
        assert_eq!(wc_error(99), FI_EIO);
    }
}
