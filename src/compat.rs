//! Older `fi_info` layouts, for the compat entry points
//! (`fi_getinfo@FABRIC_1.0` … `@FABRIC_1.2`, `fi_fabric@FABRIC_1.0`).
//!
//! Attribute structs only ever grew at their tail, so an older layout is
//! described by how many leading bytes of each current struct it has. Reading
//! an old-layout list copies that prefix into zeroed current structs (new
//! fields read as zero); answers are always current-layout memory, which old
//! callers read as their smaller prefix. A later ABI node (libfabric 2.x
//! `FABRIC_1.7` …) is one more [`Layout`] constant here plus its entry points.

use crate::abi::*;
use crate::info::Info;
use core::mem::{size_of, zeroed};
use core::ptr;

/// The size of each struct in one ABI generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub info: usize,
    pub tx: usize,
    pub ep: usize,
    pub domain: usize,
    pub fabric: usize,
}

/// ABI 1.0 (libfabric 1.0–1.4): no `nic`, no `tclass`, no auth keys, no
/// `api_version`, domain attributes end at `max_ep_srx_ctx`.
pub const ABI_1_0: Layout = Layout {
    info: 112,
    tx: 72,
    ep: 80,
    domain: 120,
    fabric: 28,
};
/// ABI 1.1 (1.5–1.6): domain and endpoint auth keys and more, `api_version`.
pub const ABI_1_1: Layout = Layout {
    info: 112,
    tx: 72,
    ep: 96,
    domain: 184,
    fabric: 32,
};
/// ABI 1.2 (1.7–1.8): `fi_info.nic`.
pub const ABI_1_2: Layout = Layout {
    info: 120,
    tx: 72,
    ep: 96,
    domain: 184,
    fabric: 32,
};
/// ABI 1.3 (1.9–1.19, this library's default): `tclass`.
pub const ABI_1_3: Layout = Layout {
    info: size_of::<fi_info>(),
    tx: size_of::<fi_tx_attr>(),
    ep: size_of::<fi_ep_attr>(),
    domain: size_of::<fi_domain_attr>(),
    fabric: size_of::<fi_fabric_attr>(),
};

/// Copies the first `n` bytes of `*src` over a zeroed `T`.
unsafe fn prefix<T>(src: *const T, n: usize) -> T {
    let mut v: T = zeroed();
    ptr::copy_nonoverlapping(
        src as *const u8,
        &mut v as *mut T as *mut u8,
        n.min(size_of::<T>()),
    );
    v
}

/// Reads one `fi_info` of the given layout (not its `next`).
///
/// # Safety
/// `p` is NULL or points to a valid `fi_info` of layout `l` whose attribute
/// pointers are NULL or point to structs of layout `l`.
pub unsafe fn read_info(p: *const fi_info, l: &Layout) -> Option<Info> {
    if p.is_null() {
        return None;
    }
    let mut info: fi_info = prefix(p, l.info);
    let mut tx;
    if !info.tx_attr.is_null() {
        tx = prefix(info.tx_attr, l.tx);
        info.tx_attr = &mut tx;
    }
    let mut ep;
    if !info.ep_attr.is_null() {
        ep = prefix(info.ep_attr, l.ep);
        info.ep_attr = &mut ep;
    }
    let mut dom;
    if !info.domain_attr.is_null() {
        dom = prefix(info.domain_attr, l.domain);
        info.domain_attr = &mut dom;
    }
    let mut fab;
    if !info.fabric_attr.is_null() {
        fab = prefix(info.fabric_attr, l.fabric);
        info.fabric_attr = &mut fab;
    }
    Info::from_c(&info)
}

/// Reads an old-layout `fi_fabric_attr` into the current layout.
///
/// # Safety
/// `p` is NULL or valid for `l.fabric` bytes.
pub unsafe fn read_fabric_attr(p: *const fi_fabric_attr, l: &Layout) -> Option<fi_fabric_attr> {
    if p.is_null() {
        None
    } else {
        Some(prefix(p, l.fabric))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_layout_is_1_3() {
        assert_eq!(
            ABI_1_3,
            Layout {
                info: 120,
                tx: 80,
                ep: 96,
                domain: 192,
                fabric: 32
            }
        );
    }

    #[test]
    fn old_prefix_drops_new_fields() {
        let mut i = Info::default();
        i.tx.tclass = 7;
        i.domain.tclass = 9;
        i.domain.mr_cnt = 5;
        i.fabric.api_version = 3;
        i.ep.ep_type = FI_EP_RDM;
        let c = i.to_c();
        let old = unsafe { read_info(c, &ABI_1_0) }.unwrap();
        assert_eq!(old.tx.tclass, 0);
        assert_eq!(old.domain.tclass, 0);
        assert_eq!(old.domain.mr_cnt, 0);
        assert_eq!(old.fabric.api_version, 0);
        assert_eq!(old.ep.ep_type, FI_EP_RDM);
        let v12 = unsafe { read_info(c, &ABI_1_2) }.unwrap();
        assert_eq!(v12.domain.mr_cnt, 5);
        assert_eq!(v12.tx.tclass, 0);
        unsafe { crate::info::free_c(c) };
    }
}
