//! `fid_mr`: memory registration (`fi_mr_reg`, `fi_mr_regv`,
//! `fi_mr_regattr`) onto the domain's engine table (`service::mr`), and the
//! region's own calls (`fi_close`, `fi_mr_bind`, `fi_mr_enable`,
//! `fi_mr_refresh`, `fi_mr_raw_attr`).
//!
//! `fi_mr_desc` hands out the device's descriptor where the provider
//! registers with a device (verbs: the local key), else the address of
//! the handle itself: providers on
//! the sockets transport need no local descriptor, but applications that
//! follow `FI_MR_LOCAL` (and MPI libraries that test the descriptor for
//! NULL) get a valid, unique one.

use crate::boundary::with_handle;
use crate::domain::domain_handle;
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::ops::{IoBuf, IoVec};
use oxifabric::service::mr::{MemRegion, MrRequest, MrTable};
use std::sync::{Arc, Mutex};

/// The Rust side of a registration.
pub struct MrObj {
    pub region: Arc<MemRegion>,
    table: Arc<MrTable>,
    /// Counters bound with `fi_mr_bind` (held so they cannot close first).
    binds: Mutex<Vec<BindRef>>,
    _domain: BindRef,
    /// The domain's endpoints (see `DomainObj::endpoints`).
    endpoints: Arc<oxifabric::service::progress::Sources>,
}

pub type MrHandle = Handle<fid_mr, MrObj>;

static MR_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(mr_close),
    bind: Some(mr_bind),
    control: Some(mr_control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

/// Recovers a registration handle.
///
/// # Safety
/// Rule 1 of the pointer contract (crate docs): `f` is NULL or a fid.
pub unsafe fn mr_handle<'a>(f: *const fid) -> Option<&'a MrHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { MrHandle::from_fid(f, FI_CLASS_MR) }
}

/// Where the memory of a registration comes from in C.
enum CMem {
    One(*const c_void, usize),
    Many(*const iovec, usize),
}

/// The common part of the three registration calls.
///
/// # Safety
/// `domain` is NULL or a fid; `mem` names memory the application keeps
/// registered until it closes the region (`One`: NULL or `len` bytes;
/// `Many`: NULL or `count` iovecs); `mr` is NULL or writable.
#[allow(clippy::too_many_arguments)]
unsafe fn register(
    domain: *mut fid,
    mem: CMem,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
    what: &str,
) -> c_int {
    with_handle!(domain_handle, domain, what, |d| {
        if mr.is_null() {
            core_warn!(FI_LOG_MR, "{what}: mr (the result pointer) is NULL");
            return -FI_EINVAL;
        }
        let Some(table) = d.inner.ops.mr_table() else {
            core_warn!(FI_LOG_MR, "{what}: the provider has no memory registration");
            return -FI_ENOSYS;
        };
        let mut iov = IoVec::default();
        let mut add = |base: *const c_void, len: usize| {
            if base.is_null() && len > 0 {
                core_warn!(FI_LOG_MR, "{what}: NULL buffer with length {len}");
                return Err(-FI_EINVAL);
            }
            // SAFETY: the application keeps `len` bytes at `base`
            // registered (and valid) until it closes the region (fi_mr(3)).
            let b = unsafe { IoBuf::new(base as *mut u8, len) };
            iov.push(b).ok_or_else(|| {
                core_warn!(FI_LOG_MR, "{what}: more iovec entries than mr_iov_limit");
                -FI_EINVAL
            })
        };
        let added = match mem {
            CMem::One(p, len) => add(p, len),
            CMem::Many(p, count) if p.is_null() || count == 0 => {
                core_warn!(FI_LOG_MR, "{what}: no iovec (NULL or count 0)");
                Err(-FI_EINVAL)
            }
            CMem::Many(p, count) => (0..count).try_for_each(|i| {
                // SAFETY: `p` points to `count` iovecs (the caller's contract).
                let e = unsafe { &*p.add(i) };
                add(e.iov_base, e.iov_len)
            }),
        };
        if let Err(e) = added {
            return e;
        }
        let req = MrRequest {
            iov: &iov,
            access,
            offset,
            requested_key,
            flags,
        };
        let region = match table.register(&req) {
            Ok(r) => r,
            Err(e) => {
                core_warn!(
                    FI_LOG_MR,
                    "{what}: refused ({} iovec entries, access {access:#x}, key {requested_key:#x}, flags {flags:#x}): {}",
                    iov.len(),
                    oxifabric::strerror::strerror(e.errno()).to_string_lossy()
                );
                return e.code();
            }
        };
        let key = region.key;
        let device_desc = region.desc;
        let c = fid_mr {
            fid: fid {
                fclass: FI_CLASS_MR as usize,
                context,
                ops: &MR_FI_OPS as *const _ as *mut _,
            },
            mem_desc: core::ptr::null_mut(),
            key,
        };
        let obj = MrObj {
            region,
            table,
            binds: Mutex::new(Vec::new()),
            _domain: BindRef::new(&d.binds),
            endpoints: d.inner.endpoints.clone(),
        };
        let p = MrHandle::boxed(c, FI_CLASS_MR, obj);
        // SAFETY: `p` is the handle just made, not yet shared; the
        // descriptor is the device's (verbs: the local key) or else the
        // handle's own address.
        unsafe { (*p).mem_desc = device_desc.map_or(p as *mut c_void, |d| d as *mut c_void) };
        // SAFETY: `mr` is not NULL and writable (the caller's contract).
        unsafe { *mr = p };
        0
    })
}

