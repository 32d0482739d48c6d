//! The arithmetic of remote atomics (fi_atomic(3)), independent of any
//! wire: which operation and datatype combinations exist, how large each
//! datatype is, and applying an operation to target memory.
//!
//! A provider receives an atomic request, checks the target range against
//! the memory registration, then calls
//! [`apply`]. Every element is updated under one of a fixed set of striped
//! locks chosen by its address (`atomic/stripes.rs`; `atomic/typed.rs`
//! holds the native-type arithmetic), so an atomic is atomic with respect to
//! every other atomic on the same element from any endpoint of the process,
//! whichever thread applies it (the application's or the progress
//! thread). That is the guarantee fi_atomic(3) gives; plain loads and
//! stores by the target application are not ordered against it, as the man
//! page says.
//!
//! Combinations: the base operations `FI_MIN`..`FI_BXOR` and
//! `FI_ATOMIC_WRITE`, the fetch operations those plus `FI_ATOMIC_READ`,
//! the compare operations `FI_CSWAP`..`FI_MSWAP`, over the integer types
//! (8 to 128 bits), `float`, `double`, `long double` (x86-64's 80-bit
//! format) and the three complex types. Excluded because the operation has
//! no meaning for the type: ordering (`FI_MIN`, `FI_MAX`, `FI_CSWAP_LE`..
//! `FI_CSWAP_GT`) on complex numbers, and bit operations (`FI_BOR`,
//! `FI_BAND`, `FI_BXOR`, `FI_MSWAP`) on floating point. The 2.x 8- and
//! 16-bit float formats are not offered.

use crate::abi::*;

mod compute;
mod stripes;
mod typed;

use compute::{compute, Value};

/// Which family of calls an operation comes from (the `*valid` call and
/// `fi_query_atomic`'s `FI_FETCH_ATOMIC`/`FI_COMPARE_ATOMIC` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicKind {
    /// `fi_atomic*`: no result returned.
    Base,
    /// `fi_fetch_atomic*`: the initial target value comes back.
    Fetch,
    /// `fi_compare_atomic*`: a compare operand, the initial value back.
    Compare,
}

/// The size in bytes of one element of `dt` (as `fi_atomic_attr.size`
/// reports it), or None for a datatype we do not offer.
pub fn datatype_size(dt: fi_datatype) -> Option<usize> {
    Some(match dt {
        FI_INT8 | FI_UINT8 => 1,
        FI_INT16 | FI_UINT16 => 2,
        FI_INT32 | FI_UINT32 | FI_FLOAT => 4,
        FI_INT64 | FI_UINT64 | FI_DOUBLE | FI_FLOAT_COMPLEX => 8,
        FI_DOUBLE_COMPLEX | FI_INT128 | FI_UINT128 => 16,
        FI_LONG_DOUBLE if x87::AVAILABLE => 16,
        FI_LONG_DOUBLE_COMPLEX if x87::AVAILABLE => 32,
        _ => return None,
    })
}

/// Whether `op` on `dt` is offered for calls of `kind`; its element size
/// when it is.
pub fn valid(kind: AtomicKind, op: fi_op, dt: fi_datatype) -> Option<usize> {
    let size = datatype_size(dt)?;
    let in_kind = match kind {
        AtomicKind::Base => (FI_MIN..=FI_BXOR).contains(&op) || op == FI_ATOMIC_WRITE,
        AtomicKind::Fetch => (FI_MIN..=FI_ATOMIC_WRITE).contains(&op),
        AtomicKind::Compare => (FI_CSWAP..=FI_MSWAP).contains(&op),
    };
    let complex = matches!(
        dt,
        FI_FLOAT_COMPLEX | FI_DOUBLE_COMPLEX | FI_LONG_DOUBLE_COMPLEX
    );
    let float = complex || matches!(dt, FI_FLOAT | FI_DOUBLE | FI_LONG_DOUBLE);
    let ordering = matches!(
        op,
        FI_MIN | FI_MAX | FI_CSWAP_LE | FI_CSWAP_LT | FI_CSWAP_GE | FI_CSWAP_GT
    );
    let bits = matches!(op, FI_BOR | FI_BAND | FI_BXOR | FI_MSWAP);
    (in_kind && !(complex && ordering) && !(float && bits)).then_some(size)
}

/// Why [`apply`] refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicError {
    /// The combination is not offered ([`valid`] says no).
    OpNotSupp,
    /// An operand, compare or result buffer is shorter than `count`
    /// elements.
    Short,
}

/// One atomic request: what to do to how many elements.
#[derive(Debug, Clone, Copy)]
pub struct AtomicOp {
    pub kind: AtomicKind,
    pub op: fi_op,
    pub datatype: fi_datatype,
    /// Elements, not bytes.
    pub count: usize,
}

