//! [`super::apply`] for the datatypes with a native Rust counterpart (the
//! integers up to 64 bits, `float`, `double`): each element is read,
//! combined and written as its own type, where the general path builds a
//! tagged 128-bit value per element and matches on its datatype at every
//! step (about four times the instructions for a `uint64_t` sum).
//!
//! The results are the general path's, bit for bit: integers wrap as C's
//! unsigned and two's-complement arithmetic does, ordering and equality
//! are IEEE's for floating point (a NaN compares unordered), and a logical
//! result is 1 or 0 in the element's type. The test at the end of
//! `atomic.rs` compares the two paths on every operation and type.

use super::compute::{compute, Value};
use super::AtomicKind;
use crate::abi::*;
use core::cmp::Ordering;

/// One native element type.
pub(super) trait Num: Value + PartialEq + PartialOrd {
    const SIZE: usize;
    /// The element at the start of `b` (at least SIZE bytes, any alignment).
    fn get(b: &[u8]) -> Self;
    fn put(self, b: &mut [u8]);
}

macro_rules! num {
    (@impl $t:ty, $add:expr, $mul:expr, $zero:expr, $one:expr, $bits:expr) => {
        impl Num for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            #[inline(always)]
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..Self::SIZE]);
                <$t>::from_ne_bytes(a)
            }
            #[inline(always)]
            fn put(self, b: &mut [u8]) {
                b[..Self::SIZE].copy_from_slice(&self.to_ne_bytes())
            }
        }
        impl Value for $t {
            #[inline(always)]
            fn order(self, o: Self) -> Option<Ordering> {
                self.partial_cmp(&o)
            }
            #[inline(always)]
            fn same(self, o: Self) -> bool {
                self == o
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                let f: fn($t, $t) -> $t = $add;
                f(self, o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                let f: fn($t, $t) -> $t = $mul;
                f(self, o)
            }
            #[inline(always)]
            fn truth(self) -> bool {
                self != $zero
            }
            #[inline(always)]
            fn truth_value(self, t: bool) -> Self {
                if t {
                    $one
                } else {
                    $zero
                }
            }
            #[inline(always)]
            fn bits(self, o: Self, m: Self, f: fn(u128, u128, u128) -> u128) -> Self {
                let g: fn($t, $t, $t, fn(u128, u128, u128) -> u128) -> $t = $bits;
                g(self, o, m, f)
            }
        }
    };
    ($t:ty, int) => {
        num!(@impl $t, |a, b| a.wrapping_add(b), |a, b| a.wrapping_mul(b), 0, 1,
            |a, o, m, f| f(a as u128, o as u128, m as u128) as $t);
    };
    ($t:ty, float) => {
        num!(@impl $t, |a, b| a + b, |a, b| a * b, 0.0, 1.0, |a, _, _, _| a);
    };
}

num!(i8, int);
num!(u8, int);
num!(i16, int);
num!(u16, int);
num!(i32, int);
num!(u32, int);
num!(i64, int);
num!(u64, int);
num!(f32, float);
num!(f64, float);

/// Applies `op` to `count` elements of `T` at `target`; the caller
/// checked the buffers' lengths and holds the elements' stripe locks.
///
/// # Safety
/// As [`super::apply`]: `target` is valid for reads and writes of `count`
/// elements of `T`, at any alignment.
pub(super) unsafe fn apply<T: Num>(
    kind: AtomicKind,
    op: fi_op,
    count: usize,
    target: *mut u8,
    operand: &[u8],
    compare: &[u8],
    mut result: Option<&mut [u8]>,
) {
    for i in 0..count {
        let at = i * T::SIZE;
        // SAFETY: element i lies inside the target range (caller's
        // promise); unaligned accesses, as the target may be.
        unsafe {
            let elem = target.add(at) as *mut T;
            let old = elem.read_unaligned();
            if let Some(r) = result.as_deref_mut() {
                old.put(&mut r[at..]);
            }
            let src = if op == FI_ATOMIC_READ {
                old
            } else {
                T::get(&operand[at..])
            };
            let cmp = if kind == AtomicKind::Compare {
                T::get(&compare[at..])
            } else {
                old
            };
            if let Some(new) = compute(op, old, src, cmp) {
                elem.write_unaligned(new);
            }
        }
    }
}
