//! Collectives at the C boundary: AV sets (`fid_av_set`, fi_av_set(3)),
//! the group object `fi_join_collective` returns (`fid_mc`), endpoints'
//! `fi_ops_collective`, and `fi_query_collective`. The work is the
//! engine's (`oxifabric::service::coll`); endpoints whose `fi_info` lacks
//! `FI_COLLECTIVE` answer `-FI_ENOSYS`.

use crate::av::av_handle;
use crate::boundary::with_handle;
use crate::domain::domain_handle;
use crate::ep::ep_handle;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::ops::IoBuf;
use oxifabric::service::coll::{self, set::AvSet, Bufs, Kind};
use std::sync::{Mutex, MutexGuard};

/// The Rust side of an AV set.
pub struct AvSetObj {
    set: Mutex<AvSet>,
    _av: BindRef,
}

impl AvSetObj {
    fn lock(&self) -> MutexGuard<'_, AvSet> {
        self.set.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub type AvSetHandle = Handle<fid_av_set, AvSetObj>;

/// The Rust side of a joined group: its collective address.
pub struct McObj {
    addr: fi_addr_t,
    _ep: BindRef,
}

pub type McHandle = Handle<fid_mc, McObj>;

static AV_SET_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(av_set_close),
    bind: Some(crate::nosys::bind),
    control: Some(crate::nosys::control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static AV_SET_OPS: fi_ops_av_set = fi_ops_av_set {
    size: core::mem::size_of::<fi_ops_av_set>(),
    set_union: Some(av_set_union),
    intersect: Some(av_set_intersect),
    diff: Some(av_set_diff),
    insert: Some(av_set_insert),
    remove: Some(av_set_remove),
    addr: Some(av_set_addr),
};

static MC_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(mc_close),
    bind: Some(crate::nosys::bind),
    control: Some(crate::nosys::control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

/// Recovers an AV set handle.
///
/// # Safety
/// `f` is NULL or points to a live `struct fid`.
unsafe fn av_set_handle<'a>(f: *const fid) -> Option<&'a AvSetHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { AvSetHandle::from_fid(f, FI_CLASS_AV_SET) }
}

/// Recovers a group handle.
///
/// # Safety
/// `f` is NULL or points to a live `struct fid`.
unsafe fn mc_handle<'a>(f: *const fid) -> Option<&'a McHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { McHandle::from_fid(f, FI_CLASS_MC) }
}

/// `fi_av_set`.
pub(crate) extern "C" fn av_set_open(
    av: *mut fid_av,
    attr: *mut fi_av_set_attr,
    set: *mut *mut fid_av_set,
    context: *mut c_void,
) -> c_int {
    with_handle!(av_handle, av, "fi_av_set", |h| {
        // SAFETY: rule 2, attr is NULL or a readable fi_av_set_attr.
        let (Some(a), false) = (unsafe { attr.as_ref() }, set.is_null()) else {
            core_warn!(FI_LOG_AV, "fi_av_set: attr or set is NULL");
            return -FI_EINVAL;
        };
        let s = match AvSet::new(h.inner.av.clone(), a) {
            Ok(s) => s,
            Err(e) => return e.code(),
        };
        let c = fid_av_set {
            fid: fid {
                fclass: FI_CLASS_AV_SET as usize,
                context,
                ops: &AV_SET_FI_OPS as *const _ as *mut _,
            },
            ops: &AV_SET_OPS as *const _ as *mut _,
        };
        let obj = AvSetObj {
            set: Mutex::new(s),
            _av: BindRef::new(&h.binds),
        };
        // SAFETY: `set` is not NULL and writable (pointer contract).
        unsafe { *set = AvSetHandle::boxed(c, FI_CLASS_AV_SET, obj) };
        0
    })
}

extern "C" fn av_set_close(f: *mut fid) -> c_int {
    with_handle!(av_set_handle, f, "fi_close(av_set)", |h| {
        // SAFETY: `h` came from AvSetHandle::boxed; closed once.
        unsafe { AvSetHandle::free(h) };
        0
    })
}

/// Applies `f` to `dst` with `src`'s members (both sets of one AV).
fn with_two(
    dst: *mut fid_av_set,
    src: *const fid_av_set,
    what: &str,
    f: fn(&mut AvSet, &[fi_addr_t]),
) -> c_int {
    with_handle!(av_set_handle, dst, what, |d| {
        // SAFETY: the crate's pointer contract; the lookup checks it.
        let Some(s) = (unsafe { av_set_handle(src as *const fid) }) else {
            return bad_fid(what);
        };
        let from = s.inner.lock().members.clone();
        let mut to = d.inner.lock();
        if !std::sync::Arc::ptr_eq(&to.av, &s.inner.lock().av) {
            core_warn!(FI_LOG_AV, "{what}: the sets belong to different AVs");
            return -FI_EINVAL;
        }
        f(&mut to, &from);
        0
    })
}

extern "C" fn av_set_union(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int {
    with_two(dst, src, "fi_av_set_union", AvSet::union)
}

extern "C" fn av_set_intersect(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int {
    with_two(dst, src, "fi_av_set_intersect", AvSet::intersect)
}

extern "C" fn av_set_diff(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int {
    with_two(dst, src, "fi_av_set_diff", AvSet::diff)
}

extern "C" fn av_set_insert(set: *mut fid_av_set, addr: fi_addr_t) -> c_int {
    with_handle!(av_set_handle, set, "fi_av_set_insert", |h| {
        rc(h.inner.lock().insert(addr))
    })
}

extern "C" fn av_set_remove(set: *mut fid_av_set, addr: fi_addr_t) -> c_int {
    with_handle!(av_set_handle, set, "fi_av_set_remove", |h| {
        rc(h.inner.lock().remove(addr))
    })
}

/// `fi_av_set_addr`: the set's own address (what `fi_join_collective`
/// takes with it; the members are read from the set at the join).
extern "C" fn av_set_addr(set: *mut fid_av_set, coll_addr: *mut fi_addr_t) -> c_int {
    with_handle!(av_set_handle, set, "fi_av_set_addr", |h| {
        if coll_addr.is_null() {
            return -FI_EINVAL;
        }
        // SAFETY: not NULL, writable (pointer contract).
        unsafe { *coll_addr = h as *const AvSetHandle as fi_addr_t };
        0
    })
}

extern "C" fn mc_close(f: *mut fid) -> c_int {
    with_handle!(mc_handle, f, "fi_close(mc)", |h| {
        coll::leave(h.inner.addr);
        // SAFETY: `h` came from McHandle::boxed; closed once.
        unsafe { McHandle::free(h) };
        0
    })
}

/// `fi_join` of an active endpoint: with `FI_COLLECTIVE`, a collective
/// group over an AV set (`addr` is a `struct fi_collective_addr`);
/// multicast is not offered.
pub(crate) unsafe extern "C" fn ep_join(
    ep: *mut fid_ep,
    addr: *const c_void,
    flags: u64,
    mc: *mut *mut fid_mc,
    context: *mut c_void,
) -> c_int {
    with_handle!(ep_handle, ep, "fi_join", |h| {
        if flags & FI_COLLECTIVE == 0 {
            core_warn!(FI_LOG_EP_CTRL, "fi_join: multicast groups are not offered");
            return -FI_ENOSYS;
        }
        if !h.inner.coll_cap {
            core_warn!(
                FI_LOG_EP_CTRL,
                "fi_join_collective: the endpoint's fi_info has no FI_COLLECTIVE"
            );
            return -FI_ENOSYS;
        }
        // SAFETY: rule 2, `addr` is NULL or a readable fi_collective_addr
        // (fi_collective(3)).
        let (Some(group), false) = (
            unsafe { (addr as *const fi_collective_addr).as_ref() },
            mc.is_null(),
        ) else {
            core_warn!(FI_LOG_EP_CTRL, "fi_join_collective: addr or mc is NULL");
            return -FI_EINVAL;
        };
        // SAFETY: the crate's pointer contract; the lookup checks it.
        let Some(set) = (unsafe { av_set_handle(group.set as *const fid) }) else {
            return bad_fid("fi_join_collective (AV set)");
        };
        let Some(eq) = h.inner.eq() else {
            core_warn!(
                FI_LOG_EP_CTRL,
                "fi_join_collective: no EQ is bound to the endpoint"
            );
            return -FI_ENOEQ;
        };
        let (av, members) = {
            let s = set.inner.lock();
            (s.av.clone(), s.members.clone())
        };
        let gaddr = coll::next_addr();
        let c = fid_mc {
            fid: fid {
                fclass: FI_CLASS_MC as usize,
                context,
                ops: &MC_FI_OPS as *const _ as *mut _,
            },
            fi_addr: gaddr,
        };
        let obj = McObj {
            addr: gaddr,
            _ep: BindRef::new(&h.binds),
        };
        let p = McHandle::boxed(c, FI_CLASS_MC, obj);
        match coll::join(
            &h.inner.ops,
            &av,
            &members,
            eq,
            p as usize,
            context as usize,
            gaddr,
        ) {
            Ok(()) => {
                // SAFETY: `mc` is not NULL and writable (pointer contract).
                unsafe { *mc = p };
                0
            }
            Err(e) => {
                // SAFETY: made just above, never handed out.
                unsafe { McHandle::free(p as *const McHandle) };
                e.code()
            }
        }
    })
}

/// `fi_query_collective`.
pub(crate) extern "C" fn query_collective(
    domain: *mut fid_domain,
    coll: fi_collective_op,
    attr: *mut fi_collective_attr,
    _flags: u64,
) -> c_int {
    with_handle!(domain_handle, domain, "fi_query_collective", |d| {
        if d.inner.info.caps & FI_COLLECTIVE == 0 {
            return -FI_ENOSYS;
        }
        // SAFETY: rule 2, attr is NULL or a writable fi_collective_attr.
        let Some(a) = (unsafe { attr.as_mut() }) else {
            core_warn!(FI_LOG_DOMAIN, "fi_query_collective: attr is NULL");
            return -FI_EINVAL;
        };
        match coll::query(coll, a.op, a.datatype) {
            Ok((count, size)) => {
                a.datatype_attr.count = count;
                a.datatype_attr.size = size;
                a.max_members = coll::MAX_MEMBERS;
                a.mode = 0;
                0
            }
            Err(e) => e.code(),
        }
    })
}

/// How many blocks of `count` elements a buffer holds.
#[derive(Clone, Copy)]
enum Blocks {
    One,
    /// One per member (gathered results, the root's scatter input,
    /// all-to-all and reduce-scatter inputs).
    PerMember,
}

/// A collective call's buffers as the application passed them (a pointer
/// may be NULL where the collective does not read it).
struct Call {
    buf: (*const c_void, Blocks),
    result: (*mut c_void, Blocks),
    count: usize,
    datatype: fi_datatype,
}

impl Call {
    /// Data moved in place (broadcast) or none (barrier: `count` 0).
    fn one(buf: *mut c_void, count: usize, datatype: fi_datatype) -> Call {
        Call {
            buf: (buf, Blocks::One),
            result: (buf, Blocks::One),
            count,
            datatype,
        }
    }

    /// The engine's view, for a group of `n` members.
    fn bufs(&self, n: usize) -> Bufs {
        let area = |p: *const c_void, b: Blocks| {
            let blocks = match b {
                Blocks::One => 1,
                Blocks::PerMember => n,
            };
            let size = oxifabric::service::atomic::datatype_size(self.datatype).unwrap_or(0);
            let len = if p.is_null() {
                0
            } else {
                self.count.saturating_mul(size).saturating_mul(blocks)
            };
            // SAFETY: fi_collective(3): the caller's buffer holds what the
            // collective reads or writes there (count elements, times the
            // members for the gathered and scattered ones); `plan` checks
            // the lengths it needs against this one before touching it.
            unsafe { IoBuf::new(p as *mut u8, len) }
        };
        Bufs {
            buf: area(self.buf.0, self.buf.1),
            result: area(self.result.0, self.result.1),
            count: self.count,
            datatype: self.datatype,
        }
    }
}

/// Runs collective `kind` with the buffers of `call` on endpoint `ep`
/// over group `coll_addr`.
fn run(
    ep: *mut fid_ep,
    what: &str,
    coll_addr: fi_addr_t,
    context: *mut c_void,
    call: Call,
    kind: impl FnOnce(&coll::Group) -> oxifabric::error::Result<Kind>,
) -> isize {
    with_handle!(ep_handle, ep, what, |h| {
        if !h.inner.coll_cap {
            return -(FI_ENOSYS as isize);
        }
        let Some(g) = coll::group(coll_addr) else {
            core_warn!(
                FI_LOG_EP_DATA,
                "{what}: {coll_addr:#x} is not a joined collective group"
            );
            return -(FI_EINVAL as isize);
        };
        let bufs = call.bufs(g.members.len());
        let r = kind(&g).and_then(|k| coll::post(&h.inner.ops, &g, k, &bufs, context as usize));
        match r {
            Ok(()) => 0,
            Err(e) => e.code() as isize,
        }
    })
}

/// A root's rank in `g`, for rooted collectives.
fn rooted(
    root_addr: fi_addr_t,
    make: impl FnOnce(usize) -> Kind,
) -> impl FnOnce(&coll::Group) -> oxifabric::error::Result<Kind> {
    move |g| coll::root_rank(g, root_addr).map(make)
}

unsafe extern "C" fn co_barrier(
    ep: *mut fid_ep,
    coll_addr: fi_addr_t,
    context: *mut c_void,
) -> isize {
    let call = Call::one(core::ptr::null_mut(), 0, FI_VOID);
    run(ep, "fi_barrier", coll_addr, context, call, |_| {
        Ok(Kind::Barrier)
    })
}

unsafe extern "C" fn co_barrier2(
    ep: *mut fid_ep,
    coll_addr: fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> isize {
    if flags != 0 {
        return -(FI_EBADFLAGS as isize);
    }
    // SAFETY: forwarded under the same contract.
    unsafe { co_barrier(ep, coll_addr, context) }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn co_broadcast(
    ep: *mut fid_ep,
    buf: *mut c_void,
    count: usize,
    _desc: *mut c_void,
    coll_addr: fi_addr_t,
    root_addr: fi_addr_t,
    datatype: fi_datatype,
    _flags: u64,
    context: *mut c_void,
) -> isize {
    let call = Call::one(buf, count, datatype);
    let kind = rooted(root_addr, |root| Kind::Broadcast { root });
    run(ep, "fi_broadcast", coll_addr, context, call, kind)
}

/// The signature shared by the collectives with an input and a result
/// buffer and no root (`fi_allgather`, `fi_alltoall`), and their bodies:
/// `$in` and `$out` say how many blocks each buffer holds.
macro_rules! unrooted {
    ($name:ident, $what:literal, $in:expr, $out:expr, $kind:expr) => {
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $name(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            _desc: *mut c_void,
            result: *mut c_void,
            _result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            datatype: fi_datatype,
            _flags: u64,
            context: *mut c_void,
        ) -> isize {
            let call = Call {
                buf: (buf, $in),
                result: (result, $out),
                count,
                datatype,
            };
            run(ep, $what, coll_addr, context, call, |_| Ok($kind))
        }
    };
}

unrooted!(
    co_allgather,
    "fi_allgather",
    Blocks::One,
    Blocks::PerMember,
    Kind::Allgather
);
unrooted!(
    co_alltoall,
    "fi_alltoall",
    Blocks::PerMember,
    Blocks::PerMember,
    Kind::Alltoall
);

/// As [`unrooted!`] for the reductions without a root (`fi_allreduce`,
/// `fi_reduce_scatter`), which take an operation.
macro_rules! reduction {
    ($name:ident, $what:literal, $in:expr, $kind:expr) => {
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $name(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            _desc: *mut c_void,
            result: *mut c_void,
            _result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            datatype: fi_datatype,
            op: fi_op,
            _flags: u64,
            context: *mut c_void,
        ) -> isize {
            let call = Call {
                buf: (buf, $in),
                result: (result, Blocks::One),
                count,
                datatype,
            };
            run(ep, $what, coll_addr, context, call, |_| Ok($kind(op)))
        }
    };
}

reduction!(co_allreduce, "fi_allreduce", Blocks::One, |op| {
    Kind::Allreduce { op }
});
reduction!(
    co_reduce_scatter,
    "fi_reduce_scatter",
    Blocks::PerMember,
    |op| { Kind::ReduceScatter { op } }
);

/// As [`unrooted!`] for the collectives with a root: with an operation
/// (`fi_reduce`: `$kind` makes the collective from the root's rank and
/// the operation) or without (`fi_scatter`, `fi_gather`: from the rank).
macro_rules! with_root {
    ($name:ident, $what:literal, $in:expr, $out:expr, op $kind:expr) => {
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $name(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            _desc: *mut c_void,
            result: *mut c_void,
            _result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            root_addr: fi_addr_t,
            datatype: fi_datatype,
            op: fi_op,
            _flags: u64,
            context: *mut c_void,
        ) -> isize {
            let call = Call {
                buf: (buf, $in),
                result: (result, $out),
                count,
                datatype,
            };
            let kind = rooted(root_addr, |root| $kind(root, op));
            run(ep, $what, coll_addr, context, call, kind)
        }
    };
    ($name:ident, $what:literal, $in:expr, $out:expr, $kind:expr) => {
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $name(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: usize,
            _desc: *mut c_void,
            result: *mut c_void,
            _result_desc: *mut c_void,
            coll_addr: fi_addr_t,
            root_addr: fi_addr_t,
            datatype: fi_datatype,
            _flags: u64,
            context: *mut c_void,
        ) -> isize {
            let call = Call {
                buf: (buf, $in),
                result: (result, $out),
                count,
                datatype,
            };
            run(
                ep,
                $what,
                coll_addr,
                context,
                call,
                rooted(root_addr, $kind),
            )
        }
    };
}

with_root!(
    co_reduce,
    "fi_reduce",
    Blocks::One,
    Blocks::One,
    op | root,
    op | { Kind::Reduce { root, op } }
);
with_root!(
    co_scatter,
    "fi_scatter",
    Blocks::PerMember,
    Blocks::One,
    |root| { Kind::Scatter { root } }
);
with_root!(
    co_gather,
    "fi_gather",
    Blocks::One,
    Blocks::PerMember,
    |root| { Kind::Gather { root } }
);

/// Endpoints' collective operations; the message form is not offered.
pub static COLLECTIVE_OPS: fi_ops_collective = fi_ops_collective {
    size: core::mem::size_of::<fi_ops_collective>(),
    barrier: Some(co_barrier),
    broadcast: Some(co_broadcast),
    alltoall: Some(co_alltoall),
    allreduce: Some(co_allreduce),
    allgather: Some(co_allgather),
    reduce_scatter: Some(co_reduce_scatter),
    reduce: Some(co_reduce),
    scatter: Some(co_scatter),
    gather: Some(co_gather),
    msg: crate::nosys_ep::COLLECTIVE_OPS.msg,
    barrier2: Some(co_barrier2),
};
