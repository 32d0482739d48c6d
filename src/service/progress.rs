//! The hook through which completion queues, counters and event queues
//! drive their providers' progress (manual progress, blocking waits).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::epoll::Epoll;
use super::getwait::GetWait;
use std::time::{Duration, Instant};

/// Something that moves data when asked: an endpoint or a domain.
pub trait Progress: Send + Sync {
    /// Does whatever I/O is ready, without blocking.
    fn progress(&self);
    /// [`Progress::progress`] from a queue that drives this source on
    /// every read (one of its few sources): while reads keep coming, the
    /// source need not be woken by its descriptors, and may stop watching
    /// a connection it polls anyway until its descriptor is asked for
    /// again ([`Progress::wait_fd`]).
    fn progress_direct(&self) {
        self.progress();
    }
    /// A descriptor that is readable when [`Progress::progress`] has work
    /// (an epoll set of the provider's sockets), if there is one. Asked
    /// for before every blocking wait: from then on (for a while) it
    /// reports all of the source's I/O.
    fn wait_fd(&self) -> Option<RawFd>;
    /// A nested set now holds the source's descriptor and will not ask
    /// for it again: it must report all of the source's I/O for good.
    fn pin_watch(&self) {}
    /// For a source that is cheap to look at and whose descriptor reports
    /// input only while it is armed (a shared-memory ring, whose senders
    /// signal only a receiver that said it is about to sleep): a lock-free
    /// look at whether a progress call now would find work. A queue with
    /// many sources then runs this look on every read instead of nesting
    /// the source's descriptor, drives the source when it says so, and
    /// asks [`Progress::wait_fd`] (which arms it) before each blocking
    /// wait, as with few sources. Upgrading each source's handle and
    /// calling it cost more than its look at a ring, hundreds of times per
    /// read. None (the default): the queue nests the source's descriptor.
    fn probe(&self) -> Option<Arc<dyn Ready>> {
        None
    }
    /// Whether the application drove this source itself a moment ago: the
    /// auto-progress thread then leaves it alone.
    fn app_polling(&self) -> bool {
        false
    }
    /// Whether the source holds work (coalesced sends) that only a
    /// progress call writes: the thread then looks again within about a
    /// millisecond instead of its usual slices.
    fn flush_pending(&self) -> bool {
        false
    }
    /// Progress run by the auto-progress thread; false when skipped.
    fn progress_background(&self) -> bool {
        self.progress();
        true
    }
    /// [`Progress::progress`] that waits for a pass another thread (the
    /// auto-progress thread) is running on the source instead of
    /// skipping it, so that what that pass delivers is queued when this
    /// returns: `fi_trywait` must not say "block" while a completion is
    /// on its way into the queue.
    fn progress_settled(&self) {
        self.progress();
    }
    /// The work that waits on no descriptor (timers, held sends), for a
    /// queue's periodic sweep of sources its nested set reports no I/O
    /// for: a full progress call unless the source can do less.
    fn tick(&self) {
        self.progress();
    }
}

/// See [`Progress::probe`].
pub trait Ready: Send + Sync {
    /// Whether the source's next progress call may find work: false only
    /// when it would return at once. A source that must run now and then
    /// regardless (its timers) says true then.
    fn ready(&self) -> bool;
}

/// The application's progress calls on one source, counted without a
/// clock read on its fast path; the auto-progress thread turns the count
/// into how long ago the application last polled.
#[derive(Default)]
pub struct AppPolls {
    calls: AtomicU64,
    /// The count the auto-progress thread saw last, and when it changed
    /// (ms on [`clock_ms`]'s clock); only that thread writes these.
    seen: AtomicU64,
    changed_ms: AtomicU64,
}

impl AppPolls {
    /// The application drove progress (fast path: a load and a store;
    /// concurrent callers may lose a count, which only has to change).
    pub fn note(&self) {
        let n = self.calls.load(Ordering::Relaxed);
        self.calls.store(n.wrapping_add(1), Ordering::Relaxed);
    }

