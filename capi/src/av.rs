//! `fid_av`: thunks onto the engine's address vector.

use crate::boundary::{opt_str, with_handle};
use crate::domain::domain_handle;
use crate::handles::*;
use core::ffi::{c_char, c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::service::addr_format::AddrFormat;
use oxifabric::service::av::AddressVector;
use oxifabric::service::eq::{EqError, Event, EventData, EventQueue};
use std::sync::{Arc, Mutex};

/// The Rust side of an address vector.
pub struct AvObj {
    pub av: Arc<AddressVector>,
    /// Address format of the domain (decides how long each address is).
    addr_format: u32,
    /// Event queue for `FI_EVENT` inserts (`fi_av_bind`).
    eq: Mutex<Option<(Arc<EventQueue>, BindRef)>>,
    /// Opened with `FI_EVENT`: every insert reports through the EQ.
    events: bool,
    _domain: BindRef,
}

impl AvObj {
    /// The bind on the domain it was opened on (endpoints check that
    /// what they bind comes from their own domain).
    pub(crate) fn domain_ref(&self) -> &BindRef {
        &self._domain
    }
}

pub type AvHandle = Handle<fid_av, AvObj>;

static AV_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(av_close),
    bind: Some(av_bind),
    control: Some(crate::nosys::control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static AV_OPS: fi_ops_av = fi_ops_av {
    size: core::mem::size_of::<fi_ops_av>(),
    insert: Some(av_insert),
    insertsvc: Some(av_insertsvc),
    insertsym: Some(av_insertsym),
    remove: Some(av_remove),
    lookup: Some(av_lookup),
    straddr: Some(av_straddr),
    av_set: Some(crate::coll::av_set_open),
    // Authorization keys and user ids (1.20) are not offered; the inline
    // wrappers answer -FI_ENOSYS for an empty slot.
    insert_auth_key: None,
    lookup_auth_key: None,
    set_user_id: None,
};

/// `fi_av_open`.
pub(crate) extern "C" fn domain_av_open(
    domain: *mut fid_domain,
    attr: *mut fi_av_attr,
    av: *mut *mut fid_av,
    context: *mut c_void,
) -> c_int {
    with_handle!(domain_handle, domain, "fi_av_open", |d| {
        // SAFETY: rule 2, attr is NULL or a readable fi_av_attr.
        let (Some(a), false) = (unsafe { attr.as_ref() }, av.is_null()) else {
            core_warn!(FI_LOG_AV, "fi_av_open: attr or av is NULL");
            return -FI_EINVAL;
        };
        if a.flags & !(FI_EVENT | FI_SYMMETRIC | FI_READ) != 0 {
            core_warn!(FI_LOG_AV, "fi_av_open: unsupported flags {:#x}", a.flags);
            return -FI_EBADFLAGS;
        }
        // SAFETY: rule 2, name is NULL or a C string.
        let name = match unsafe { opt_str(a.name) } {
            Ok(n) => n,
            Err(_) => {
                core_warn!(FI_LOG_AV, "fi_av_open: name is not UTF-8");
                return -FI_EINVAL;
            }
        };
        if name.is_some() && d.inner.info.domain.caps & FI_SHARED_AV == 0 {
            core_warn!(
                FI_LOG_AV,
                "fi_av_open: named (shared) AVs need FI_SHARED_AV, which this domain lacks"
            );
            return -FI_ENOSYS;
        }
        if name.is_none() && a.flags & FI_READ != 0 {
            core_warn!(FI_LOG_AV, "fi_av_open: FI_READ needs a named AV");
            return -FI_EINVAL;
        }
        let opened = match name {
            Some(n) => AddressVector::new_shared(
                a.r#type,
                a.rx_ctx_bits,
                a.count,
                n,
                a.flags & FI_READ != 0,
            ),
            None => AddressVector::new(a.r#type, a.rx_ctx_bits, a.count, 0),
        };
        let q = match opened {
            Ok(mut q) => {
                q.format = AddrFormat(d.inner.info.addr_format);
                Arc::new(q)
            }
            Err(e) => {
                core_warn!(
                    FI_LOG_AV,
                    "fi_av_open: cannot open (type {}, rx_ctx_bits {}, count {}, name {:?}): {e:?}",
                    a.r#type,
                    a.rx_ctx_bits,
                    a.count,
                    name
                );
                return e.code();
            }
        };
        let report_map = q.map_addr().filter(|_| a.map_addr.is_null());
        let c = fid_av {
            fid: fid {
                fclass: FI_CLASS_AV as usize,
                context,
                ops: &AV_FI_OPS as *const _ as *mut _,
            },
            ops: &AV_OPS as *const _ as *mut _,
        };
        let obj = AvObj {
            av: q,
            addr_format: d.inner.info.addr_format,
            eq: Mutex::new(None),
            events: a.flags & FI_EVENT != 0,
            _domain: BindRef::new(&d.binds),
        };
        if let Some(at) = report_map {
            // fi_av(3): a named AV opened with map_addr 0 reports the one
            // the provider uses: the table's map, where entry i is the
            // fi_addr_t of the i-th insertion (fi_addr_t values are table
            // indices, the same in every process whatever map_addr each
            // one passes).
            // SAFETY: rule 3, attr is the application's in/out fi_av_attr
            // (`a`, the shared borrow of it, is not used after this).
            unsafe { (*attr).map_addr = at as *mut c_void };
        }
        // SAFETY: rule 3, av is not NULL (checked above).
        unsafe { *av = AvHandle::boxed(c, FI_CLASS_AV, obj) };
        0
    })
}

/// Recovers an AV handle.
///
/// # Safety
/// Rule 1 of the pointer contract (crate docs): `f` is NULL or a fid.
pub unsafe fn av_handle<'a>(f: *const fid) -> Option<&'a AvHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { AvHandle::from_fid(f, FI_CLASS_AV) }
}

extern "C" fn av_close(f: *mut fid) -> c_int {
    with_handle!(av_handle, f, "fi_close(av)", |h| {
        if h.busy() {
            core_warn!(FI_LOG_AV, "fi_close: AV is still bound to an endpoint");
            return -FI_EBUSY;
        }
        h.inner.av.close();
        // SAFETY: h is ours (class and magic checked), nothing is bound to
        // it, and by rule 1 the application does not use it after close.
        unsafe { AvHandle::free(h) };
        0
    })
}

extern "C" fn av_bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    with_handle!(av_handle, f, "fi_av_bind", |h| {
        // SAFETY: rule 1, bfid is NULL or a fid.
        let Some(eq) = (unsafe { crate::eq::eq_handle(bfid) }) else {
            return bad_fid("fi_av_bind (an AV binds only to an EQ)");
        };
        if flags != 0 {
            return -FI_EBADFLAGS;
        }
        *h.inner.eq.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((eq.inner.eq.clone(), BindRef::new(&eq.binds)));
        0
    })
}

/// Length of the address at `p` for this AV's format; 0 if unknowable.
///
/// # Safety
/// `p` points to an address of the AV's format (rule 2), so at least its
/// family field is readable.
unsafe fn addr_len(format: u32, p: *const u8) -> usize {
    // SAFETY: the caller's promise above is len_at's.
    unsafe { AddrFormat(format).len_at(p) }.unwrap_or(0)
}

/// Inserts addresses one by one; reports per-address failures through
/// `fi_addr` (`FI_ADDR_NOTAVAIL`) and, on a synchronous insert with
/// `FI_SYNC_ERR`, the `context` array of error codes.
///
/// On an AV opened with `FI_EVENT` (or an insert given `FI_EVENT`) the
/// insert is reported through the bound EQ instead (fi_av(3)): one error
/// entry per failed address (context the insert's, data its index), then
/// one `FI_AV_COMPLETE` with the count inserted, even for zero addresses;
/// the call returns 0, or `-FI_ENOEQ` with nothing inserted when no EQ is
/// bound. The work is done before the call returns, which the man page
/// allows; only the reporting is asynchronous.
///
/// # Safety
/// `fi_addr` is NULL or writable for `addrs.len()` entries, and on a
/// synchronous insert with `FI_SYNC_ERR` `context` is NULL or writable for
/// as many ints (rule 3).
unsafe fn insert_list(
    h: &AvHandle,
    addrs: &[&[u8]],
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    if flags & FI_FIREWALL_ADDR != 0 {
        // 2.2's flag: never connect to these peers. The engine connects to
        // any peer it sends to, so honouring it is not possible here.
        core_warn!(
            FI_LOG_AV,
            "fi_av_insert: FI_FIREWALL_ADDR is not supported (the sockets engine opens connections to the peers it sends to)"
        );
        return -FI_EBADFLAGS;
    }
    if flags & !(FI_MORE | FI_SYNC_ERR | FI_EVENT) != 0 {
        core_warn!(FI_LOG_AV, "fi_av_insert: unsupported flags {flags:#x}");
        return -FI_EBADFLAGS;
    }
    if h.inner.av.read_only() {
        core_warn!(FI_LOG_AV, "fi_av_insert: the AV was opened with FI_READ");
        return -FI_EACCES;
    }
    let eq = if h.inner.events || flags & FI_EVENT != 0 {
        let guard = h.inner.eq.lock().unwrap_or_else(|p| p.into_inner());
        let Some((eq, _)) = guard.as_ref() else {
            core_warn!(
                FI_LOG_AV,
                "fi_av_insert: FI_EVENT insert without an EQ bound to the AV"
            );
            return -FI_ENOEQ;
        };
        Some(eq.clone())
    } else {
        None
    };
    let fid = h.fid_ptr() as usize;
    let mut ok = 0usize;
    for (i, a) in addrs.iter().enumerate() {
        let r = h.inner.av.insert(a);
        if !fi_addr.is_null() {
            // SAFETY: entry i < addrs.len() of the caller's array.
            unsafe { *fi_addr.add(i) = *r.as_ref().unwrap_or(&FI_ADDR_NOTAVAIL) };
        }
        if eq.is_none() && flags & FI_SYNC_ERR != 0 && !context.is_null() {
            let code = match r {
                Ok(_) => 0,
                Err(e) => e.errno(),
            };
            // SAFETY: entry i < addrs.len() of the caller's error array.
            unsafe { *(context as *mut c_int).add(i) = code };
        }
        match r {
            Ok(_) => ok += 1,
            Err(e) => {
                core_warn!(
                    FI_LOG_AV,
                    "fi_av_insert: address {i} is not a valid address"
                );
                if let Some(eq) = &eq {
                    eq.push_err(EqError {
                        fid,
                        context: context as usize,
                        data: i as u64,
                        err: e.errno(),
                        ..Default::default()
                    });
                }
            }
        }
    }
    let Some(eq) = eq else {
        return ok as c_int;
    };
    eq.push_always(Event {
        event: FI_AV_COMPLETE as u32,
        data: EventData::Entry {
            fid,
            context: context as usize,
            data: ok as u64,
        },
    });
    0
}

extern "C" fn av_insert(
    av: *mut fid_av,
    addr: *const c_void,
    count: usize,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    with_handle!(av_handle, av, "fi_av_insert", |h| {
        if addr.is_null() && count > 0 {
            core_warn!(FI_LOG_AV, "fi_av_insert: addr is NULL");
            return -FI_EINVAL;
        }
        let mut list = Vec::with_capacity(count);
        // SAFETY (this loop): rule 2, addr holds count addresses of the
        // AV's format back to back, so each p is the start of one.
        let mut p = addr as *const u8;
        for _ in 0..count {
            // SAFETY: see above.
            let n = unsafe { addr_len(h.inner.addr_format, p) };
            if n == 0 {
                core_warn!(FI_LOG_AV, "fi_av_insert: address of unknown family");
                list.push(&[][..]);
                // Without a length the rest cannot be found.
                break;
            }
            // SAFETY: see above; the address at p is n bytes long.
            list.push(unsafe { core::slice::from_raw_parts(p, n) });
            // SAFETY: see above; the next address follows.
            p = unsafe { p.add(n) };
        }
        while list.len() < count {
            list.push(&[][..]);
        }
        // SAFETY: rule 3 for fi_addr and context.
        unsafe { insert_list(h, &list, fi_addr, flags, context) }
    })
}

/// What `fi_av_insertsvc` and `fi_av_insertsym` share: the AV, the node
/// and service strings both require (`-FI_EINVAL`, logged, when either is
/// NULL or not UTF-8), and the insertion of the addresses `resolve` makes
/// of them (or the error code it returns).
///
/// # Safety
/// Rule 1 for `av`, rule 2 for `node` and `service` (NULL or C strings),
/// rule 3 for `fi_addr` and `context`, as `insert_list` needs them.
#[allow(clippy::too_many_arguments)]
unsafe fn insert_named(
    what: &str,
    av: *mut fid_av,
    node: *const c_char,
    service: *const c_char,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
    resolve: impl FnOnce(&AvHandle, &str, &str) -> Result<Vec<Vec<u8>>, c_int>,
) -> c_int {
    with_handle!(av_handle, av, what, |h| {
        // SAFETY: both are NULL or NUL-terminated, by the caller's promise.
        let (Ok(Some(node)), Ok(Some(service))) = (unsafe { (opt_str(node), opt_str(service)) })
        else {
            core_warn!(FI_LOG_AV, "{what}: node and service are required");
            return -FI_EINVAL;
        };
        let raws = match resolve(h, node, service) {
            Ok(r) => r,
            Err(e) => return e,
        };
        let list: Vec<&[u8]> = raws.iter().map(Vec::as_slice).collect();
        // SAFETY: the caller's promise for fi_addr and context.
        unsafe { insert_list(h, &list, fi_addr, flags, context) }
    })
}

extern "C" fn av_insertsvc(
    av: *mut fid_av,
    node: *const c_char,
    service: *const c_char,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    let resolve = |h: &AvHandle, node: &str, service: &str| {
        let addrs = oxifabric::addr::resolve(Some(node), Some(service), false, false)
            .map_err(|e| e.code())?;
        let want_v6 = h.inner.addr_format == (FI_SOCKADDR_IN6 as u32);
        let sa = addrs
            .iter()
            .find(|a| a.is_ipv6() == want_v6)
            .or(addrs.first())
            .ok_or(-FI_ENODATA)?;
        Ok(vec![oxifabric::addr::to_sockaddr(sa)])
    };
    // SAFETY: the pointer contract, rules 1 to 3.
    unsafe {
        insert_named(
            "fi_av_insertsvc",
            av,
            node,
            service,
            fi_addr,
            flags,
            context,
            resolve,
        )
    }
}

#[allow(clippy::too_many_arguments)]
extern "C" fn av_insertsym(
    av: *mut fid_av,
    node: *const c_char,
    nodecnt: usize,
    service: *const c_char,
    svccnt: usize,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    let resolve = |_: &AvHandle, node: &str, service: &str| {
        let (Ok(ip), Ok(port)) = (node.parse::<std::net::IpAddr>(), service.parse::<u16>()) else {
            core_warn!(
                FI_LOG_AV,
                "fi_av_insertsym: node must be a numeric address and service a port"
            );
            return Err(-FI_EINVAL);
        };
        let mut raws = Vec::new();
        for n in 0..nodecnt {
            let ip = match ip {
                std::net::IpAddr::V4(v4) => {
                    std::net::IpAddr::V4((u32::from(v4).wrapping_add(n as u32)).into())
                }
                std::net::IpAddr::V6(v6) => {
                    std::net::IpAddr::V6((u128::from(v6).wrapping_add(n as u128)).into())
                }
            };
            for s in 0..svccnt {
                let p = port.checked_add(s as u16).ok_or(-FI_EINVAL)?;
                raws.push(oxifabric::addr::to_sockaddr(&std::net::SocketAddr::new(
                    ip, p,
                )));
            }
        }
        Ok(raws)
    };
    // SAFETY: the pointer contract, rules 1 to 3.
    unsafe {
        insert_named(
            "fi_av_insertsym",
            av,
            node,
            service,
            fi_addr,
            flags,
            context,
            resolve,
        )
    }
}

extern "C" fn av_remove(
    av: *mut fid_av,
    fi_addr: *mut fi_addr_t,
    count: usize,
    flags: u64,
) -> c_int {
    with_handle!(av_handle, av, "fi_av_remove", |h| {
        if fi_addr.is_null() && count > 0 {
            return -FI_EINVAL;
        }
        if flags != 0 {
            return -FI_EBADFLAGS;
        }
        let mut ret = 0;
        for i in 0..count {
            // SAFETY: rule 2, fi_addr holds count entries, i < count.
            let a = unsafe { *fi_addr.add(i) };
            if let Err(e) = h.inner.av.remove(a) {
                core_warn!(FI_LOG_AV, "fi_av_remove: {a:#x} is not in the AV");
                ret = e.code();
            }
        }
        ret
    })
}

extern "C" fn av_lookup(
    av: *mut fid_av,
    fi_addr: fi_addr_t,
    addr: *mut c_void,
    addrlen: *mut usize,
) -> c_int {
    with_handle!(av_handle, av, "fi_av_lookup", |h| {
        if addrlen.is_null() {
            return -FI_EINVAL;
        }
        // SAFETY: rules 2 and 3, addrlen is a readable and writable size_t.
        let room = unsafe { *addrlen };
        if addr.is_null() && room > 0 {
            return -FI_EINVAL;
        }
        let Some(e) = h.inner.av.lookup(fi_addr) else {
            // Upstream's utility AV answers -FI_EINVAL for an index that
            // holds no address (never inserted, removed or out of range),
            // and its fabtests' av_lookup_bad asks for exactly that.
            core_warn!(FI_LOG_AV, "fi_av_lookup: {fi_addr:#x} is not in the AV");
            return -FI_EINVAL;
        };
        let n = e.raw.len().min(room);
        if n > 0 {
            // SAFETY: rule 3, addr is writable for room >= n bytes.
            unsafe { core::ptr::copy_nonoverlapping(e.raw.as_ptr(), addr as *mut u8, n) };
        }
        // SAFETY: as above.
        unsafe { *addrlen = e.raw.len() };
        0
    })
}

extern "C" fn av_straddr(
    av: *mut fid_av,
    addr: *const c_void,
    buf: *mut c_char,
    len: *mut usize,
) -> *const c_char {
    with_handle!(av_handle, av, "fi_av_straddr", |h| {
        if addr.is_null() || len.is_null() {
            return core::ptr::null();
        }
        // SAFETY: rule 2, addr is an address of the AV's format, which is
        // n bytes long.
        let raw = unsafe {
            let n = addr_len(h.inner.addr_format, addr as *const u8);
            core::slice::from_raw_parts(addr as *const u8, n)
        };
        let s = AddrFormat(h.inner.addr_format).to_text(raw);
        // SAFETY: rules 2 and 3, len is a readable and writable size_t.
        let room = unsafe { *len };
        if !buf.is_null() && room > 0 {
            let k = s.len().min(room - 1);
            // SAFETY: rule 3, buf is writable for room > k bytes.
            unsafe {
                core::ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, k);
                *buf.add(k) = 0;
            }
        }
        // SAFETY: as above.
        unsafe { *len = s.len() + 1 };
        buf
    })
}
