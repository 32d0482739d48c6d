//! Ordering, thresholds, cancellation and chains of the trigger lists.

use super::*;
use crate::abi::*;
use std::sync::atomic::AtomicU64;

fn cntr() -> Arc<Counter> {
    Arc::new(Counter::new(FI_CNTR_EVENTS_COMP, FI_WAIT_UNSPEC).unwrap())
}

/// Records its number in a shared log when issued.
struct Mark(u64, Arc<Mutex<Vec<u64>>>);

impl Job for Mark {
    fn issue(&mut self) -> Result<(), Error> {
        self.1.lock().unwrap().push(self.0);
        Ok(())
    }
    fn fail(&mut self, _e: Error) {}
}

/// Waits (bounded) until `log` holds `want`: jobs made due by an
/// application call run on its thread unless the runner is busy with
/// another test's jobs, which then runs them.
fn settled(log: &Mutex<Vec<u64>>, want: &[u64]) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while *log.lock().unwrap() != want {
        assert!(
            std::time::Instant::now() < end,
            "jobs run: {:?}, want {want:?}",
            log.lock().unwrap()
        );
        std::thread::yield_now();
    }
}

fn when(c: &Arc<Counter>, threshold: u64, counts: Counts, work: Option<WorkKey>) -> When {
    When {
        cntr: c.clone(),
        threshold,
        counts,
        tag: Tag {
            work,
            ..Default::default()
        },
    }
}

#[test]
fn jobs_run_in_threshold_order_then_in_queue_order() {
    let c = cntr();
    let log = Arc::new(Mutex::new(Vec::new()));
    for (n, t) in [(1, 3), (2, 2), (3, 3), (4, 1), (5, 9)] {
        defer(
            Box::new(Mark(n, log.clone())),
            when(&c, t, Counts::Successes, None),
        );
    }
    c.add(1);
    settled(&log, &[4]);
    // A jump over two thresholds runs both, lower first.
    c.add(2);
    settled(&log, &[4, 2, 1, 3]);
    c.set(100);
    settled(&log, &[4, 2, 1, 3, 5]);
    assert!(!c.triggers().has_work());
}

#[test]
fn a_met_threshold_runs_at_once_and_errors_count_only_for_deferred_work() {
    let c = cntr();
    let log = Arc::new(Mutex::new(Vec::new()));
    c.add(2);
    defer(
        Box::new(Mark(1, log.clone())),
        when(&c, 2, Counts::Successes, None),
    );
    settled(&log, &[1]);
    defer(
        Box::new(Mark(2, log.clone())),
        when(&c, 3, Counts::Successes, None),
    );
    defer(
        Box::new(Mark(3, log.clone())),
        when(&c, 3, Counts::SuccessesAndErrors, None),
    );
    c.adderr(1);
    settled(&log, &[1, 3]);
    c.add(1);
    settled(&log, &[1, 3, 2]);
}

#[test]
fn cancel_removes_only_the_named_work() {
    let c = cntr();
    let log = Arc::new(Mutex::new(Vec::new()));
    let key = |domain, work| Some(WorkKey { domain, work });
    defer(
        Box::new(Mark(1, log.clone())),
        when(&c, 1, Counts::SuccessesAndErrors, key(1, 10)),
    );
    defer(
        Box::new(Mark(2, log.clone())),
        when(&c, 1, Counts::SuccessesAndErrors, key(1, 11)),
    );
    defer(
        Box::new(Mark(3, log.clone())),
        when(&c, 1, Counts::SuccessesAndErrors, key(2, 10)),
    );
    defer(
        Box::new(Mark(4, log.clone())),
        when(&c, 1, Counts::Successes, None),
    );
    assert_eq!(
        c.triggers().cancel(|k| *k
            == WorkKey {
                domain: 1,
                work: 10
            }),
        1
    );
    assert_eq!(
        c.triggers().cancel(|k| *k
            == WorkKey {
                domain: 1,
                work: 10
            }),
        0
    );
    // A flush of domain 2.
    assert_eq!(c.triggers().cancel(|k| k.domain == 2), 1);
    c.add(1);
    settled(&log, &[2, 4]);
}

#[test]
fn counter_operations_chain() {
    let (a, b, d) = (cntr(), cntr(), cntr());
    defer_cntr(
        b.clone(),
        5,
        false,
        when(&a, 1, Counts::SuccessesAndErrors, None),
    );
    defer_cntr(
        d.clone(),
        7,
        true,
        when(&b, 5, Counts::SuccessesAndErrors, None),
    );
    assert_eq!((b.read(), d.read()), (0, 0));
    a.add(1);
    assert_eq!(
        d.wait(7, 10_000),
        Ok(()),
        "the chain reached the last counter"
    );
    assert_eq!(b.read(), 5);
}

#[test]
fn provider_side_updates_run_jobs_on_the_trigger_thread() {
    let c = cntr();
    let done = cntr();
    let hits = Arc::new(AtomicU64::new(0));
    struct Bump(Arc<Counter>, Arc<AtomicU64>);
    impl Job for Bump {
        fn issue(&mut self) -> Result<(), Error> {
            self.1.fetch_add(1, Ordering::SeqCst);
            self.0.add(1);
            Ok(())
        }
        fn fail(&mut self, _e: Error) {}
    }
    defer(
        Box::new(Bump(done.clone(), hits.clone())),
        when(&c, 2, Counts::Successes, None),
    );
    c.inc();
    c.inc();
    assert_eq!(
        done.wait(1, 10_000),
        Ok(()),
        "the trigger thread ran the job"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[test]
fn a_closing_endpoint_drops_only_its_hooks() {
    let hook = |ep| Hook {
        context: 7,
        cntr: Some(cntr()),
        ep,
    };
    let (mine, other) = (add_hook(hook(0xa1)), add_hook(hook(0xa2)));
    drop_hooks(0xa1);
    assert!(take_hook(mine).is_none());
    assert!(take_hook(other).is_some_and(|h| h.ep == 0xa2));
}
