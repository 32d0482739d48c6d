//! Deferred operations. fi_trigger(3) leaves the data buffers to the
//! application until the operation completes, but the descriptors it
//! passed (iovec arrays, `fi_rma_iov` lists, the message structs) are its
//! to reuse once the call returns: they are copied (`service::op_copy`)
//! when the operation is queued, and the operation is posted from the
//! copy.

use super::{add_hook, take_hook, Hook, Job};
use crate::abi::*;
use crate::error::Error;
use crate::ops::{internal, EndpointOps};
use crate::service::cntr::Counter;
use crate::service::ep_core::{Failure, TxCtx};
pub use crate::service::op_copy::{AtomicCopy, RecvCopy, RmaCopy, SendCopy};
use crate::service::rxq::Posted;
use std::sync::Arc;

/// A deferred data transfer.
#[allow(clippy::large_enum_variant)] // always boxed, inside its job
pub enum Deferred {
    Send(SendCopy),
    Recv(RecvCopy),
    Rma(RmaCopy),
    Atomic(AtomicCopy),
}

impl Deferred {
    /// The context and engine flags the operation is posted with.
    fn slots(&mut self) -> (&mut usize, &mut u64) {
        match self {
            Deferred::Send(o) => o.slots(),
            Deferred::Recv(o) => o.slots(),
            Deferred::Rma(o) => o.slots(),
            Deferred::Atomic(o) => o.slots(),
        }
    }
}

/// Posts a deferred data transfer on its endpoint.
pub struct PostJob {
    ep: Arc<dyn EndpointOps>,
    op: Deferred,
    /// Deferred work: what its completion reports (registered while the
    /// operation runs, under the key that replaces its context).
    hook: Option<Hook>,
}

impl PostJob {
    pub fn new(ep: Arc<dyn EndpointOps>, op: Deferred, hook: Option<Hook>) -> PostJob {
        PostJob { ep, op, hook }
    }

    fn post(&self) -> Result<(), Error> {
        match &self.op {
            Deferred::Send(o) => self.ep.send(&o.op()),
            Deferred::Recv(o) => self.ep.recv(&o.op()),
            Deferred::Rma(o) => self.ep.rma(&o.op()),
            Deferred::Atomic(o) => self.ep.atomic(&o.req()),
        }
    }
}

impl Job for PostJob {
    fn issue(&mut self) -> Result<(), Error> {
        let Some(hook) = self.hook.clone() else {
            return self.post();
        };
        let (ctx, internal) = self.op.slots();
        let (user_ctx, user_internal) = (*ctx, *internal);
        *ctx = add_hook(hook);
        *internal |= internal::DEFERRED_WORK;
        let r = self.post();
        if r.is_err() {
            // Not posted: the hook goes, the copy gets its own context back
            // (for a retry or for `fail`).
            let (ctx, internal) = self.op.slots();
            take_hook(*ctx);
            (*ctx, *internal) = (user_ctx, user_internal);
        }
        r
    }

    fn fail(&mut self, e: Error) {
        let f = if e == Error::Canceled {
            Failure::code(FI_ECANCELED)
        } else {
            let f = Failure::cause(e.errno(), "the triggered operation could not be issued");
            crate::core_warn!(
                FI_LOG_EP_DATA,
                "triggered operation refused when its threshold was reached: {}",
                f.describe()
            );
            f
        };
        let Some(sinks) = self.ep.completion_sinks() else {
            if let Some(c) = self.hook.as_ref().and_then(|h| h.cntr.as_ref()) {
                c.inc_err();
            }
            return;
        };
        // Deferred work reports through its hook, which the sinks find
        // under the operation's context.
        if let Some(h) = self.hook.clone() {
            let (ctx, internal) = self.op.slots();
            *ctx = add_hook(h);
            *internal |= internal::DEFERRED_WORK;
        }
        match &self.op {
            Deferred::Send(o) => sinks.tx_err(&TxCtx::of(&o.op()), f),
            Deferred::Recv(o) => sinks.rx_err(&Posted::new(&o.op()), f, 0, 0),
            Deferred::Rma(o) => sinks.tx_err(&TxCtx::of_rma(&o.op()), f),
            Deferred::Atomic(o) => sinks.tx_err(&TxCtx::of_atomic(&o.req()), f),
        }
    }
}

/// A deferred counter update (`FI_OP_CNTR_SET`, `FI_OP_CNTR_ADD`): it
/// counts as the application's own `fi_cntr_set`/`fi_cntr_add`, so work
/// waiting on the target counter follows at once (chains).
pub struct CntrJob {
    pub target: Arc<Counter>,
    pub value: u64,
    pub set: bool,
}

impl Job for CntrJob {
    fn issue(&mut self) -> Result<(), Error> {
        if self.set {
            self.target.set(self.value);
        } else {
            self.target.add(self.value);
        }
        Ok(())
    }

    fn fail(&mut self, _e: Error) {}
}