/// Applies `op` to `count` elements of type `dt` at `target`: element `i`
/// combines with `operand[i]` (and `compare[i]` for compare operations);
/// when `result` is given, it receives each element's value from before
/// the operation. Operand, compare and result hold elements back to back
/// in the target's byte order and may be unaligned.
///
/// # Safety
/// `target` is valid for reads and writes of `count` elements of `dt`
/// (the caller checked the range against a registration that allows the
/// access), and nothing else writes those bytes except through this
/// function or the application's own stores.
pub unsafe fn apply(
    req: AtomicOp,
    target: *mut u8,
    operand: &[u8],
    compare: &[u8],
    result: Option<&mut [u8]>,
) -> Result<(), AtomicError> {
    let AtomicOp {
        kind,
        op,
        datatype: dt,
        count,
    } = req;
    let size = valid(kind, op, dt).ok_or(AtomicError::OpNotSupp)?;
    let need = count.checked_mul(size).ok_or(AtomicError::Short)?;
    if (op != FI_ATOMIC_READ && operand.len() < need)
        || (kind == AtomicKind::Compare && compare.len() < need)
        || result.as_ref().is_some_and(|r| r.len() < need)
    {
        return Err(AtomicError::Short);
    }
    stripes::holding(target as usize, need, || {
        let (t, o, c, r) = (target, operand, compare, result);
        // SAFETY: (both paths) the caller's promise on `target`; the
        // buffer lengths were checked above; the range's stripes are held.
        unsafe {
            match dt {
                FI_INT8 => typed::apply::<i8>(kind, op, count, t, o, c, r),
                FI_UINT8 => typed::apply::<u8>(kind, op, count, t, o, c, r),
                FI_INT16 => typed::apply::<i16>(kind, op, count, t, o, c, r),
                FI_UINT16 => typed::apply::<u16>(kind, op, count, t, o, c, r),
                FI_INT32 => typed::apply::<i32>(kind, op, count, t, o, c, r),
                FI_UINT32 => typed::apply::<u32>(kind, op, count, t, o, c, r),
                FI_INT64 => typed::apply::<i64>(kind, op, count, t, o, c, r),
                FI_UINT64 => typed::apply::<u64>(kind, op, count, t, o, c, r),
                FI_FLOAT => typed::apply::<f32>(kind, op, count, t, o, c, r),
                FI_DOUBLE => typed::apply::<f64>(kind, op, count, t, o, c, r),
                _ => apply_general(req, size, t, o, c, r),
            }
        }
    });
    Ok(())
}

/// [`apply`] through tagged element values: every datatype (the 128-bit
/// integers, long double and the complex types have no native path).
///
/// # Safety
/// As [`apply`], with the lengths checked and the stripes held.
unsafe fn apply_general(
    req: AtomicOp,
    size: usize,
    target: *mut u8,
    operand: &[u8],
    compare: &[u8],
    mut result: Option<&mut [u8]>,
) {
    let (kind, op, dt) = (req.kind, req.op, req.datatype);
    for i in 0..req.count {
        let at = i * size;
        // SAFETY: element i lies inside the target range (caller's
        // promise), and the slices were checked to hold `count` elements.
        unsafe {
            let elem = target.add(at);
            let old = Elem::load(dt, elem);
            if let Some(r) = result.as_deref_mut() {
                old.store_to(&mut r[at..at + size]);
            }
            let src = if op == FI_ATOMIC_READ {
                old
            } else {
                Elem::read(dt, &operand[at..at + size])
            };
            let cmp = if kind == AtomicKind::Compare {
                Elem::read(dt, &compare[at..at + size])
            } else {
                old
            };
            if let Some(new) = compute(op, old, src, cmp) {
                new.store(elem);
            }
        }
    }
}

/// One element's value, tagged with its datatype.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Elem {
    I(i128, u32), // signed integer and its width in bits
    U(u128, u32), // unsigned integer and its width in bits
    F32(f32),
    F64(f64),
    C32(f32, f32),
    C64(f64, f64),
    Ld(x87::F80),
    Lc(x87::F80, x87::F80),
}

