//! What the verbs devices on this host are and what they can do, as plain
//! Rust values: the limits `fi_info` will be built from (issue 23) and the
//! ports and GIDs an address will be chosen from.

use std::fmt;
use std::net::Ipv6Addr;

use crate::ibv::{self, Context, DeviceList, VerbsError};

/// What the device can do atomically (`enum ibv_atomic_cap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicCap {
    /// No atomic operations.
    None,
    /// Atomic among this device's own operations.
    Hca,
    /// Atomic with respect to the CPU and other devices too.
    Glob,
    /// A value this crate does not know.
    Unknown(u32),
}

impl From<u32> for AtomicCap {
    fn from(v: u32) -> Self {
        match v {
            0 => AtomicCap::None,
            1 => AtomicCap::Hca,
            2 => AtomicCap::Glob,
            v => AtomicCap::Unknown(v),
        }
    }
}

impl fmt::Display for AtomicCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AtomicCap::None => f.write_str("none"),
            AtomicCap::Hca => f.write_str("hca"),
            AtomicCap::Glob => f.write_str("glob"),
            AtomicCap::Unknown(v) => write!(f, "unknown({v})"),
        }
    }
}

/// A device's limits (`struct ibv_device_attr`, the fields the provider uses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Firmware version text.
    pub fw_ver: String,
    /// Node GUID as the device stores it (network byte order).
    pub node_guid: u64,
    /// Largest memory region, in bytes.
    pub max_mr_size: u64,
    /// Supported page sizes (bit mask).
    pub page_size_cap: u64,
    /// IEEE vendor id.
    pub vendor_id: u32,
    /// Vendor's part id.
    pub vendor_part_id: u32,
    /// Queue pairs.
    pub max_qp: i32,
    /// Work requests per queue.
    pub max_qp_wr: i32,
    /// Scatter/gather entries per send or receive.
    pub max_sge: i32,
    /// Scatter/gather entries per RDMA read.
    pub max_sge_rd: i32,
    /// Completion queues.
    pub max_cq: i32,
    /// Entries per completion queue.
    pub max_cqe: i32,
    /// Memory regions.
    pub max_mr: i32,
    /// Protection domains.
    pub max_pd: i32,
    /// Outstanding RDMA reads/atomics a QP can be the target of.
    pub max_qp_rd_atom: i32,
    /// Outstanding RDMA reads/atomics a QP can initiate.
    pub max_qp_init_rd_atom: i32,
    /// Atomic capability.
    pub atomic_cap: AtomicCap,
    /// Shared receive queues.
    pub max_srq: i32,
    /// Work requests per shared receive queue.
    pub max_srq_wr: i32,
    /// Scatter/gather entries per shared receive.
    pub max_srq_sge: i32,
    /// Device capability flags (`IBV_DEVICE_*`).
    pub device_cap_flags: u32,
    /// Number of ports (numbered from 1).
    pub phys_port_cnt: u8,
}

impl From<&ibv::ibv_device_attr> for DeviceAttr {
    fn from(a: &ibv::ibv_device_attr) -> Self {
        let fw: Vec<u8> = a
            .fw_ver
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        DeviceAttr {
            fw_ver: String::from_utf8_lossy(&fw).into_owned(),
            node_guid: a.node_guid,
            max_mr_size: a.max_mr_size,
            page_size_cap: a.page_size_cap,
            vendor_id: a.vendor_id,
            vendor_part_id: a.vendor_part_id,
            max_qp: a.max_qp,
            max_qp_wr: a.max_qp_wr,
            max_sge: a.max_sge,
            max_sge_rd: a.max_sge_rd,
            max_cq: a.max_cq,
            max_cqe: a.max_cqe,
            max_mr: a.max_mr,
            max_pd: a.max_pd,
            max_qp_rd_atom: a.max_qp_rd_atom,
            max_qp_init_rd_atom: a.max_qp_init_rd_atom,
            atomic_cap: AtomicCap::from(a.atomic_cap),
            max_srq: a.max_srq,
            max_srq_wr: a.max_srq_wr,
            max_srq_sge: a.max_srq_sge,
            device_cap_flags: a.device_cap_flags,
            phys_port_cnt: a.phys_port_cnt,
        }
    }
}

