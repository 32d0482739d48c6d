//! Node and service resolution for `fi_getinfo` (names and numeric
//! addresses, IPv4 and IPv6), shared by the socket-based providers, and
//! the conversion between `SocketAddr` and the C `sockaddr_in`/`sockaddr_in6`
//! bytes that `fi_info` and the AV carry.
//!
//! Raw memory is read here in two places: the `addrinfo` list that
//! `getaddrinfo` returns (owned by libc until `freeaddrinfo`), and
//! [`from_sockaddr`], whose caller vouches for the bytes; the C boundary
//! passes what the application gave it under its pointer contract.

use crate::error::{Error, Result};
use std::ffi::CString;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// Resolves `node`/`service` with `getaddrinfo`. `numeric` forbids name
/// lookups (`FI_NUMERICHOST`); `passive` asks for a local (bindable) address
/// when `node` is None. Addresses come back in resolver order, duplicates
/// removed. Unknown names give `NoData`, as upstream's `fi_getinfo` does.
pub fn resolve(
    node: Option<&str>,
    service: Option<&str>,
    numeric: bool,
    passive: bool,
) -> Result<Vec<SocketAddr>> {
    let c_node = node
        .map(CString::new)
        .transpose()
        .map_err(|_| Error::Inval)?;
    let c_service = service
        .map(CString::new)
        .transpose()
        .map_err(|_| Error::Inval)?;
    // SAFETY: addrinfo is a plain C struct; all-zero is its empty value.
    let mut hints: libc::addrinfo = unsafe { core::mem::zeroed() };
    hints.ai_family = libc::AF_UNSPEC;
    hints.ai_socktype = libc::SOCK_STREAM;
    if numeric {
        hints.ai_flags |= libc::AI_NUMERICHOST;
    }
    if passive {
        hints.ai_flags |= libc::AI_PASSIVE;
    }
    let mut res: *mut libc::addrinfo = core::ptr::null_mut();
    // SAFETY: the strings live across the call, `res` is freed below.
    let rc = unsafe {
        libc::getaddrinfo(
            c_node.as_ref().map_or(core::ptr::null(), |c| c.as_ptr()),
            c_service.as_ref().map_or(core::ptr::null(), |c| c.as_ptr()),
            &hints,
            &mut res,
        )
    };
    if rc != 0 {
        crate::core_info!(
            crate::abi::FI_LOG_CORE,
            "cannot resolve node {:?} service {:?} (getaddrinfo error {})",
            node,
            service,
            rc
        );
        return Err(match rc {
            libc::EAI_MEMORY => Error::NoMem,
            libc::EAI_SERVICE | libc::EAI_NONAME | libc::EAI_AGAIN | libc::EAI_FAIL => {
                Error::NoData
            }
            _ => Error::NoData,
        });
    }
    let mut out = Vec::new();
    let mut cur = res;
    // SAFETY: cur walks the list getaddrinfo returned, which stays valid
    // until freeaddrinfo below; each node is NULL-terminated by ai_next.
    while let Some(ai) = unsafe { cur.as_ref() } {
        // SAFETY: ai_addr holds ai_addrlen bytes, as getaddrinfo promises.
        let sa = unsafe { from_sockaddr(ai.ai_addr as *const u8, ai.ai_addrlen as usize) };
        if let Some(sa) = sa {
            if !out.contains(&sa) {
                out.push(sa);
            }
        }
        cur = ai.ai_next;
    }
    // SAFETY: res came from a successful getaddrinfo and is freed once.
    unsafe { libc::freeaddrinfo(res) };
    Ok(out)
}

/// Decodes a C `sockaddr_in`/`sockaddr_in6` of `len` bytes.
///
/// # Safety
/// `p` is NULL or valid for `len` bytes.
pub unsafe fn from_sockaddr(p: *const u8, len: usize) -> Option<SocketAddr> {
    if p.is_null() || len < core::mem::size_of::<libc::sa_family_t>() {
        return None;
    }
    // SAFETY: len covers the family field (checked above), readable by
    // the caller's promise; no alignment is assumed.
    let family = unsafe { core::ptr::read_unaligned(p as *const libc::sa_family_t) } as i32;
    match family {
        libc::AF_INET if len >= core::mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: len covers a sockaddr_in (checked by the guard).
            let sin = unsafe { core::ptr::read_unaligned(p as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len >= core::mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: len covers a sockaddr_in6 (checked by the guard).
            let sin6 = unsafe { core::ptr::read_unaligned(p as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                u32::from_be(sin6.sin6_flowinfo),
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Decodes the bytes of a C `sockaddr_in`/`sockaddr_in6`: the safe form of
/// [`from_sockaddr`] for callers that hold the address as a slice.
pub fn sockaddr_from_bytes(b: &[u8]) -> Option<SocketAddr> {
    // SAFETY: b is a live slice of b.len() bytes.
    unsafe { from_sockaddr(b.as_ptr(), b.len()) }
}

/// Encodes a socket address as the C `sockaddr_in`/`sockaddr_in6` bytes
/// that `fi_info.src_addr` and AV inserts carry.
pub fn to_sockaddr(sa: &SocketAddr) -> Vec<u8> {
    match sa {
        SocketAddr::V4(v4) => {
            // SAFETY: a plain C struct; all-zero is valid.
            let mut sin: libc::sockaddr_in = unsafe { core::mem::zeroed() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            as_bytes(&sin)
        }
        SocketAddr::V6(v6) => {
            // SAFETY: a plain C struct; all-zero is valid.
            let mut sin6: libc::sockaddr_in6 = unsafe { core::mem::zeroed() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_flowinfo = v6.flowinfo().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
            sin6.sin6_scope_id = v6.scope_id();
            as_bytes(&sin6)
        }
    }
}

fn as_bytes<T>(v: &T) -> Vec<u8> {
    // SAFETY: T is a plain C struct without padding-dependent meaning.
    unsafe { core::slice::from_raw_parts(v as *const T as *const u8, core::mem::size_of::<T>()) }
        .to_vec()
}

/// True for loopback addresses (127.0.0.0/8, ::1).
pub fn is_loopback(ip: &IpAddr) -> bool {
    ip.is_loopback()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_v4_and_v6() {
        let v = resolve(Some("127.0.0.1"), Some("4242"), true, false).unwrap();
        assert_eq!(v, vec!["127.0.0.1:4242".parse().unwrap()]);
        let v = resolve(Some("::1"), Some("7"), true, false).unwrap();
        assert_eq!(v, vec!["[::1]:7".parse().unwrap()]);
    }

    #[test]
    fn names_resolve_and_numeric_refuses_names() {
        let v = resolve(Some("localhost"), Some("1000"), false, false).unwrap();
        assert!(v.iter().all(|a| a.ip().is_loopback() && a.port() == 1000));
        assert_eq!(
            resolve(Some("localhost"), None, true, false),
            Err(Error::NoData)
        );
        assert_eq!(
            resolve(Some("no-such-host.invalid"), None, false, false),
            Err(Error::NoData)
        );
    }

    #[test]
    fn sockaddr_round_trip() {
        for s in ["10.1.2.3:80", "[fe80::1%2]:9", "[::1]:0"] {
            let sa: SocketAddr = s.parse().unwrap();
            let b = to_sockaddr(&sa);
            assert_eq!(sockaddr_from_bytes(&b), Some(sa));
        }
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { from_sockaddr(core::ptr::null(), 16) }, None);
        assert_eq!(sockaddr_from_bytes(&[2u8, 0]), None);
    }
}