impl Elem {
    /// Reads an element of `dt` from `b` (at least its size long).
    fn read(dt: fi_datatype, b: &[u8]) -> Elem {
        let n = |k: usize| -> [u8; 16] {
            let mut a = [0u8; 16];
            a[..k].copy_from_slice(&b[..k]);
            a
        };
        let f80 = |o: usize| -> x87::F80 {
            let mut a = [0u8; 10];
            a.copy_from_slice(&b[o..o + 10]);
            a
        };
        match dt {
            FI_INT8 => Elem::I(b[0] as i8 as i128, 8),
            FI_UINT8 => Elem::U(b[0] as u128, 8),
            FI_INT16 => Elem::I(i16::from_ne_bytes([b[0], b[1]]) as i128, 16),
            FI_UINT16 => Elem::U(u16::from_ne_bytes([b[0], b[1]]) as u128, 16),
            FI_INT32 => Elem::I(
                i32::from_ne_bytes(n(4)[..4].try_into().unwrap()) as i128,
                32,
            ),
            FI_UINT32 => Elem::U(
                u32::from_ne_bytes(n(4)[..4].try_into().unwrap()) as u128,
                32,
            ),
            FI_INT64 => Elem::I(
                i64::from_ne_bytes(n(8)[..8].try_into().unwrap()) as i128,
                64,
            ),
            FI_UINT64 => Elem::U(
                u64::from_ne_bytes(n(8)[..8].try_into().unwrap()) as u128,
                64,
            ),
            FI_INT128 => Elem::I(i128::from_ne_bytes(n(16)), 128),
            FI_UINT128 => Elem::U(u128::from_ne_bytes(n(16)), 128),
            FI_FLOAT => Elem::F32(f32::from_ne_bytes(n(4)[..4].try_into().unwrap())),
            FI_DOUBLE => Elem::F64(f64::from_ne_bytes(n(8)[..8].try_into().unwrap())),
            FI_FLOAT_COMPLEX => {
                let a = n(8);
                Elem::C32(
                    f32::from_ne_bytes(a[..4].try_into().unwrap()),
                    f32::from_ne_bytes(a[4..8].try_into().unwrap()),
                )
            }
            FI_DOUBLE_COMPLEX => {
                let a = n(16);
                Elem::C64(
                    f64::from_ne_bytes(a[..8].try_into().unwrap()),
                    f64::from_ne_bytes(a[8..16].try_into().unwrap()),
                )
            }
            FI_LONG_DOUBLE => Elem::Ld(f80(0)),
            _ => Elem::Lc(f80(0), f80(16)),
        }
    }

    /// Reads the element of `dt` at `p`.
    ///
    /// # Safety
    /// `p` is readable for the datatype's size.
    unsafe fn load(dt: fi_datatype, p: *const u8) -> Elem {
        let size = datatype_size(dt).unwrap_or(0);
        let mut b = [0u8; 32];
        // SAFETY: readable for `size` bytes by the caller's promise.
        unsafe { core::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), size) };
        Elem::read(dt, &b)
    }

    /// Writes the element's bytes into `out` (its size long). A long
    /// double writes its 10 significant bytes and leaves the padding.
    fn store_to(self, out: &mut [u8]) {
        match self {
            Elem::I(v, w) => {
                out[..(w / 8) as usize].copy_from_slice(&v.to_ne_bytes()[..(w / 8) as usize])
            }
            Elem::U(v, w) => {
                out[..(w / 8) as usize].copy_from_slice(&v.to_ne_bytes()[..(w / 8) as usize])
            }
            Elem::F32(v) => out[..4].copy_from_slice(&v.to_ne_bytes()),
            Elem::F64(v) => out[..8].copy_from_slice(&v.to_ne_bytes()),
            Elem::C32(r, i) => {
                out[..4].copy_from_slice(&r.to_ne_bytes());
                out[4..8].copy_from_slice(&i.to_ne_bytes());
            }
            Elem::C64(r, i) => {
                out[..8].copy_from_slice(&r.to_ne_bytes());
                out[8..16].copy_from_slice(&i.to_ne_bytes());
            }
            Elem::Ld(v) => out[..10].copy_from_slice(&v),
            Elem::Lc(r, i) => {
                out[..10].copy_from_slice(&r);
                out[16..26].copy_from_slice(&i);
            }
        }
    }

    /// Writes the element at `p`.
    ///
    /// # Safety
    /// `p` is writable for the datatype's size.
    unsafe fn store(self, p: *mut u8) {
        let mut b = [0u8; 32];
        let size = self.size();
        // SAFETY: readable (and writable) for `size` bytes by the caller's
        // promise; reading first keeps a long double's padding bytes.
        unsafe { core::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), size) };
        self.store_to(&mut b);
        // SAFETY: as above.
        unsafe { core::ptr::copy_nonoverlapping(b.as_ptr(), p, size) };
    }

    fn size(self) -> usize {
        match self {
            Elem::I(_, w) | Elem::U(_, w) => (w / 8) as usize,
            Elem::F32(_) => 4,
            Elem::F64(_) | Elem::C32(..) => 8,
            Elem::C64(..) | Elem::Ld(_) => 16,
            Elem::Lc(..) => 32,
        }
    }

    /// Keeps an integer inside its width (wrapping, as C's unsigned and
    /// two's-complement arithmetic does).
    fn wrap(self) -> Elem {
        match self {
            Elem::I(v, w) if w < 128 => {
                let s = 128 - w;
                Elem::I((v << s) >> s, w)
            }
            Elem::U(v, w) if w < 128 => Elem::U(v & ((1u128 << w) - 1), w),
            e => e,
        }
    }
}

