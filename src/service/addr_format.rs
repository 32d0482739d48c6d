//! Address formats, keyed by `fi_info->addr_format`: how long an address
//! of a format is when C passes only a pointer (`fi_connect`,
//! `fi_av_insert`), whether bytes are a valid address of it, the IP socket
//! address inside it if any, and its `fi_av_straddr` text. The C boundary
//! and the AV ask this module instead of assuming `sockaddr`, so a provider
//! with another format (shm names as `FI_ADDR_STR`, InfiniBand as
//! `FI_SOCKADDR_IB`) needs only a case here.

use crate::abi::*;
use std::net::SocketAddr;

/// Longest `FI_ADDR_STR` address, terminating NUL included.
pub const MAX_STR_ADDR: usize = 256;
/// `AF_IB` (rdma_cm's InfiniBand family) and the size of its
/// `struct sockaddr_ib`.
const AF_IB: u16 = 27;
const SOCKADDR_IB_LEN: usize = 48;
const SOCKADDR_IN_LEN: usize = 16;
const SOCKADDR_IN6_LEN: usize = 28;

/// An address format (`FI_SOCKADDR_IN`, `FI_ADDR_STR`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddrFormat(pub u32);

fn family_len(family: u16) -> Option<usize> {
    match i32::from(family) {
        libc::AF_INET => Some(SOCKADDR_IN_LEN),
        libc::AF_INET6 => Some(SOCKADDR_IN6_LEN),
        _ if family == AF_IB => Some(SOCKADDR_IB_LEN),
        _ => None,
    }
}

impl AddrFormat {
    const IN: u32 = FI_SOCKADDR_IN as u32;
    const IN6: u32 = FI_SOCKADDR_IN6 as u32;
    const IB: u32 = FI_SOCKADDR_IB as u32;
    const SOCKADDR: u32 = FI_SOCKADDR as u32;
    /// `FI_SOCKADDR_IP` (2.3): IPv4 or IPv6, as `FI_SOCKADDR` minus AF_IB.
    const IP: u32 = FI_SOCKADDR_IP as u32;
    const STR: u32 = FI_ADDR_STR as u32;
    const UNSPEC: u32 = FI_FORMAT_UNSPEC as u32;

    /// Whether addresses of this format are IP socket addresses.
    pub fn is_ip(self) -> bool {
        matches!(self.0, Self::IN | Self::IN6 | Self::SOCKADDR | Self::IP)
    }

    /// The length of the address at `p`, read from the format (fixed size)
    /// or from the address itself (a family field, a NUL); None when it
    /// cannot be told.
    ///
    /// # Safety
    /// `p` points to a complete address of this format (or, for formats
    /// sized by their family, at least two readable bytes).
    pub unsafe fn len_at(self, p: *const u8) -> Option<usize> {
        if p.is_null() {
            return None;
        }
        match self.0 {
            Self::IB => Some(SOCKADDR_IB_LEN),
            Self::STR => {
                let mut n = 0;
                // SAFETY: the caller promises a NUL-terminated string; we
                // stop at MAX_STR_ADDR in any case.
                while n < MAX_STR_ADDR && unsafe { *p.add(n) } != 0 {
                    n += 1;
                }
                (n < MAX_STR_ADDR).then_some(n + 1)
            }
            Self::IN | Self::IN6 | Self::SOCKADDR | Self::IP | Self::UNSPEC => {
                // A socket address says its own family (an application may
                // pass an IPv6 peer to an endpoint opened as IPv4).
                // SAFETY: the caller promises the family field is readable.
                let family = unsafe { core::ptr::read_unaligned(p as *const u16) };
                family_len(family).or(match self.0 {
                    Self::IN => Some(SOCKADDR_IN_LEN),
                    Self::IN6 => Some(SOCKADDR_IN6_LEN),
                    _ => None,
                })
            }
            _ => None,
        }
    }

