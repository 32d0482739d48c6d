//! The C side of triggered operations (fi_trigger(3)): reading the
//! `struct fi_triggered_context` of an operation posted with `FI_TRIGGER`,
//! and deciding for every data-transfer call whether it is issued now or
//! handed to the engine's trigger lists (`service::trigger`) with a copy
//! of its descriptors. Deferred work (`fi_control(FI_QUEUE_WORK)`) is in
//! `deferred.rs` and comes through here as [`Post::Work`].

use super::EpHandle;
use crate::cntr::cntr_handle;
use core::ffi::c_int;
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::ops::{AtomicReq, EndpointOps, RecvOp, RmaOp, SendOp};
use oxifabric::service::cntr::Counter;
use oxifabric::service::trigger::{
    self, AtomicCopy, Counts, Deferred, Hook, RecvCopy, RmaCopy, SendCopy, Tag, When, WorkKey,
};
use std::sync::Arc;

/// A deferred work request's condition and completion counter, checked by
/// `deferred.rs`.
pub(super) struct Work {
    pub(super) trigger: Arc<Counter>,
    pub(super) threshold: u64,
    pub(super) key: WorkKey,
    pub(super) completion: Option<Arc<Counter>>,
}

/// How a data-transfer call posts its operation.
pub(super) enum Post {
    /// The application's own call: now, or, with `FI_TRIGGER` in its
    /// flags, when its triggered context says.
    Now,
    /// Deferred work.
    Work(Work),
}

/// When and how an operation that is not issued at once (`FI_TRIGGER`,
/// or deferred work) runs: its counter condition and, for deferred work,
/// the completion hook.
///
/// # Safety
/// With `FI_TRIGGER` in `flags` and `post` being `Now`, `context` is NULL
/// or points to a `struct fi_triggered_context` (fi_trigger(3): the
/// application's promise for triggered operations).
unsafe fn deferral(
    h: &EpHandle,
    post: Post,
    flags: u64,
    context: usize,
    what: &str,
) -> Result<(When, Option<Hook>), c_int> {
    if flags & FI_INJECT != 0 {
        core_warn!(
            FI_LOG_EP_DATA,
            "{what}: FI_INJECT cannot be deferred (the buffer is the application's again when the call returns)"
        );
        return Err(-FI_EINVAL);
    }
    let tag = |work| Tag {
        work,
        ep: ep_id(h),
        context,
    };
    match post {
        Post::Work(w) => {
            // The completion counter counts this endpoint's operation: its
            // reads and waits drive the endpoint (manual progress), as
            // those of the endpoint's bound counters do.
            if let (Some(c), Some(p)) = (&w.completion, h.inner.ops.as_progress()) {
                c.add_source(p);
            }
            Ok((
                When {
                    cntr: w.trigger,
                    threshold: w.threshold,
                    counts: Counts::SuccessesAndErrors,
                    tag: tag(Some(w.key)),
                },
                Some(Hook {
                    context,
                    cntr: w.completion,
                    ep: ep_id(h),
                }),
            ))
        }
        Post::Now => {
            if !h.inner.trigger_cap {
                core_warn!(
                    FI_LOG_EP_DATA,
                    "{what}: FI_TRIGGER on an endpoint opened without the FI_TRIGGER capability"
                );
                return Err(-FI_EINVAL);
            }
            // SAFETY: the caller's contract on `context`.
            let (cntr, threshold) = unsafe { threshold_of(h, context, what) }?;
            Ok((
                When {
                    cntr,
                    threshold,
                    counts: Counts::Successes,
                    tag: tag(None),
                },
                None,
            ))
        }
    }
}

/// The counter and threshold of a triggered context.
///
/// # Safety
/// `context` is NULL or points to a readable `struct fi_triggered_context`.
unsafe fn threshold_of(
    h: &EpHandle,
    context: usize,
    what: &str,
) -> Result<(Arc<Counter>, u64), c_int> {
    // SAFETY: the caller's contract.
    let Some(t) = (unsafe { (context as *const fi_triggered_context).as_ref() }) else {
        core_warn!(
            FI_LOG_EP_DATA,
            "{what}: FI_TRIGGER with a NULL context (a struct fi_triggered_context is required)"
        );
        return Err(-FI_EINVAL);
    };
    match t.event_type {
        FI_TRIGGER_THRESHOLD => {}
        FI_TRIGGER_XPU => {
            core_warn!(
                FI_LOG_EP_DATA,
                "{what}: FI_TRIGGER_XPU triggers need FI_XPU, which no provider offers"
            );
            return Err(-FI_ENOSYS);
        }
        e => {
            core_warn!(FI_LOG_EP_DATA, "{what}: unknown trigger event type {e}");
            return Err(-FI_EINVAL);
        }
    }
    // SAFETY: FI_TRIGGER_THRESHOLD selects the `threshold` member.
    let th = unsafe { t.trigger.threshold };
    // SAFETY: the counter is NULL or a fid (the crate's pointer contract);
    // class and magic are checked.
    let c = unsafe { counter_of(h, th.cntr, what) }?;
    Ok((c, th.threshold as u64))
}

