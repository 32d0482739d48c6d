//! `fi_ops_atomic`: `fi_atomic*`, `fi_fetch_atomic*`,
//! `fi_compare_atomic*`, `fi_inject_atomic` and the `*valid` calls onto
//! `EndpointOps::atomic`, and `fi_query_atomic` on the domain. Element
//! counts (`fi_ioc`, `fi_rma_ioc`) become byte lengths here; which
//! operation and datatype combinations exist is the engine's
//! (`service::atomic::valid`), how many elements one operation may carry
//! is the provider's (`atomic_limit`).

use super::data::SendFlags;
use super::ep_handle;
use super::rma::RMA_FLAGS;
use super::trigger::{dispatch, Post};
use crate::boundary::{catch, with_handle};
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::ops::{AtomicReq, DomainOps, EndpointOps, IoBuf, IoVec, MemDesc, RmaIov};
use oxifabric::service::atomic::{valid, AtomicKind};
use std::sync::atomic::Ordering;

type Ep = *mut fid_ep;
type Buf = *mut c_void;
type CBuf = *const c_void;
type Desc = *mut *mut c_void;

/// Elements in C: one buffer, its count and descriptor, or an `fi_ioc`
/// array with its descriptor array (NULL when none was given).
#[derive(Clone, Copy)]
pub(super) enum CElems {
    One(*const c_void, usize, *mut c_void),
    Many(*const fi_ioc, *mut *mut c_void, usize),
    None,
}

/// Elements converted at the boundary: buffers, the element count, and
/// the descriptors (one per buffer, or none).
struct Elems {
    iov: IoVec,
    count: usize,
    desc: [MemDesc; IoVec::CAP],
    ndesc: usize,
}

impl Elems {
    fn desc(&self) -> &[MemDesc] {
        &self.desc[..self.ndesc]
    }
}

/// The remote side: one address and key, or an `fi_rma_ioc` array.
enum CRemote {
    One(u64, u64),
    Many(*const fi_rma_ioc, usize),
}

/// Converts elements of `size` bytes to buffers; returns them and the
/// element count. NULL buffers are refused unless `may_be_null` (the
/// operand of `FI_ATOMIC_READ`, which is never read: it then yields no
/// buffer, only the count).
///
/// # Safety
/// `One`: NULL or valid for `count * size` bytes until completion;
/// `Many`: NULL or an array of `count` `fi_ioc`s that are so, and a
/// descriptor array NULL or of `count` entries.
unsafe fn elems(e: CElems, size: usize, may_be_null: bool) -> Result<Elems, c_int> {
    let mut v = IoVec::default();
    let mut total = 0usize;
    let mut desc = [0; IoVec::CAP];
    let mut ndesc = 0;
    let mut add = |p: *const c_void, n: usize| {
        let bytes = n.checked_mul(size).ok_or(-FI_EINVAL)?;
        total = total.checked_add(n).ok_or(-FI_EINVAL)?;
        if p.is_null() {
            if n > 0 && !may_be_null {
                core_warn!(FI_LOG_EP_DATA, "atomic: NULL buffer for {n} elements");
                return Err(-FI_EINVAL);
            }
            return Ok(());
        }
        // SAFETY: valid for `bytes` until completion (the caller's contract).
        v.push(unsafe { IoBuf::new(p as *mut u8, bytes) })
            .ok_or(-FI_EINVAL)
    };
    match e {
        CElems::None => {}
        CElems::One(p, n, d) => {
            add(p, n)?;
            if !d.is_null() && !p.is_null() {
                desc[0] = d as MemDesc;
                ndesc = 1;
            }
        }
        CElems::Many(p, d, n) => {
            if p.is_null() && n > 0 {
                return Err(-FI_EINVAL);
            }
            for i in 0..n {
                // SAFETY: `p` holds `n` entries (the caller's contract).
                let x = unsafe { &*p.add(i) };
                add(x.addr, x.count)?;
            }
            if !d.is_null() && n <= IoVec::CAP {
                for (i, slot) in desc.iter_mut().enumerate().take(n) {
                    // SAFETY: `d` holds `n` entries (the caller's contract).
                    *slot = unsafe { *d.add(i) } as MemDesc;
                }
                ndesc = n;
            }
        }
    }
    Ok(Elems {
        iov: v,
        count: total,
        desc,
        ndesc,
    })
}

