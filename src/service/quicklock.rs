//! A lock for state that one thread holds at a time for a short while
//! and that is almost never contended: an endpoint's state, a completion
//! queue's entries, a queue's progress sources.
//!
//! Why not `std::sync::Mutex`: its unlock is a locked exchange (it must
//! learn atomically whether a thread sleeps on the lock's futex), so each
//! lock and unlock costs two locked instructions, about 5 ns each on this
//! project's machines, and a busy-polling ping-pong takes and gives back
//! such locks a dozen times per round trip. Here the unlock is a plain
//! release store followed by a plain load of the number of sleepers,
//! and a futex wake only when that number is not zero.
//!
//! The price: without a fence between that store and that load, the load
//! may be answered before the store is seen, and a thread that starts to
//! sleep in that instant (it saw the lock held) is not woken. So sleepers
//! sleep at most 1 ms at a time and look again: a lost wake-up, which
//! needs a holder letting go within nanoseconds of a waiter going to
//! sleep, costs that waiter at most one nap. A waiter spins briefly
//! before it sleeps at all (the locks here are held for short passes).
//!
//! Not poisoned: a panic cannot cross the C boundary (every entry point
//! catches it), and the `Mutex`es this replaces had every caller ignore
//! their poison.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};

/// The longest a waiter sleeps before it looks at the lock again (the
/// bound on a lost wake-up, see the module's documentation).
const NAP_NS: i64 = 1_000_000;
/// Looks at a held lock before a waiter sleeps.
const SPINS: u32 = 100;

const FREE: u32 = 0;
const HELD: u32 = 1;

/// A lock around a `T` whose unlock costs no locked instruction (see the
/// module's documentation).
#[derive(Default)]
pub struct QuickLock<T> {
    state: AtomicU32,
    /// Threads in [`QuickLock::lock_slow`]'s sleeping part.
    sleepers: AtomicU32,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and at most one
// guard exists at a time (`state` goes from FREE to HELD by an acquiring
// compare-and-swap and back by a releasing store), so the lock hands a
// `T: Send` from thread to thread as a `Mutex` does.
unsafe impl<T: Send> Sync for QuickLock<T> {}
// SAFETY: moving the lock moves the `T` (as for `Mutex`).
unsafe impl<T: Send> Send for QuickLock<T> {}

impl<T> QuickLock<T> {
    /// A lock around `value`, not held.
    pub const fn new(value: T) -> QuickLock<T> {
        QuickLock {
            state: AtomicU32::new(FREE),
            sleepers: AtomicU32::new(0),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock, waiting while another thread holds it.
    #[inline]
    pub fn lock(&self) -> QuickGuard<'_, T> {
        if let Some(g) = self.try_lock() {
            return g;
        }
        self.lock_slow()
    }

    #[cold]
    fn lock_slow(&self) -> QuickGuard<'_, T> {
        for _ in 0..SPINS {
            // Look without writing: a waiter's compare-and-swap would
            // pull the line away from the holder.
            if self.state.load(Ordering::Relaxed) == FREE {
                if let Some(g) = self.try_lock() {
                    return g;
                }
            }
            std::hint::spin_loop();
        }
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let g = loop {
            if let Some(g) = self.try_lock() {
                break g;
            }
            futex_wait(&self.state, HELD, NAP_NS);
        };
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        g
    }

    /// Takes the lock if no thread holds it.
    #[inline]
    pub fn try_lock(&self) -> Option<QuickGuard<'_, T>> {
        self.state
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| QuickGuard {
                lock: self,
                _as: PhantomData,
            })
    }

    #[inline]
    fn unlock(&self) {
        self.state.store(FREE, Ordering::Release);
        if self.sleepers.load(Ordering::Relaxed) != 0 {
            futex_wake(&self.state);
        }
    }
}

/// Sleeps while `word` holds `expected`, at most `ns` nanoseconds (or
/// until woken, or at once if it no longer holds it).
fn futex_wait(word: &AtomicU32, expected: u32, ns: i64) {
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: ns,
    };
    // SAFETY: FUTEX_WAIT reads the live u32 behind `word` and the
    // timespec on our stack; neither pointer outlives the call. Every
    // outcome (woken, timed out, the value changed, a signal) is fine:
    // the caller looks again.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// Wakes one thread sleeping on `word`.
fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only uses the address of the live u32 as a key.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// The lock held: the value, until dropped.
///
/// Sendable (the release is an atomic store, fine from any thread) and
/// shareable only as a `&mut T` is: the marker keeps a guard of a `T`
/// that is `Send` but not `Sync` from being shared between threads, which
/// the reference to the lock alone would allow.
pub struct QuickGuard<'a, T> {
    lock: &'a QuickLock<T>,
    _as: PhantomData<&'a mut T>,
}

impl<T> Deref for QuickGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (see `QuickLock`'s `Sync`).
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for QuickGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard is the only one, and `&mut self` makes this
        // borrow the only one through it.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for QuickGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn one_holder_at_a_time_and_every_increment_counts() {
        let l = Arc::new(QuickLock::new(0u64));
        assert!(l.try_lock().is_some(), "a free lock is taken");
        {
            let _g = l.lock();
            assert!(l.try_lock().is_none(), "a held lock is not taken twice");
        }
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        *l.lock() += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*l.lock(), 80_000);
    }
}
