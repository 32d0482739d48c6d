//! The older ABI nodes' layouts of the attribute structs hung off `fi_info`.
//!
//! Not a header (hdrgen never emits this module): the current structs in
//! `fabric.rs` are the newest node's layout, and every older node's struct is
//! a leading part of it, because libfabric only ever appended fields. So an
//! old layout is "the current struct up to the first field it lacks", taken
//! from the current definition here instead of being written out twice.
//! `fabric(7)`, "ABI CHANGES", lists which release added which field.

use super::*;
use core::mem::{offset_of, size_of};

/// The size of each `fi_info`-hung struct in one ABI node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The node's name as the symbol version spells it (`FABRIC_1.3`).
    pub node: &'static str,
    pub info: usize,
    pub tx: usize,
    pub ep: usize,
    pub domain: usize,
    pub fabric: usize,
}

/// ABI 1.0 (libfabric 1.0–1.4): no `fi_info.nic`, no `tclass`, no auth keys,
/// no `api_version`; domain attributes end at `max_ep_srx_ctx`.
pub const ABI_1_0: Layout = Layout {
    node: "FABRIC_1.0",
    info: offset_of!(fi_info, nic),
    tx: offset_of!(fi_tx_attr, tclass),
    ep: offset_of!(fi_ep_attr, auth_key_size),
    domain: offset_of!(fi_domain_attr, cntr_cnt),
    fabric: offset_of!(fi_fabric_attr, api_version),
};
/// ABI 1.1 (1.5–1.6): domain `cntr_cnt` … `mr_cnt`, endpoint auth keys,
/// fabric `api_version`.
pub const ABI_1_1: Layout = Layout {
    node: "FABRIC_1.1",
    info: offset_of!(fi_info, nic),
    tx: offset_of!(fi_tx_attr, tclass),
    ep: size_of::<fi_ep_attr>(),
    domain: offset_of!(fi_domain_attr, tclass),
    fabric: size_of::<fi_fabric_attr>(),
};
/// ABI 1.2 (1.7–1.8): `fi_info.nic`.
pub const ABI_1_2: Layout = Layout {
    node: "FABRIC_1.2",
    info: size_of::<fi_info>(),
    ..ABI_1_1
};
/// ABI 1.3 (1.9–1.19, Debian 12's 1.17): domain and tx `tclass`.
pub const ABI_1_3: Layout = Layout {
    node: "FABRIC_1.3",
    tx: size_of::<fi_tx_attr>(),
    domain: offset_of!(fi_domain_attr, max_ep_auth_key),
    ..ABI_1_2
};
/// ABI 1.7 (1.20–1.22): domain `max_ep_auth_key`.
pub const ABI_1_7: Layout = Layout {
    node: "FABRIC_1.7",
    domain: offset_of!(fi_domain_attr, max_group_id),
    ..ABI_1_3
};
/// ABI 1.8 (2.0–2.4, Debian 13's 2.1): domain `max_group_id`; `fi_fabric2`.
pub const ABI_1_8: Layout = Layout {
    node: "FABRIC_1.8",
    domain: offset_of!(fi_domain_attr, max_cntr_value),
    ..ABI_1_7
};
/// ABI 1.9 (2.5–2.6): domain `max_cntr_value`, `max_err_cntr_value`; the
/// current structs, which the library always allocates.
pub const ABI_1_9: Layout = Layout {
    node: "FABRIC_1.9",
    domain: size_of::<fi_domain_attr>(),
    ..ABI_1_8
};

/// Every node that changed an `fi_info` layout, oldest first.
pub const ABI_NODES: [Layout; 7] = [
    ABI_1_0, ABI_1_1, ABI_1_2, ABI_1_3, ABI_1_7, ABI_1_8, ABI_1_9,
];

/// The node whose symbols a program built against today's headers binds.
pub const ABI_CURRENT: Layout = ABI_1_9;

// The sizes upstream's structs have in each node (x86_64), checked at
// compile time so every build proves the prefixes above.
const _: () = {
    assert!(ABI_1_0.info == 112 && ABI_1_0.tx == 72 && ABI_1_0.ep == 80 && ABI_1_0.domain == 120);
    assert!(ABI_1_1.ep == 96 && ABI_1_1.domain == 184 && ABI_1_1.fabric == 32);
    assert!(ABI_1_3.info == 120 && ABI_1_3.tx == 80 && ABI_1_3.domain == 192);
    assert!(ABI_1_7.domain == 200 && ABI_1_8.domain == 208 && ABI_1_9.domain == 224);
};

/// Bits of libfabric 1.x that its 2.0 headers dropped (defining some of
/// them as 0 so old sources still build). The library still knows them to
/// answer and print for applications of API 1.x as upstream 1.x did.
pub mod v1 {
    /// `FI_VARIABLE_MSG` (capability; bit 48 is `FI_EXACT_DIRECTED_RECV` in 2.x).
    pub const FI_VARIABLE_MSG: u64 = 1 << 48;
    /// `FI_NOTIFY_FLAGS_ONLY` (mode bit).
    pub const FI_NOTIFY_FLAGS_ONLY: u64 = 1 << 54;
    /// `FI_RESTRICTED_COMP` (mode bit).
    pub const FI_RESTRICTED_COMP: u64 = 1 << 53;
    /// `FI_BUFFERED_RECV` (mode bit).
    pub const FI_BUFFERED_RECV: u64 = 1 << 51;
}
