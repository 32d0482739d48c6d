//! The endpoint core every provider embeds (libfabric's `util_ep`): what an
//! endpoint is bound to (CQs, counters, EQ, AV), the rules for binding and
//! enabling it, and where its completions go, honouring
//! `FI_SELECTIVE_COMPLETION`. A provider keeps one [`EpCore`] in its
//! endpoint state and reports every finished operation through
//! [`EpCore::sinks`]; it never builds a CQ entry itself.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::info::Info;
use crate::ops::{internal, AtomicReq, Binding, RmaOp, SendOp};
use crate::prov_log;
use crate::service::av::AddressVector;
use crate::service::cntr::Counter;
use crate::service::cq::{Completion, CompletionQueue, CqError};
use crate::service::eq::{EqError, Event, EventData, EventQueue};
use crate::service::progress::Progress;
use crate::service::rxq::{rx_flags, Posted};
use crate::service::trigger;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};

/// Operations the engine issues itself, whose completions go to it rather
/// than to the application's CQ as they are (collective messages,
/// deferred work): one test on the completion path.
const ROUTED: u64 = internal::COLLECTIVE | internal::DEFERRED_WORK;

/// What the completion of a send needs, captured when it is posted.
#[derive(Debug, Clone, Copy)]
pub struct TxCtx {
    /// The application's context.
    pub ctx: usize,
    /// The operation's `FI_*` flags.
    pub flags: u64,
    /// The engine's own flags ([`internal`]).
    pub internal: u64,
    /// The flags its completion carries (`FI_SEND | FI_MSG`,
    /// `FI_RMA | FI_WRITE`, ...); they also pick the counter it counts on.
    pub comp: u64,
}

impl TxCtx {
    /// The completion context of a posted send.
    pub fn of(op: &SendOp<'_>) -> TxCtx {
        TxCtx {
            ctx: op.context,
            flags: op.flags,
            internal: op.internal,
            comp: tx_flags(op.tag.is_some()),
        }
    }

    /// The completion context of a posted atomic operation: `FI_ATOMIC`
    /// with `FI_WRITE` (base) or `FI_READ` (fetch and compare: a value
    /// comes back), which also picks the counter.
    pub fn of_atomic(op: &AtomicReq<'_>) -> TxCtx {
        let fetch = op.kind != crate::service::atomic::AtomicKind::Base;
        TxCtx {
            ctx: op.context,
            flags: op.flags,
            internal: op.internal,
            comp: FI_ATOMIC | if fetch { FI_READ } else { FI_WRITE },
        }
    }

    /// The completion context of a posted RMA operation.
    pub fn of_rma(op: &RmaOp<'_>) -> TxCtx {
        TxCtx {
            ctx: op.context,
            flags: op.flags,
            internal: op.internal,
            comp: FI_RMA | if op.write { FI_WRITE } else { FI_READ },
        }
    }
}

/// Why an operation failed, as a CQ or EQ error entry reports it: the
/// `FI_E*` code, the provider's own error (an OS errno for socket
/// providers), the peer involved and a cause in words, so that
/// `fi_cq_strerror` can say what happened (see [`Failure::describe`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Failure {
    /// Positive `FI_E*` code (`FI_ECONNRESET`, `FI_ECANCELED`, ...).
    pub err: c_int,
    /// Provider-specific error number (0 when there is none).
    pub prov_errno: c_int,
    /// The peer the operation was with, when known.
    pub peer: Option<SocketAddr>,
    /// The peer's address in words, for transports whose addresses are
    /// not socket addresses (a shared-memory endpoint's name); used when
    /// `peer` is `None`.
    pub peer_name: Option<PeerName>,
    /// What happened, when neither `prov_errno` nor `err` says it
    /// ("peer closed the connection").
    pub cause: &'static str,
    /// Whose number `prov_errno` is when it is not an OS errno (verbs: a
    /// work completion status, "verbs status"); empty for an OS errno.
    pub prov_errno_kind: &'static str,
}

impl Failure {
    /// A failure with no provider-specific cause.
    pub fn code(err: c_int) -> Failure {
        Failure {
            err,
            ..Default::default()
        }
    }

    /// A failure explained in words.
    pub fn cause(err: c_int, cause: &'static str) -> Failure {
        Failure {
            err,
            cause,
            ..Default::default()
        }
    }

    /// A failure caused by an OS error, reported as `err`.
    pub fn os(err: c_int, e: &std::io::Error) -> Failure {
        Failure {
            err,
            prov_errno: e.raw_os_error().unwrap_or(0),
            ..Default::default()
        }
    }