    /// Milliseconds since the count last changed, as far as the calling
    /// (auto-progress) thread has looked: within one of its slices.
    pub fn idle_ms(&self) -> u64 {
        let now = clock_ms();
        let n = self.calls.load(Ordering::Relaxed);
        if self.seen.swap(n, Ordering::Relaxed) != n {
            self.changed_ms.store(now, Ordering::Relaxed);
            return 0;
        }
        now.saturating_sub(self.changed_ms.load(Ordering::Relaxed))
    }
}

/// Milliseconds since the first call (a monotonic clock for idle checks).
pub fn clock_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// Above this many sources, a queue stops asking each one for its I/O
/// and asks the kernel once which of them have any (see [`Sources`]).
const NEST_ABOVE: usize = 4;

/// How often a queue with nested sources still drives every one of them:
/// their timers (connection retries, paused accepts, held connections) and
/// the auto-progress thread's view that the application polls (10 ms) need
/// a pass now and then even without I/O.
const SWEEP_EVERY: Duration = Duration::from_millis(4);

/// The progress sources bound to a queue or counter.
///
/// With a few sources every read drives each of them (one `epoll_wait`
/// each, the fewest syscalls for the common one-endpoint case). With
/// more, each read driving every source costs a syscall per endpoint even
/// when one has data: the sources' wait descriptors are nested in one
/// epoll set of the queue's, and a read drives only the sources that set
/// reports ready, those that asked through [`Sources::kick`] (sends held
/// for coalescing), those without a descriptor, and every `SWEEP_EVERY`
/// (4 ms) ticks all of them ([`Progress::tick`]: their timers, without a
/// system call each when the source can help it; thousands of endpoints
/// on one queue made 500k empty reads a second).
#[derive(Default)]
pub struct Sources {
    inner: crate::service::quicklock::QuickLock<Inner>,
    /// The nested set, once there are more than [`NEST_ABOVE`] sources.
    nest: OnceLock<Epoll>,
    kicked: AtomicBool,
    /// The owner's `FI_GETWAIT` descriptor, once asked for (`getwait.rs`).
    getwait: GetWait,
    /// [`SWEEP_EVERY`] unless a test sets it (`None`).
    sweep_every: Option<Duration>,
}

#[derive(Default)]
struct Inner {
    /// Index = the token in the nested set; `None` is a free slot.
    slots: Vec<Option<Slot>>,
    live: usize,
    /// The source when there is exactly one ([`Inner::relive`]).
    solo: Option<Weak<dyn Progress>>,
    /// Slots whose descriptor is not in the nested set yet. Sources are
    /// added and removed while their endpoint holds its own lock, and
    /// asking one for its descriptor may take that lock: reads do it.
    unregistered: Vec<usize>,
    /// Slots of sources without a wait descriptor (driven on every read
    /// their probe, if any, says ready).
    unwatched: Vec<usize>,
    last_sweep: Option<Instant>,
    /// Storage reused by reads, so they allocate nothing.
    scratch: Vec<Arc<dyn Progress>>,
}

/// How a source is watched: its descriptor, or a poll-always source's probe.
type Watched = (Option<RawFd>, Option<Arc<dyn Ready>>);

struct Slot {
    src: Weak<dyn Progress>,
    /// The descriptor put in the nested set.
    fd: Option<RawFd>,
    /// A polled source's look ([`Progress::probe`]), instead of `fd`.
    probe: Option<Arc<dyn Ready>>,
}

impl Inner {
    fn live(&self) -> impl Iterator<Item = (usize, &Weak<dyn Progress>)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, w)| w.as_ref().map(|w| (i, &w.src)))
    }

    fn free(&mut self, i: usize) {
        if self.slots[i].take().is_some() {
            self.live -= 1;
        }
        self.unwatched.retain(|&u| u != i);
        self.unregistered.retain(|&u| u != i);
        self.relive();
    }

    /// Keeps [`Inner::solo`] in step with the slots (after a change).
    fn relive(&mut self) {
        self.solo = if self.live == 1 {
            self.live().next().map(|(_, w)| w.clone())
        } else {
            None
        };
    }
}

