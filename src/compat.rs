//! Older layouts: `fi_info` lists of any ABI node, for the compat entry
//! points (`fi_getinfo@FABRIC_1.0` … `@FABRIC_1.8`, `fi_fabric@FABRIC_1.0`),
//! and the structs applications allocate themselves, whose layout the API
//! version they pass to `fi_getinfo` decides (`fi_cq_err_entry`,
//! `fi_eq_err_entry`: how many bytes we may write; `fi_mr_attr`: how many
//! we may read).
//!
//! Attribute structs only ever grew at their tail ([`crate::abi::layouts`]),
//! so reading an old-layout list copies each struct's prefix into zeroed
//! current structs (fields the caller's struct lacks read as zero). Answers
//! are always current-layout memory, which old callers read as their smaller
//! prefix, exactly as upstream's compat entry points do.
#![deny(
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]

use crate::abi::*;
use crate::info::Info;
use core::mem::{offset_of, size_of, MaybeUninit};
use core::ptr;

pub use crate::abi::layouts::{
    Layout, ABI_1_0, ABI_1_1, ABI_1_2, ABI_1_3, ABI_1_7, ABI_1_8, ABI_1_9, ABI_CURRENT, ABI_NODES,
};

/// `FI_VERSION(1, 5)`: `err_data_size` in CQ and EQ error entries, the
/// `mr_mode` bits instead of the old enum, auth keys.
pub const API_1_5: u32 = (1 << 16) | 5;
/// `FI_VERSION(1, 19)`: `fi_mr_attr.hmem_data`.
pub const API_1_19: u32 = (1 << 16) | 19;
/// `FI_VERSION(1, 22)`: `fi_mr_attr.page_size`.
pub const API_1_22: u32 = (1 << 16) | 22;
/// `FI_VERSION(1, 20)`: `fi_cq_err_entry.src_addr`; `max_ep_auth_key`.
pub const API_1_20: u32 = (1 << 16) | 20;
/// `FI_VERSION(2, 0)`: `max_group_id`; caps bits 45, 46 and 48 renamed.
pub const API_2_0: u32 = 2 << 16;
/// `FI_VERSION(2, 5)`: `max_cntr_value`, `max_err_cntr_value`.
pub const API_2_5: u32 = (2 << 16) | 5;

/// How many bytes of an application's `fi_cq_err_entry` an application of
/// API version `api` has: without `err_data_size` before 1.5, without
/// `src_addr` before 1.20 (what `fi_cq_readerr` may write).
pub const fn cq_err_entry_size(api: u32) -> usize {
    if api < API_1_5 {
        offset_of!(fi_cq_err_entry, err_data_size)
    } else if api < API_1_20 {
        offset_of!(fi_cq_err_entry, src_addr)
    } else {
        size_of::<fi_cq_err_entry>()
    }
}

/// How many bytes of an application's `fi_eq_err_entry` an application of
/// API version `api` has (`err_data_size` from 1.5).
pub const fn eq_err_entry_size(api: u32) -> usize {
    if api < API_1_5 {
        offset_of!(fi_eq_err_entry, err_data_size)
    } else {
        size_of::<fi_eq_err_entry>()
    }
}

/// How many bytes of an application's `fi_mr_attr` an application of API
/// version `api` has: auth keys from 1.5 (before that the struct ended at
/// `context`), `hmem_data` from 1.19, the dma-buf union member from 1.20
/// (same bytes as `mr_iov`), `page_size` from 1.22, `base_mr` and
/// `sub_mr_cnt` from 2.0. What a registration may read.
pub const fn mr_attr_size(api: u32) -> usize {
    if api < API_1_5 {
        offset_of!(fi_mr_attr, auth_key_size)
    } else if api < API_1_19 {
        offset_of!(fi_mr_attr, hmem_data)
    } else if api < API_1_22 {
        offset_of!(fi_mr_attr, page_size)
    } else if api < API_2_0 {
        offset_of!(fi_mr_attr, base_mr)
    } else {
        size_of::<fi_mr_attr>()
    }
}

