//! Deferred work queues (fi_trigger(3)): `fi_control` on a domain with
//! `FI_QUEUE_WORK`, `FI_CANCEL_WORK` and `FI_FLUSH_WORK`. A queued data
//! transfer goes through the same conversion as the application's own
//! `fi_*msg` call (`data.rs`, `rma.rs`, `atomic.rs`, with
//! [`Post::Work`]), so it is checked when queued and copied; counter
//! operations are queued directly. The engine (`service::trigger`) holds
//! the work on its triggering counter.

use super::atomic::{msg_call, CElems};
use super::data::{recvmsg_as, sendmsg_as};
use super::rma::rma_msg_as;
use super::trigger::{Post, Work};
use super::{ep_handle, EpHandle};
use crate::boundary::with_handle;
use crate::domain::{domain_handle, DomainHandle};
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::BindRef;
use oxifabric::service::atomic::AtomicKind;
use oxifabric::service::cntr::Counter;
use oxifabric::service::trigger::{defer_cntr, Counts, Tag, When, WorkKey};
use std::sync::Arc;

/// `fi_control` on a domain.
pub(crate) extern "C" fn domain_control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    with_handle!(domain_handle, f, "fi_control(domain)", |d| {
        let work = arg as *const fi_deferred_work;
        // SAFETY: for these commands `arg` is NULL or the application's
        // `struct fi_deferred_work` (fi_trigger(3)), with the operation
        // and its descriptors it points to.
        unsafe {
            match command {
                FI_QUEUE_WORK => queue(d, work),
                FI_CANCEL_WORK => cancel(d, work),
                FI_FLUSH_WORK => flush(d, work),
                _ => {
                    core_warn!(
                        FI_LOG_DOMAIN,
                        "fi_control(domain): command {command} is not supported"
                    );
                    -FI_ENOSYS
                }
            }
        }
    })
}

/// The key that names `work` on domain `d`.
fn key(d: &DomainHandle, work: *const fi_deferred_work) -> WorkKey {
    WorkKey {
        domain: d as *const DomainHandle as usize,
        work: work as usize,
    }
}

/// The engine counter behind `c`, a counter of domain `d`.
///
/// # Safety
/// `c` is NULL or points to a live `struct fid`.
unsafe fn counter(d: &DomainHandle, c: *mut fid_cntr, what: &str) -> Result<Arc<Counter>, c_int> {
    // SAFETY: the caller's contract; class and magic are checked.
    let Some(h) = (unsafe { crate::cntr::cntr_handle(c as *const fid) }) else {
        core_warn!(FI_LOG_DOMAIN, "{what}: NULL or not a counter");
        return Err(-FI_EINVAL);
    };
    if !h.inner.domain_ref().same_object(&BindRef::new(&d.binds)) {
        core_warn!(
            FI_LOG_DOMAIN,
            "{what}: the counter belongs to another domain"
        );
        return Err(-FI_EINVAL);
    }
    Ok(h.inner.cntr.clone())
}

/// The endpoint a queued operation names, which must be of domain `d`.
///
/// # Safety
/// `ep` is NULL or points to a live `struct fid`.
unsafe fn endpoint<'a>(d: &DomainHandle, ep: *mut fid_ep) -> Result<&'a EpHandle, c_int> {
    // SAFETY: the caller's contract; class and magic are checked.
    let Some(h) = (unsafe { ep_handle(ep as *const fid) }) else {
        core_warn!(
            FI_LOG_DOMAIN,
            "FI_QUEUE_WORK: the operation's endpoint is NULL or not an endpoint"
        );
        return Err(-FI_EINVAL);
    };
    if !h.inner._domain.same_object(&BindRef::new(&d.binds)) {
        core_warn!(
            FI_LOG_DOMAIN,
            "FI_QUEUE_WORK: the endpoint belongs to another domain"
        );
        return Err(-FI_EINVAL);
    }
    Ok(h)
}

