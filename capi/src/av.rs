//! `fid_av`: thunks onto the engine's address vector.

use crate::boundary::{catch, opt_str, with_handle};
use crate::domain::domain_handle;
use crate::handles::*;
use core::ffi::{c_char, c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::service::addr_format::AddrFormat;
use oxifabric::service::av::AddressVector;
use oxifabric::service::eq::{Event, EventData, EventQueue};
use std::sync::{Arc, Mutex};

/// The Rust side of an address vector.
pub struct AvObj {
    pub av: Arc<AddressVector>,
    /// Address format of the domain (decides how long each address is).
    addr_format: u32,
    /// Event queue for `FI_EVENT` inserts (`fi_av_bind`).
    eq: Mutex<Option<(Arc<EventQueue>, BindRef)>>,
    _domain: BindRef,
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
    av_set: Some(crate::nosys::av_set),
    // Authorization keys and user ids (1.20) are not offered; the inline
    // wrappers answer -FI_ENOSYS for an empty slot.
    insert_auth_key: None,
    lookup_auth_key: None,
    set_user_id: None,
};

pub unsafe extern "C" fn domain_av_open(
    domain: *mut fid_domain,
    attr: *mut fi_av_attr,
    av: *mut *mut fid_av,
    context: *mut c_void,
) -> c_int {
    with_handle!(domain_handle, domain, "fi_av_open", |d| {
        let (Some(a), false) = (attr.as_ref(), av.is_null()) else {
            core_warn!(FI_LOG_AV, "fi_av_open: attr or av is NULL");
            return -FI_EINVAL;
        };
        if !a.name.is_null() {
            core_warn!(
                FI_LOG_AV,
                "fi_av_open: named (shared) AVs are not supported"
            );
            return -FI_ENOSYS;
        }
        if a.flags & !(FI_EVENT | FI_SYMMETRIC) != 0 {
            core_warn!(FI_LOG_AV, "fi_av_open: unsupported flags {:#x}", a.flags);
            return -FI_EBADFLAGS;
        }
        let q = match AddressVector::new(a.r#type, a.rx_ctx_bits, a.count, 0) {
            Ok(mut q) => {
                q.format = AddrFormat(d.inner.info.addr_format);
                Arc::new(q)
            }
            Err(e) => {
                core_warn!(
                    FI_LOG_AV,
                    "fi_av_open: invalid type {} or rx_ctx_bits {}",
                    a.r#type,
                    a.rx_ctx_bits
                );
                return e.code();
            }
        };
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
            _domain: BindRef::new(&d.binds),
        };
        *av = AvHandle::boxed(c, FI_CLASS_AV, obj);
        0
    })
}

/// Recovers an AV handle.
pub unsafe fn av_handle<'a>(f: *const fid) -> Option<&'a AvHandle> {
    AvHandle::from_fid(f, FI_CLASS_AV)
}

unsafe extern "C" fn av_close(f: *mut fid) -> c_int {
    with_handle!(av_handle, f, "fi_close(av)", |h| {
        if h.busy() {
            core_warn!(FI_LOG_AV, "fi_close: AV is still bound to an endpoint");
            return -FI_EBUSY;
        }
        AvHandle::free(h);
        0
    })
}