    /// Whether there is more to say than the `FI_E*` code.
    pub fn has_detail(&self) -> bool {
        self.peer.is_some()
            || self.peer_name.is_some()
            || !self.cause.is_empty()
            || self.prov_errno != 0
    }

    /// The text `fi_cq_strerror` and `fi_eq_strerror` give for it: the
    /// peer and the cause ("peer 127.0.0.1:4000: Connection reset by peer
    /// (os error 104)").
    pub fn describe(&self) -> String {
        let cause = if !self.cause.is_empty() {
            match (self.prov_errno, self.prov_errno_kind) {
                (0, _) => self.cause.to_string(),
                (e, "") => format!("{}: {}", self.cause, std::io::Error::from_raw_os_error(e)),
                (e, kind) => format!("{} ({kind} {e})", self.cause),
            }
        } else if self.prov_errno != 0 {
            std::io::Error::from_raw_os_error(self.prov_errno).to_string()
        } else {
            crate::strerror::strerror(self.err)
                .to_string_lossy()
                .into_owned()
        };
        match (self.peer, &self.peer_name) {
            (Some(p), _) => format!("peer {p}: {cause}"),
            (None, Some(n)) => format!("peer {}: {cause}", n.as_str()),
            (None, None) => cause,
        }
    }

    /// `describe` as the NUL-terminated `err_data` of an error entry,
    /// empty when there is nothing beyond the code.
    pub fn err_data(&self) -> Vec<u8> {
        if !self.has_detail() {
            return Vec::new();
        }
        let mut v = self.describe().into_bytes();
        v.push(0);
        v
    }
}

/// A peer's address as text, kept by value so that a [`Failure`] stays
/// `Copy` (longer names are cut at [`PeerName::MAX`] bytes, on a character
/// boundary).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PeerName {
    bytes: [u8; PeerName::MAX],
    len: u8,
}

impl PeerName {
    /// The longest name kept, in bytes.
    pub const MAX: usize = 64;