impl Sources {
    fn lock(&self) -> crate::service::quicklock::QuickGuard<'_, Inner> {
        self.inner.lock()
    }

    /// Adds a source; dropped ones are forgotten lazily.
    pub fn add(&self, s: Weak<dyn Progress>) {
        let mut l = self.lock();
        let dead: Vec<usize> = l
            .live()
            .filter(|(_, w)| w.strong_count() == 0)
            .map(|(i, _)| i)
            .collect();
        for i in dead {
            // Its descriptor closed with it, which took it out of the
            // nested set.
            l.free(i);
        }
        if l.live().any(|(_, w)| w.ptr_eq(&s)) {
            return;
        }
        let slot = Some(Slot {
            src: s,
            fd: None,
            probe: None,
        });
        let i = match l.slots.iter().position(Option::is_none) {
            Some(i) => {
                l.slots[i] = slot;
                i
            }
            None => {
                l.slots.push(slot);
                l.slots.len() - 1
            }
        };
        l.live += 1;
        l.relive();
        l.unregistered.push(i);
        self.getwait.source_added();
    }

    /// Adds every live source of `other` (a counter that queued work
    /// will update is driven by what drives that work's trigger).
    pub fn add_all_of(&self, other: &Sources) {
        if core::ptr::eq(self, other) {
            return;
        }
        let theirs: Vec<Weak<dyn Progress>> = other.lock().live().map(|(_, w)| w.clone()).collect();
        for w in theirs {
            self.add(w);
        }
    }

    /// Removes a source (when its endpoint is closed).
    pub fn remove(&self, s: &Weak<dyn Progress>) {
        let mut l = self.lock();
        let Some(i) = l.live().find(|(_, w)| w.ptr_eq(s)).map(|(i, _)| i) else {
            return;
        };
        let fd = l.slots[i].as_ref().and_then(|x| x.fd);
        // Only a live source's number still names its descriptor (a
        // dead one's may have been reused by another source's set).
        if let (Some(nest), Some(fd), Some(_alive)) = (self.nest.get(), fd, s.upgrade()) {
            nest.remove(fd);
        }
        l.free(i);
    }

    /// Asks the next read to drive the sources that hold work no
    /// descriptor reports ([`Progress::flush_pending`]).
    pub fn kick(&self) {
        if self.nest.get().is_some() {
            self.kicked.store(true, Ordering::Relaxed);
        }
    }

    /// The nested set when there are (or were) more than [`NEST_ABOVE`]
    /// sources, with every source's descriptor in it. Called without our
    /// lock: a source may take its own lock to name its descriptor, and
    /// sources come and go under theirs.
    fn nested(&self) -> Option<&Epoll> {
        {
            let l = self.lock();
            if self.nest.get().is_none() && l.live <= NEST_ABOVE {
                return None;
            }
            if l.unregistered.is_empty() {
                return self.nest.get();
            }
        }
        if self.nest.get().is_none() {
            // Made before any registration is taken off the list: without
            // a set of our own, every read drives every source, as with
            // few, and a later attempt still finds them all unregistered.
            let _ = self.nest.set(Epoll::new().ok()?);
        }
        let nest = self.nest.get()?;
        let pending: Vec<(usize, Arc<dyn Progress>)> = {
            let mut l = self.lock();
            let l = &mut *l;
            let slots = &l.slots;
            l.unregistered
                .drain(..)
                .filter_map(|i| Some((i, slots[i].as_ref()?.src.upgrade()?)))
                .collect()
        };
        // A polled source: its probe, no descriptor; others: theirs.
        let fds: Vec<Watched> = pending
            .iter()
            .map(|(_, s)| {
                if let Some(p) = s.probe() {
                    return (None, Some(p));
                }
                s.pin_watch();
                (s.wait_fd(), None)
            })
            .collect();
        let mut l = self.lock();
        for ((i, s), (fd, probe)) in pending.iter().zip(fds) {
            let Some(slot) = l.slots[*i].as_mut() else {
                continue;
            };
            if !std::ptr::addr_eq(slot.src.as_ptr(), Arc::as_ptr(s)) {
                continue; // removed meanwhile, and the slot reused
            }
            slot.probe = probe;
            match fd {
                Some(fd) if nest.add(fd, *i as u64, false).is_ok() => slot.fd = Some(fd),
                _ => l.unwatched.push(*i),
            }
        }
        Some(nest)
    }

    /// Runs the progress of every live source once (with many sources,
    /// of those that have something to do).
    pub fn progress(&self) {
        if self.getwait.is_stale() {
            self.getwait.refresh(|| self.pinned_wait_fds());
        }
        if self.nest.get().is_none() {
            // One source (the common case, on every poll of a busy-polling
            // reader): its handle upgraded under our lock, its progress
            // run without it. Copying the handles of up to NEST_ABOVE
            // sources out to the stack was most of an empty poll's cost.
            let (solo, live) = {
                let l = self.lock();
                (l.solo.as_ref().and_then(Weak::upgrade), l.live)
            };
            if let Some(s) = solo {
                s.progress_direct();
                return;
            }
            if live <= NEST_ABOVE {
                self.progress_few();
                return;
            }
        }
        let nest = self.nested();
        let mut l = self.lock();
        let mut run = std::mem::take(&mut l.scratch);
        let sweep = match nest {
            Some(nest) => self.pick_nested(nest, &mut l, &mut run),
            None => {
                run.extend(l.live().filter_map(|(_, w)| w.upgrade()));
                false
            }
        };
        // Progress runs without our lock.
        drop(l);
        for s in &run {
            s.progress();
        }
        run.clear();
        if sweep {
            run.extend(self.lock().live().filter_map(|(_, w)| w.upgrade()));
            for s in &run {
                s.tick();
            }
            run.clear();
        }
        let mut l = self.lock();
        if l.scratch.capacity() < run.capacity() {
            l.scratch = run;
        }
    }

    /// [`Self::progress`] with a few sources: one lock, the handles copied
    /// out to the stack, progress without our lock.
    fn progress_few(&self) {
        let mut few: [Option<Arc<dyn Progress>>; NEST_ABOVE] = Default::default();
        {
            let l = self.lock();
            let live = l.live().filter_map(|(_, w)| w.upgrade());
            for (slot, s) in few.iter_mut().zip(live) {
                *slot = Some(s);
            }
        }
        for s in few.iter().flatten() {
            s.progress_direct();
        }
    }

    /// The sources a read drives when they are nested; true when every
    /// source is due a tick as well (a sweep).
    fn pick_nested(&self, nest: &Epoll, l: &mut Inner, run: &mut Vec<Arc<dyn Progress>>) -> bool {
        let now = Instant::now();
        let every = self.sweep_every.unwrap_or(SWEEP_EVERY);
        let sweep = l.last_sweep.is_none_or(|t| now.duration_since(t) >= every);
        if sweep {
            l.last_sweep = Some(now);
        }
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 64];
        let n = nest.wait(&mut evs, 0);
        for ev in &evs[..n] {
            let s = l.slots.get(ev.u64 as usize).and_then(Option::as_ref);
            run.extend(s.and_then(|s| s.src.upgrade()));
        }
        for &i in &l.unwatched {
            let Some(s) = l.slots[i].as_ref() else {
                continue;
            };
            if s.probe.as_ref().is_none_or(|p| p.ready()) {
                run.extend(s.src.upgrade());
            }
        }
        if self.kicked.swap(false, Ordering::Relaxed) {
            let held = l.live().filter_map(|(_, w)| w.upgrade());
            run.extend(held.filter(|s| s.flush_pending()));
        }
        sweep
    }

    /// The live sources, to call without our lock (off the per-poll
    /// path: it allocates).
    fn live_sources(&self) -> Vec<Arc<dyn Progress>> {
        self.lock()
            .live()
            .filter_map(|(_, w)| w.upgrade())
            .collect()
    }

    /// Runs [`Progress::progress_settled`] on every live source
    /// (`fi_trywait`).
    pub fn progress_settled(&self) {
        for s in self.live_sources() {
            s.progress_settled();
        }
    }

    /// A queue's `fi_trywait`: [`Self::progress_settled`], then `Again`
    /// unless the queue (`empty` says) holds nothing to read.
    pub fn trywait(&self, empty: impl FnOnce() -> bool) -> crate::error::Result<()> {
        self.progress_settled();
        if empty() {
            Ok(())
        } else {
            Err(crate::error::Error::Again)
        }
    }

    /// The owner's `FI_GETWAIT` descriptor: an epoll set of its `signal`
    /// and every source's wait descriptor (`getwait.rs`); the signal alone
    /// when that set cannot be made.
    pub fn getwait_fd(&self, signal: RawFd) -> RawFd {
        self.getwait
            .fd(signal, || self.pinned_wait_fds())
            .unwrap_or(signal)
    }

    /// [`Self::wait_fds`], each source told that its descriptor is now
    /// watched by someone who sleeps on it for as long as it likes
    /// ([`Progress::pin_watch`]; nesting pins them too).
    fn pinned_wait_fds(&self) -> Vec<RawFd> {
        if self.nested().is_none() {
            for s in self.live_sources() {
                s.pin_watch();
            }
        }
        self.wait_fds()
    }

    /// The wait descriptors of every live source (one, the nested set,
    /// when there are many).
    pub fn wait_fds(&self) -> Vec<RawFd> {
        let nest = self.nested();
        let srcs: Vec<Arc<dyn Progress>> = {
            let l = self.lock();
            match nest {
                Some(_) => l
                    .unwatched
                    .iter()
                    .filter_map(|&i| l.slots[i].as_ref()?.src.upgrade())
                    .collect(),
                None => l.live().filter_map(|(_, w)| w.upgrade()).collect(),
            }
        };
        let fds = srcs.iter().filter_map(|s| s.wait_fd());
        nest.map(Epoll::raw).into_iter().chain(fds).collect()
    }
}

