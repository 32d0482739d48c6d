//! Shared receive contexts (`fi_srx_context`) of MSG endpoints, over one
//! shared receive queue of the device (fi_endpoint(3), "SHARED
//! CONTEXTS").
//!
//! The application posts receives to the context; they go straight to
//! the queue with the context's own work-request ids (the top bit set, so
//! they never meet an endpoint's). Endpoints bound to the context before
//! `fi_enable` make their queue pairs on the queue and post nothing of
//! their own (`fi_recv` on one is `-FI_ENOSYS`, as upstream's verbs
//! answers). The device hands each arriving message the oldest receive of
//! the queue and reports it on the completion queue of the queue pair it
//! arrived on, so the receiving endpoint finds the work-request id in its
//! own poll, takes the receive from here ([`VerbsSrx::take`]) and reports
//! it on its CQ and counters, with immediate data as for its own
//! receives.
//!
//! A connection that fails or closes takes with it only what its queue
//! pair had already taken from the queue (its flushed completions); the
//! receives still queued stay for the other endpoints. Closing an
//! endpoint discards what its queue pair had taken and not yet reported
//! (fi_endpoint(3): outstanding operations are discarded). The boundary
//! refuses to close the context while endpoints are bound to it
//! (`-FI_EBUSY`); closing it discards the receives still posted (no
//! completions), and the queue goes once the last queue pair made on it
//! is gone (their ids hold it).
//!
//! Not offered: `fi_cancel` (verbs cannot withdraw a receive from a
//! shared queue; `-FI_ENOSYS`, as upstream), tagged and multi-receive
//! buffers, and shared transmit contexts (`fi_stx_context` is `-FI_ENOSYS`
//! and `max_ep_stx_ctx` 0).
//!
//! Lock order: an endpoint's state, then the context's (the endpoint's
//! completion path takes the context's lock; the context never takes an
//! endpoint's).

use super::{desc_lkeys, post_result, register_bufs, verbs_err, Rx, State, VerbsEp};
use crate::domain::{LkeySet, VerbsDomain};
use crate::ibv::owned::{Cq, Id, Pd, QpCap, Srq, MAX_SGE};
use crate::info::NAME;
use oxifabric::abi::*;
use oxifabric::error::{Error, Result};
use oxifabric::info::RxAttr;
use oxifabric::ops::{iov_len, Binding, EndpointOps, RecvOp, SendOp};
use oxifabric::service::rxq::Posted;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The bit that marks a work-request id as the context's.
const SRX_WR: u64 = 1 << 63;

/// A shared receive context.
pub(crate) struct VerbsSrx {
    /// Receives it holds at most (`rx_attr->size`).
    size: usize,
    /// Pieces one receive may have.
    iov_limit: usize,
    /// The domain's `mr_mode` (`FI_MR_LOCAL`: descriptors required).
    mr_mode: i32,
    /// The domain's registration cache (buffers without descriptors).
    cache: Arc<crate::mr_cache::MrCache>,
    lkeys: Arc<LkeySet>,
    st: Mutex<SrxState>,
}

struct SrxState {
    /// None once the context is closed.
    srq: Option<Arc<Srq>>,
    /// Receives posted and not yet taken by an endpoint, by id.
    rx: HashMap<u64, Rx>,
    next_wr: u64,
}

