//! Issues due triggered jobs, one at a time and in the order they became
//! due. A job must never be issued under a provider's lock (a completion
//! counted inside the provider makes the next operation due, and posting
//! it takes that endpoint's lock again), so jobs made due by the provider
//! run on one process-wide thread, started the first time it is needed;
//! jobs made due by the application's own call (`fi_cntr_add`, a post
//! whose threshold has already been reached) run at once on its thread,
//! unless the thread is already busy, which keeps the order.
//!
//! A job refused with `-FI_EAGAIN` (its endpoint's queue or CQ is full)
//! stays first and is retried by the thread every millisecond for up to
//! [`AGAIN_LIMIT`]; then it fails with `FI_EAGAIN`.

use super::Job;
use crate::abi::*;
use crate::error::Error;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a job may keep being refused with `-FI_EAGAIN`.
pub const AGAIN_LIMIT: Duration = Duration::from_secs(30);

struct State {
    q: VecDeque<Box<dyn Job>>,
    /// Someone is issuing jobs (the thread or an application thread).
    running: bool,
    /// The thread exists.
    thread: bool,
    /// Since when the first job has been refused with `-FI_EAGAIN`.
    again_since: Option<Instant>,
}

static STATE: Mutex<State> = Mutex::new(State {
    q: VecDeque::new(),
    running: false,
    thread: false,
    again_since: None,
});
static WAKE: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Queues `jobs`; issues them at once on this thread when `inline` and
/// nobody else is issuing.
pub fn submit(jobs: Vec<Box<dyn Job>>, inline: bool) {
    let mut st = lock();
    st.q.extend(jobs);
    if st.running {
        return;
    }
    if !inline {
        wake_thread(&mut st);
        return;
    }
    st.running = true;
    let (mut st, blocked) = drain(st);
    st.running = false;
    if blocked {
        wake_thread(&mut st);
    }
}

/// Issues queued jobs until none is left (false) or the first is refused
/// with `-FI_EAGAIN` (true). The caller has set `running`.
fn drain(mut st: MutexGuard<'static, State>) -> (MutexGuard<'static, State>, bool) {
    while let Some(mut job) = st.q.pop_front() {
        drop(st);
        let r = job.issue();
        st = lock();
        match r {
            Ok(()) => st.again_since = None,
            Err(Error::Again) => {
                let since = *st.again_since.get_or_insert_with(Instant::now);
                if since.elapsed() < AGAIN_LIMIT {
                    st.q.push_front(job);
                    return (st, true);
                }
                st.again_since = None;
                drop(st);
                crate::core_warn!(
                    FI_LOG_EP_DATA,
                    "triggered operation still refused with -FI_EAGAIN after {AGAIN_LIMIT:?}: reported as failed"
                );
                job.fail(Error::Again);
                st = lock();
            }
            Err(e) => {
                st.again_since = None;
                drop(st);
                job.fail(e);
                st = lock();
            }
        }
    }
    (st, false)
}

fn wake_thread(st: &mut State) {
    if !st.thread {
        match std::thread::Builder::new()
            .name("oxifabric-trigger".into())
            .spawn(thread_main)
        {
            Ok(_) => st.thread = true,
            Err(e) => crate::core_warn!(
                FI_LOG_EP_DATA,
                "cannot start the triggered-operation thread ({e}); due operations wait for the next fi_cntr_add"
            ),
        }
    }
    WAKE.notify_one();
}

fn thread_main() {
    let mut st = lock();
    loop {
        while st.q.is_empty() || st.running {
            st = WAKE.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st.running = true;
        let (s, blocked) = drain(st);
        st = s;
        st.running = false;
        if blocked {
            // The endpoint needs progress or the application has to read
            // its CQ: look again in a millisecond.
            st = WAKE
                .wait_timeout(st, Duration::from_millis(1))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}
