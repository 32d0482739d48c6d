//! The striped locks that make [`super::apply`] atomic: every element is
//! read, combined and written while the lock of its address's stripe is
//! held, by whichever thread applies the operation.
//!
//! A stripe covers a 1 KiB granule of addresses (granules 64 KiB apart
//! share a lock). An operation takes the locks of all the granules its
//! range touches once, in ascending stripe order (so two operations never
//! wait for each other crosswise), instead of one lock per element: a
//! 1 KiB array of `uint64_t` took 128 lock and unlock pairs, which cost
//! more than the arithmetic. Atomics on neighbouring words from different
//! threads now wait for each other for the few hundred nanoseconds an
//! operation takes; nothing else changes.

use std::ops::Range;
use std::sync::{Mutex, MutexGuard};

/// log2 of the bytes one stripe covers.
const GRANULE_SHIFT: u32 = 10;
const STRIPES: usize = 64;
static LOCKS: [Mutex<()>; STRIPES] = [const { Mutex::new(()) }; STRIPES];

fn lock(i: usize) -> MutexGuard<'static, ()> {
    LOCKS[i].lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` holding the locks of every stripe that `len` bytes from
/// `start` touch.
pub(super) fn holding<R>(start: usize, len: usize, f: impl FnOnce() -> R) -> R {
    let mut order = stripes_of(start, len);
    if order.len() == 1 {
        let _g = order.next().map(lock);
        return f();
    }
    let mut f = Some(f);
    let mut out = None;
    nest(&mut order, &mut || out = f.take().map(|f| f()));
    out.expect("the locked section ran")
}

/// The stripes `len` bytes from `start` touch, in ascending order: n
/// consecutive indices from the first granule's, wrapping at STRIPES.
fn stripes_of(start: usize, len: usize) -> StripeOrder {
    if len == 0 {
        return StripeOrder {
            low: 0..0,
            high: 0..0,
        };
    }
    let first = start >> GRANULE_SHIFT;
    let last = start.saturating_add(len - 1) >> GRANULE_SHIFT;
    let n = (last - first + 1).min(STRIPES);
    let a = first % STRIPES;
    if a + n <= STRIPES {
        StripeOrder {
            low: 0..0,
            high: a..a + n,
        }
    } else {
        StripeOrder {
            low: 0..a + n - STRIPES,
            high: a..STRIPES,
        }
    }
}

/// Stripe indices: the wrapped-around low ones, then the high ones.
struct StripeOrder {
    low: Range<usize>,
    high: Range<usize>,
}

impl StripeOrder {
    fn len(&self) -> usize {
        self.low.len() + self.high.len()
    }
}

impl Iterator for StripeOrder {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        self.low.next().or_else(|| self.high.next())
    }
}

/// Takes the locks `it` yields, one frame each, then runs `f`.
fn nest(it: &mut dyn Iterator<Item = usize>, f: &mut dyn FnMut()) {
    match it.next() {
        Some(i) => {
            let _g = lock(i);
            nest(it, f)
        }
        None => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(start: usize, len: usize) -> Vec<usize> {
        stripes_of(start, len).collect()
    }

    #[test]
    fn a_range_takes_the_stripes_it_touches_in_ascending_order() {
        let g = 1 << GRANULE_SHIFT;
        assert_eq!(order(5 * g, 8), vec![5]);
        assert_eq!(order(6 * g - 4, 8), vec![5, 6]);
        assert_eq!(order(63 * g + 1000, 100), vec![0, 63]);
        assert_eq!(order(64 * g - 1, 3 * g), vec![0, 1, 2, 63]);
        assert_eq!(order(3 * g, 200 * g), (0..STRIPES).collect::<Vec<_>>());
        assert!(order(7, 0).is_empty());
        assert_eq!(
            order(usize::MAX - 3, 8),
            vec![(usize::MAX >> GRANULE_SHIFT) % STRIPES]
        );
    }

    #[test]
    fn the_locks_are_held_while_the_section_runs() {
        let g = 1 << GRANULE_SHIFT;
        // Stripes 10 and 11 from this thread: try_lock fails on a held
        // std mutex whoever holds it.
        let held = holding(10 * g + g - 8, 16, || {
            [10, 11].map(|i| LOCKS[i].try_lock().is_err())
        });
        assert_eq!(held, [true, true]);
        assert_eq!(holding(0, 0, || 7), 7);
    }
}