/// The auto-progress thread of a domain (`FI_PROGRESS_AUTO`): it waits for
/// activity on every registered source and drives it, so transfers complete
/// while the application computes. It starts with the first source and
/// stops when the domain drops it.
pub struct AutoProgress {
    shared: Arc<AutoShared>,
    name: &'static str,
    started: AtomicBool,
}

#[derive(Default)]
struct AutoShared {
    sources: Mutex<Vec<Weak<dyn Progress>>>,
    stop: AtomicBool,
}

impl AutoProgress {
    /// A thread named `name`, not started yet.
    pub fn new(name: &'static str) -> AutoProgress {
        AutoProgress {
            shared: Arc::default(),
            name,
            started: AtomicBool::new(false),
        }
    }

    /// Adds a source (an enabled endpoint) and starts the thread with the
    /// first one.
    pub fn register(&self, s: Weak<dyn Progress>) {
        {
            let mut l = self
                .shared
                .sources
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            l.retain(|w| w.strong_count() > 0);
            l.push(s);
        }
        if !self.started.swap(true, Ordering::AcqRel) {
            let shared = self.shared.clone();
            let _ = std::thread::Builder::new()
                .name(self.name.into())
                .spawn(move || shared.run());
        }
    }
}

impl Drop for AutoProgress {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
    }
}