/// A port's state (`enum ibv_port_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortState {
    /// No state change.
    Nop,
    /// Link down.
    Down,
    /// Link up, not yet configured.
    Init,
    /// Configured, not yet active.
    Armed,
    /// Usable.
    Active,
    /// Active, deferring to the subnet manager.
    ActiveDefer,
    /// A value this crate does not know.
    Unknown(u32),
}

impl From<u32> for PortState {
    fn from(v: u32) -> Self {
        match v {
            0 => PortState::Nop,
            1 => PortState::Down,
            2 => PortState::Init,
            3 => PortState::Armed,
            4 => PortState::Active,
            5 => PortState::ActiveDefer,
            v => PortState::Unknown(v),
        }
    }
}

impl fmt::Display for PortState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortState::Nop => f.write_str("NOP"),
            PortState::Down => f.write_str("DOWN"),
            PortState::Init => f.write_str("INIT"),
            PortState::Armed => f.write_str("ARMED"),
            PortState::Active => f.write_str("ACTIVE"),
            PortState::ActiveDefer => f.write_str("ACTIVE_DEFER"),
            PortState::Unknown(v) => write!(f, "UNKNOWN({v})"),
        }
    }
}

/// A port's link layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    /// Not reported (old InfiniBand devices).
    Unspecified,
    /// InfiniBand.
    Infiniband,
    /// Ethernet: RoCE, including soft-RoCE (`rxe`).
    Ethernet,
    /// A value this crate does not know.
    Unknown(u8),
}

impl From<u8> for LinkLayer {
    fn from(v: u8) -> Self {
        match v {
            0 => LinkLayer::Unspecified,
            1 => LinkLayer::Infiniband,
            2 => LinkLayer::Ethernet,
            v => LinkLayer::Unknown(v),
        }
    }
}

impl fmt::Display for LinkLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkLayer::Unspecified => f.write_str("unspecified"),
            LinkLayer::Infiniband => f.write_str("infiniband"),
            LinkLayer::Ethernet => f.write_str("ethernet"),
            LinkLayer::Unknown(v) => write!(f, "unknown({v})"),
        }
    }
}

/// `enum ibv_mtu` as bytes (0 for a value this crate does not know).
pub fn mtu_bytes(v: u32) -> u32 {
    match v {
        1..=5 => 128 << v,
        _ => 0,
    }
}

/// What a GID is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidType {
    /// InfiniBand (or RoCE v1 where the two are not told apart).
    Ib,
    /// RoCE v1 (Ethernet, not routable).
    RoceV1,
    /// RoCE v2 (UDP/IP, routable).
    RoceV2,
    /// Not known (no `ibv_query_gid_table` and nothing in sysfs).
    Unknown,
}

impl GidType {
    fn from_ibv(v: u32) -> Self {
        match v {
            0 => GidType::Ib,
            1 => GidType::RoceV1,
            2 => GidType::RoceV2,
            _ => GidType::Unknown,
        }
    }

    /// The kernel's sysfs text (`gid_attrs/types/N`): "IB/RoCE v1" or "RoCE v2".
    fn from_sysfs(s: &str) -> Self {
        match s.trim() {
            "RoCE v2" => GidType::RoceV2,
            "IB/RoCE v1" => GidType::RoceV1,
            _ => GidType::Unknown,
        }
    }
}

impl fmt::Display for GidType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GidType::Ib => "ib",
            GidType::RoceV1 => "roce-v1",
            GidType::RoceV2 => "roce-v2",
            GidType::Unknown => "unknown",
        })
    }
}

/// One valid GID table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gid {
    /// Index in the port's table (what `FI_VERBS_GID_IDX` will name).
    pub index: u32,
    /// The GID, network byte order.
    pub raw: [u8; 16],
    /// Its type.
    pub kind: GidType,
}