impl Value for Elem {
    /// Nonzero, as C's truth test sees it.
    fn truth(self) -> bool {
        match self {
            Elem::I(v, _) => v != 0,
            Elem::U(v, _) => v != 0,
            Elem::F32(v) => v != 0.0,
            Elem::F64(v) => v != 0.0,
            Elem::C32(r, i) => r != 0.0 || i != 0.0,
            Elem::C64(r, i) => r != 0.0 || i != 0.0,
            Elem::Ld(v) => !x87::is_zero(&v),
            Elem::Lc(r, i) => !x87::is_zero(&r) || !x87::is_zero(&i),
        }
    }

    /// 1 or 0 in the element's own type (C converts a logical result).
    fn truth_value(self, t: bool) -> Elem {
        let f = if t { 1.0 } else { 0.0 };
        match self {
            Elem::I(_, w) => Elem::I(t as i128, w),
            Elem::U(_, w) => Elem::U(t as u128, w),
            Elem::F32(_) => Elem::F32(f as f32),
            Elem::F64(_) => Elem::F64(f),
            Elem::C32(..) => Elem::C32(f as f32, 0.0),
            Elem::C64(..) => Elem::C64(f, 0.0),
            Elem::Ld(_) => Elem::Ld(x87::from_f64(f)),
            Elem::Lc(..) => Elem::Lc(x87::from_f64(f), x87::from_f64(0.0)),
        }
    }

    fn order(self, o: Elem) -> Option<core::cmp::Ordering> {
        match (self, o) {
            (Elem::I(a, _), Elem::I(b, _)) => Some(a.cmp(&b)),
            (Elem::U(a, _), Elem::U(b, _)) => Some(a.cmp(&b)),
            (Elem::F32(a), Elem::F32(b)) => a.partial_cmp(&b),
            (Elem::F64(a), Elem::F64(b)) => a.partial_cmp(&b),
            (Elem::Ld(a), Elem::Ld(b)) => x87::cmp(&a, &b),
            // Complex numbers compare for equality only.
            (a, b) => a.same(b).then_some(core::cmp::Ordering::Equal),
        }
    }

    fn same(self, o: Elem) -> bool {
        match (self, o) {
            (Elem::Ld(a), Elem::Ld(b)) => x87::cmp(&a, &b) == Some(core::cmp::Ordering::Equal),
            (Elem::Lc(a, b), Elem::Lc(c, d)) => {
                x87::cmp(&a, &c) == Some(core::cmp::Ordering::Equal)
                    && x87::cmp(&b, &d) == Some(core::cmp::Ordering::Equal)
            }
            (a, b) => a == b,
        }
    }

    fn add(self, o: Elem) -> Elem {
        match (self, o) {
            (Elem::I(a, w), Elem::I(b, _)) => Elem::I(a.wrapping_add(b), w).wrap(),
            (Elem::U(a, w), Elem::U(b, _)) => Elem::U(a.wrapping_add(b), w).wrap(),
            (Elem::F32(a), Elem::F32(b)) => Elem::F32(a + b),
            (Elem::F64(a), Elem::F64(b)) => Elem::F64(a + b),
            (Elem::C32(a, b), Elem::C32(c, d)) => Elem::C32(a + c, b + d),
            (Elem::C64(a, b), Elem::C64(c, d)) => Elem::C64(a + c, b + d),
            (Elem::Ld(a), Elem::Ld(b)) => Elem::Ld(x87::add(&a, &b)),
            (Elem::Lc(a, b), Elem::Lc(c, d)) => Elem::Lc(x87::add(&a, &c), x87::add(&b, &d)),
            (a, _) => a,
        }
    }

    fn mul(self, o: Elem) -> Elem {
        match (self, o) {
            (Elem::I(a, w), Elem::I(b, _)) => Elem::I(a.wrapping_mul(b), w).wrap(),
            (Elem::U(a, w), Elem::U(b, _)) => Elem::U(a.wrapping_mul(b), w).wrap(),
            (Elem::F32(a), Elem::F32(b)) => Elem::F32(a * b),
            (Elem::F64(a), Elem::F64(b)) => Elem::F64(a * b),
            (Elem::C32(a, b), Elem::C32(c, d)) => Elem::C32(a * c - b * d, a * d + b * c),
            (Elem::C64(a, b), Elem::C64(c, d)) => Elem::C64(a * c - b * d, a * d + b * c),
            (Elem::Ld(a), Elem::Ld(b)) => Elem::Ld(x87::mul(&a, &b)),
            (Elem::Lc(a, b), Elem::Lc(c, d)) => Elem::Lc(
                x87::sub(&x87::mul(&a, &c), &x87::mul(&b, &d)),
                x87::add(&x87::mul(&a, &d), &x87::mul(&b, &c)),
            ),
            (a, _) => a,
        }
    }

    fn bits(self, o: Elem, m: Elem, f: fn(u128, u128, u128) -> u128) -> Elem {
        let raw = |e: Elem| match e {
            Elem::I(v, _) => v as u128,
            Elem::U(v, _) => v,
            _ => 0,
        };
        match self {
            Elem::I(_, w) => Elem::I(f(raw(self), raw(o), raw(m)) as i128, w).wrap(),
            Elem::U(_, w) => Elem::U(f(raw(self), raw(o), raw(m)), w).wrap(),
            e => e,
        }
    }
}