impl AutoShared {
    fn snapshot(&self) -> Vec<Arc<dyn Progress>> {
        let l = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        l.iter().filter_map(Weak::upgrade).collect()
    }

    fn run(&self) {
        while !self.stop.load(Ordering::Acquire) {
            let srcs = self.snapshot();
            if srcs.is_empty() {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            // Held sends shorten every wait to about a millisecond.
            let pending = srcs.iter().any(|s| s.flush_pending());
            let (slice, wait) = if pending {
                (Duration::from_millis(1), Duration::from_millis(1))
            } else {
                (Duration::from_millis(10), Duration::from_millis(50))
            };
            // Asked once per source and pass (the answer moves with time).
            let (polled, idle): (Vec<_>, Vec<_>) = srcs.iter().partition(|s| s.app_polling());
            if idle.is_empty() {
                // The application drives everything itself: do not even
                // wake on its traffic (each wake-up takes a core it is
                // spinning on).
                std::thread::sleep(slice);
                continue;
            }
            // Only the sources it drives: one the application polls is
            // left alone (`progress_background`), so its descriptors
            // would only wake the thread for nothing, and asking for them
            // makes it watch connections it polls anyway. Such a source is
            // looked at again within 10 ms.
            let fds: Vec<_> = idle.iter().filter_map(|s| s.wait_fd()).collect();
            let wait = if !polled.is_empty() {
                wait.min(Duration::from_millis(10))
            } else {
                wait
            };
            crate::service::signal::poll_readable(&fds, Some(Instant::now() + wait));
            let mut worked = false;
            for s in &srcs {
                worked |= s.progress_background();
            }
            drop(srcs);
            if !worked {
                // The application is polling: look again shortly instead
                // of spinning on descriptors it is about to drain.
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

/// A test source that does its work only when a pass must settle
/// (`fi_trywait`): what a provider's pass delivers from input that had
/// arrived but was not yet read.
#[cfg(test)]
pub(crate) struct OnSettle(pub Box<dyn Fn() + Send + Sync>);

#[cfg(test)]
impl Progress for OnSettle {
    fn progress(&self) {}
    fn wait_fd(&self) -> Option<RawFd> {
        None
    }
    fn progress_settled(&self) {
        (self.0)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::signal::Signal;
    use std::sync::atomic::AtomicUsize;

    /// A source whose readiness is a signal's descriptor.
    struct Fake {
        ready: Signal,
        runs: AtomicUsize,
        held: AtomicBool,
    }

    impl Progress for Fake {
        fn progress(&self) {
            self.runs.fetch_add(1, Ordering::Relaxed);
            self.ready.clear();
            self.held.store(false, Ordering::Relaxed);
        }
        fn wait_fd(&self) -> Option<RawFd> {
            Some(self.ready.fd())
        }
        fn flush_pending(&self) -> bool {
            self.held.load(Ordering::Relaxed)
        }
    }

    /// `n` sources added to `srcs`.
    fn bind(srcs: &Sources, n: usize) -> Vec<Arc<Fake>> {
        let fakes: Vec<Arc<Fake>> = (0..n)
            .map(|_| {
                Arc::new(Fake {
                    ready: Signal::new().unwrap(),
                    runs: AtomicUsize::new(0),
                    held: AtomicBool::new(false),
                })
            })
            .collect();
        for f in &fakes {
            srcs.add(Arc::downgrade(f) as Weak<dyn Progress>);
        }
        fakes
    }

    fn runs(f: &[Arc<Fake>]) -> Vec<usize> {
        f.iter()
            .map(|f| f.runs.swap(0, Ordering::Relaxed))
            .collect()
    }

    #[test]
    fn many_sources_drive_only_ready_ones() {
        let srcs = Sources {
            // No timed sweep after the first pass: the test must not
            // depend on how fast it runs.
            sweep_every: Some(Duration::from_secs(3600)),
            ..Default::default()
        };
        let fakes = bind(&srcs, 8);
        assert_eq!(srcs.wait_fds().len(), 1, "one nested set to wait on");
        srcs.progress();
        assert_eq!(runs(&fakes), vec![1; 8], "the first pass sweeps");
        srcs.progress();
        assert_eq!(runs(&fakes), vec![0; 8], "nothing ready, nothing run");
        fakes[3].ready.set();
        srcs.progress();
        assert_eq!(runs(&fakes), vec![0, 0, 0, 1, 0, 0, 0, 0]);
        fakes[5].held.store(true, Ordering::Relaxed);
        srcs.kick();
        srcs.progress();
        assert_eq!(
            runs(&fakes),
            vec![0, 0, 0, 0, 0, 1, 0, 0],
            "kicked, held work"
        );
        let gone = Arc::downgrade(&fakes[2]) as Weak<dyn Progress>;
        srcs.remove(&gone);
        fakes[2].ready.set();
        srcs.progress();
        assert_eq!(runs(&fakes), vec![0; 8], "removed sources are not driven");
    }

    /// A poll-always source with a probe: ready while `go` is set.
    struct Polled {
        look: Arc<Look>,
        runs: AtomicUsize,
    }

    struct Look {
        go: AtomicBool,
        looks: AtomicUsize,
    }

    impl Ready for Look {
        fn ready(&self) -> bool {
            self.looks.fetch_add(1, Ordering::Relaxed);
            self.go.load(Ordering::Relaxed)
        }
    }

    impl Progress for Polled {
        fn progress(&self) {
            self.runs.fetch_add(1, Ordering::Relaxed);
        }
        fn wait_fd(&self) -> Option<RawFd> {
            None
        }
        fn probe(&self) -> Option<Arc<dyn Ready>> {
            Some(self.look.clone())
        }
    }

    #[test]
    fn many_polled_sources_run_when_their_probe_says_so() {
        let srcs = Sources {
            sweep_every: Some(Duration::from_secs(3600)),
            ..Default::default()
        };
        let polled: Vec<Arc<Polled>> = (0..8)
            .map(|_| {
                Arc::new(Polled {
                    look: Arc::new(Look {
                        go: AtomicBool::new(false),
                        looks: AtomicUsize::new(0),
                    }),
                    runs: AtomicUsize::new(0),
                })
            })
            .collect();
        for p in &polled {
            srcs.add(Arc::downgrade(p) as Weak<dyn Progress>);
        }
        let runs = || -> Vec<usize> {
            polled
                .iter()
                .map(|p| p.runs.swap(0, Ordering::Relaxed))
                .collect()
        };
        srcs.progress();
        assert_eq!(runs(), vec![1; 8], "the first pass sweeps");
        srcs.progress();
        assert_eq!(runs(), vec![0; 8], "no probe ready, nothing run");
        assert!(polled
            .iter()
            .all(|p| p.look.looks.load(Ordering::Relaxed) == 2));
        polled[6].look.go.store(true, Ordering::Relaxed);
        srcs.progress();
        assert_eq!(runs(), vec![0, 0, 0, 0, 0, 0, 1, 0]);
        // The queue holds the probes, not the sources: a dropped one is
        // not driven, and its probe goes with its slot on removal.
        let gone = Arc::downgrade(&polled[6]) as Weak<dyn Progress>;
        srcs.remove(&gone);
        srcs.progress();
        assert_eq!(runs(), vec![0; 8]);
        assert_eq!(Arc::strong_count(&polled[6].look), 1);
    }

    #[test]
    fn few_sources_are_all_driven() {
        let srcs = Sources::default();
        let fakes = bind(&srcs, NEST_ABOVE);
        srcs.progress();
        srcs.progress();
        assert_eq!(runs(&fakes), vec![2; NEST_ABOVE]);
        assert_eq!(srcs.wait_fds().len(), NEST_ABOVE);
    }
}