    /// The name `s`, cut to [`PeerName::MAX`] bytes.
    pub fn new(s: &str) -> PeerName {
        let mut len = s.len().min(Self::MAX);
        while !s.is_char_boundary(len) {
            len -= 1;
        }
        let mut bytes = [0u8; Self::MAX];
        bytes[..len].copy_from_slice(&s.as_bytes()[..len]);
        PeerName {
            bytes,
            len: len as u8,
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl std::fmt::Debug for PeerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text behind an error entry's `err_data`, for `fi_cq_strerror` and
/// `fi_eq_strerror`: when `err_data` is the address of `kept` (the buffer
/// the queue handed out with the entry, holding [`Failure::describe`]'s
/// NUL-terminated text), that text. Only addresses are compared; nothing
/// is read through `err_data`.
pub fn error_text(kept: &[u8], err_data: usize) -> Option<&core::ffi::CStr> {
    if err_data == 0 || kept.as_ptr() as usize != err_data {
        return None;
    }
    core::ffi::CStr::from_bytes_until_nul(kept).ok()
}

/// The completion queues and counters an endpoint is bound to.
#[derive(Default, Clone)]
pub struct Sinks {
    pub tx_cq: Option<Arc<CompletionQueue>>,
    pub tx_selective: bool,
    pub rx_cq: Option<Arc<CompletionQueue>>,
    pub rx_selective: bool,
    pub send_cntr: Option<Arc<Counter>>,
    pub recv_cntr: Option<Arc<Counter>>,
    /// Counters of RMA (and atomic) operations this endpoint starts.
    pub read_cntr: Option<Arc<Counter>>,
    pub write_cntr: Option<Arc<Counter>>,
    /// Counters of RMA operations peers perform into this endpoint's
    /// memory (`FI_REMOTE_READ`, `FI_REMOTE_WRITE`).
    pub remote_read_cntr: Option<Arc<Counter>>,
    pub remote_write_cntr: Option<Arc<Counter>>,
}

/// Completion flags of a send.
pub fn tx_flags(tagged: bool) -> u64 {
    FI_SEND | if tagged { FI_TAGGED } else { FI_MSG }
}

impl Sinks {
    /// Tells every bound queue and counter that this endpoint holds work
    /// only its progress writes (sends held for coalescing), so a queue
    /// shared by many endpoints drives it on the next read.
    pub fn kick_progress(&self) {
        let cqs = [&self.tx_cq, &self.rx_cq];
        for cq in cqs.into_iter().flatten() {
            cq.kick_progress();
        }
        let cntrs = [
            &self.send_cntr,
            &self.recv_cntr,
            &self.read_cntr,
            &self.write_cntr,
        ];
        for c in cntrs.into_iter().flatten() {
            c.kick_progress();
        }
    }

    fn wants_tx(&self, t: &TxCtx) -> bool {
        t.internal & internal::NO_COMPLETION == 0
            && (!self.tx_selective || t.flags & FI_COMPLETION != 0)
    }

    fn wants_rx(&self, op_flags: u64) -> bool {
        !self.rx_selective || op_flags & FI_COMPLETION != 0
    }

    /// Whether a send may be posted: its completion would have room (see
    /// `CompletionQueue::is_full`).
    pub fn tx_room(&self, t: &TxCtx) -> bool {
        !self.wants_tx(t) || self.tx_cq.as_ref().is_none_or(|cq| !cq.is_full())
    }

    /// Whether a receive with `op_flags` may be posted (as `tx_room`).
    pub fn rx_room(&self, op_flags: u64) -> bool {
        !self.wants_rx(op_flags) || self.rx_cq.as_ref().is_none_or(|cq| !cq.is_full())
    }

    /// The counter an operation with these completion flags counts on.
    fn tx_cntr(&self, t: &TxCtx) -> &Option<Arc<Counter>> {
        if t.comp & FI_READ != 0 {
            &self.read_cntr
        } else if t.comp & FI_WRITE != 0 {
            &self.write_cntr
        } else {
            &self.send_cntr
        }
    }

    /// A send (or RMA operation) finished.
    pub fn tx_done(&self, t: &TxCtx) {
        if t.internal & ROUTED != 0 {
            return self.routed_tx(t, None);
        }
        if self.wants_tx(t) {
            if let Some(cq) = &self.tx_cq {
                cq.push(Completion {
                    op_context: t.ctx,
                    flags: t.comp,
                    src: FI_ADDR_NOTAVAIL,
                    ..Default::default()
                });
            }
        }
        if let Some(c) = self.tx_cntr(t) {
            c.inc();
        }
    }

    /// A peer's RMA access into this endpoint's memory completed: the
    /// remote counter counts it, and a write with remote CQ data reports
    /// it on the receive CQ (`FI_RMA | FI_REMOTE_WRITE |
    /// FI_REMOTE_CQ_DATA`, `len` bytes, the data). No posted receive is
    /// consumed (the provider does not ask for `FI_RX_CQ_DATA`).
    pub fn remote_done(&self, write: bool, len: usize, data: Option<u64>, src: fi_addr_t) {
        if let (Some(d), Some(cq)) = (data, &self.rx_cq) {
            cq.push(Completion {
                op_context: 0,
                flags: FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
                len,
                data: d,
                src,
                ..Default::default()
            });
        }
        let c = if write {
            &self.remote_write_cntr
        } else {
            &self.remote_read_cntr
        };
        if let Some(c) = c {
            c.inc();
        }
    }

    /// A send failed. Errors are always reported, even for operations
    /// that asked for no completion.
    pub fn tx_err(&self, t: &TxCtx, f: Failure) {
        if t.internal & ROUTED != 0 {
            return self.routed_tx(t, Some(f));
        }
        self.tx_cq_report(t.ctx, t.comp, Some(f));
        if let Some(c) = self.tx_cntr(t) {
            c.inc_err();
        }
    }

    /// Writes the transmit CQ's entry for operation `ctx` with completion
    /// flags `comp`: an error entry for `Some(f)`. No counter counts it
    /// (the caller's business).
    pub fn tx_cq_report(&self, ctx: usize, comp: u64, f: Option<Failure>) {
        let Some(cq) = &self.tx_cq else { return };
        let c = Completion {
            op_context: ctx,
            flags: comp,
            src: FI_ADDR_NOTAVAIL,
            ..Default::default()
        };
        match f {
            None => cq.push(c),
            Some(f) => cq.push_err(CqError {
                comp: c,
                err: f.err,
                prov_errno: f.prov_errno,
                err_data: f.err_data(),
                ..Default::default()
            }),
        }
    }

    /// A transmit operation the engine issued itself finished (`ROUTED`):
    /// a collective's message, or deferred work.
    #[cold]
    fn routed_tx(&self, t: &TxCtx, f: Option<Failure>) {
        if t.internal & internal::COLLECTIVE != 0 {
            crate::service::coll::sub_done(t.ctx, f);
        } else {
            self.deferred_tx(t, f);
        }
    }

    /// [`Sinks::routed_tx`] for a receive: its completion and extra flags,
    /// or its error entry.
    #[cold]
    fn routed_rx(&self, p: &Posted, r: core::result::Result<(Completion, u64), CqError>) {
        if p.internal & internal::COLLECTIVE != 0 {
            let f = r.err().map(|e| Failure {
                err: e.err,
                prov_errno: e.prov_errno,
                ..Default::default()
            });
            return crate::service::coll::sub_done(p.ctx, f);
        }
        let Some((h, own)) = self.deferred_rx(p) else {
            return;
        };
        match r {
            Ok((comp, extra_flags)) => {
                if p.flags & FI_COMPLETION != 0 {
                    let comp = Completion {
                        op_context: own.ctx,
                        ..comp
                    };
                    self.rx_done(&own, comp, extra_flags);
                }
                if let Some(c) = h.cntr {
                    c.inc();
                }
            }
            Err(mut e) => {
                if p.flags & FI_COMPLETION != 0 || h.cntr.is_none() {
                    e.comp.op_context = own.ctx;
                    self.rx_err_full(&own, e);
                }
                if let Some(c) = h.cntr {
                    c.inc_err();
                }
            }
        }
    }

    /// Deferred work (fi_trigger(3)) finished: its completion counter
    /// counts it; the endpoint reports it only when the operation asked
    /// for `FI_COMPLETION`, and an error also when there is no completion
    /// counter (so that no failure goes unseen).
    fn deferred_tx(&self, t: &TxCtx, f: Option<Failure>) {
        let Some(h) = trigger::take_hook(t.ctx) else {
            return;
        };
        let own = TxCtx {
            ctx: h.context,
            internal: t.internal & !internal::DEFERRED_WORK,
            ..*t
        };
        let at_ep = t.flags & FI_COMPLETION != 0;
        match f {
            None if at_ep => self.tx_done(&own),
            Some(f) if at_ep || h.cntr.is_none() => self.tx_err(&own, f),
            _ => {}
        }
        if let Some(c) = h.cntr {
            if f.is_none() {
                c.inc();
            } else {
                c.inc_err();
            }
        }
    }

    /// [`Sinks::deferred_tx`] for a receive: the hook and the receive as
    /// the application posted it.
    fn deferred_rx(&self, p: &Posted) -> Option<(trigger::Hook, Posted)> {
        let h = trigger::take_hook(p.ctx)?;
        let own = Posted {
            ctx: h.context,
            internal: p.internal & !internal::DEFERRED_WORK,
            ..*p
        };
        Some((h, own))
    }

    /// A receive finished; `extra_flags` adds e.g. `FI_MULTI_RECV`.
    pub fn rx_done(&self, p: &Posted, comp: Completion, extra_flags: u64) {
        if p.internal & ROUTED != 0 {
            return self.routed_rx(p, Ok((comp, extra_flags)));
        }
        if self.wants_rx(p.flags) || extra_flags & FI_MULTI_RECV != 0 {
            if let Some(cq) = &self.rx_cq {
                cq.push(comp);
            }
        }
        if let Some(c) = &self.recv_cntr {
            c.inc();
        }
    }

    /// A posted receive failed (`olen` bytes did not fit).
    pub fn rx_err(&self, p: &Posted, f: Failure, len: usize, olen: usize) {
        self.rx_err_full(
            p,
            CqError {
                comp: Completion {
                    op_context: p.ctx,
                    flags: rx_flags(p.tag.is_some(), None),
                    len,
                    tag: p.tag.map_or(0, |t| t.0),
                    src: FI_ADDR_NOTAVAIL,
                    ..Default::default()
                },
                olen,
                err: f.err,
                prov_errno: f.prov_errno,
                err_data: f.err_data(),
            },
        );
    }

    /// A receive `p` failed; the caller built the whole error entry.
    pub fn rx_err_full(&self, p: &Posted, e: CqError) {
        if p.internal & ROUTED != 0 {
            return self.routed_rx(p, Err(e));
        }
        if let Some(cq) = &self.rx_cq {
            cq.push_err(e);
        }
        if let Some(c) = &self.recv_cntr {
            c.inc_err();
        }
    }
}

/// Both halves of an endpoint, as `fi_enable` of a whole endpoint turns
/// them on.
pub const BOTH: u64 = FI_SEND | FI_RECV;

/// The halves ([`FI_SEND`], [`FI_RECV`]) a binding serves, by its flags:
/// a CQ's `FI_TRANSMIT`/`FI_RECV`; a counter's `FI_SEND`, `FI_READ`,
/// `FI_WRITE` (transmit) and `FI_RECV`, `FI_REMOTE_READ`,
/// `FI_REMOTE_WRITE` (receive); an AV or flags naming neither, both; a
/// shared receive context, the receive half; an EQ, none.
pub fn halves_of(b: &Binding) -> u64 {
    let h = match b {
        // FI_TRANSMIT is FI_SEND.
        Binding::Cq(_, f) => f & BOTH,
        Binding::Cntr(_, f) => {
            (if f & (FI_SEND | FI_READ | FI_WRITE) != 0 {
                FI_SEND
            } else {
                0
            }) | (if f & (FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE) != 0 {
                FI_RECV
            } else {
                0
            })
        }
        Binding::Eq(_) => return 0,
        Binding::Av(_) => BOTH,
        Binding::Srx(_) => FI_RECV,
    };
    if h == 0 {
        BOTH
    } else {
        h
    }
}

/// `b` as a scalable endpoint's transmit (`halves` [`FI_SEND`]) or receive
/// ([`FI_RECV`]) context binds it (an endpoint's `halves` are [`BOTH`]:
/// `b` unchanged): a CQ's or counter's flags of the other half are
/// dropped, as the context does not own that half of the
/// endpoint serving it; `None` when nothing is left to bind (upstream's
/// contexts accept such a bind and ignore it).
pub fn for_halves(b: Binding, halves: u64) -> Option<Binding> {
    let completions = matches!(b, Binding::Cq(..) | Binding::Cntr(..));
    if completions && halves_of(&b) & halves == 0 {
        return None;
    }
    const TX_CNTR: u64 = FI_SEND | FI_READ | FI_WRITE;
    const RX_CNTR: u64 = FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE;
    let cntr_keep = (if halves & FI_SEND != 0 { TX_CNTR } else { 0 })
        | (if halves & FI_RECV != 0 { RX_CNTR } else { 0 });
    Some(match b {
        Binding::Cq(cq, f) => Binding::Cq(cq, f & (halves | !BOTH)),
        Binding::Cntr(c, f) => Binding::Cntr(c, f & (cntr_keep | !(TX_CNTR | RX_CNTR))),
        other => other,
    })
}

/// Everything an endpoint is bound to, and the rules for binding and
/// enabling it. Lives inside the provider's endpoint state (under its
/// lock).
pub struct EpCore {
    /// Where completions go.
    pub sinks: Sinks,
    /// The event queue (connection events, asynchronous errors).
    pub eq: Option<Arc<EventQueue>>,
    /// The address vector (RDM and DGRAM endpoints).
    pub av: Option<Arc<AddressVector>>,
    /// `fi_enable` succeeded: the transport is open.
    pub enabled: bool,
    /// The halves `fi_enable` turned on ([`FI_SEND`], [`FI_RECV`]): both
    /// at once for an endpoint; one at a time for a scalable endpoint's
    /// context pair, whose transmit and receive contexts bind and enable
    /// on their own (fi_endpoint(3)).
    live: u64,
    /// The C handle (`struct fid *`) events about this endpoint carry.
    pub fid: usize,
    ep_type: fi_ep_type,
    caps: u64,
    /// Serves a scalable endpoint's context pair: `fi_enable` asks for no
    /// CQ or counter (`EndpointOps::serve_context_pair`).
    pub context_pair: bool,
    prov: &'static str,
}

impl EpCore {
    /// An unbound core for an endpoint opened from `info` by provider
    /// `prov` (named in log lines).
    pub fn new(info: &Info, prov: &'static str) -> EpCore {
        EpCore {
            sinks: Sinks::default(),
            eq: None,
            av: None,
            enabled: false,
            live: 0,
            fid: 0,
            ep_type: info.ep.ep_type,
            caps: info.caps,
            context_pair: false,
            prov,
        }
    }

    /// `fi_ep_bind`: records the binding and registers `me` as a progress
    /// source of the bound CQ, counter or EQ (so reading them drives this
    /// endpoint). Once a half is enabled, nothing it uses may be bound,
    /// except an EQ.
    pub fn bind(&mut self, b: Binding, me: Weak<dyn Progress>) -> Result<()> {
        if self.live & halves_of(&b) != 0 {
            return Err(Error::OpBadState);
        }
        match b {
            Binding::Cq(cq, flags) => {
                if flags & (FI_TRANSMIT | FI_RECV) == 0 {
                    return Err(Error::BadFlags);
                }
                let selective = flags & FI_SELECTIVE_COMPLETION != 0;
                if flags & FI_TRANSMIT != 0 {
                    self.sinks.tx_cq = Some(cq.clone());
                    self.sinks.tx_selective = selective;
                }
                if flags & FI_RECV != 0 {
                    self.sinks.rx_cq = Some(cq.clone());
                    self.sinks.rx_selective = selective;
                }
                cq.add_source(me);
            }
            Binding::Cntr(c, flags) => {
                if flags & FI_SEND != 0 {
                    self.sinks.send_cntr = Some(c.clone());
                }
                if flags & FI_RECV != 0 {
                    self.sinks.recv_cntr = Some(c.clone());
                }
                let rma = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
                if flags & rma != 0 && self.caps & (FI_RMA | FI_ATOMIC) == 0 {
                    prov_log!(
                        self.prov,
                        FI_LOG_WARN,
                        FI_LOG_EP_CTRL,
                        "counter events {:#x} never occur: the endpoint has no FI_RMA",
                        flags & rma
                    );
                }
                for (bit, slot) in [
                    (FI_READ, &mut self.sinks.read_cntr),
                    (FI_WRITE, &mut self.sinks.write_cntr),
                    (FI_REMOTE_READ, &mut self.sinks.remote_read_cntr),
                    (FI_REMOTE_WRITE, &mut self.sinks.remote_write_cntr),
                ] {
                    if flags & bit != 0 {
                        *slot = Some(c.clone());
                    }
                }
                c.add_source(me);
            }
            Binding::Eq(eq) => {
                eq.add_source(me);
                self.eq = Some(eq);
            }
            Binding::Av(av) => {
                if self.ep_type == FI_EP_MSG {
                    return Err(Error::Inval);
                }
                self.av = Some(av);
            }
            // Providers with shared receive contexts bind them themselves.
            Binding::Srx(_) => return Err(Error::NoSys),
        }
        Ok(())
    }

    /// The first step of `fi_enable` of the halves `dirs` ([`BOTH`] for
    /// an endpoint): the checks of [`EpCore::check_enable`], then true
    /// when the transport is still to be opened (the provider opens it
    /// and calls [`EpCore::finish_enable`]); false when there is nothing
    /// more to do (the halves are on, or are now, over the open transport).
    pub fn start_enable(&mut self, dirs: u64) -> Result<bool> {
        if self.live & dirs == dirs {
            return Ok(false);
        }
        self.check_enable(dirs)?;
        if self.enabled {
            self.live |= dirs;
            return Ok(false);
        }
        Ok(true)
    }

    /// The provider opened the transport for the halves `dirs`.
    pub fn finish_enable(&mut self, dirs: u64) {
        self.enabled = true;
        self.live |= dirs;
    }

    /// Whether half `dir` ([`FI_SEND`] or [`FI_RECV`]) is enabled:
    /// operations may be posted to it.
    pub fn is_live(&self, dir: u64) -> bool {
        self.live & dir != 0
    }

    /// The checks of `fi_enable` of the halves `dirs`: a transmit
    /// (receive) CQ or counter when the endpoint sends (receives),
    /// `FI_ENOCQ` (for transmits an `FI_READ`/`FI_WRITE` counter serves
    /// too: an RMA initiator may count instead of reading completions); an
    /// AV for connectionless endpoints, `FI_ENOAV`; an EQ for MSG
    /// endpoints, `FI_ENOEQ`.
    pub fn check_enable(&self, dirs: u64) -> Result<()> {
        let s = &self.sinks;
        let dir = |d: u64| !self.context_pair && self.caps & d != 0 && dirs & d != 0;
        // An RMA initiator may count on its FI_READ/FI_WRITE counters.
        let tx_sink = s.tx_cq.is_some()
            || s.send_cntr.is_some()
            || s.read_cntr.is_some()
            || s.write_cntr.is_some();
        let missing = if !tx_sink && dir(FI_SEND) {
            Some((Error::NoCq, "no transmit CQ or counter bound"))
        } else if s.rx_cq.is_none() && s.recv_cntr.is_none() && dir(FI_RECV) {
            Some((Error::NoCq, "no receive CQ or counter bound"))
        } else if self.ep_type != FI_EP_MSG && self.av.is_none() {
            Some((Error::NoAv, "connectionless endpoint without an AV"))
        } else if self.ep_type == FI_EP_MSG && self.eq.is_none() {
            Some((Error::NoEq, "MSG endpoint without an EQ"))
        } else {
            None
        };
        match missing {
            Some((e, why)) => {
                prov_log!(self.prov, FI_LOG_WARN, FI_LOG_EP_CTRL, "fi_enable: {why}");
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// Undoes every binding (`fi_close`): `me` stops being a progress
    /// source and no completion goes anywhere any more.
    pub fn unbind_all(&mut self, me: Weak<dyn Progress>) {
        let me = &me;
        let s = &self.sinks;
        for cq in [&s.tx_cq, &s.rx_cq].into_iter().flatten() {
            cq.remove_source(me);
        }
        for c in [
            &s.send_cntr,
            &s.recv_cntr,
            &s.read_cntr,
            &s.write_cntr,
            &s.remote_read_cntr,
            &s.remote_write_cntr,
        ]
        .into_iter()
        .flatten()
        {
            c.remove_source(me);
        }
        if let Some(eq) = &self.eq {
            eq.remove_source(me);
        }
        self.sinks = Sinks::default();
        self.enabled = false;
        self.live = 0;
    }

    /// Reports a connection event (`FI_CONNECTED`, `FI_SHUTDOWN`) with its
    /// private data on the bound EQ.
    pub fn cm_event(&self, event: u32, data: Vec<u8>) {
        if let Some(eq) = &self.eq {
            let _ = eq.push(Event {
                event,
                data: EventData::Cm {
                    fid: self.fid,
                    info: None,
                    data,
                },
            });
        }
    }

    /// Reports a failed connection on the bound EQ; `err_data` is the
    /// peer's private data (a rejection's), else the failure's text.
    pub fn cm_error(&self, f: Failure, err_data: Vec<u8>) {
        let err_data = if err_data.is_empty() {
            f.err_data()
        } else {
            err_data
        };
        if let Some(eq) = &self.eq {
            eq.push_err(EqError {
                fid: self.fid,
                err: f.err,
                prov_errno: f.prov_errno,
                err_data,
                ..Default::default()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::cq::CqAttr;

    fn cq() -> Arc<CompletionQueue> {
        Arc::new(
            CompletionQueue::new(CqAttr {
                size: 8,
                format: FI_CQ_FORMAT_TAGGED,
                wait_obj: FI_WAIT_NONE,
                wait_cond: FI_CQ_COND_NONE,
            })
            .unwrap(),
        )
    }

    fn cntr() -> Arc<Counter> {
        Arc::new(Counter::new(FI_CNTR_EVENTS_COMP, FI_WAIT_NONE).unwrap())
    }

    #[test]
    fn a_failure_names_the_peer_and_says_whose_number_prov_errno_is() {
        let peer = Some("10.0.0.1:7".parse().unwrap());
        let os = Failure {
            peer,
            prov_errno: libc::ECONNRESET,
            ..Failure::cause(FI_ECONNRESET, "send failed")
        };
        assert!(os.describe().starts_with("peer 10.0.0.1:7: send failed: "));
        let verbs = Failure {
            peer,
            prov_errno: 12,
            prov_errno_kind: "verbs status",
            ..Failure::cause(FI_ETIMEDOUT, "retry exceeded")
        };
        assert_eq!(
            verbs.describe(),
            "peer 10.0.0.1:7: retry exceeded (verbs status 12)"
        );
    }

    #[test]
    fn rma_completions_carry_their_flags_and_pick_their_counters() {
        let (tx, rx) = (cq(), cq());
        let (send, read, write, rread, rwrite) = (cntr(), cntr(), cntr(), cntr(), cntr());
        let s = Sinks {
            tx_cq: Some(tx.clone()),
            rx_cq: Some(rx.clone()),
            send_cntr: Some(send.clone()),
            read_cntr: Some(read.clone()),
            write_cntr: Some(write.clone()),
            remote_read_cntr: Some(rread.clone()),
            remote_write_cntr: Some(rwrite.clone()),
            ..Default::default()
        };
        let t = |comp| TxCtx {
            ctx: 7,
            flags: 0,
            internal: 0,
            comp,
        };
        s.tx_done(&t(FI_RMA | FI_WRITE));
        s.tx_done(&t(FI_RMA | FI_READ));
        s.tx_err(
            &t(FI_ATOMIC | FI_READ),
            Failure::cause(FI_EACCES, "refused"),
        );
        s.tx_done(&t(tx_flags(false)));
        let mut flags = Vec::new();
        let _ = tx.read(8, |_, c| flags.push(c.flags));
        assert_eq!(flags, [FI_RMA | FI_WRITE, FI_RMA | FI_READ]);
        assert_eq!(
            (write.read(), read.read(), read.readerr(), send.read()),
            (1, 1, 1, 1)
        );
        // The target side: remote CQ data reaches the receive CQ, plain
        // accesses only count.
        s.remote_done(true, 100, Some(0xdada), 3);
        s.remote_done(true, 5, None, 3);
        s.remote_done(false, 5, None, 3);
        let mut got = Vec::new();
        let _ = rx.read(8, |_, c| got.push((c.flags, c.len, c.data, c.op_context)));
        assert_eq!(
            got,
            [(FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, 100, 0xdada, 0)]
        );
        assert_eq!((rwrite.read(), rread.read()), (2, 1));
    }

    #[test]
    fn deferred_work_reports_through_its_hook_and_at_the_endpoint_only_with_fi_completion() {
        use crate::service::trigger::{add_hook, Hook};
        let tx = cq();
        let (send, comp) = (cntr(), cntr());
        let s = Sinks {
            tx_cq: Some(tx.clone()),
            send_cntr: Some(send.clone()),
            ..Default::default()
        };
        let t = |ctx, flags| TxCtx {
            ctx,
            flags,
            internal: internal::DEFERRED_WORK,
            comp: tx_flags(false),
        };
        let hook = |context| Hook {
            context,
            cntr: Some(comp.clone()),
            ep: 1,
        };
        // Without FI_COMPLETION: only the completion counter.
        s.tx_done(&t(add_hook(hook(11)), 0));
        // With it: the endpoint's CQ (the application's context) and
        // counter too.
        s.tx_done(&t(add_hook(hook(12)), FI_COMPLETION));
        // A failure: the completion counter's errors.
        s.tx_err(&t(add_hook(hook(13)), 0), Failure::code(FI_EIO));
        let mut got = Vec::new();
        let _ = tx.read(8, |_, c| got.push(c.op_context));
        assert_eq!(got, [12]);
        assert_eq!((comp.read(), comp.readerr(), send.read()), (2, 1, 1));
        // A failure with no completion counter still reaches the CQ.
        let lone = add_hook(Hook {
            context: 14,
            cntr: None,
            ep: 1,
        });
        s.tx_err(&t(lone, 0), Failure::code(FI_EIO));
        assert_eq!(tx.read(8, |_, _| {}), Err(Error::Avail));
    }

    struct Idle;
    impl Progress for Idle {
        fn progress(&self) {}
        fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
            None
        }
    }

    #[test]
    fn a_context_pair_binds_and_enables_each_half_on_its_own() {
        let info = Info {
            caps: FI_MSG | FI_SEND | FI_RECV,
            ep: crate::info::EpAttr {
                ep_type: FI_EP_RDM,
                ..Default::default()
            },
            ..Default::default()
        };
        let me: Arc<dyn Progress> = Arc::new(Idle);
        let me = || Arc::downgrade(&me);
        let av = || Arc::new(AddressVector::new(FI_AV_TABLE, 1, 4, 0).unwrap());
        let mut core = EpCore::new(&info, "test");
        core.context_pair = true;
        core.bind(Binding::Av(av()), me()).unwrap();
        let tx = for_halves(Binding::Cq(cq(), FI_TRANSMIT), FI_SEND).unwrap();
        core.bind(tx, me()).unwrap();
        assert!(core.start_enable(FI_SEND).unwrap(), "the transport opens");
        core.finish_enable(FI_SEND);
        assert!(core.is_live(FI_SEND) && !core.is_live(FI_RECV));
        // The receive half still binds; the transmit half no longer does.
        let rx = for_halves(Binding::Cq(cq(), FI_RECV), FI_RECV).unwrap();
        core.bind(rx, me()).unwrap();
        let late = for_halves(Binding::Cntr(cntr(), FI_SEND), FI_SEND).unwrap();
        assert_eq!(core.bind(late, me()).err(), Some(Error::OpBadState));
        // A context binds only its own half's flags.
        assert!(for_halves(Binding::Cq(cq(), FI_RECV), FI_SEND).is_none());
        let Some(Binding::Cntr(_, f)) =
            for_halves(Binding::Cntr(cntr(), FI_SEND | FI_RECV | FI_WRITE), FI_RECV)
        else {
            panic!("a counter stays a counter");
        };
        assert_eq!(f, FI_RECV);
        let eq = Arc::new(EventQueue::new(4, FI_WAIT_NONE).unwrap());
        assert!(for_halves(Binding::Eq(eq), FI_SEND).is_some(), "EQs pass");
        // Enabling the receive half needs no second transport open.
        assert!(!core.start_enable(FI_RECV).unwrap());
        assert!(core.is_live(FI_RECV));
        assert_eq!(
            core.bind(Binding::Av(av()), me()).err(),
            Some(Error::OpBadState)
        );
    }
}
