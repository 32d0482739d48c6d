//! Triggered operations and deferred work (fi_trigger(3)), for every
//! provider: an operation posted with `FI_TRIGGER`, or queued on a domain
//! with `fi_control(FI_QUEUE_WORK)`, waits in its counter's
//! [`TriggerList`] until the counter reaches a threshold, and is then
//! issued through the endpoint's ordinary `EndpointOps` call, exactly as if
//! the application had posted it then (`op.rs` keeps the copies of its
//! descriptors; `runner.rs` issues it outside every lock).
//!
//! A counter without triggered work pays one relaxed-cost atomic load per
//! update ([`TriggerList::has_work`]); the list's lock is taken only when
//! work is queued.
//!
//! Deferred work completes differently from an ordinary operation: it
//! reports at the endpoint only with `FI_COMPLETION`, and bumps its own
//! completion counter. The operation carries `internal::DEFERRED_WORK`
//! and, as its context, the key of a [`Hook`] registered when it is issued;
//! `ep_core::Sinks` looks the hook up when the operation finishes.

mod op;
mod runner;

pub use op::{AtomicCopy, Deferred, RecvCopy, RmaCopy, SendCopy};

use crate::error::Error;
use crate::ops::EndpointOps;
use crate::service::cntr::Counter;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Something queued on a counter: a data transfer to post, or a counter
/// update.
pub trait Job: Send {
    /// Issues it. `Err(Error::Again)` leaves it queued for a retry (the
    /// endpoint's queue or CQ is full); any other error is reported with
    /// [`Job::fail`].
    fn issue(&mut self) -> Result<(), Error>;
    /// Reports that it could not be issued.
    fn fail(&mut self, e: Error);
}

/// Which values of the counter a threshold is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counts {
    /// Successes only: `FI_TRIGGER_THRESHOLD` operations ("an event
    /// counter crosses a threshold"; upstream's providers compare the
    /// success value).
    Successes,
    /// Successes plus errors: deferred work (fi_trigger(3), "success plus
    /// error counter values").
    SuccessesAndErrors,
}

/// Names a deferred work request for `FI_CANCEL_WORK` and
/// `FI_FLUSH_WORK`: the domain it was queued on and the address of the
/// application's `struct fi_deferred_work` (only compared, never read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkKey {
    /// The domain (an address that identifies it).
    pub domain: usize,
    /// The request.
    pub work: usize,
}

/// What a queued job is, for canceling it: the deferred work request it
/// came from, and the endpoint and context of a data transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tag {
    /// Set for deferred work (`FI_CANCEL_WORK`, `FI_FLUSH_WORK`).
    pub work: Option<WorkKey>,
    /// The endpoint a data transfer is posted on (an address naming its
    /// provider object), 0 for counter operations: `fi_cancel` and
    /// `fi_close` of the endpoint find its jobs by it.
    pub ep: usize,
    /// The operation's context as the application gave it.
    pub context: usize,
}

/// When a job runs: once `cntr` reaches `threshold` as `counts` says.
pub struct When {
    pub cntr: Arc<Counter>,
    pub threshold: u64,
    pub counts: Counts,
    /// What it is (for canceling).
    pub tag: Tag,
}

struct Entry {
    counts: Counts,
    tag: Tag,
    job: Box<dyn Job>,
}

/// The jobs waiting on one counter, in the order they must run: by
/// threshold, then in the order they were queued (fi_trigger(3)).
#[derive(Default)]
pub struct TriggerList {
    has_work: AtomicBool,
    q: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    seq: u64,
    entries: BTreeMap<(u64, u64), Entry>,
}