/// Posts an atomic operation as `post` says; the elements are operand,
/// compare and result.
///
/// # Safety
/// `ep` NULL or from `fi_endpoint`; the buffers as for [`elems`]; a
/// `CRemote::Many` pointer NULL or holding its count; with `FI_TRIGGER`,
/// `context` as for `trigger::deferral`.
#[allow(clippy::too_many_arguments)]
unsafe fn atomic(
    ep: Ep,
    kind: AtomicKind,
    op: fi_op,
    dt: fi_datatype,
    [operand, compare, result]: [CElems; 3],
    dest: fi_addr_t,
    remote: CRemote,
    context: Buf,
    how: SendFlags,
    data: Option<u64>,
    post: Post,
) -> isize {
    const WHAT: &str = "fi_atomic";
    // SAFETY: the caller's contract on `ep`.
    let Some(h) = (unsafe { ep_handle(ep as *const fid) }) else {
        return bad_fid(WHAT) as isize;
    };
    let size = match count_for(&*h.inner.ops, kind, op, dt) {
        Ok((_, size)) => size,
        Err(e) => {
            if e == -FI_EOPNOTSUPP {
                core_warn!(
                    FI_LOG_EP_DATA,
                    "{WHAT}: operation {op} on datatype {dt} is not offered for {kind:?}"
                );
            }
            return e as isize;
        }
    };
    let read = op == FI_ATOMIC_READ;
    // SAFETY: the caller's contract on the buffers.
    let conv = unsafe {
        (
            elems(operand, size, read),
            elems(compare, size, false),
            elems(result, size, false),
        )
    };
    let (opnd, cmp, res) = match conv {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e as isize,
    };
    let (n, ncmp, nres) = (opnd.count, cmp.count, res.count);
    let mut rma = [RmaIov::default(); IoVec::CAP];
    let nr = match remote {
        CRemote::One(addr, key) => {
            rma[0] = RmaIov {
                addr,
                len: n * size,
                key,
            };
            1
        }
        CRemote::Many(p, count) => {
            if p.is_null() || count == 0 || count > h.inner.rma_iov_limit {
                core_warn!(FI_LOG_EP_DATA, "{WHAT}: rma_iov count {count}");
                return -FI_EINVAL as isize;
            }
            let mut elems_remote = 0usize;
            for (i, slot) in rma.iter_mut().enumerate().take(count) {
                // SAFETY: `p` holds `count` entries (the caller's contract).
                let e = unsafe { &*p.add(i) };
                elems_remote = elems_remote.saturating_add(e.count);
                *slot = RmaIov {
                    addr: e.addr,
                    len: e.count.saturating_mul(size),
                    key: e.key,
                };
            }
            if elems_remote != n {
                core_warn!(
                    FI_LOG_EP_DATA,
                    "{WHAT}: {n} local elements for {elems_remote} remote ones"
                );
                return -FI_EINVAL as isize;
            }
            count
        }
    };
    let wants_cmp = kind == AtomicKind::Compare;
    let wants_res = kind != AtomicKind::Base;
    if (wants_cmp && ncmp != n) || (wants_res && nres != n) {
        core_warn!(
            FI_LOG_EP_DATA,
            "{WHAT}: {n} elements, {ncmp} compare and {nres} result elements"
        );
        return -FI_EINVAL as isize;
    }
    let defaults = h.inner.tx_flags.load(Ordering::Relaxed);
    let (flags, internal) = match how.resolve(defaults, RMA_FLAGS, WHAT) {
        Ok(x) => x,
        Err(e) => return e as isize,
    };
    let req = AtomicReq {
        kind,
        op,
        datatype: dt,
        size,
        operand: &opnd.iov,
        compare: &cmp.iov,
        result: &res.iov,
        desc: opnd.desc(),
        compare_desc: cmp.desc(),
        result_desc: res.desc(),
        dest,
        rma: &rma[..nr],
        context: context as usize,
        flags: flags & !FI_TRIGGER,
        internal,
        data: data.filter(|_| flags & FI_REMOTE_CQ_DATA != 0),
    };
    // SAFETY: the caller's contract on `context`.
    unsafe { dispatch(h, post, flags, context as usize, WHAT, &req) }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn write(
    ep: Ep,
    buf: CBuf,
    count: usize,
    desc: Buf,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype,
    op: fi_op,
    context: Buf,
) -> isize {
    catch(|| {
        // SAFETY: C's contract for fi_atomic.
        unsafe {
            atomic(
                ep,
                AtomicKind::Base,
                op,
                dt,
                [CElems::One(buf, count, desc), CElems::None, CElems::None],
                dest,
                CRemote::One(addr, key),
                context,
                SendFlags::Default,
                None,
                Post::Now,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn writev(
    ep: Ep,
    iov: *const fi_ioc,
    desc: Desc,
    count: usize,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype,
    op: fi_op,
    context: Buf,
) -> isize {
    catch(|| {
        // SAFETY: C's contract for fi_atomicv.
        unsafe {
            atomic(
                ep,
                AtomicKind::Base,
                op,
                dt,
                [CElems::Many(iov, desc, count), CElems::None, CElems::None],
                dest,
                CRemote::One(addr, key),
                context,
                SendFlags::Default,
                None,
                Post::Now,
            )
        }
    })
}

/// The three `*msg` calls, posted as `post` says (deferred work:
/// `deferred.rs`).
///
/// # Safety
/// `msg` NULL or a valid `fi_msg_atomic`; the other arrays as for
/// [`atomic`].
pub(super) unsafe fn msg_call(
    ep: Ep,
    kind: AtomicKind,
    msg: *const fi_msg_atomic,
    compare: CElems,
    result: CElems,
    flags: u64,
    post: Post,
) -> isize {
    // SAFETY: the caller's contract on `msg`.
    let Some(m) = (unsafe { msg.as_ref() }) else {
        core_warn!(FI_LOG_EP_DATA, "fi_atomicmsg: msg is NULL");
        return -FI_EINVAL as isize;
    };
    // SAFETY: forwarded under the caller's contract.
    unsafe {
        atomic(
            ep,
            kind,
            m.op,
            m.datatype,
            [
                CElems::Many(m.msg_iov, m.desc, m.iov_count),
                compare,
                result,
            ],
            m.addr,
            CRemote::Many(m.rma_iov, m.rma_iov_count),
            m.context,
            SendFlags::Given(flags),
            Some(m.data),
            post,
        )
    }
}

unsafe extern "C" fn writemsg(ep: Ep, msg: *const fi_msg_atomic, flags: u64) -> isize {
    // SAFETY: C's contract for fi_atomicmsg.
    catch(|| unsafe {
        msg_call(
            ep,
            AtomicKind::Base,
            msg,
            CElems::None,
            CElems::None,
            flags,
            Post::Now,
        )
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn inject(
    ep: Ep,
    buf: CBuf,
    count: usize,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype,
    op: fi_op,
) -> isize {
    catch(|| {
        // SAFETY: C's contract for fi_inject_atomic (the buffer is read
        // during the call).
        unsafe {
            atomic(
                ep,
                AtomicKind::Base,
                op,
                dt,
                [
                    CElems::One(buf, count, core::ptr::null_mut()),
                    CElems::None,
                    CElems::None,
                ],
                dest,
                CRemote::One(addr, key),
                core::ptr::null_mut(),
                SendFlags::Inject(FI_INJECT),
                None,
                Post::Now,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn readwrite(
    ep: Ep,
    buf: CBuf,
    count: usize,
    desc: Buf,
    result: Buf,
    result_desc: Buf,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype,
    op: fi_op,
    context: Buf,
) -> isize {
    catch(|| {
        // SAFETY: C's contract for fi_fetch_atomic.
        unsafe {
            atomic(
                ep,
                AtomicKind::Fetch,
                op,
                dt,
                [
                    CElems::One(buf, count, desc),
                    CElems::None,
                    CElems::One(result, count, result_desc),
                ],
                dest,
                CRemote::One(addr, key),
                context,
                SendFlags::Default,
                None,
                Post::Now,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn readwritev(
    ep: Ep,
    iov: *const fi_ioc,
    desc: Desc,
    count: usize,
    resultv: *mut fi_ioc,
    result_desc: Desc,
    result_count: usize,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype,
    op: fi_op,
    context: Buf,
) -> isize {
    catch(|| {
        // SAFETY: C's contract for fi_fetch_atomicv.
        unsafe {
            atomic(
                ep,
                AtomicKind::Fetch,
                op,
                dt,
                [
                    CElems::Many(iov, desc, count),
                    CElems::None,
                    CElems::Many(resultv, result_desc, result_count),
                ],
                dest,
                CRemote::One(addr, key),
                context,
                SendFlags::Default,
                None,
                Post::Now,
            )
        }
    })
}

unsafe extern "C" fn readwritemsg(
    ep: Ep,
    msg: *const fi_msg_atomic,
    resultv: *mut fi_ioc,
    result_desc: Desc,
    result_count: usize,
    flags: u64,
) -> isize {
    // SAFETY: C's contract for fi_fetch_atomicmsg.
    catch(|| unsafe {
        msg_call(
            ep,
            AtomicKind::Fetch,
            msg,
            CElems::None,
            CElems::Many(resultv, result_desc, result_count),
            flags,
            Post::Now,
        )
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn compwrite(
    ep: Ep,
    buf: CBuf,
    count: usize,
    desc: Buf,
    compare: CBuf,
    compare_desc: Buf,
    result: Buf,
    result_desc: Buf,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype,
    op: fi_op,
    context: Buf,
) -> isize {
    catch(|| {
        // SAFETY: C's contract for fi_compare_atomic.
        unsafe {
            atomic(
                ep,
                AtomicKind::Compare,
                op,
                dt,
                [
                    CElems::One(buf, count, desc),
                    CElems::One(compare, count, compare_desc),
                    CElems::One(result, count, result_desc),
                ],
                dest,
                CRemote::One(addr, key),
                context,
                SendFlags::Default,
                None,
                Post::Now,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn compwritev(
    ep: Ep,
    iov: *const fi_ioc,
    desc: Desc,
    count: usize,
    comparev: *const fi_ioc,
    compare_desc: Desc,
    compare_count: usize,
    resultv: *mut fi_ioc,
    result_desc: Desc,
    result_count: usize,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype,
    op: fi_op,
    context: Buf,
) -> isize {
    catch(|| {
        // SAFETY: C's contract for fi_compare_atomicv.
        unsafe {
            atomic(
                ep,
                AtomicKind::Compare,
                op,
                dt,
                [
                    CElems::Many(iov, desc, count),
                    CElems::Many(comparev, compare_desc, compare_count),
                    CElems::Many(resultv, result_desc, result_count),
                ],
                dest,
                CRemote::One(addr, key),
                context,
                SendFlags::Default,
                None,
                Post::Now,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn compwritemsg(
    ep: Ep,
    msg: *const fi_msg_atomic,
    comparev: *const fi_ioc,
    compare_desc: Desc,
    compare_count: usize,
    resultv: *mut fi_ioc,
    result_desc: Desc,
    result_count: usize,
    flags: u64,
) -> isize {
    // SAFETY: C's contract for fi_compare_atomicmsg.
    catch(|| unsafe {
        msg_call(
            ep,
            AtomicKind::Compare,
            msg,
            CElems::Many(comparev, compare_desc, compare_count),
            CElems::Many(resultv, result_desc, result_count),
            flags,
            Post::Now,
        )
    })
}

/// The answer of the `*valid` calls and `fi_query_atomic`: the element
/// count one operation may carry, or why not.
/// The engine offers the combination (`valid`) and the provider carries
/// it (`atomic_offers`); `-FI_ENOSYS` for a provider without atomics.
fn count_for(
    p: &(impl AtomicAnswers + ?Sized),
    kind: AtomicKind,
    op: fi_op,
    dt: fi_datatype,
) -> Result<(usize, usize), c_int> {
    let limit = p.limit();
    if limit == 0 {
        return Err(-FI_ENOSYS);
    }
    match valid(kind, op, dt) {
        Some(size) if p.offers(kind, op, dt) && limit >= size => Ok((limit / size, size)),
        _ => Err(-FI_EOPNOTSUPP),
    }
}

/// What the `*valid` calls and `fi_query_atomic` ask of an endpoint or a
/// domain.
trait AtomicAnswers {
    fn limit(&self) -> usize;
    fn offers(&self, kind: AtomicKind, op: fi_op, dt: fi_datatype) -> bool;
}

impl AtomicAnswers for dyn EndpointOps {
    fn limit(&self) -> usize {
        self.atomic_limit()
    }
    fn offers(&self, kind: AtomicKind, op: fi_op, dt: fi_datatype) -> bool {
        self.atomic_offers(kind, op, dt)
    }
}

impl AtomicAnswers for dyn DomainOps {
    fn limit(&self) -> usize {
        self.atomic_limit()
    }
    fn offers(&self, kind: AtomicKind, op: fi_op, dt: fi_datatype) -> bool {
        self.atomic_offers(kind, op, dt)
    }
}

/// The `*valid` calls.
///
/// # Safety
/// `count` NULL or writable.
unsafe fn valid_call(
    ep: Ep,
    kind: AtomicKind,
    dt: fi_datatype,
    op: fi_op,
    count: *mut usize,
) -> c_int {
    with_handle!(ep_handle, ep, "fi_atomicvalid", |h| {
        if count.is_null() {
            return -FI_EINVAL;
        }
        match count_for(&*h.inner.ops, kind, op, dt) {
            Ok((n, _)) => {
                // SAFETY: not NULL and writable (the caller's contract).
                unsafe { *count = n };
                0
            }
            Err(e) => e,
        }
    })
}

unsafe extern "C" fn writevalid(ep: Ep, dt: fi_datatype, op: fi_op, count: *mut usize) -> c_int {
    // SAFETY: C's contract for fi_atomicvalid.
    unsafe { valid_call(ep, AtomicKind::Base, dt, op, count) }
}

unsafe extern "C" fn readwritevalid(
    ep: Ep,
    dt: fi_datatype,
    op: fi_op,
    count: *mut usize,
) -> c_int {
    // SAFETY: C's contract for fi_fetch_atomicvalid.
    unsafe { valid_call(ep, AtomicKind::Fetch, dt, op, count) }
}

unsafe extern "C" fn compwritevalid(
    ep: Ep,
    dt: fi_datatype,
    op: fi_op,
    count: *mut usize,
) -> c_int {
    // SAFETY: C's contract for fi_compare_atomicvalid.
    unsafe { valid_call(ep, AtomicKind::Compare, dt, op, count) }
}

/// `fi_query_atomic`: flags 0 (base), `FI_FETCH_ATOMIC` or
/// `FI_COMPARE_ATOMIC` (not both).
///
/// # Safety
/// `domain` NULL or a fid; `attr` NULL or writable.
pub(crate) unsafe extern "C" fn query_atomic(
    domain: *mut fid_domain,
    dt: fi_datatype,
    op: fi_op,
    attr: *mut fi_atomic_attr,
    flags: u64,
) -> c_int {
    with_handle!(
        crate::domain::domain_handle,
        domain,
        "fi_query_atomic",
        |d| {
            if attr.is_null() {
                return -FI_EINVAL;
            }
            let kind = match flags {
                0 => AtomicKind::Base,
                FI_FETCH_ATOMIC => AtomicKind::Fetch,
                FI_COMPARE_ATOMIC => AtomicKind::Compare,
                f if f == FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC => {
                    core_warn!(
                        FI_LOG_DOMAIN,
                        "fi_query_atomic: FI_FETCH_ATOMIC and FI_COMPARE_ATOMIC together"
                    );
                    return -FI_EINVAL;
                }
                f => {
                    core_warn!(FI_LOG_DOMAIN, "fi_query_atomic: unknown flags {f:#x}");
                    return -FI_EBADFLAGS;
                }
            };
            match count_for(&*d.inner.ops, kind, op, dt) {
                Ok((count, size)) => {
                    // SAFETY: not NULL and writable (the caller's contract).
                    unsafe { *attr = fi_atomic_attr { count, size } };
                    0
                }
                Err(e) => e,
            }
        }
    )
}

/// The atomic table of every active endpoint; providers without atomics
/// answer `-FI_ENOSYS` (their `atomic_limit` is 0).
pub(super) static EP_ATOMIC_OPS: fi_ops_atomic = fi_ops_atomic {
    size: core::mem::size_of::<fi_ops_atomic>(),
    write: Some(write),
    writev: Some(writev),
    writemsg: Some(writemsg),
    inject: Some(inject),
    readwrite: Some(readwrite),
    readwritev: Some(readwritev),
    readwritemsg: Some(readwritemsg),
    compwrite: Some(compwrite),
    compwritev: Some(compwritev),
    compwritemsg: Some(compwritemsg),
    writevalid: Some(writevalid),
    readwritevalid: Some(readwritevalid),
    compwritevalid: Some(compwritevalid),
};

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider with one native pair (as verbs has a few).
    struct OnePair;
    impl AtomicAnswers for OnePair {
        fn limit(&self) -> usize {
            8
        }
        fn offers(&self, kind: AtomicKind, op: fi_op, dt: fi_datatype) -> bool {
            kind == AtomicKind::Fetch && op == FI_SUM && dt == FI_UINT64
        }
    }

    /// A provider that carries every combination of the engine's.
    struct Everything;
    impl AtomicAnswers for Everything {
        fn limit(&self) -> usize {
            16
        }
        fn offers(&self, _: AtomicKind, _: fi_op, _: fi_datatype) -> bool {
            true
        }
    }

    /// A provider without atomics.
    struct NoAtomics;
    impl AtomicAnswers for NoAtomics {
        fn limit(&self) -> usize {
            0
        }
        fn offers(&self, _: AtomicKind, _: fi_op, _: fi_datatype) -> bool {
            true
        }
    }

    #[test]
    fn the_provider_narrows_the_engines_combinations() {
        let f = AtomicKind::Fetch;
        assert_eq!(count_for(&OnePair, f, FI_SUM, FI_UINT64), Ok((1, 8)));
        assert_eq!(
            count_for(&OnePair, f, FI_SUM, FI_UINT32),
            Err(-FI_EOPNOTSUPP)
        );
        assert_eq!(
            count_for(&OnePair, f, FI_MIN, FI_UINT64),
            Err(-FI_EOPNOTSUPP)
        );
        assert_eq!(
            count_for(&OnePair, AtomicKind::Base, FI_SUM, FI_UINT64),
            Err(-FI_EOPNOTSUPP)
        );
        // A provider offering everything gets the engine's table: no
        // compare operation among the base ones.
        assert_eq!(
            count_for(&Everything, AtomicKind::Base, FI_CSWAP, FI_UINT64),
            Err(-FI_EOPNOTSUPP)
        );
        assert_eq!(count_for(&Everything, f, FI_SUM, FI_UINT32), Ok((4, 4)));
        assert_eq!(count_for(&NoAtomics, f, FI_SUM, FI_UINT64), Err(-FI_ENOSYS));
    }
}