/// Reads an application's `fi_mr_attr`: only the fields its API version
/// has, the rest zero.
///
/// # Safety
/// `p` is NULL or valid for reads of `mr_attr_size(api)` bytes.
pub unsafe fn read_mr_attr(p: *const fi_mr_attr, api: u32) -> Option<fi_mr_attr> {
    if p.is_null() {
        None
    } else {
        // SAFETY: `p` is readable for this many bytes (caller); fi_mr_attr
        // holds only integers, pointers and unions of them.
        Some(unsafe { prefix(p, mr_attr_size(api)) })
    }
}

/// The layout of the node whose symbol version is `FABRIC_1.<minor>`.
pub fn layout_of_node(minor: u32) -> Option<&'static Layout> {
    let name = format!("FABRIC_1.{minor}");
    ABI_NODES.iter().find(|l| l.node == name)
}

/// Copies the first `n` bytes of `*src` over a zeroed `T`.
///
/// # Safety
/// `src` is valid for reads of `min(n, size_of::<T>())` bytes, and `T` is a
/// plain C struct for which all-zero bytes and any prefix of a valid value
/// followed by zeros are valid (integers and raw pointers only).
unsafe fn prefix<T: Copy>(src: *const T, n: usize) -> T {
    let mut v = MaybeUninit::<T>::zeroed();
    // SAFETY: the caller guarantees `src` is readable for this many bytes;
    // the destination is a local of size_of::<T>() bytes; they do not overlap.
    unsafe {
        ptr::copy_nonoverlapping(
            src as *const u8,
            v.as_mut_ptr() as *mut u8,
            n.min(size_of::<T>()),
        )
    };
    // SAFETY: zeroed memory overwritten by a prefix of a valid C struct of
    // integers and pointers is a valid `T` (the caller's contract).
    unsafe { v.assume_init() }
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
    // SAFETY: `p` is a valid fi_info of layout `l` (caller), so it is
    // readable for `l.info` bytes.
    let mut info: fi_info = unsafe { prefix(p, l.info) };
    let mut tx;
    if !info.tx_attr.is_null() {
        // SAFETY: a non-NULL attribute pointer of a layout-`l` info points to
        // an attribute struct of layout `l` (caller).
        tx = unsafe { prefix(info.tx_attr, l.tx) };
        info.tx_attr = &mut tx;
    }
    let mut ep;
    if !info.ep_attr.is_null() {
        // SAFETY: as for tx_attr.
        ep = unsafe { prefix(info.ep_attr, l.ep) };
        info.ep_attr = &mut ep;
    }
    let mut dom;
    if !info.domain_attr.is_null() {
        // SAFETY: as for tx_attr.
        dom = unsafe { prefix(info.domain_attr, l.domain) };
        info.domain_attr = &mut dom;
    }
    let mut fab;
    if !info.fabric_attr.is_null() {
        // SAFETY: as for tx_attr.
        fab = unsafe { prefix(info.fabric_attr, l.fabric) };
        info.fabric_attr = &mut fab;
    }
    // SAFETY: every attribute pointer now points to a full current-layout
    // local (or is NULL); the remaining pointers (strings, addresses, rx_attr,
    // which never changed) are the caller's valid ones.
    unsafe { Info::from_c(&info) }
}