/// x86-64's `long double`: the x87 80-bit extended format, computed with
/// the x87 unit itself (Rust has no such type). Elsewhere `long double`
/// is not offered.
#[cfg(target_arch = "x86_64")]
mod x87 {
    /// The 10 significant bytes of a `long double`.
    pub type F80 = [u8; 10];
    pub const AVAILABLE: bool = true;

    /// `a op b` for one of the x87 arithmetic instructions.
    macro_rules! binop {
        ($name:ident, $insn:literal) => {
            pub fn $name(a: &F80, b: &F80) -> F80 {
                let mut r = [0u8; 10];
                // SAFETY: loads two 10-byte values from live arrays, stores
                // one into `r`; the x87 stack is left as it was found.
                unsafe {
                    core::arch::asm!(
                        "fld tbyte ptr [{a}]",
                        "fld tbyte ptr [{b}]",
                        $insn,
                        "fstp tbyte ptr [{r}]",
                        a = in(reg) a.as_ptr(),
                        b = in(reg) b.as_ptr(),
                        r = in(reg) r.as_mut_ptr(),
                        out("st(0)") _,
                        out("st(1)") _,
                        options(nostack),
                    );
                }
                r
            }
        };
    }
    binop!(add, "faddp st(1), st");
    binop!(mul, "fmulp st(1), st");
    // st(1) = a, st(0) = b: fsubp computes st(1) - st(0).
    binop!(sub, "fsubp st(1), st");

    /// `a` compared with `b`; None when either is a NaN.
    pub fn cmp(a: &F80, b: &F80) -> Option<core::cmp::Ordering> {
        let (above, below, unordered): (u8, u8, u8);
        // SAFETY: loads two live 10-byte values, compares and pops both.
        unsafe {
            core::arch::asm!(
                "fld tbyte ptr [{b}]",
                "fld tbyte ptr [{a}]",
                "fucomip st, st(1)",
                "fstp st(0)",
                "seta {above}",
                "setb {below}",
                "setp {unordered}",
                a = in(reg) a.as_ptr(),
                b = in(reg) b.as_ptr(),
                above = out(reg_byte) above,
                below = out(reg_byte) below,
                unordered = out(reg_byte) unordered,
                out("st(0)") _,
                out("st(1)") _,
                options(nostack),
            );
        }
        if unordered != 0 {
            None
        } else if above != 0 {
            Some(core::cmp::Ordering::Greater)
        } else if below != 0 {
            Some(core::cmp::Ordering::Less)
        } else {
            Some(core::cmp::Ordering::Equal)
        }
    }

    /// A `double` widened to the 80-bit format.
    pub fn from_f64(v: f64) -> F80 {
        let mut r = [0u8; 10];
        // SAFETY: loads 8 bytes from `v`, stores 10 into `r`.
        unsafe {
            core::arch::asm!(
                "fld qword ptr [{v}]",
                "fstp tbyte ptr [{r}]",
                v = in(reg) &v,
                r = in(reg) r.as_mut_ptr(),
                out("st(0)") _,
                options(nostack),
            );
        }
        r
    }