/// The request `work` and its triggering counter, a counter of `d`.
///
/// # Safety
/// `work` is NULL or a readable `struct fi_deferred_work` whose
/// `triggering_cntr` is NULL or a fid.
unsafe fn request<'a>(
    d: &DomainHandle,
    work: *const fi_deferred_work,
    what: &str,
) -> Result<(&'a fi_deferred_work, Arc<Counter>), c_int> {
    // SAFETY: the caller's contract.
    let Some(w) = (unsafe { work.as_ref() }) else {
        core_warn!(FI_LOG_DOMAIN, "{what}: the work request is NULL");
        return Err(-FI_EINVAL);
    };
    // SAFETY: NULL or a fid (the caller's contract).
    let c = unsafe { counter(d, w.triggering_cntr, what) }?;
    Ok((w, c))
}

/// `FI_QUEUE_WORK`.
///
/// # Safety
/// `work` is NULL or a valid `struct fi_deferred_work` whose operation
/// pointer matches its `op_type` and is NULL or valid, as are the
/// descriptors it names.
unsafe fn queue(d: &DomainHandle, work: *const fi_deferred_work) -> c_int {
    const WHAT: &str = "FI_QUEUE_WORK";
    // SAFETY: the caller's contract.
    let (w, trigger) = match unsafe { request(d, work, WHAT) } {
        Ok(x) => x,
        Err(e) => return e,
    };
    let key = key(d, work);
    let when = When {
        cntr: trigger.clone(),
        threshold: w.threshold,
        counts: Counts::SuccessesAndErrors,
        tag: Tag {
            work: Some(key),
            ..Default::default()
        },
    };
    if matches!(w.op_type, FI_OP_CNTR_SET | FI_OP_CNTR_ADD) {
        if !w.completion_cntr.is_null() {
            core_warn!(
                FI_LOG_DOMAIN,
                "{WHAT}: completion_cntr must be NULL for counter operations"
            );
            return -FI_EINVAL;
        }
        // SAFETY: for counter operations `op.cntr` is the valid member.
        let Some(op) = (unsafe { w.op.cntr.as_ref() }) else {
            core_warn!(FI_LOG_DOMAIN, "{WHAT}: op.cntr is NULL");
            return -FI_EINVAL;
        };
        // SAFETY: as for the triggering counter.
        let target = match unsafe { counter(d, op.cntr, "FI_QUEUE_WORK: op.cntr->cntr") } {
            Ok(c) => c,
            Err(e) => return e,
        };
        remember(d, &trigger);
        // Waiting for the target counter must drive the endpoints that
        // bring the trigger to its threshold (manual progress).
        target.add_sources_of(&trigger);
        defer_cntr(target, op.value, w.op_type == FI_OP_CNTR_SET, when);
        return 0;
    }
    let completion = if w.completion_cntr.is_null() {
        None
    } else {
        // SAFETY: as for the triggering counter.
        match unsafe { counter(d, w.completion_cntr, "FI_QUEUE_WORK: completion_cntr") } {
            Ok(c) => Some(c),
            Err(e) => return e,
        }
    };
    let post = Post::Work(Work {
        trigger: trigger.clone(),
        threshold: w.threshold,
        key,
        completion,
    });
    // SAFETY: the member of `op` read is the one `op_type` selects, NULL
    // or valid with its descriptors (the caller's contract).
    let r = unsafe { queue_op(d, w, post) };
    if r == 0 {
        remember(d, &trigger);
    }
    r
}