unsafe extern "C" fn av_bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    with_handle!(av_handle, f, "fi_av_bind", |h| {
        let Some(eq) = crate::eq::eq_handle(bfid) else {
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
unsafe fn addr_len(format: u32, p: *const u8) -> usize {
    AddrFormat(format).len_at(p).unwrap_or(0)
}

/// Inserts addresses one by one; reports per-address failures through
/// `fi_addr` (`FI_ADDR_NOTAVAIL`) and, with `FI_SYNC_ERR`, the `context`
/// array of error codes. With `FI_EVENT` the count goes to the bound EQ.
unsafe fn insert_list(
    h: &AvHandle,
    addrs: &[&[u8]],
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    let mut ok = 0usize;
    for (i, a) in addrs.iter().enumerate() {
        let r = h.inner.av.insert(a);
        if !fi_addr.is_null() {
            *fi_addr.add(i) = *r.as_ref().unwrap_or(&FI_ADDR_NOTAVAIL);
        }
        if flags & FI_SYNC_ERR != 0 && !context.is_null() {
            *(context as *mut c_int).add(i) = match r {
                Ok(_) => 0,
                Err(e) => e.errno(),
            };
        }
        match r {
            Ok(_) => ok += 1,
            Err(_) => core_warn!(
                FI_LOG_AV,
                "fi_av_insert: address {i} is not a valid address"
            ),
        }
    }
    if flags & FI_EVENT != 0 {
        let guard = h.inner.eq.lock().unwrap_or_else(|p| p.into_inner());
        let Some((eq, _)) = guard.as_ref() else {
            core_warn!(
                FI_LOG_AV,
                "fi_av_insert: FI_EVENT without an EQ bound to the AV"
            );
            return -FI_ENOEQ;
        };
        let _ = eq.push(Event {
            event: FI_AV_COMPLETE as u32,
            data: EventData::Entry {
                fid: h.fid_ptr() as usize,
                context: context as usize,
                data: ok as u64,
            },
        });
        return 0;
    }
    ok as c_int
}

unsafe extern "C" fn av_insert(
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
        if flags & !(FI_MORE | FI_SYNC_ERR | FI_EVENT) != 0 {
            core_warn!(FI_LOG_AV, "fi_av_insert: unsupported flags {flags:#x}");
            return -FI_EBADFLAGS;
        }
        let mut list = Vec::with_capacity(count);
        let mut p = addr as *const u8;
        for _ in 0..count {
            let n = addr_len(h.inner.addr_format, p);
            if n == 0 {
                core_warn!(FI_LOG_AV, "fi_av_insert: address of unknown family");
                list.push(&[][..]);
                // Without a length the rest cannot be found.
                break;
            }
            list.push(core::slice::from_raw_parts(p, n));
            p = p.add(n);
        }
        while list.len() < count {
            list.push(&[][..]);
        }
        insert_list(h, &list, fi_addr, flags, context)
    })
}

unsafe extern "C" fn av_insertsvc(
    av: *mut fid_av,
    node: *const c_char,
    service: *const c_char,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    with_handle!(av_handle, av, "fi_av_insertsvc", |h| {
        let (Ok(Some(node)), Ok(Some(service))) = (opt_str(node), opt_str(service)) else {
            core_warn!(FI_LOG_AV, "fi_av_insertsvc: node and service are required");
            return -FI_EINVAL;
        };
        let addrs = match oxifabric::addr::resolve(Some(node), Some(service), false, false) {
            Ok(a) => a,
            Err(e) => return e.code(),
        };
        let want_v6 = h.inner.addr_format == (FI_SOCKADDR_IN6 as u32);
        let Some(sa) = addrs
            .iter()
            .find(|a| a.is_ipv6() == want_v6)
            .or(addrs.first())
        else {
            return -FI_ENODATA;
        };
        let raw = oxifabric::addr::to_sockaddr(sa);
        insert_list(h, &[&raw], fi_addr, flags, context)
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn av_insertsym(
    av: *mut fid_av,
    node: *const c_char,
    nodecnt: usize,
    service: *const c_char,
    svccnt: usize,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    with_handle!(av_handle, av, "fi_av_insertsym", |h| {
        let (Ok(Some(node)), Ok(Some(service))) = (opt_str(node), opt_str(service)) else {
            core_warn!(FI_LOG_AV, "fi_av_insertsym: node and service are required");
            return -FI_EINVAL;
        };
        let (Ok(ip), Ok(port)) = (node.parse::<std::net::IpAddr>(), service.parse::<u16>()) else {
            core_warn!(
                FI_LOG_AV,
                "fi_av_insertsym: node must be a numeric address and service a port"
            );
            return -FI_EINVAL;
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
                let Some(p) = port.checked_add(s as u16) else {
                    return -FI_EINVAL;
                };
                raws.push(oxifabric::addr::to_sockaddr(&std::net::SocketAddr::new(
                    ip, p,
                )));
            }
        }
        let list: Vec<&[u8]> = raws.iter().map(Vec::as_slice).collect();
        insert_list(h, &list, fi_addr, flags, context)
    })
}

unsafe extern "C" fn av_remove(
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
            if let Err(e) = h.inner.av.remove(*fi_addr.add(i)) {
                core_warn!(
                    FI_LOG_AV,
                    "fi_av_remove: {:#x} is not in the AV",
                    *fi_addr.add(i)
                );
                ret = e.code();
            }
        }
        ret
    })
}

unsafe extern "C" fn av_lookup(
    av: *mut fid_av,
    fi_addr: fi_addr_t,
    addr: *mut c_void,
    addrlen: *mut usize,
) -> c_int {
    with_handle!(av_handle, av, "fi_av_lookup", |h| {
        if addrlen.is_null() || (addr.is_null() && *addrlen > 0) {
            return -FI_EINVAL;
        }
        let Some(e) = h.inner.av.lookup(fi_addr) else {
            return -FI_ENOENT;
        };
        let n = e.raw.len().min(*addrlen);
        core::ptr::copy_nonoverlapping(e.raw.as_ptr(), addr as *mut u8, n);
        *addrlen = e.raw.len();
        0
    })
}

unsafe extern "C" fn av_straddr(
    av: *mut fid_av,
    addr: *const c_void,
    buf: *mut c_char,
    len: *mut usize,
) -> *const c_char {
    catch(|| {
        let Some(h) = av_handle(av as *const fid) else {
            bad_fid("fi_av_straddr");
            return core::ptr::null();
        };
        if addr.is_null() || len.is_null() {
            return core::ptr::null();
        }
        let n = addr_len(h.inner.addr_format, addr as *const u8);
        let raw = core::slice::from_raw_parts(addr as *const u8, n);
        let s = AddrFormat(h.inner.addr_format).to_text(raw);
        let room = *len;
        if !buf.is_null() && room > 0 {
            let k = s.len().min(room - 1);
            core::ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, k);
            *buf.add(k) = 0;
        }
        *len = s.len() + 1;
        buf
    })
}