/// Reads an old-layout `fi_fabric_attr` into the current layout.
///
/// # Safety
/// `p` is NULL or valid for reads of `l.fabric` bytes.
pub unsafe fn read_fabric_attr(p: *const fi_fabric_attr, l: &Layout) -> Option<fi_fabric_attr> {
    if p.is_null() {
        None
    } else {
        // SAFETY: `p` is readable for `l.fabric` bytes (caller).
        Some(unsafe { prefix(p, l.fabric) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_layout_is_1_9() {
        assert_eq!(ABI_CURRENT, ABI_1_9);
        assert_eq!(
            (
                ABI_1_9.info,
                ABI_1_9.tx,
                ABI_1_9.ep,
                ABI_1_9.domain,
                ABI_1_9.fabric
            ),
            (120, 80, 96, 224, 32)
        );
        assert_eq!(layout_of_node(8), Some(&ABI_1_8));
        assert_eq!(layout_of_node(4), None);
    }

    #[test]
    fn error_entry_sizes_follow_the_api_version() {
        let v = |maj: u32, min: u32| (maj << 16) | min;
        assert_eq!(cq_err_entry_size(v(1, 4)), 72);
        assert_eq!(cq_err_entry_size(v(1, 5)), 80);
        assert_eq!(cq_err_entry_size(v(1, 19)), 80);
        assert_eq!(cq_err_entry_size(v(1, 20)), 88);
        assert_eq!(cq_err_entry_size(v(2, 1)), 88);
        assert_eq!(eq_err_entry_size(v(1, 0)), 40);
        assert_eq!(eq_err_entry_size(v(1, 17)), 48);
        assert_eq!(mr_attr_size(v(1, 4)), 48);
        assert_eq!(mr_attr_size(v(1, 17)), 80);
        assert_eq!(mr_attr_size(v(1, 19)), 88);
        assert_eq!(mr_attr_size(v(1, 22)), 96);
        assert_eq!(mr_attr_size(v(2, 0)), 112);
    }

    #[test]
    fn mr_attr_reads_only_the_api_versions_fields() {
        // SAFETY: a zeroed fi_mr_attr (integers and pointers) is valid.
        let mut a: fi_mr_attr = unsafe { core::mem::zeroed() };
        a.iov_count = 1;
        a.auth_key_size = 4;
        a.page_size = 4096;
        a.sub_mr_cnt = 2;
        // SAFETY: `a` is a full current-layout struct.
        let old = unsafe { read_mr_attr(&a, (1 << 16) | 4) }.unwrap();
        assert_eq!((old.iov_count, old.auth_key_size, old.page_size), (1, 0, 0));
        // SAFETY: as above.
        let v122 = unsafe { read_mr_attr(&a, (1 << 16) | 22) }.unwrap();
        assert_eq!(
            (v122.auth_key_size, v122.page_size, v122.sub_mr_cnt),
            (4, 4096, 0)
        );
        // SAFETY: as above.
        let v2 = unsafe { read_mr_attr(&a, 2 << 16) }.unwrap();
        assert_eq!(v2.sub_mr_cnt, 2);
    }

    #[test]
    fn old_prefix_drops_new_fields() {
        let mut i = Info::default();
        i.tx.tclass = 7;
        i.domain.tclass = 9;
        i.domain.mr_cnt = 5;
        i.domain.max_ep_auth_key = 3;
        i.domain.max_group_id = 4;
        i.domain.max_cntr_value = 6;
        i.fabric.api_version = 3;
        i.ep.ep_type = FI_EP_RDM;
        let c = i.to_c();
        // SAFETY: `c` is a current-layout list, a superset of every layout.
        let [old, v12, v13, v17, v18, v19] = [ABI_1_0, ABI_1_2, ABI_1_3, ABI_1_7, ABI_1_8, ABI_1_9]
            .map(|l| unsafe { read_info(c, &l) }.unwrap());
        assert_eq!(old.tx.tclass, 0);
        assert_eq!(old.domain.tclass, 0);
        assert_eq!(old.domain.mr_cnt, 0);
        assert_eq!(old.fabric.api_version, 0);
        assert_eq!(old.ep.ep_type, FI_EP_RDM);
        assert_eq!(v12.domain.mr_cnt, 5);
        assert_eq!(v12.tx.tclass, 0);
        assert_eq!((v13.domain.tclass, v13.domain.max_ep_auth_key), (9, 0));
        assert_eq!(
            (v17.domain.max_ep_auth_key, v17.domain.max_group_id),
            (3, 0)
        );
        assert_eq!((v18.domain.max_group_id, v18.domain.max_cntr_value), (4, 0));
        assert_eq!(v19.domain.max_cntr_value, 6);
        // SAFETY: `c` came from to_c and is freed once.
        unsafe { crate::info::free_c(c) };
    }
}