impl VerbsSrx {
    /// A context for `attr` (its `size` and `iov_limit`; the boundary
    /// filled in the domain's where the application gave none) in domain
    /// `d`: a shared receive queue of that many receives, which the
    /// device must allow (`max_srq_wr`: more is `-FI_EINVAL`).
    pub(crate) fn new(attr: &RxAttr, d: &VerbsDomain) -> Result<Arc<VerbsSrx>> {
        let dev = d
            .dev
            .query_device()
            .map_err(|e| verbs_err("ibv_query_device", e))?;
        if dev.max_srq <= 0 {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "fi_srx_context: the device has no shared receive queues"
            );
            return Err(Error::NoSys);
        }
        let max_wr = usize::try_from(dev.max_srq_wr).unwrap_or(0);
        let size = attr.size.max(1);
        if size > max_wr {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "fi_srx_context: size {size} exceeds the device's max_srq_wr {max_wr}"
            );
            return Err(Error::Inval);
        }
        let iov_limit = attr
            .iov_limit
            .clamp(1, MAX_SGE)
            .min(usize::try_from(dev.max_srq_sge).unwrap_or(1).max(1));
        let srq =
            d.pd.create_srq(size as u32, iov_limit as u32)
                .map_err(|e| verbs_err("ibv_create_srq", e))?;
        Ok(Arc::new(VerbsSrx {
            size,
            iov_limit,
            mr_mode: d.mr_mode,
            cache: d.cache.clone(),
            lkeys: d.lkeys.clone(),
            st: Mutex::new(SrxState {
                srq: Some(srq),
                rx: HashMap::new(),
                next_wr: 0,
            }),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SrxState> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Receives the context holds at most: what a bound endpoint's
    /// completion queue must have room for besides its sends.
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// Makes `id`'s queue pair on the shared receive queue (no receive
    /// queue of its own).
    pub(super) fn make_qp(
        &self,
        id: &mut Id,
        pd: &Arc<Pd>,
        cq: &Arc<Cq>,
        cap: &mut QpCap,
    ) -> Result<()> {
        let srq = self.lock().srq.clone().ok_or(Error::OpBadState)?;
        cap.max_recv_wr = 0;
        id.create_qp_on_srq(pd, cq, &srq, cap)
            .map_err(|e| verbs_err("rdma_create_qp (shared receive queue)", e))
    }

    /// The context's receive that work request `wr_id` names, taken out
    /// (its completion arrived at a bound endpoint); None for any other id.
    pub(super) fn take(&self, wr_id: u64) -> Option<Rx> {
        if wr_id & SRX_WR == 0 {
            return None;
        }
        self.lock().rx.remove(&wr_id)
    }
}

/// `fi_recv` on an endpoint bound to a shared receive context: its
/// receives come from the context (upstream's verbs answers the same).
pub(super) fn own_receive_refused() -> Error {
    oxifabric::prov_log!(
        NAME,
        FI_LOG_WARN,
        FI_LOG_EP_DATA,
        "fi_recv on an endpoint bound to a shared receive context: post to the context"
    );
    Error::NoSys
}

impl VerbsEp {
    /// `fi_ep_bind` of a shared receive context: before `fi_enable` (the
    /// queue pair is made on its queue) and before any receive was posted
    /// to the endpoint itself; one per endpoint.
    pub(super) fn bind_srx(&self, ops: Arc<dyn EndpointOps>) -> Result<()> {
        let Some(srx) = ops.into_any().and_then(|a| a.downcast::<VerbsSrx>().ok()) else {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "fi_ep_bind: not a shared receive context of the verbs provider"
            );
            return Err(Error::Inval);
        };
        let mut st = self.lock();
        let why = if st.core.enabled || st.cq.is_some() {
            "after fi_enable"
        } else if st.srx.is_some() {
            "a shared receive context is already bound"
        } else if !st.early_rx.is_empty() {
            "receives were already posted to the endpoint"
        } else {
            st.srx = Some(srx);
            return Ok(());
        };
        oxifabric::prov_log!(
            NAME,
            FI_LOG_WARN,
            FI_LOG_EP_CTRL,
            "fi_ep_bind of a shared receive context: {why}"
        );
        Err(if st.core.enabled {
            Error::OpBadState
        } else {
            Error::Inval
        })
    }

    /// At close, once the queue pair is gone: the context's receives that
    /// it had taken and whose completions are still in the endpoint's
    /// completion queue leave the context, unreported (discarded with the
    /// endpoint), so the context's count stays true.
    pub(super) fn release_shared_rx(st: &mut State) {
        let (Some(srx), Some(cq)) = (st.srx.take(), st.cq.as_ref()) else {
            return;
        };
        let mut wc = [crate::ibv::ibv_wc::default(); 16];
        while let Ok(n @ 1..) = cq.poll(&mut wc) {
            for w in &wc[..n] {
                drop(srx.take(w.wr_id));
            }
        }
    }
}

impl EndpointOps for VerbsSrx {
    /// Completion queues and counters bind to the endpoints.
    fn bind(&self, _b: Binding) -> Result<()> {
        Err(Error::NoSys)
    }

    /// Nothing to enable: the queue exists from the start.
    fn enable(&self) -> Result<()> {
        Ok(())
    }

    fn close(&self) {
        let mut st = self.lock();
        st.srq = None;
        st.rx.clear();
    }

    fn getname(&self) -> Result<Vec<u8>> {
        Err(Error::NoSys)
    }

    /// Posts a receive to the shared queue: its buffers' descriptors
    /// under `FI_MR_LOCAL` (a descriptor of another domain is refused),
    /// else registered for this receive alone; at most `iov_limit` pieces.
    fn recv(&self, op: &RecvOp<'_>) -> Result<()> {
        if op.tag.is_some() || op.flags & FI_MULTI_RECV != 0 {
            return Err(Error::NoSys);
        }
        let n = op.iov.len();
        if n > self.iov_limit {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "shared receive of {n} pieces, the queue takes {}",
                self.iov_limit
            );
            return Err(Error::Inval);
        }
        let what = "shared receive";
        let (lkeys, mrs) = match desc_lkeys(&self.lkeys, op.desc, n, what)? {
            Some(k) => (k, Vec::new()),
            None if iov_len(op.iov) == 0 => ([0; MAX_SGE], Vec::new()),
            None => register_bufs(
                &self.cache,
                self.mr_mode,
                op.iov,
                crate::ibv::IBV_ACCESS_LOCAL_WRITE,
                what,
            )?,
        };
        let mut st = self.lock();
        let srq = st.srq.clone().ok_or(Error::OpBadState)?;
        if st.rx.len() >= self.size {
            return Err(Error::Again);
        }
        let wr = SRX_WR | st.next_wr;
        post_result(srq.post_recv(wr, op.iov, &lkeys[..n]), "ibv_post_srq_recv")?;
        st.next_wr += 1;
        st.rx.insert(
            wr,
            Rx {
                posted: Posted::new(op),
                lkeys,
                _mrs: mrs,
            },
        );
        Ok(())
    }

    fn send(&self, _op: &SendOp<'_>) -> Result<()> {
        Err(Error::NoSys)
    }

    fn rx_size_left(&self) -> Result<usize> {
        Ok(self.size.saturating_sub(self.lock().rx.len()))
    }

    fn into_any(self: Arc<Self>) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        Some(self)
    }
}