impl Gid {
    /// The GID as an IPv6 address (an IPv4-mapped one for a RoCE GID of an
    /// IPv4 address).
    pub fn addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.raw)
    }
}

/// One port of a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    /// Port number (from 1).
    pub num: u8,
    /// State.
    pub state: PortState,
    /// Link layer.
    pub link_layer: LinkLayer,
    /// Active MTU in bytes.
    pub active_mtu: u32,
    /// Largest MTU in bytes.
    pub max_mtu: u32,
    /// Largest message, in bytes.
    pub max_msg_sz: u32,
    /// Size of the GID table.
    pub gid_tbl_len: i32,
    /// Local identifier (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// The valid GIDs, in index order.
    pub gids: Vec<Gid>,
}

/// A verbs device with everything queried from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// Kernel name (`rxe0`, `mlx5_0`).
    pub name: String,
    /// Limits.
    pub attr: DeviceAttr,
    /// Ports, in number order.
    pub ports: Vec<Port>,
}

/// Every verbs device on this host, opened, queried and closed again.
/// `Err(VerbsError::Unavailable)` when rdma-core is not installed; an empty
/// list when it is but there are no devices. A device that cannot be opened
/// or queried is an error (it exists but is not usable, which the caller
/// should hear about), as is any failed query.
pub fn devices() -> Result<Vec<Device>, VerbsError> {
    let list = DeviceList::get()?;
    (0..list.len())
        .map(|i| {
            let name = list.name(i);
            let ctx = list.open(i)?;
            query(&ctx, name)
        })
        .collect()
}

fn query(ctx: &Context, name: String) -> Result<Device, VerbsError> {
    let attr = DeviceAttr::from(&ctx.query_device()?);
    let mut ports = Vec::new();
    for num in 1..=attr.phys_port_cnt {
        let p = ctx.query_port(num)?;
        ports.push(Port {
            num,
            state: PortState::from(p.state),
            link_layer: LinkLayer::from(p.link_layer),
            active_mtu: mtu_bytes(p.active_mtu),
            max_mtu: mtu_bytes(p.max_mtu),
            max_msg_sz: p.max_msg_sz,
            gid_tbl_len: p.gid_tbl_len,
            lid: p.lid,
            gids: Vec::new(),
        });
    }
    let total: usize = ports
        .iter()
        .map(|p| usize::try_from(p.gid_tbl_len).unwrap_or(0))
        .sum();
    match ctx.query_gid_table(total) {
        Some(entries) => {
            for e in entries? {
                if let Some(port) = ports.iter_mut().find(|p| u32::from(p.num) == e.port_num) {
                    port.gids.push(Gid {
                        index: e.gid_index,
                        raw: e.raw(),
                        kind: GidType::from_ibv(e.gid_type),
                    });
                }
            }
            for port in &mut ports {
                port.gids.sort_by_key(|g| g.index);
            }
        }
        None => {
            for port in &mut ports {
                port.gids = gids_by_index(ctx, &name, port)?;
            }
        }
    }
    Ok(Device { name, attr, ports })
}

/// The fallback for libraries without `ibv_query_gid_table`: every index,
/// skipping unset (all-zero) entries, with the type from sysfs.
fn gids_by_index(ctx: &Context, dev: &str, port: &Port) -> Result<Vec<Gid>, VerbsError> {
    let mut gids = Vec::new();
    for index in 0..port.gid_tbl_len.max(0) {
        let raw = ctx.query_gid(port.num, index)?;
        if raw == [0; 16] {
            continue;
        }
        let index = index as u32;
        let path = format!(
            "/sys/class/infiniband/{dev}/ports/{}/gid_attrs/types/{index}",
            port.num
        );
        let kind = std::fs::read_to_string(path)
            .map(|s| GidType::from_sysfs(&s))
            .unwrap_or(GidType::Unknown);
        gids.push(Gid { index, raw, kind });
    }
    Ok(gids)
}
