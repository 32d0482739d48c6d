//! Shared receive contexts (`fi_srx_context`): receives posted to one are
//! used by every endpoint bound to it; a message completes on the CQ of
//! the endpoint it arrived at, whichever shared buffer it landed in
//! (fi_endpoint(3), "SHARED CONTEXTS").
//!
//! The context holds the posted receives only. A message that finds no
//! receive waits as unexpected in the queue of the endpoint it arrived at
//! (so its completion, and for a rendezvous its clear-to-send, stay with
//! that endpoint). Posting to the context therefore first looks at the
//! unexpected messages of every bound endpoint, with all of their locks
//! held so that nothing arrives in between, and only then queues the
//! receive here.
//!
//! Lock order: endpoints (in the order they were bound), then the
//! context's queue. The arrival path holds its endpoint and takes the
//! queue; nothing takes an endpoint while holding the queue.

use super::*;
use oxifabric::service::ep_core::Sinks;

/// A shared receive context.
pub struct SharedRx {
    q: Mutex<RxQueues<Token>>,
    eps: Mutex<Vec<Weak<SockEp>>>,
}

impl SharedRx {
    pub fn new() -> Arc<SharedRx> {
        Arc::new(SharedRx {
            q: Mutex::new(RxQueues::default()),
            eps: Mutex::new(Vec::new()),
        })
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, RxQueues<Token>> {
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bound(&self) -> std::sync::MutexGuard<'_, Vec<Weak<SockEp>>> {
        self.eps.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Finds a posted receive for a message arriving at one of the bound
    /// endpoints (whose lock the caller holds).
    pub(super) fn place(
        &self,
        src: fi_addr_t,
        tag: Option<u64>,
        len: usize,
        last: bool,
    ) -> Placement {
        let mut q = self.queue();
        if last {
            q.place_last(src, tag, len)
        } else {
            q.place(src, tag, len)
        }
    }

    /// `fi_ep_bind` of this context to `ep`.
    pub(super) fn attach(&self, ep: Weak<SockEp>) {
        let mut l = self.bound();
        l.retain(|w| w.strong_count() > 0);
        l.push(ep);
    }

    /// `ep` closed.
    pub(super) fn detach(&self, ep: &Weak<SockEp>) {
        self.bound()
            .retain(|w| !w.ptr_eq(ep) && w.strong_count() > 0);
    }
}

impl EndpointOps for SharedRx {
    fn bind(&self, _b: Binding) -> Result<()> {
        // Completion queues and counters bind to the endpoints.
        Err(Error::NoSys)
    }

    fn enable(&self) -> Result<()> {
        Ok(())
    }

    fn close(&self) {
        let mut q = self.queue();
        q.posted.clear();
        q.posted_tagged.clear();
        self.bound().clear();
    }

    fn cancel(&self, context: usize) -> Result<()> {
        // The receive belongs to no endpoint yet: its cancellation is
        // reported on the first bound endpoint's CQ.
        let first = self.bound().iter().find_map(Weak::upgrade);
        let sinks = first
            .map(|ep| ep.lock().core.sinks.clone())
            .unwrap_or_default();
        self.queue().cancel(context, &sinks)
    }

    fn getopt(&self, level: c_int, name: c_int) -> Result<OptValue> {
        self.queue().getopt(level, name)
    }

    fn setopt(&self, level: c_int, name: c_int, v: OptValue) -> Result<()> {
        self.queue().setopt(level, name, v)
    }

    fn getname(&self) -> Result<Vec<u8>> {
        Err(Error::NoSys)
    }

    fn recv(&self, op: &RecvOp<'_>) -> Result<()> {
        if op.flags & (FI_PEEK | FI_CLAIM) != 0 {
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "fi_recv on a shared receive context: FI_PEEK and FI_CLAIM go to an endpoint"
            );
            return Err(Error::BadFlags);
        }
        if op.flags & FI_MULTI_RECV != 0 && op.tag.is_some() {
            return Err(Error::BadFlags);
        }
        let eps: Vec<Arc<SockEp>> = self.bound().iter().filter_map(Weak::upgrade).collect();
        let mut guards: Vec<_> = eps.iter().map(|ep| ep.lock()).collect();
        for (ep, g) in eps.iter().zip(guards.iter_mut()) {
            if g.rxq.has_match(op) {
                // It completes there, as if posted to that endpoint.
                return ep.recv_locked(g, op);
            }
        }
        let mut q = self.queue();
        if q.posted_count() >= attrs::QUEUE_SIZE {
            return Err(Error::Again);
        }
        // Nothing unexpected is ever queued here: the receive is queued.
        let fetch = q.post(op, &Sinks::default());
        debug_assert!(fetch.is_empty());
        Ok(())
    }

    fn send(&self, _op: &SendOp<'_>) -> Result<()> {
        Err(Error::NoSys)
    }

    fn rx_size_left(&self) -> Result<usize> {
        Ok(attrs::QUEUE_SIZE.saturating_sub(self.queue().posted_count()))
    }

    fn into_any(self: Arc<Self>) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        Some(self)
    }
}

impl SockEp {
    /// Where an arriving message goes: a receive posted to this endpoint,
    /// else one posted to its shared receive context, else unexpected
    /// here. `last`: its data comes later (see `RxQueues::place_last`).
    pub(super) fn place(
        &self,
        st: &mut EpState,
        src: fi_addr_t,
        tag: Option<u64>,
        len: usize,
        last: bool,
    ) -> Placement {
        let own = if last {
            st.rxq.place_last(src, tag, len)
        } else {
            st.rxq.place(src, tag, len)
        };
        match (&own, &st.srx) {
            (Placement::Unexpected, Some(srx)) => srx.place(src, tag, len, last),
            _ => own,
        }
    }

    /// A message whose whole payload is here: into a receive (see
    /// `place`), else queued as unexpected (`from`: its sender's number
    /// when the AV did not name it, `rxq::Unnamed`).
    pub(super) fn deliver(&self, st: &mut EpState, msg: MsgInfo, from: u32, payload: Vec<u8>) {
        if st.srx.is_none() {
            st.rxq.deliver_from(msg, from, payload, &st.core.sinks);
            return;
        }
        match self.place(st, msg.src, msg.tag, payload.len(), false) {
            Placement::Posted { recv, region, keep } => {
                let n = region.scatter(0, &payload);
                complete_into(
                    &recv,
                    &region,
                    n,
                    payload.len() - n,
                    msg,
                    &st.core.sinks,
                    !keep,
                );
            }
            Placement::Unexpected => st.rxq.push_unexpected(Unexpected {
                msg,
                payload,
                claimed: None,
                deferred: None,
                from,
            }),
        }
    }
}