/// Checks the operation's pointer and endpoint, then hands it to the
/// data path.
///
/// # Safety
/// As for [`queue`].
unsafe fn queue_op(d: &DomainHandle, w: &fi_deferred_work, post: Post) -> c_int {
    macro_rules! op {
        ($member:ident) => {{
            // The member `op_type` selects, read inside the caller's
            // `unsafe` block (its contract: NULL or valid).
            let Some(o) = w.op.$member.as_ref() else {
                core_warn!(
                    FI_LOG_DOMAIN,
                    "FI_QUEUE_WORK: op.{} is NULL",
                    stringify!($member)
                );
                return -FI_EINVAL;
            };
            // `o.ep` is NULL or a fid (the caller's contract).
            if let Err(e) = endpoint(d, o.ep) {
                return e;
            }
            o
        }};
    }
    let none = CElems::None;
    // SAFETY: the operation `op_type` selects and its descriptors are NULL
    // or valid (the caller's contract), as `op!` and the `fi_*msg` paths
    // below require.
    let r = unsafe {
        match w.op_type {
            FI_OP_SEND => {
                let o = op!(msg);
                sendmsg_as(o.ep, &o.msg, o.flags, post)
            }
            FI_OP_RECV => {
                let o = op!(msg);
                recvmsg_as(o.ep, &o.msg, o.flags, post)
            }
            FI_OP_TSEND => {
                let o = op!(tagged);
                sendmsg_as(o.ep, &o.msg, o.flags, post)
            }
            FI_OP_TRECV => {
                let o = op!(tagged);
                recvmsg_as(o.ep, &o.msg, o.flags, post)
            }
            FI_OP_READ | FI_OP_WRITE => {
                let o = op!(rma);
                rma_msg_as(o.ep, w.op_type == FI_OP_WRITE, &o.msg, o.flags, post)
            }
            FI_OP_ATOMIC => {
                let o = op!(atomic);
                msg_call(o.ep, AtomicKind::Base, &o.msg, none, none, o.flags, post)
            }
            FI_OP_FETCH_ATOMIC => {
                let o = op!(fetch_atomic);
                let fetch = CElems::Many(o.fetch.msg_iov, o.fetch.desc, o.fetch.iov_count);
                msg_call(o.ep, AtomicKind::Fetch, &o.msg, none, fetch, o.flags, post)
            }
            FI_OP_COMPARE_ATOMIC => {
                let o = op!(compare_atomic);
                let fetch = CElems::Many(o.fetch.msg_iov, o.fetch.desc, o.fetch.iov_count);
                let compare = CElems::Many(o.compare.msg_iov, o.compare.desc, o.compare.iov_count);
                msg_call(
                    o.ep,
                    AtomicKind::Compare,
                    &o.msg,
                    compare,
                    fetch,
                    o.flags,
                    post,
                )
            }
            t => {
                core_warn!(FI_LOG_DOMAIN, "FI_QUEUE_WORK: unknown op_type {t}");
                -(FI_ENOSYS as isize)
            }
        }
    };
    r as c_int
}

/// Records a counter that holds work of domain `d`, for `FI_FLUSH_WORK`.
fn remember(d: &DomainHandle, c: &Arc<Counter>) {
    let mut l = d
        .inner
        .deferred_cntrs
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    l.retain(|w| w.strong_count() > 0);
    if !l.iter().any(|w| w.as_ptr() == Arc::as_ptr(c)) {
        l.push(Arc::downgrade(c));
    }
}

/// `FI_CANCEL_WORK`: 0 when the request was still queued (it never runs),
/// `-FI_ENOENT` when it is not (already issued, canceled, or never queued).
///
/// # Safety
/// `work` is NULL or a readable `struct fi_deferred_work`.
unsafe fn cancel(d: &DomainHandle, work: *const fi_deferred_work) -> c_int {
    // SAFETY: the caller's contract.
    let c = match unsafe { request(d, work, "FI_CANCEL_WORK") } {
        Ok((_, c)) => c,
        Err(e) => return e,
    };
    let k = key(d, work);
    if c.triggers().cancel(|x| *x == k) > 0 {
        0
    } else {
        -FI_ENOENT
    }
}

/// `FI_FLUSH_WORK`: cancels all work queued on the domain, or, given a
/// request with a triggering counter, all of the domain's work waiting on
/// that counter.
///
/// # Safety
/// `work` is NULL or a readable `struct fi_deferred_work`.
unsafe fn flush(d: &DomainHandle, work: *const fi_deferred_work) -> c_int {
    let dom = key(d, core::ptr::null()).domain;
    // SAFETY: the caller's contract.
    let only = match unsafe { work.as_ref() } {
        Some(w) if !w.triggering_cntr.is_null() => {
            // SAFETY: a fid (the caller's contract).
            match unsafe { counter(d, w.triggering_cntr, "FI_FLUSH_WORK: triggering_cntr") } {
                Ok(c) => Some(c),
                Err(e) => return e,
            }
        }
        _ => None,
    };
    let all: Vec<Arc<Counter>> = match only {
        Some(c) => vec![c],
        None => d
            .inner
            .deferred_cntrs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect(),
    };
    for c in all {
        c.triggers().cancel(|k| k.domain == dom);
    }
    0
}