    /// Whether `raw` is a valid address of this format.
    pub fn valid(self, raw: &[u8]) -> bool {
        match self.0 {
            Self::IN | Self::IN6 | Self::SOCKADDR | Self::IP => self.socket_addr(raw).is_some(),
            Self::IB => raw.len() >= SOCKADDR_IB_LEN && family_of(raw) == Some(AF_IB),
            Self::STR => raw.contains(&0) || !raw.is_empty(),
            _ => !raw.is_empty(),
        }
    }

    /// The IP socket address in `raw`, for formats that carry one.
    pub fn socket_addr(self, raw: &[u8]) -> Option<SocketAddr> {
        if !(self.is_ip() || self.0 == Self::UNSPEC) {
            return None;
        }
        decode(raw)
    }

    /// `fi_av_straddr` text, upstream's style (`fi_sockaddr_in://1.2.3.4:5`,
    /// `fi_sockaddr_in6://[::1]:5`; the string itself for `FI_ADDR_STR`;
    /// hex for anything else).
    pub fn to_text(self, raw: &[u8]) -> String {
        if self.0 == Self::STR {
            let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            return String::from_utf8_lossy(&raw[..end]).into_owned();
        }
        let hex = || raw.iter().map(|b| format!("{b:02x}")).collect::<String>();
        match decode(raw) {
            Some(SocketAddr::V4(a)) => format!("fi_sockaddr_in://{}:{}", a.ip(), a.port()),
            Some(SocketAddr::V6(a)) => format!("fi_sockaddr_in6://[{}]:{}", a.ip(), a.port()),
            None if self.0 == Self::IB => format!("fi_sockaddr_ib://{}", hex()),
            None => format!("fi_addr_unspec://{}", hex()),
        }
    }
}

fn family_of(raw: &[u8]) -> Option<u16> {
    Some(u16::from_ne_bytes([*raw.first()?, *raw.get(1)?]))
}

/// The IP socket address in `raw` (`sockaddr_in` or `sockaddr_in6`), the
/// safe form of `addr::from_sockaddr` for bytes already in a slice.
pub fn decode(raw: &[u8]) -> Option<SocketAddr> {
    // SAFETY: `raw` is a live slice of `raw.len()` bytes.
    unsafe { crate::addr::from_sockaddr(raw.as_ptr(), raw.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_come_from_the_format_or_the_address() {
        let v4 = crate::addr::to_sockaddr(&"127.0.0.1:9".parse().unwrap());
        let v6 = crate::addr::to_sockaddr(&"[::1]:9".parse().unwrap());
        let sock = AddrFormat(FI_SOCKADDR as u32);
        // SAFETY: the pointers name live buffers holding whole addresses.
        unsafe {
            assert_eq!(sock.len_at(v4.as_ptr()), Some(16));
            assert_eq!(sock.len_at(v6.as_ptr()), Some(28));
            assert_eq!(
                AddrFormat(FI_SOCKADDR_IN as u32).len_at(v4.as_ptr()),
                Some(16)
            );
            let s = b"shm://node0/ep3\0";
            assert_eq!(AddrFormat(FI_ADDR_STR as u32).len_at(s.as_ptr()), Some(16));
        }
        assert!(AddrFormat(FI_SOCKADDR_IN as u32).valid(&v4));
        assert!(!AddrFormat(FI_SOCKADDR_IN as u32).valid(&[1, 2, 3]));
        let ip = AddrFormat(FI_SOCKADDR_IP as u32);
        assert!(ip.is_ip() && ip.valid(&v4) && ip.valid(&v6));
        // SAFETY: as above.
        assert_eq!(unsafe { ip.len_at(v6.as_ptr()) }, Some(28));
    }

    #[test]
    fn text_per_format() {
        let v4 = crate::addr::to_sockaddr(&"127.0.0.1:4000".parse().unwrap());
        assert_eq!(
            AddrFormat(FI_SOCKADDR_IN as u32).to_text(&v4),
            "fi_sockaddr_in://127.0.0.1:4000"
        );
        assert_eq!(
            AddrFormat(FI_ADDR_STR as u32).to_text(b"shm://x\0"),
            "shm://x"
        );
    }
}
