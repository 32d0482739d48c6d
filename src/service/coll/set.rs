//! AV sets (fi_av_set(3)): ordered lists of an address vector's
//! addresses, built and changed locally. The order is the members' ranks
//! in a collective group joined over the set.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::service::av::AddressVector;
use std::sync::Arc;

/// One AV set.
pub struct AvSet {
    pub av: Arc<AddressVector>,
    /// The members, in order.
    pub members: Vec<fi_addr_t>,
}

impl AvSet {
    /// A set as `fi_av_set`'s attributes describe it: the whole AV
    /// (`FI_UNIVERSE`), the addresses from `start` to `end` inclusive every
    /// `stride`, or empty (`start` is `FI_ADDR_NOTAVAIL`). Addresses in the
    /// range that name no entry are left out.
    pub fn new(av: Arc<AddressVector>, attr: &fi_av_set_attr) -> Result<AvSet> {
        if attr.comm_key_size != 0 {
            crate::core_warn!(FI_LOG_AV, "fi_av_set: communication keys are not supported");
            return Err(Error::NoSys);
        }
        let members = if attr.flags & FI_UNIVERSE != 0 {
            av.addrs()
        } else if attr.start_addr == FI_ADDR_NOTAVAIL {
            Vec::new()
        } else {
            if attr.stride == 0 || attr.end_addr < attr.start_addr {
                crate::core_warn!(
                    FI_LOG_AV,
                    "fi_av_set: start {} to end {} by stride {}: not a range",
                    attr.start_addr,
                    attr.end_addr,
                    attr.stride
                );
                return Err(Error::Inval);
            }
            let mut v = Vec::new();
            let mut a = attr.start_addr;
            while a <= attr.end_addr {
                if av.lookup(a).is_some() {
                    v.push(a);
                }
                match a.checked_add(attr.stride) {
                    Some(n) => a = n,
                    None => break,
                }
            }
            v
        };
        Ok(AvSet { av, members })
    }

    /// Appends `addr` (`fi_av_set_insert`): an address of the AV not in
    /// the set yet.
    pub fn insert(&mut self, addr: fi_addr_t) -> Result<()> {
        if self.members.contains(&addr) || self.av.lookup(addr).is_none() {
            return Err(Error::Inval);
        }
        self.members.push(addr);
        Ok(())
    }

    /// Removes `addr` (`fi_av_set_remove`), keeping the others' order.
    pub fn remove(&mut self, addr: fi_addr_t) -> Result<()> {
        let at = self
            .members
            .iter()
            .position(|m| *m == addr)
            .ok_or(Error::Inval)?;
        self.members.remove(at);
        Ok(())
    }

    /// Appends the members of `src` not in the set, in `src`'s order.
    pub fn union(&mut self, src: &[fi_addr_t]) {
        for a in src {
            if !self.members.contains(a) {
                self.members.push(*a);
            }
        }
    }

    /// Keeps only the members also in `src`.
    pub fn intersect(&mut self, src: &[fi_addr_t]) {
        self.members.retain(|m| src.contains(m));
    }

    /// Drops the members also in `src`.
    pub fn diff(&mut self, src: &[fi_addr_t]) {
        self.members.retain(|m| !src.contains(m));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn av_of(n: usize) -> Arc<AddressVector> {
        let av = AddressVector::new(FI_AV_TABLE, 0, n, 0).unwrap();
        for i in 0..n {
            let sa: std::net::SocketAddr = format!("127.0.0.1:{}", 9000 + i).parse().unwrap();
            av.insert(&crate::addr::to_sockaddr(&sa)).unwrap();
        }
        Arc::new(av)
    }

    fn attr(start: fi_addr_t, end: fi_addr_t, stride: u64, flags: u64) -> fi_av_set_attr {
        fi_av_set_attr {
            count: 0,
            start_addr: start,
            end_addr: end,
            stride,
            comm_key_size: 0,
            comm_key: std::ptr::null_mut(),
            flags,
        }
    }

    #[test]
    fn ranges_strides_and_the_universe() {
        let av = av_of(5);
        let s = AvSet::new(av.clone(), &attr(1, 4, 2, 0)).unwrap();
        assert_eq!(s.members, vec![1, 3]);
        let all = AvSet::new(av.clone(), &attr(FI_ADDR_NOTAVAIL, 0, 0, FI_UNIVERSE)).unwrap();
        assert_eq!(all.members, vec![0, 1, 2, 3, 4]);
        let none = AvSet::new(av.clone(), &attr(FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0, 0)).unwrap();
        assert!(none.members.is_empty());
        assert!(AvSet::new(av, &attr(0, 4, 0, 0)).is_err(), "stride 0");
    }

    #[test]
    fn set_operations_keep_the_order() {
        let av = av_of(6);
        let mut s = AvSet::new(av.clone(), &attr(4, 5, 1, 0)).unwrap();
        s.insert(0).unwrap();
        assert!(s.insert(0).is_err(), "already a member");
        assert!(s.insert(9).is_err(), "not in the AV");
        assert_eq!(s.members, vec![4, 5, 0]);
        s.union(&[1, 5, 2]);
        assert_eq!(s.members, vec![4, 5, 0, 1, 2]);
        s.intersect(&[2, 0, 4, 1]);
        assert_eq!(s.members, vec![4, 0, 1, 2]);
        s.diff(&[0, 3]);
        assert_eq!(s.members, vec![4, 1, 2]);
        s.remove(1).unwrap();
        assert!(s.remove(1).is_err());
        assert_eq!(s.members, vec![4, 2]);
    }
}