    /// Zero (either sign).
    pub fn is_zero(a: &F80) -> bool {
        cmp(a, &from_f64(0.0)) == Some(core::cmp::Ordering::Equal)
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod x87 {
    pub type F80 = [u8; 10];
    pub const AVAILABLE: bool = false;
    pub fn add(a: &F80, _: &F80) -> F80 {
        *a
    }
    pub fn mul(a: &F80, _: &F80) -> F80 {
        *a
    }
    pub fn sub(a: &F80, _: &F80) -> F80 {
        *a
    }
    pub fn cmp(_: &F80, _: &F80) -> Option<core::cmp::Ordering> {
        None
    }
    pub fn from_f64(_: f64) -> F80 {
        [0; 10]
    }
    pub fn is_zero(_: &F80) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(kind: AtomicKind, op: fi_op, datatype: fi_datatype, count: usize) -> AtomicOp {
        AtomicOp {
            kind,
            op,
            datatype,
            count,
        }
    }

    /// Applies one element operation on `target` (bytes of one element).
    fn one(
        kind: AtomicKind,
        op: fi_op,
        dt: fi_datatype,
        target: &mut [u8],
        src: &[u8],
        cmp: &[u8],
    ) -> Vec<u8> {
        let mut old = vec![0u8; target.len()];
        // SAFETY: target is a live buffer of one element.
        unsafe {
            apply(
                req(kind, op, dt, 1),
                target.as_mut_ptr(),
                src,
                cmp,
                Some(&mut old),
            )
        }
        .unwrap();
        old
    }

    #[test]
    fn combinations_follow_the_man_page() {
        // Every base operation on every integer type; bits not on floats;
        // ordering not on complex numbers.
        for dt in FI_INT8..=FI_UINT64 {
            for op in (FI_MIN..=FI_BXOR).chain([FI_ATOMIC_WRITE]) {
                assert!(valid(AtomicKind::Base, op, dt).is_some(), "op {op} dt {dt}");
            }
            assert!(valid(AtomicKind::Base, FI_ATOMIC_READ, dt).is_none());
            assert!(valid(AtomicKind::Fetch, FI_ATOMIC_READ, dt).is_some());
            assert!(valid(AtomicKind::Fetch, FI_CSWAP, dt).is_none());
            for op in FI_CSWAP..=FI_MSWAP {
                assert!(valid(AtomicKind::Compare, op, dt).is_some());
                assert!(valid(AtomicKind::Base, op, dt).is_none());
            }
        }
        assert!(valid(AtomicKind::Base, FI_BOR, FI_DOUBLE).is_none());
        assert!(valid(AtomicKind::Compare, FI_MSWAP, FI_FLOAT).is_none());
        assert!(valid(AtomicKind::Base, FI_MIN, FI_FLOAT_COMPLEX).is_none());
        assert!(valid(AtomicKind::Compare, FI_CSWAP_LT, FI_DOUBLE_COMPLEX).is_none());
        assert_eq!(
            valid(AtomicKind::Compare, FI_CSWAP, FI_DOUBLE_COMPLEX),
            Some(16)
        );
        assert_eq!(
            valid(AtomicKind::Base, FI_SUM, FI_LONG_DOUBLE_COMPLEX),
            Some(32)
        );
        assert_eq!(valid(AtomicKind::Base, FI_LXOR, FI_FLOAT), Some(4));
        assert!(valid(AtomicKind::Base, FI_SUM, FI_FLOAT16).is_none());
        assert!(valid(AtomicKind::Base, 99, FI_INT32).is_none());
    }

    #[test]
    fn integers_wrap_like_c() {
        let mut t = [127u8];
        assert_eq!(
            one(AtomicKind::Fetch, FI_SUM, FI_INT8, &mut t, &[1], &[]),
            [127]
        );
        assert_eq!(t, [0x80]);
        let mut t = 250u8.to_ne_bytes();
        one(AtomicKind::Base, FI_SUM, FI_UINT8, &mut t, &[10], &[]);
        assert_eq!(t, [4]);
        let mut t = (-5i32).to_ne_bytes();
        one(
            AtomicKind::Base,
            FI_MIN,
            FI_INT32,
            &mut t,
            &(-7i32).to_ne_bytes(),
            &[],
        );
        assert_eq!(i32::from_ne_bytes(t), -7);
        let mut t = 5u32.to_ne_bytes();
        one(
            AtomicKind::Base,
            FI_MAX,
            FI_UINT32,
            &mut t,
            &u32::MAX.to_ne_bytes(),
            &[],
        );
        assert_eq!(u32::from_ne_bytes(t), u32::MAX);
        let mut t = 0xf0f0u16.to_ne_bytes();
        one(
            AtomicKind::Base,
            FI_BXOR,
            FI_UINT16,
            &mut t,
            &0xff00u16.to_ne_bytes(),
            &[],
        );
        assert_eq!(u16::from_ne_bytes(t), 0x0ff0);
        let mut t = 0x1234u64.to_ne_bytes();
        one(
            AtomicKind::Compare,
            FI_MSWAP,
            FI_UINT64,
            &mut t,
            &0xabcdu64.to_ne_bytes(),
            &0x00ffu64.to_ne_bytes(),
        );
        assert_eq!(u64::from_ne_bytes(t), 0x12cd);
        let mut t = (3i64).to_ne_bytes();
        one(
            AtomicKind::Base,
            FI_LAND,
            FI_INT64,
            &mut t,
            &(9i64).to_ne_bytes(),
            &[],
        );
        assert_eq!(i64::from_ne_bytes(t), 1);
        let mut t = (i128::MAX).to_ne_bytes();
        one(
            AtomicKind::Base,
            FI_SUM,
            FI_INT128,
            &mut t,
            &1i128.to_ne_bytes(),
            &[],
        );
        assert_eq!(i128::from_ne_bytes(t), i128::MIN);
    }

    #[test]
    fn compare_and_swap_family() {
        let cases = [
            (FI_CSWAP, 5i32, 5i32, true),
            (FI_CSWAP, 5, 6, false),
            (FI_CSWAP_NE, 5, 6, true),
            (FI_CSWAP_LE, 5, 5, true),
            (FI_CSWAP_LE, 6, 5, false),
            (FI_CSWAP_LT, 4, 5, true),
            (FI_CSWAP_LT, 5, 5, false),
            (FI_CSWAP_GE, 5, 5, true),
            (FI_CSWAP_GT, 6, 5, true),
            (FI_CSWAP_GT, 5, 5, false),
        ];
        for (op, compare, target, swaps) in cases {
            let mut t = target.to_ne_bytes();
            let old = one(
                AtomicKind::Compare,
                op,
                FI_INT32,
                &mut t,
                &99i32.to_ne_bytes(),
                &compare.to_ne_bytes(),
            );
            assert_eq!(
                old,
                target.to_ne_bytes(),
                "op {op}: the initial value comes back"
            );
            assert_eq!(
                i32::from_ne_bytes(t),
                if swaps { 99 } else { target },
                "op {op} compare {compare}"
            );
        }
    }

    #[test]
    fn floating_point_and_complex() {
        let mut t = 1.5f64.to_ne_bytes();
        one(
            AtomicKind::Base,
            FI_PROD,
            FI_DOUBLE,
            &mut t,
            &4.0f64.to_ne_bytes(),
            &[],
        );
        assert_eq!(f64::from_ne_bytes(t), 6.0);
        let mut t = 0.0f32.to_ne_bytes();
        one(
            AtomicKind::Base,
            FI_LOR,
            FI_FLOAT,
            &mut t,
            &2.5f32.to_ne_bytes(),
            &[],
        );
        assert_eq!(f32::from_ne_bytes(t), 1.0);
        // (1 + 2i)(3 + 4i) = -5 + 10i
        let mut t = [1.0f64.to_ne_bytes(), 2.0f64.to_ne_bytes()].concat();
        let src = [3.0f64.to_ne_bytes(), 4.0f64.to_ne_bytes()].concat();
        one(
            AtomicKind::Base,
            FI_PROD,
            FI_DOUBLE_COMPLEX,
            &mut t,
            &src,
            &[],
        );
        assert_eq!(f64::from_ne_bytes(t[..8].try_into().unwrap()), -5.0);
        assert_eq!(f64::from_ne_bytes(t[8..].try_into().unwrap()), 10.0);
        let mut t = [1.0f32.to_ne_bytes(), 1.0f32.to_ne_bytes()].concat();
        let cmp = t.clone();
        one(
            AtomicKind::Compare,
            FI_CSWAP,
            FI_FLOAT_COMPLEX,
            &mut t,
            &[0u8; 8],
            &cmp,
        );
        assert_eq!(t, [0u8; 8]);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_double_uses_the_80_bit_format() {
        let ld = |v: f64| {
            let mut b = [0u8; 16];
            b[..10].copy_from_slice(&x87::from_f64(v));
            b
        };
        let mut t = ld(1.5);
        t[10..].copy_from_slice(&[0xee; 6]);
        one(
            AtomicKind::Base,
            FI_SUM,
            FI_LONG_DOUBLE,
            &mut t,
            &ld(2.25),
            &[],
        );
        assert_eq!(t[..10], ld(3.75)[..10]);
        assert_eq!(t[10..], [0xee; 6], "padding bytes are left alone");
        one(
            AtomicKind::Base,
            FI_PROD,
            FI_LONG_DOUBLE,
            &mut t,
            &ld(2.0),
            &[],
        );
        assert_eq!(t[..10], ld(7.5)[..10]);
        one(
            AtomicKind::Base,
            FI_MIN,
            FI_LONG_DOUBLE,
            &mut t,
            &ld(-1.0),
            &[],
        );
        assert_eq!(t[..10], ld(-1.0)[..10]);
        let old = one(
            AtomicKind::Compare,
            FI_CSWAP_GT,
            FI_LONG_DOUBLE,
            &mut t,
            &ld(8.0),
            &ld(0.0),
        );
        assert_eq!(old[..10], ld(-1.0)[..10]);
        assert_eq!(t[..10], ld(8.0)[..10]);
        assert_eq!(
            x87::sub(&x87::from_f64(5.0), &x87::from_f64(7.0)),
            x87::from_f64(-2.0)
        );
        // (1 + 2i)(3 + 4i) = -5 + 10i in long double complex.
        let lc = |r: f64, i: f64| [ld(r), ld(i)].concat();
        let mut t = lc(1.0, 2.0);
        one(
            AtomicKind::Base,
            FI_PROD,
            FI_LONG_DOUBLE_COMPLEX,
            &mut t,
            &lc(3.0, 4.0),
            &[],
        );
        assert_eq!(t[..10], ld(-5.0)[..10]);
        assert_eq!(t[16..26], ld(10.0)[..10]);
    }

    #[test]
    fn arrays_fetch_read_and_refusals() {
        let mut t: Vec<u8> = [1u32, 2, 3].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let src: Vec<u8> = [10u32, 20, 30]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let mut old = vec![0u8; 12];
        // SAFETY: t holds three elements.
        unsafe {
            apply(
                req(AtomicKind::Fetch, FI_SUM, FI_UINT32, 3),
                t.as_mut_ptr(),
                &src,
                &[],
                Some(&mut old),
            )
        }
        .unwrap();
        assert_eq!(
            t,
            [11u32, 22, 33]
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect::<Vec<_>>()
        );
        assert_eq!(
            old,
            [1u32, 2, 3]
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect::<Vec<_>>()
        );
        // FI_ATOMIC_READ ignores (and may lack) the operand.
        // SAFETY: as above.
        unsafe {
            apply(
                req(AtomicKind::Fetch, FI_ATOMIC_READ, FI_UINT32, 3),
                t.as_mut_ptr(),
                &[],
                &[],
                Some(&mut old),
            )
        }
        .unwrap();
        assert_eq!(old, t);
        // SAFETY: as above; both calls are refused before touching t.
        unsafe {
            assert_eq!(
                apply(
                    req(AtomicKind::Base, FI_SUM, FI_UINT32, 3),
                    t.as_mut_ptr(),
                    &src[..8],
                    &[],
                    None
                ),
                Err(AtomicError::Short)
            );
            assert_eq!(
                apply(
                    req(AtomicKind::Base, FI_BOR, FI_FLOAT, 1),
                    t.as_mut_ptr(),
                    &src,
                    &[],
                    None
                ),
                Err(AtomicError::OpNotSupp)
            );
            assert_eq!(
                apply(
                    req(AtomicKind::Base, FI_SUM, FI_UINT32, usize::MAX),
                    t.as_mut_ptr(),
                    &src,
                    &[],
                    None
                ),
                Err(AtomicError::Short)
            );
        }
    }

    #[test]
    fn the_native_path_matches_the_general_one_bit_for_bit() {
        // Edge values of every width, as bytes: zero, one, all ones, the
        // sign bit alone, a large odd value; for floats also NaN, -0.0,
        // infinity and a fraction.
        let ints: [u64; 6] = [0, 1, u64::MAX, 1 << 63, 0x7f7f_0123_4567_89ab, 0x80];
        let f32s = [0.0f32, -0.0, 1.5, f32::NAN, f32::INFINITY, -3.25];
        let f64s = [0.0f64, -0.0, 1.5, f64::NAN, f64::NEG_INFINITY, 1e300];
        let native = [
            FI_INT8, FI_UINT8, FI_INT16, FI_UINT16, FI_INT32, FI_UINT32, FI_INT64, FI_UINT64,
            FI_FLOAT, FI_DOUBLE,
        ];
        let mut checked = 0;
        for dt in native {
            let size = datatype_size(dt).unwrap();
            let values: Vec<Vec<u8>> = match dt {
                FI_FLOAT => f32s.iter().map(|v| v.to_ne_bytes().to_vec()).collect(),
                FI_DOUBLE => f64s.iter().map(|v| v.to_ne_bytes().to_vec()).collect(),
                _ => ints
                    .iter()
                    .map(|v| v.to_ne_bytes()[..size].to_vec())
                    .collect(),
            };
            // Three elements: every (old, src, cmp) triple runs as arrays
            // of the values rotated, so each value meets each other one.
            let n = values.len();
            let arr = |k: usize| -> Vec<u8> {
                (0..n).flat_map(|i| values[(i + k) % n].clone()).collect()
            };
            for kind in [AtomicKind::Base, AtomicKind::Fetch, AtomicKind::Compare] {
                for op in 0..=FI_MSWAP + 1 {
                    if valid(kind, op, dt).is_none() {
                        continue;
                    }
                    for (k1, k2) in [(0, 1), (1, 2), (2, 3), (0, 0), (3, 5), (4, 4)] {
                        let (src, cmp) = (arr(k1), arr(k2));
                        let mut fast = arr(0);
                        let mut slow = fast.clone();
                        let (mut rf, mut rs) = (vec![0u8; n * size], vec![0u8; n * size]);
                        let r = req(kind, op, dt, n);
                        // SAFETY: both targets hold n elements.
                        unsafe {
                            apply(r, fast.as_mut_ptr(), &src, &cmp, Some(&mut rf)).unwrap();
                            apply_general(r, size, slow.as_mut_ptr(), &src, &cmp, Some(&mut rs));
                        }
                        assert_eq!(
                            fast, slow,
                            "target: dt {dt} op {op} {kind:?} rotation {k1},{k2}"
                        );
                        assert_eq!(rf, rs, "result: dt {dt} op {op} {kind:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 500, "only {checked} cases ran");
    }

    #[test]
    fn concurrent_atomics_on_one_word_lose_nothing() {
        let word = std::sync::Arc::new(std::sync::Mutex::new(Box::new(0u64)));
        let p = {
            let mut g = word.lock().unwrap();
            &mut **g as *mut u64 as usize
        };
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(move || {
                    for _ in 0..20000 {
                        // SAFETY: the word outlives the threads (joined
                        // below, `word` held by the test).
                        unsafe {
                            apply(
                                req(AtomicKind::Base, FI_SUM, FI_UINT64, 1),
                                p as *mut u8,
                                &1u64.to_ne_bytes(),
                                &[],
                                None,
                            )
                        }
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(**word.lock().unwrap(), 80000);
    }
}
