//! What an operation makes of one element, written once for both element
//! representations: the native types (`typed.rs`) and the tagged values
//! of the general path (`Elem` in `atomic.rs`).

use crate::abi::*;
use core::cmp::Ordering::{self, *};

/// The arithmetic an element offers the operations.
pub(super) trait Value: Copy {
    /// `self` against `o`; None when unordered (a NaN, or complex numbers
    /// that differ: they compare for equality only).
    fn order(self, o: Self) -> Option<Ordering>;
    /// Equality as C's `==` sees it.
    fn same(self, o: Self) -> bool;
    /// Sum and product; integers wrap as C's unsigned and
    /// two's-complement arithmetic does.
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// Nonzero, as C's truth test sees it.
    fn truth(self) -> bool;
    /// 1 or 0 in the element's own type.
    fn truth_value(self, t: bool) -> Self;
    /// `f(self, o, m)` on the bits of an integer ([`super::valid`] keeps
    /// bit operations off floating point).
    fn bits(self, o: Self, m: Self, f: fn(u128, u128, u128) -> u128) -> Self;
}

/// The new target value of one element (None: leave it as it is).
#[inline(always)]
pub(super) fn compute<V: Value>(op: fi_op, old: V, src: V, cmp: V) -> Option<V> {
    let ord = |want: &[Ordering]| cmp.order(old).is_some_and(|o| want.contains(&o));
    Some(match op {
        FI_MIN if src.order(old) == Some(Less) => src,
        FI_MAX if src.order(old) == Some(Greater) => src,
        FI_SUM => old.add(src),
        FI_PROD => old.mul(src),
        FI_LOR => old.truth_value(old.truth() || src.truth()),
        FI_LAND => old.truth_value(old.truth() && src.truth()),
        FI_LXOR => old.truth_value(old.truth() != src.truth()),
        FI_BOR => old.bits(src, src, |a, b, _| a | b),
        FI_BAND => old.bits(src, src, |a, b, _| a & b),
        FI_BXOR => old.bits(src, src, |a, b, _| a ^ b),
        FI_ATOMIC_WRITE => src,
        FI_CSWAP if cmp.same(old) => src,
        FI_CSWAP_NE if !cmp.same(old) => src,
        FI_CSWAP_LE if ord(&[Less, Equal]) => src,
        FI_CSWAP_LT if ord(&[Less]) => src,
        FI_CSWAP_GE if ord(&[Greater, Equal]) => src,
        FI_CSWAP_GT if ord(&[Greater]) => src,
        FI_MSWAP => old.bits(src, cmp, |a, b, m| (b & m) | (a & !m)),
        // FI_ATOMIC_READ and anything else leave the element.
        _ => return None,
    })
}