impl TriggerList {
    /// Whether anything waits (the only cost of an update without
    /// triggered work). Sequentially consistent, as the counter's updates
    /// and [`TriggerList::push`]: an update either sees the flag or the
    /// queuing side sees the updated value.
    pub fn has_work(&self) -> bool {
        self.has_work.load(Ordering::SeqCst)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a job; the caller checks the counter afterwards.
    pub fn push(&self, threshold: u64, counts: Counts, tag: Tag, job: Box<dyn Job>) {
        let mut q = self.lock();
        q.seq += 1;
        let seq = q.seq;
        q.entries
            .insert((threshold, seq), Entry { counts, tag, job });
        self.has_work.store(true, Ordering::SeqCst);
    }

    /// Removes and returns, in order, the jobs due at `successes` and
    /// `errors`.
    pub fn take_due(&self, successes: u64, errors: u64) -> Vec<Box<dyn Job>> {
        let mut q = self.lock();
        let both = successes.saturating_add(errors);
        let due: Vec<(u64, u64)> = q
            .entries
            .range(..=(both, u64::MAX))
            .filter(|((t, _), e)| match e.counts {
                Counts::Successes => successes >= *t,
                Counts::SuccessesAndErrors => both >= *t,
            })
            .map(|(k, _)| *k)
            .collect();
        self.take(&mut q, &due)
    }

    /// Takes the entries under `keys` out of `q`, in order, and updates
    /// `has_work`.
    fn take(&self, q: &mut Queue, keys: &[(u64, u64)]) -> Vec<Box<dyn Job>> {
        let jobs = keys
            .iter()
            .filter_map(|k| q.entries.remove(k))
            .map(|e| e.job)
            .collect();
        self.has_work.store(!q.entries.is_empty(), Ordering::SeqCst);
        jobs
    }

    /// Removes the jobs `pick` selects and returns them, in order; the
    /// caller drops them (or reports them canceled) after the lock is
    /// released: they hold endpoints, whose last reference may go with
    /// them.
    pub fn remove(&self, pick: impl Fn(&Tag) -> bool) -> Vec<Box<dyn Job>> {
        let mut q = self.lock();
        let keys: Vec<(u64, u64)> = q
            .entries
            .iter()
            .filter(|(_, e)| pick(&e.tag))
            .map(|(k, _)| *k)
            .collect();
        self.take(&mut q, &keys)
    }

    /// Removes, without a report, the deferred work requests `pick`
    /// selects (`FI_CANCEL_WORK`, `FI_FLUSH_WORK`); returns how many.
    pub fn cancel(&self, pick: impl Fn(&WorkKey) -> bool) -> usize {
        self.remove(|t| t.work.as_ref().is_some_and(&pick)).len()
    }
}

/// Hands due jobs to the runner: at once on this thread when `inline`
/// (the application's own call, no provider lock held), else on the
/// trigger thread.
pub fn run_due(jobs: Vec<Box<dyn Job>>, inline: bool) {
    if !jobs.is_empty() {
        runner::submit(jobs, inline);
    }
}

/// Defers `op` on endpoint `ep` until `when` (an operation posted with
/// `FI_TRIGGER`, or deferred work with `hook`): it is issued at once if
/// the condition already holds.
pub fn defer_op(ep: Arc<dyn EndpointOps>, op: Deferred, hook: Option<Hook>, when: When) {
    let job = Box::new(op::PostJob::new(ep, op, hook));
    defer(job, when);
}

/// Defers a counter update (`FI_OP_CNTR_SET`, `FI_OP_CNTR_ADD`).
pub fn defer_cntr(target: Arc<Counter>, value: u64, set: bool, when: When) {
    defer(Box::new(op::CntrJob { target, value, set }), when);
}

fn defer(job: Box<dyn Job>, when: When) {
    when.cntr
        .triggers()
        .push(when.threshold, when.counts, when.tag, job);
    when.cntr.check_triggers(true);
}

/// `fi_cancel` of a triggered operation not yet issued: removes the jobs
/// of endpoint `ep` with `context` from `cntr` and reports each canceled
/// (an `FI_ECANCELED` error completion, as for a canceled receive).
/// Returns how many.
pub fn cancel_op(cntr: &Counter, ep: usize, context: usize) -> usize {
    let gone = cntr
        .triggers()
        .remove(|t| t.ep == ep && t.context == context && t.work.is_none());
    let n = gone.len();
    for mut j in gone {
        j.fail(Error::Canceled);
    }
    n
}

/// The endpoint `ep` is closing: its jobs waiting on `cntr` (triggered
/// operations and deferred work) are dropped without a report, as its
/// posted operations are.
pub fn drop_ep(cntr: &Counter, ep: usize) {
    drop(cntr.triggers().remove(|t| t.ep == ep));
}

/// What a deferred work request reports on completion: the application's
/// context (for its endpoint completion, with `FI_COMPLETION`) and the
/// counter it bumps.
#[derive(Clone)]
pub struct Hook {
    pub context: usize,
    pub cntr: Option<Arc<Counter>>,
    /// The endpoint the work runs on (as in [`Tag::ep`]): its close drops
    /// the hooks of work it will never complete ([`drop_hooks`]).
    pub ep: usize,
}

/// The hooks of deferred work issued and not yet finished, by key (the
/// operation's context while it runs). Touched only by deferred work.
static HOOKS: Mutex<BTreeMap<usize, Hook>> = Mutex::new(BTreeMap::new());
static NEXT_HOOK: AtomicUsize = AtomicUsize::new(1);

fn hooks() -> std::sync::MutexGuard<'static, BTreeMap<usize, Hook>> {
    HOOKS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers a hook; returns its key.
pub fn add_hook(h: Hook) -> usize {
    let k = NEXT_HOOK.fetch_add(1, Ordering::Relaxed);
    hooks().insert(k, h);
    k
}

/// Takes the hook of a finished deferred operation.
pub fn take_hook(key: usize) -> Option<Hook> {
    hooks().remove(&key)
}

/// The endpoint `ep` is closing: the hooks of its deferred work still
/// running go, since a closing endpoint drops its operations without a
/// report (each hook holds its completion counter; they were kept for
/// good before).
pub fn drop_hooks(ep: usize) {
    hooks().retain(|_, h| h.ep != ep);
}

#[cfg(test)]
mod tests;
