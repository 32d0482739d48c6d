//! Local network interfaces and their addresses: the sockets provider
//! lists them as fabrics (networks) and domains (interfaces), the verbs
//! provider finds the RDMA device behind each address.

use std::net::IpAddr;

/// One address of one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iface {
    /// Interface name, e.g. `lo`: the domain name.
    pub name: String,
    pub ip: IpAddr,
    /// Prefix length of the network.
    pub prefix: u32,
}

impl Iface {
    /// The network in CIDR form, e.g. `127.0.0.0/8`: the fabric name.
    pub fn network(&self) -> String {
        let net = match self.ip {
            IpAddr::V4(a) => {
                let m = if self.prefix == 0 {
                    0
                } else {
                    u32::MAX << (32 - self.prefix.min(32))
                };
                IpAddr::V4((u32::from(a) & m).into())
            }
            IpAddr::V6(a) => {
                let m = if self.prefix == 0 {
                    0
                } else {
                    u128::MAX << (128 - self.prefix.min(128))
                };
                IpAddr::V6((u128::from(a) & m).into())
            }
        };
        format!("{}/{}", net, self.prefix)
    }
}

fn prefix_of(mask: &IpAddr) -> u32 {
    match mask {
        IpAddr::V4(m) => u32::from(*m).count_ones(),
        IpAddr::V6(m) => u128::from(*m).count_ones(),
    }
}

/// Every up interface address (IPv4 and IPv6), loopback last so that real
/// networks are preferred when nothing narrows the choice.
pub fn list() -> Vec<Iface> {
    let mut out = Vec::new();
    let mut ifap: *mut libc::ifaddrs = core::ptr::null_mut();
    // SAFETY: getifaddrs fills ifap with a list we free below.
    if unsafe { libc::getifaddrs(&mut ifap) } != 0 {
        return out;
    }
    let mut cur = ifap;
    // SAFETY: each node of the list getifaddrs made is valid until the
    // freeifaddrs below.
    while let Some(ifa) = unsafe { cur.as_ref() } {
        cur = ifa.ifa_next;
        if ifa.ifa_flags & libc::IFF_UP as u32 == 0 || ifa.ifa_addr.is_null() {
            continue;
        }
        let len = |p: *const libc::sockaddr| -> usize {
            // SAFETY: `p` is a non-NULL sockaddr of the list (callers check).
            match unsafe { (*p).sa_family } as i32 {
                libc::AF_INET => core::mem::size_of::<libc::sockaddr_in>(),
                libc::AF_INET6 => core::mem::size_of::<libc::sockaddr_in6>(),
                _ => 0,
            }
        };
        let n = len(ifa.ifa_addr);
        if n == 0 {
            continue;
        }
        // SAFETY: the kernel gave a sockaddr of the family's size.
        let Some(sa) = (unsafe { crate::addr::from_sockaddr(ifa.ifa_addr as *const u8, n) }) else {
            continue;
        };
        let prefix = if ifa.ifa_netmask.is_null() {
            if sa.is_ipv4() {
                32
            } else {
                128
            }
        } else {
            let mn = len(ifa.ifa_netmask).max(n);
            // SAFETY: the netmask is a sockaddr of the address's family.
            match unsafe { crate::addr::from_sockaddr(ifa.ifa_netmask as *const u8, mn) } {
                Some(m) => prefix_of(&m.ip()),
                None => {
                    if sa.is_ipv4() {
                        32
                    } else {
                        128
                    }
                }
            }
        };
        // SAFETY: ifa_name is the interface's NUL-terminated name.
        let name = unsafe { core::ffi::CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        out.push(Iface {
            name,
            ip: sa.ip(),
            prefix,
        });
    }
    // SAFETY: ifap came from getifaddrs.
    unsafe { libc::freeifaddrs(ifap) };
    out.sort_by_key(|i| i.ip.is_loopback());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_listed_last_with_its_network() {
        let l = list();
        let lo = l
            .iter()
            .find(|i| i.ip == IpAddr::from([127, 0, 0, 1]))
            .expect("127.0.0.1 is up");
        assert!(lo.network().starts_with("127."));
        assert!(l.last().unwrap().ip.is_loopback());
    }

    #[test]
    fn network_masks() {
        let i = Iface {
            name: "x".into(),
            ip: "10.1.2.3".parse().unwrap(),
            prefix: 16,
        };
        assert_eq!(i.network(), "10.1.0.0/16");
        let i = Iface {
            name: "x".into(),
            ip: "fe80::1:2".parse().unwrap(),
            prefix: 64,
        };
        assert_eq!(i.network(), "fe80::/64");
    }
}