/// The engine counter behind `cntr`, which must be a counter of `h`'s
/// domain.
///
/// # Safety
/// `cntr` is NULL or points to a live `struct fid`.
pub(super) unsafe fn counter_of(
    h: &EpHandle,
    cntr: *mut fid_cntr,
    what: &str,
) -> Result<Arc<Counter>, c_int> {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { cntr_handle(cntr as *const fid) }) else {
        core_warn!(
            FI_LOG_EP_DATA,
            "{what}: the trigger counter is NULL or not a counter"
        );
        return Err(-FI_EINVAL);
    };
    if !c.inner.domain_ref().same_object(&h.inner._domain) {
        core_warn!(
            FI_LOG_EP_DATA,
            "{what}: the trigger counter belongs to another domain"
        );
        return Err(-FI_EINVAL);
    }
    Ok(c.inner.cntr.clone())
}

/// An operation a data-transfer call posts: how it is issued on an
/// endpoint now, and the copy a trigger list keeps of it until then.
pub(super) trait Operation {
    fn issue(&self, ep: &dyn EndpointOps) -> oxifabric::error::Result<()>;
    fn deferred(&self) -> Deferred;
}

/// Each operation type: the endpoint call that issues it and the
/// trigger-list copy that keeps it.
macro_rules! operations {
    ($($op:ident: $call:ident, $variant:ident($copy:ident);)*) => {$(
        impl Operation for $op<'_> {
            fn issue(&self, ep: &dyn EndpointOps) -> oxifabric::error::Result<()> {
                ep.$call(self)
            }
            fn deferred(&self) -> Deferred {
                Deferred::$variant($copy::of(self))
            }
        }
    )*};
}

operations! {
    SendOp: send, Send(SendCopy);
    RecvOp: recv, Recv(RecvCopy);
    RmaOp: rma, Rma(RmaCopy);
    AtomicReq: atomic, Atomic(AtomicCopy);
}

/// Posts `op`, whose resolved flags are `flags` (possibly with
/// `FI_TRIGGER`), as `post` says: straight to the provider when it is the
/// application's own call without `FI_TRIGGER` (every latency-bound call);
/// otherwise its copy is queued on the counter [`deferral`] names.
/// Returns the call's C code.
///
/// # Safety
/// As for [`deferral`].
#[inline(always)]
pub(super) unsafe fn dispatch(
    h: &EpHandle,
    post: Post,
    flags: u64,
    context: usize,
    what: &str,
    op: &impl Operation,
) -> isize {
    if matches!(post, Post::Now) && flags & FI_TRIGGER == 0 {
        return crate::handles::rc(op.issue(&*h.inner.ops)) as isize;
    }
    // SAFETY: the caller's contract on `context`.
    match unsafe { deferral(h, post, flags, context, what) } {
        Ok((when, hook)) => {
            remember(h, &when.cntr);
            trigger::defer_op(h.inner.ops.clone(), op.deferred(), hook, when);
            0
        }
        Err(e) => e as isize,
    }
}

/// What names the endpoint in the engine's trigger lists: its provider
/// object, which an alias shares.
fn ep_id(h: &EpHandle) -> usize {
    Arc::as_ptr(&h.inner.ops) as *const () as usize
}

/// Records a counter that holds jobs of endpoint `h` (for `fi_cancel` and
/// `fi_close`).
fn remember(h: &EpHandle, c: &Arc<Counter>) {
    let mut l = h.inner.triggered.lock().unwrap_or_else(|p| p.into_inner());
    l.retain(|w| w.strong_count() > 0);
    if !l.iter().any(|w| w.as_ptr() == Arc::as_ptr(c)) {
        l.push(Arc::downgrade(c));
    }
}

/// The counters holding jobs of endpoint `h`.
fn counters(h: &EpHandle) -> Vec<Arc<Counter>> {
    let l = h.inner.triggered.lock().unwrap_or_else(|p| p.into_inner());
    l.iter().filter_map(std::sync::Weak::upgrade).collect()
}

/// `fi_cancel` of a triggered operation of `h` not yet issued: whether
/// one with `context` was found (and reported canceled).
pub(super) fn cancel(h: &EpHandle, context: usize) -> bool {
    counters(h)
        .iter()
        .map(|c| trigger::cancel_op(c, ep_id(h), context))
        .sum::<usize>()
        > 0
}

/// The endpoint `h` closes: its jobs are dropped, and the hooks of its
/// deferred work under way.
pub(super) fn close(h: &EpHandle) {
    for c in counters(h) {
        trigger::drop_ep(&c, ep_id(h));
    }
    trigger::drop_hooks(ep_id(h));
}