/// `fi_mr_reg`.
///
/// # Safety
/// C's contract for `fi_mr_reg`: `fid` a domain, `buf` valid for `len`
/// bytes while registered, `mr` writable.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mr_reg(
    fid: *mut fid,
    buf: *const c_void,
    len: usize,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
) -> c_int {
    // SAFETY: forwarded under the same contract.
    unsafe {
        register(
            fid,
            CMem::One(buf, len),
            access,
            offset,
            requested_key,
            flags,
            mr,
            context,
            "fi_mr_reg",
        )
    }
}

/// `fi_mr_regv`.
///
/// # Safety
/// As for [`mr_reg`], with `iov` holding `count` entries.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mr_regv(
    fid: *mut fid,
    iov: *const iovec,
    count: usize,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
) -> c_int {
    // SAFETY: forwarded under the same contract.
    unsafe {
        register(
            fid,
            CMem::Many(iov, count),
            access,
            offset,
            requested_key,
            flags,
            mr,
            context,
            "fi_mr_regv",
        )
    }
}

/// `fi_mr_regattr`: only the fields of `fi_mr_attr` the domain's API
/// version has are read (`compat::mr_attr_size`).
///
/// # Safety
/// `attr` is NULL or an `fi_mr_attr` of the application's API version whose
/// `mr_iov` holds `iov_count` entries; otherwise as for [`mr_reg`].
pub unsafe extern "C" fn mr_regattr(
    fid: *mut fid,
    attr: *const fi_mr_attr,
    flags: u64,
    mr: *mut *mut fid_mr,
) -> c_int {
    let api = with_handle!(domain_handle, fid, "fi_mr_regattr", |d| d.inner.api_version
        as c_int);
    if api < 0 {
        return api;
    }
    // SAFETY: `attr` is NULL or readable for its API version's size.
    let Some(a) = (unsafe { oxifabric::compat::read_mr_attr(attr, api as u32) }) else {
        core_warn!(FI_LOG_MR, "fi_mr_regattr: attr is NULL");
        return -FI_EINVAL;
    };
    if flags & FI_MR_DMABUF != 0 || a.iface != FI_HMEM_SYSTEM {
        core_warn!(
            FI_LOG_MR,
            "fi_mr_regattr: only host memory can be registered (iface {}, flags {flags:#x})",
            a.iface
        );
        return -FI_ENOSYS;
    }
    // SAFETY: without FI_MR_DMABUF the union holds `mr_iov`.
    let iov = unsafe { a.__anon_mem.mr_iov };
    // SAFETY: forwarded under the caller's contract on `attr`.
    unsafe {
        register(
            fid,
            CMem::Many(iov, a.iov_count),
            a.access,
            a.offset,
            a.requested_key,
            flags,
            mr,
            a.context,
            "fi_mr_regattr",
        )
    }
}

unsafe extern "C" fn mr_close(f: *mut fid) -> c_int {
    with_handle!(mr_handle, f, "fi_close(mr)", |h| {
        if h.busy() {
            return -FI_EBUSY;
        }
        h.inner.table.remove(&h.inner.region);
        // SAFETY: `h` came from MrHandle::boxed and, by the pointer
        // contract, is not used after fi_close.
        unsafe { MrHandle::free(h) };
        0
    })
}

/// `fi_mr_bind`: a counter (`FI_REMOTE_WRITE`, `FI_REMOTE_READ`) that
/// counts peers' accesses to this region, or an endpoint (flags 0), which
/// only `FI_MR_ENDPOINT` domains require; keys are domain-wide here, so
/// the endpoint binding is accepted and checked, not needed.
unsafe extern "C" fn mr_bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    with_handle!(mr_handle, f, "fi_mr_bind", |h| {
        // SAFETY: rule 1, `bfid` is NULL or a fid; the lookups check class
        // and magic.
        if let Some(c) = unsafe { crate::cntr::cntr_handle(bfid) } {
            if let Err(e) = h.inner.region.bind_cntr(c.inner.cntr.clone(), flags) {
                core_warn!(
                    FI_LOG_MR,
                    "fi_mr_bind(counter): flags {flags:#x}, want FI_REMOTE_WRITE and/or FI_REMOTE_READ"
                );
                return e.code();
            }
            // Reads and waits of the counter drive the domain's endpoints
            // (those open now), which serve the accesses it counts.
            c.inner.cntr.add_sources(&h.inner.endpoints);
            h.inner
                .binds
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(BindRef::new(&c.binds));
            return 0;
        }
        // SAFETY: as above.
        if unsafe { crate::ep::ep_handle(bfid) }.is_some() {
            if flags != 0 {
                core_warn!(FI_LOG_MR, "fi_mr_bind(endpoint): unknown flags {flags:#x}");
                return -FI_EBADFLAGS;
            }
            return 0;
        }
        bad_fid("fi_mr_bind (object to bind)")
    })
}

/// `fi_control` on a region: `FI_ENABLE` (`fi_mr_enable`), `FI_REFRESH`
/// (`fi_mr_refresh`: nothing to do, memory is reached through the
/// process's own mappings); raw keys (`FI_GET_RAW_MR`) are not offered.
unsafe extern "C" fn mr_control(f: *mut fid, command: c_int, _arg: *mut c_void) -> c_int {
    with_handle!(mr_handle, f, "fi_control(mr)", |h| match command {
        FI_ENABLE => {
            h.inner.region.enable();
            0
        }
        FI_REFRESH => 0,
        _ => {
            oxifabric::core_trace!(FI_LOG_MR, "fi_control(mr): command {command} not supported");
            -FI_ENOSYS
        }
    })
}
