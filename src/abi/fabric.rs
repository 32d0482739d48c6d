//! Mirror of `rdma/fabric.h`.

use super::*;

/// `FI_MAJOR_VERSION`.
pub const FI_MAJOR_VERSION: c_int = 2;

/// `FI_MINOR_VERSION`: these headers are libfabric 2.6's API (what each
/// release after 2.1 added is listed in `docs/api-2.2-2.6.md`).
pub const FI_MINOR_VERSION: c_int = 6;

/// `FI_REVISION_VERSION`.
pub const FI_REVISION_VERSION: c_int = 0;

/// `FI_MSG`.
pub const FI_MSG: u64 = 1 << 1;

/// `FI_RMA`.
pub const FI_RMA: u64 = 1 << 2;

/// `FI_TAGGED`.
pub const FI_TAGGED: u64 = 1 << 3;

/// `FI_ATOMIC`.
pub const FI_ATOMIC: u64 = 1 << 4;

/// `FI_ATOMICS`.
pub const FI_ATOMICS: u64 = FI_ATOMIC;

/// `FI_MULTICAST`.
pub const FI_MULTICAST: u64 = 1 << 5;

/// `FI_COLLECTIVE`.
pub const FI_COLLECTIVE: u64 = 1 << 6;

/// `FI_READ`.
pub const FI_READ: u64 = 1 << 8;

/// `FI_WRITE`.
pub const FI_WRITE: u64 = 1 << 9;

/// `FI_RECV`.
pub const FI_RECV: u64 = 1 << 10;

/// `FI_SEND`.
pub const FI_SEND: u64 = 1 << 11;

/// `FI_TRANSMIT`.
pub const FI_TRANSMIT: u64 = FI_SEND;

/// `FI_REMOTE_READ`.
pub const FI_REMOTE_READ: u64 = 1 << 12;

/// `FI_REMOTE_WRITE`.
pub const FI_REMOTE_WRITE: u64 = 1 << 13;

/// `FI_MULTI_RECV`.
pub const FI_MULTI_RECV: u64 = 1 << 16;

/// `FI_REMOTE_CQ_DATA`.
pub const FI_REMOTE_CQ_DATA: u64 = 1 << 17;

/// `FI_MORE`.
pub const FI_MORE: u64 = 1 << 18;

/// `FI_PEEK`.
pub const FI_PEEK: u64 = 1 << 19;

/// `FI_TRIGGER`.
pub const FI_TRIGGER: u64 = 1 << 20;

/// `FI_FENCE`.
pub const FI_FENCE: u64 = 1 << 21;

/// `FI_COMPLETION`.
pub const FI_COMPLETION: u64 = 1 << 24;

/// `FI_EVENT`.
pub const FI_EVENT: u64 = FI_COMPLETION;

/// `FI_INJECT`.
pub const FI_INJECT: u64 = 1 << 25;

/// `FI_INJECT_COMPLETE`.
pub const FI_INJECT_COMPLETE: u64 = 1 << 26;

/// `FI_TRANSMIT_COMPLETE`.
pub const FI_TRANSMIT_COMPLETE: u64 = 1 << 27;

/// `FI_DELIVERY_COMPLETE`.
pub const FI_DELIVERY_COMPLETE: u64 = 1 << 28;

/// `FI_AFFINITY`.
pub const FI_AFFINITY: u64 = 1 << 29;

/// `FI_COMMIT_COMPLETE`.
pub const FI_COMMIT_COMPLETE: u64 = 1 << 30;

/// `FI_MATCH_COMPLETE`.
pub const FI_MATCH_COMPLETE: u64 = 1 << 31;

/// `FI_RESCAN` (2.2): an `fi_getinfo` flag asking the provider to look at
/// the host's network interfaces again instead of a cached list.
pub const FI_RESCAN: u64 = 1 << 35;

/// `FI_PEER_TRANSFER`.
pub const FI_PEER_TRANSFER: u64 = 1 << 36;

/// `FI_AV_USER_ID`.
pub const FI_AV_USER_ID: u64 = 1 << 41;

/// `FI_FIREWALL_ADDR` (2.2): an `fi_av_insert*` flag saying the peers
/// inserted sit behind a firewall, so the provider must not open
/// connections to them (only use ones they opened).
pub const FI_FIREWALL_ADDR: u64 = 1 << 42;

/// `FI_PEER`.
pub const FI_PEER: u64 = 1 << 43;

/// `FI_TAGGED_DIRECTED_RECV` (2.0): directed receive for tagged messages only.
pub const FI_TAGGED_DIRECTED_RECV: u64 = 1 << 45;

/// `FI_TAGGED_MULTI_RECV` (2.0): multi-receive buffers for tagged messages.
pub const FI_TAGGED_MULTI_RECV: u64 = 1 << 46;

/// `FI_HMEM`.
pub const FI_HMEM: u64 = 1 << 47;

/// `FI_EXACT_DIRECTED_RECV` (2.0; the bit of 1.x's `FI_VARIABLE_MSG`).
pub const FI_EXACT_DIRECTED_RECV: u64 = 1 << 48;

/// `FI_RMA_PMEM`.
pub const FI_RMA_PMEM: u64 = 1 << 49;

/// `FI_SOURCE_ERR`.
pub const FI_SOURCE_ERR: u64 = 1 << 50;

/// `FI_LOCAL_COMM`.
pub const FI_LOCAL_COMM: u64 = 1 << 51;

/// `FI_REMOTE_COMM`.
pub const FI_REMOTE_COMM: u64 = 1 << 52;

/// `FI_SHARED_AV`.
pub const FI_SHARED_AV: u64 = 1 << 53;

/// `FI_PROV_ATTR_ONLY`.
pub const FI_PROV_ATTR_ONLY: u64 = 1 << 54;

/// `FI_NUMERICHOST`.
pub const FI_NUMERICHOST: u64 = 1 << 55;

/// `FI_RMA_EVENT`.
pub const FI_RMA_EVENT: u64 = 1 << 56;

/// `FI_SOURCE`.
pub const FI_SOURCE: u64 = 1 << 57;

/// `FI_NAMED_RX_CTX`.
pub const FI_NAMED_RX_CTX: u64 = 1 << 58;

/// `FI_DIRECTED_RECV`.
pub const FI_DIRECTED_RECV: u64 = 1 << 59;

/// `FI_CLAIM`.
pub const FI_CLAIM: u64 = 1 << 59;

/// `FI_DISCARD`.
pub const FI_DISCARD: u64 = 1 << 58;

/// `FI_AUTH_KEY` (1.20): an operation flag naming an authorization key.
pub const FI_AUTH_KEY: u64 = 1 << 57;

/// `FI_ADDR_UNSPEC`.
pub const FI_ADDR_UNSPEC: u64 = u64::MAX;

/// `FI_ADDR_NOTAVAIL`.
pub const FI_ADDR_NOTAVAIL: u64 = u64::MAX;

/// `FI_KEY_NOTAVAIL`.
pub const FI_KEY_NOTAVAIL: u64 = u64::MAX;

/// `FI_SHARED_CONTEXT`.
pub const FI_SHARED_CONTEXT: usize = usize::MAX;

/// `FI_AV_AUTH_KEY` (1.20): `auth_key_size` value asking for keys from the AV.
pub const FI_AV_AUTH_KEY: usize = usize::MAX;

/// `FI_MR_LOCAL`.
pub const FI_MR_LOCAL: c_int = 1 << 2;

/// `FI_MR_RAW`.
pub const FI_MR_RAW: c_int = 1 << 3;

/// `FI_MR_VIRT_ADDR`.
pub const FI_MR_VIRT_ADDR: c_int = 1 << 4;

/// `FI_MR_ALLOCATED`.
pub const FI_MR_ALLOCATED: c_int = 1 << 5;

/// `FI_MR_PROV_KEY`.
pub const FI_MR_PROV_KEY: c_int = 1 << 6;

/// `FI_MR_MMU_NOTIFY`.
pub const FI_MR_MMU_NOTIFY: c_int = 1 << 7;

/// `FI_MR_RMA_EVENT`.
pub const FI_MR_RMA_EVENT: c_int = 1 << 8;

/// `FI_MR_ENDPOINT`.
pub const FI_MR_ENDPOINT: c_int = 1 << 9;

/// `FI_MR_HMEM`.
pub const FI_MR_HMEM: c_int = 1 << 10;

/// `FI_MR_COLLECTIVE`.
pub const FI_MR_COLLECTIVE: c_int = 1 << 11;

/// `FI_ORDER_NONE`.
pub const FI_ORDER_NONE: u64 = 0;

/// `FI_ORDER_RAR`.
pub const FI_ORDER_RAR: u64 = 1 << 0;

/// `FI_ORDER_RAW`.
pub const FI_ORDER_RAW: u64 = 1 << 1;

/// `FI_ORDER_RAS`.
pub const FI_ORDER_RAS: u64 = 1 << 2;

/// `FI_ORDER_WAR`.
pub const FI_ORDER_WAR: u64 = 1 << 3;

/// `FI_ORDER_WAW`.
pub const FI_ORDER_WAW: u64 = 1 << 4;

/// `FI_ORDER_WAS`.
pub const FI_ORDER_WAS: u64 = 1 << 5;

/// `FI_ORDER_SAR`.
pub const FI_ORDER_SAR: u64 = 1 << 6;

/// `FI_ORDER_SAW`.
pub const FI_ORDER_SAW: u64 = 1 << 7;

/// `FI_ORDER_SAS`.
pub const FI_ORDER_SAS: u64 = 1 << 8;

/// `FI_ORDER_STRICT`.
pub const FI_ORDER_STRICT: c_int = 0x1ff;

/// `FI_ORDER_RMA_RAR`.
pub const FI_ORDER_RMA_RAR: u64 = 1 << 32;

/// `FI_ORDER_RMA_RAW`.
pub const FI_ORDER_RMA_RAW: u64 = 1 << 33;

/// `FI_ORDER_RMA_WAR`.
pub const FI_ORDER_RMA_WAR: u64 = 1 << 34;

/// `FI_ORDER_RMA_WAW`.
pub const FI_ORDER_RMA_WAW: u64 = 1 << 35;

/// `FI_ORDER_ATOMIC_RAR`.
pub const FI_ORDER_ATOMIC_RAR: u64 = 1 << 36;

/// `FI_ORDER_ATOMIC_RAW`.
pub const FI_ORDER_ATOMIC_RAW: u64 = 1 << 37;

/// `FI_ORDER_ATOMIC_WAR`.
pub const FI_ORDER_ATOMIC_WAR: u64 = 1 << 38;

/// `FI_ORDER_ATOMIC_WAW`.
pub const FI_ORDER_ATOMIC_WAW: u64 = 1 << 39;

/// `FI_ORDER_DATA`.
pub const FI_ORDER_DATA: u64 = 1 << 16;

/// `FI_CONTEXT`.
pub const FI_CONTEXT: u64 = 1 << 59;

/// `FI_MSG_PREFIX`.
pub const FI_MSG_PREFIX: u64 = 1 << 58;

/// `FI_ASYNC_IOV`.
pub const FI_ASYNC_IOV: u64 = 1 << 57;

/// `FI_RX_CQ_DATA`.
pub const FI_RX_CQ_DATA: u64 = 1 << 56;

/// `FI_LOCAL_MR`.
pub const FI_LOCAL_MR: u64 = 1 << 55;

/// `FI_CONTEXT2`.
pub const FI_CONTEXT2: u64 = 1 << 52;

/// `FI_SELECTIVE_COMPLETION`.
pub const FI_SELECTIVE_COMPLETION: u64 = 1 << 59;

c_anon_enum! {
    /// Anonymous enum holding `FI_NAME_MAX`.
    pub enum anon_fi_path_max : c_int {
        /// `FI_NAME_MAX`.
        FI_NAME_MAX = 64,
        /// `FI_ATOMIC_OP_LAST`: fixed at its 1.x value (`FI_DIFF` took it in 2.0).
        FI_ATOMIC_OP_LAST = 19,
        /// `FI_DATATYPE_LAST`: fixed at its 1.x value, not the last datatype.
        FI_DATATYPE_LAST = 14,
    }
}

extern "C" {
    /// `fi_version`.
    pub fn fi_version() -> u32;
}

/// `fid_t`.
pub type fid_t = *mut fid;

/// `struct fi_ioc`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ioc {
    /// `addr`.
    pub addr: *mut c_void,
    /// `count`.
    pub count: usize,
}

c_anon_enum! {
    /// Anonymous enum starting at `FI_FORMAT_UNSPEC`.
    pub enum anon_fi_format_unspec : c_int {
        /// `FI_FORMAT_UNSPEC`.
        FI_FORMAT_UNSPEC = 0,
        /// `FI_SOCKADDR`.
        FI_SOCKADDR = 1,
        /// `FI_SOCKADDR_IN`.
        FI_SOCKADDR_IN = 2,
        /// `FI_SOCKADDR_IN6`.
        FI_SOCKADDR_IN6 = 3,
        /// `FI_SOCKADDR_IB`.
        FI_SOCKADDR_IB = 4,
        /// `FI_ADDR_PSMX`.
        FI_ADDR_PSMX = 5,
        /// `FI_ADDR_GNI`.
        FI_ADDR_GNI = 6,
        /// `FI_ADDR_BGQ`.
        FI_ADDR_BGQ = 7,
        /// `FI_ADDR_MLX`.
        FI_ADDR_MLX = 8,
        /// `FI_ADDR_STR`.
        FI_ADDR_STR = 9,
        /// `FI_ADDR_PSMX2`.
        FI_ADDR_PSMX2 = 10,
        /// `FI_ADDR_IB_UD`.
        FI_ADDR_IB_UD = 11,
        /// `FI_ADDR_EFA`.
        FI_ADDR_EFA = 12,
        /// `FI_ADDR_PSMX3`.
        FI_ADDR_PSMX3 = 13,
        /// `FI_ADDR_OPX`.
        FI_ADDR_OPX = 14,
        /// `FI_ADDR_CXI`.
        FI_ADDR_CXI = 15,
        /// `FI_ADDR_UCX`.
        FI_ADDR_UCX = 16,
        /// `FI_SOCKADDR_IP` (2.3): an IPv4 or IPv6 socket address
        /// (`FI_SOCKADDR_IN` or `FI_SOCKADDR_IN6`), never an InfiniBand one,
        /// which `FI_SOCKADDR` also covers.
        FI_SOCKADDR_IP = 17,
    }
}

/// `fi_addr_t`.
pub type fi_addr_t = u64;

c_enum! {
    /// `enum fi_av_type`.
    pub enum fi_av_type : c_uint {
        /// `FI_AV_UNSPEC`.
        FI_AV_UNSPEC = 0,
        /// `FI_AV_MAP`.
        FI_AV_MAP = 1,
        /// `FI_AV_TABLE`.
        FI_AV_TABLE = 2,
    }
}

/// `FI_MR_UNSPEC` (deprecated; before 2.0 an `enum fi_mr_mode` value).
pub const FI_MR_UNSPEC: c_int = 0;

/// `FI_MR_BASIC` (deprecated).
pub const FI_MR_BASIC: c_int = 1;

/// `FI_MR_SCALABLE` (deprecated).
pub const FI_MR_SCALABLE: c_int = 1 << 1;

c_enum! {
    /// `enum fi_progress`.
    pub enum fi_progress : c_uint {
        /// `FI_PROGRESS_UNSPEC`.
        FI_PROGRESS_UNSPEC = 0,
        /// `FI_PROGRESS_AUTO`.
        FI_PROGRESS_AUTO = 1,
        /// `FI_PROGRESS_MANUAL`.
        FI_PROGRESS_MANUAL = 2,
        /// `FI_PROGRESS_CONTROL_UNIFIED` (2.0, control progress only).
        FI_PROGRESS_CONTROL_UNIFIED = 3,
    }
}

c_enum! {
    /// `enum fi_threading`.
    pub enum fi_threading : c_uint {
        /// `FI_THREAD_UNSPEC`.
        FI_THREAD_UNSPEC = 0,
        /// `FI_THREAD_SAFE`.
        FI_THREAD_SAFE = 1,
        /// `FI_THREAD_FID`.
        FI_THREAD_FID = 2,
        /// `FI_THREAD_DOMAIN`.
        FI_THREAD_DOMAIN = 3,
        /// `FI_THREAD_COMPLETION`.
        FI_THREAD_COMPLETION = 4,
        /// `FI_THREAD_ENDPOINT`.
        FI_THREAD_ENDPOINT = 5,
    }
}

c_enum! {
    /// `enum fi_resource_mgmt`.
    pub enum fi_resource_mgmt : c_uint {
        /// `FI_RM_UNSPEC`.
        FI_RM_UNSPEC = 0,
        /// `FI_RM_DISABLED`.
        FI_RM_DISABLED = 1,
        /// `FI_RM_ENABLED`.
        FI_RM_ENABLED = 2,
    }
}

c_enum! {
    /// `enum fi_ep_type`.
    pub enum fi_ep_type : c_uint {
        /// `FI_EP_UNSPEC`.
        FI_EP_UNSPEC = 0,
        /// `FI_EP_MSG`.
        FI_EP_MSG = 1,
        /// `FI_EP_DGRAM`.
        FI_EP_DGRAM = 2,
        /// `FI_EP_RDM`.
        FI_EP_RDM = 3,
    }
}

c_anon_enum! {
    /// Anonymous enum starting at `FI_PROTO_UNSPEC`.
    pub enum anon_fi_proto_unspec : c_int {
        /// `FI_PROTO_UNSPEC`.
        FI_PROTO_UNSPEC = 0,
        /// `FI_PROTO_RDMA_CM_IB_RC`.
        FI_PROTO_RDMA_CM_IB_RC = 1,
        /// `FI_PROTO_IWARP`.
        FI_PROTO_IWARP = 2,
        /// `FI_PROTO_IB_UD`.
        FI_PROTO_IB_UD = 3,
        /// `FI_PROTO_PSMX`.
        FI_PROTO_PSMX = 4,
        /// `FI_PROTO_UDP`.
        FI_PROTO_UDP = 5,
        /// `FI_PROTO_SOCK_TCP`.
        FI_PROTO_SOCK_TCP = 6,
        /// `FI_PROTO_MXM`.
        FI_PROTO_MXM = 7,
        /// `FI_PROTO_IWARP_RDM`.
        FI_PROTO_IWARP_RDM = 8,
        /// `FI_PROTO_IB_RDM`.
        FI_PROTO_IB_RDM = 9,
        /// `FI_PROTO_GNI`.
        FI_PROTO_GNI = 10,
        /// `FI_PROTO_RXM`.
        FI_PROTO_RXM = 11,
        /// `FI_PROTO_RXD`.
        FI_PROTO_RXD = 12,
        /// `FI_PROTO_MLX`.
        FI_PROTO_MLX = 13,
        /// `FI_PROTO_NETWORKDIRECT`.
        FI_PROTO_NETWORKDIRECT = 14,
        /// `FI_PROTO_PSMX2`.
        FI_PROTO_PSMX2 = 15,
        /// `FI_PROTO_SHM`.
        FI_PROTO_SHM = 16,
        /// `FI_PROTO_MRAIL`.
        FI_PROTO_MRAIL = 17,
        /// `FI_PROTO_RSTREAM`.
        FI_PROTO_RSTREAM = 18,
        /// `FI_PROTO_RDMA_CM_IB_XRC`.
        FI_PROTO_RDMA_CM_IB_XRC = 19,
        /// `FI_PROTO_EFA`.
        FI_PROTO_EFA = 20,
        /// `FI_PROTO_PSMX3`.
        FI_PROTO_PSMX3 = 21,
        /// `FI_PROTO_RXM_TCP`.
        FI_PROTO_RXM_TCP = 22,
        /// `FI_PROTO_OPX`.
        FI_PROTO_OPX = 23,
        /// `FI_PROTO_CXI`.
        FI_PROTO_CXI = 24,
        /// `FI_PROTO_XNET`.
        FI_PROTO_XNET = 25,
        /// `FI_PROTO_COLL`.
        FI_PROTO_COLL = 26,
        /// `FI_PROTO_UCX`.
        FI_PROTO_UCX = 27,
        /// `FI_PROTO_SM2`.
        FI_PROTO_SM2 = 28,
        /// `FI_PROTO_CXI_RNR`.
        FI_PROTO_CXI_RNR = 29,
        /// `FI_PROTO_LPP`.
        FI_PROTO_LPP = 30,
        /// `FI_PROTO_LNX`.
        FI_PROTO_LNX = 31,
    }
}

c_anon_enum! {
    /// Tag formats (2.0) for `mem_tag_format`.
    pub enum anon_fi_tag_bits : c_int {
        /// `FI_TAG_BITS`: the format is a bit mask, as before 2.0.
        FI_TAG_BITS = 0,
        /// `FI_TAG_MPI`: tags from `fi_tag_mpi`.
        FI_TAG_MPI = 1,
        /// `FI_TAG_CCL`.
        FI_TAG_CCL = 2,
        /// `FI_TAG_MAX_FORMAT`.
        FI_TAG_MAX_FORMAT = 1 << 16,
    }
}

c_anon_enum! {
    /// Anonymous enum starting at `FI_TC_UNSPEC`.
    pub enum anon_fi_tc_unspec : c_int {
        /// `FI_TC_UNSPEC`.
        FI_TC_UNSPEC = 0,
        /// `FI_TC_DSCP`.
        FI_TC_DSCP = 256,
        /// `FI_TC_LABEL`.
        FI_TC_LABEL = 512,
        /// `FI_TC_BEST_EFFORT`.
        FI_TC_BEST_EFFORT = 512,
        /// `FI_TC_LOW_LATENCY`.
        FI_TC_LOW_LATENCY = 513,
        /// `FI_TC_DEDICATED_ACCESS`.
        FI_TC_DEDICATED_ACCESS = 514,
        /// `FI_TC_BULK_DATA`.
        FI_TC_BULK_DATA = 515,
        /// `FI_TC_SCAVENGER`.
        FI_TC_SCAVENGER = 516,
        /// `FI_TC_NETWORK_CTRL`.
        FI_TC_NETWORK_CTRL = 517,
    }
}

/// `struct fi_tx_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_tx_attr {
    /// `caps`.
    pub caps: u64,
    /// `mode`.
    pub mode: u64,
    /// `op_flags`.
    pub op_flags: u64,
    /// `msg_order`.
    pub msg_order: u64,
    /// `comp_order`.
    pub comp_order: u64,
    /// `inject_size`.
    pub inject_size: usize,
    /// `size`.
    pub size: usize,
    /// `iov_limit`.
    pub iov_limit: usize,
    /// `rma_iov_limit`.
    pub rma_iov_limit: usize,
    /// `tclass`.
    pub tclass: u32,
}

/// `struct fi_rx_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_rx_attr {
    /// `caps`.
    pub caps: u64,
    /// `mode`.
    pub mode: u64,
    /// `op_flags`.
    pub op_flags: u64,
    /// `msg_order`.
    pub msg_order: u64,
    /// `comp_order`.
    pub comp_order: u64,
    /// `total_buffered_recv`.
    pub total_buffered_recv: usize,
    /// `size`.
    pub size: usize,
    /// `iov_limit`.
    pub iov_limit: usize,
}

/// `struct fi_ep_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ep_attr {
    /// `type`.
    pub r#type: fi_ep_type,
    /// `protocol`.
    pub protocol: u32,
    /// `protocol_version`.
    pub protocol_version: u32,
    /// `max_msg_size`.
    pub max_msg_size: usize,
    /// `msg_prefix_size`.
    pub msg_prefix_size: usize,
    /// `max_order_raw_size`.
    pub max_order_raw_size: usize,
    /// `max_order_war_size`.
    pub max_order_war_size: usize,
    /// `max_order_waw_size`.
    pub max_order_waw_size: usize,
    /// `mem_tag_format`.
    pub mem_tag_format: u64,
    /// `tx_ctx_cnt`.
    pub tx_ctx_cnt: usize,
    /// `rx_ctx_cnt`.
    pub rx_ctx_cnt: usize,
    /// `auth_key_size`.
    pub auth_key_size: usize,
    /// `auth_key`.
    pub auth_key: *mut u8,
}

/// The anonymous union holding `fi_domain_attr.data_progress` (2.0: the
/// same value is also named `progress`).
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_domain_attr_progress {
    /// `data_progress`.
    pub data_progress: fi_progress,
    /// `progress`.
    pub progress: fi_progress,
}

/// `struct fi_domain_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_domain_attr {
    /// `domain`.
    pub domain: *mut fid_domain,
    /// `name`.
    pub name: *mut c_char,
    /// `threading`.
    pub threading: fi_threading,
    /// `control_progress`.
    pub control_progress: fi_progress,
    /// `data_progress`, also named `progress` since 2.0 (an anonymous union).
    pub __anon_progress: __anon_fi_domain_attr_progress,
    /// `resource_mgmt`.
    pub resource_mgmt: fi_resource_mgmt,
    /// `av_type`.
    pub av_type: fi_av_type,
    /// `mr_mode`.
    pub mr_mode: c_int,
    /// `mr_key_size`.
    pub mr_key_size: usize,
    /// `cq_data_size`.
    pub cq_data_size: usize,
    /// `cq_cnt`.
    pub cq_cnt: usize,
    /// `ep_cnt`.
    pub ep_cnt: usize,
    /// `tx_ctx_cnt`.
    pub tx_ctx_cnt: usize,
    /// `rx_ctx_cnt`.
    pub rx_ctx_cnt: usize,
    /// `max_ep_tx_ctx`.
    pub max_ep_tx_ctx: usize,
    /// `max_ep_rx_ctx`.
    pub max_ep_rx_ctx: usize,
    /// `max_ep_stx_ctx`.
    pub max_ep_stx_ctx: usize,
    /// `max_ep_srx_ctx`.
    pub max_ep_srx_ctx: usize,
    /// `cntr_cnt`.
    pub cntr_cnt: usize,
    /// `mr_iov_limit`.
    pub mr_iov_limit: usize,
    /// `caps`.
    pub caps: u64,
    /// `mode`.
    pub mode: u64,
    /// `auth_key`.
    pub auth_key: *mut u8,
    /// `auth_key_size`.
    pub auth_key_size: usize,
    /// `max_err_data`.
    pub max_err_data: usize,
    /// `mr_cnt`.
    pub mr_cnt: usize,
    /// `tclass`.
    pub tclass: u32,
    /// `max_ep_auth_key` (ABI 1.7, libfabric 1.20).
    pub max_ep_auth_key: usize,
    /// `max_group_id` (ABI 1.8, libfabric 2.0).
    pub max_group_id: u32,
    /// `max_cntr_value` (ABI 1.9, libfabric 2.5).
    pub max_cntr_value: u64,
    /// `max_err_cntr_value` (ABI 1.9, libfabric 2.5).
    pub max_err_cntr_value: u64,
}

/// `struct fi_fabric_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_fabric_attr {
    /// `fabric`.
    pub fabric: *mut fid_fabric,
    /// `name`.
    pub name: *mut c_char,
    /// `prov_name`.
    pub prov_name: *mut c_char,
    /// `prov_version`.
    pub prov_version: u32,
    /// `api_version`.
    pub api_version: u32,
}

/// `struct fi_info`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_info {
    /// `next`.
    pub next: *mut fi_info,
    /// `caps`.
    pub caps: u64,
    /// `mode`.
    pub mode: u64,
    /// `addr_format`.
    pub addr_format: u32,
    /// `src_addrlen`.
    pub src_addrlen: usize,
    /// `dest_addrlen`.
    pub dest_addrlen: usize,
    /// `src_addr`.
    pub src_addr: *mut c_void,
    /// `dest_addr`.
    pub dest_addr: *mut c_void,
    /// `handle`.
    pub handle: fid_t,
    /// `tx_attr`.
    pub tx_attr: *mut fi_tx_attr,
    /// `rx_attr`.
    pub rx_attr: *mut fi_rx_attr,
    /// `ep_attr`.
    pub ep_attr: *mut fi_ep_attr,
    /// `domain_attr`.
    pub domain_attr: *mut fi_domain_attr,
    /// `fabric_attr`.
    pub fabric_attr: *mut fi_fabric_attr,
    /// `nic`.
    pub nic: *mut fid_nic,
}

/// `struct fi_device_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_device_attr {
    /// `name`.
    pub name: *mut c_char,
    /// `device_id`.
    pub device_id: *mut c_char,
    /// `device_version`.
    pub device_version: *mut c_char,
    /// `vendor_id`.
    pub vendor_id: *mut c_char,
    /// `driver`.
    pub driver: *mut c_char,
    /// `firmware`.
    pub firmware: *mut c_char,
}

c_enum! {
    /// `enum fi_bus_type`.
    pub enum fi_bus_type : c_uint {
        /// `FI_BUS_UNSPEC`.
        FI_BUS_UNSPEC = 0,
        /// `FI_BUS_UNKNOWN`.
        FI_BUS_UNKNOWN = 0,
        /// `FI_BUS_PCI`.
        FI_BUS_PCI = 1,
    }
}

/// `struct fi_pci_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_pci_attr {
    /// `domain_id`.
    pub domain_id: u16,
    /// `bus_id`.
    pub bus_id: u8,
    /// `device_id`.
    pub device_id: u8,
    /// `function_id`.
    pub function_id: u8,
}

/// Anonymous member `attr` of `fi_bus_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_bus_attr_attr {
    /// `pci`.
    pub pci: fi_pci_attr,
}

/// `struct fi_bus_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_bus_attr {
    /// `bus_type`.
    pub bus_type: fi_bus_type,
    /// `attr`.
    pub attr: __anon_fi_bus_attr_attr,
}

c_enum! {
    /// `enum fi_link_state`.
    pub enum fi_link_state : c_uint {
        /// `FI_LINK_UNKNOWN`.
        FI_LINK_UNKNOWN = 0,
        /// `FI_LINK_DOWN`.
        FI_LINK_DOWN = 1,
        /// `FI_LINK_UP`.
        FI_LINK_UP = 2,
    }
}

/// `struct fi_link_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_link_attr {
    /// `address`.
    pub address: *mut c_char,
    /// `mtu`.
    pub mtu: usize,
    /// `speed`.
    pub speed: usize,
    /// `state`.
    pub state: fi_link_state,
    /// `network_type`.
    pub network_type: *mut c_char,
}

c_anon_enum! {
    /// Anonymous enum starting at `FI_CLASS_UNSPEC`.
    pub enum anon_fi_class_unspec : c_int {
        /// `FI_CLASS_UNSPEC`.
        FI_CLASS_UNSPEC = 0,
        /// `FI_CLASS_FABRIC`.
        FI_CLASS_FABRIC = 1,
        /// `FI_CLASS_DOMAIN`.
        FI_CLASS_DOMAIN = 2,
        /// `FI_CLASS_EP`.
        FI_CLASS_EP = 3,
        /// `FI_CLASS_SEP`.
        FI_CLASS_SEP = 4,
        /// `FI_CLASS_RX_CTX`.
        FI_CLASS_RX_CTX = 5,
        /// `FI_CLASS_SRX_CTX`.
        FI_CLASS_SRX_CTX = 6,
        /// `FI_CLASS_TX_CTX`.
        FI_CLASS_TX_CTX = 7,
        /// `FI_CLASS_STX_CTX`.
        FI_CLASS_STX_CTX = 8,
        /// `FI_CLASS_PEP`.
        FI_CLASS_PEP = 9,
        /// `FI_CLASS_INTERFACE`.
        FI_CLASS_INTERFACE = 10,
        /// `FI_CLASS_AV`.
        FI_CLASS_AV = 11,
        /// `FI_CLASS_MR`.
        FI_CLASS_MR = 12,
        /// `FI_CLASS_EQ`.
        FI_CLASS_EQ = 13,
        /// `FI_CLASS_CQ`.
        FI_CLASS_CQ = 14,
        /// `FI_CLASS_CNTR`.
        FI_CLASS_CNTR = 15,
        /// `FI_CLASS_WAIT`.
        FI_CLASS_WAIT = 16,
        /// `FI_CLASS_POLL`.
        FI_CLASS_POLL = 17,
        /// `FI_CLASS_CONNREQ`.
        FI_CLASS_CONNREQ = 18,
        /// `FI_CLASS_MC`.
        FI_CLASS_MC = 19,
        /// `FI_CLASS_NIC`.
        FI_CLASS_NIC = 20,
        /// `FI_CLASS_AV_SET`.
        FI_CLASS_AV_SET = 21,
        /// `FI_CLASS_MR_CACHE`.
        FI_CLASS_MR_CACHE = 22,
        /// `FI_CLASS_MEM_MONITOR`.
        FI_CLASS_MEM_MONITOR = 23,
        /// `FI_CLASS_PEER_CQ`.
        FI_CLASS_PEER_CQ = 24,
        /// `FI_CLASS_PEER_SRX`.
        FI_CLASS_PEER_SRX = 25,
        /// `FI_CLASS_LOG`.
        FI_CLASS_LOG = 26,
        /// `FI_CLASS_PEER_AV`.
        FI_CLASS_PEER_AV = 27,
        /// `FI_CLASS_PEER_AV_SET`.
        FI_CLASS_PEER_AV_SET = 28,
        /// `FI_CLASS_PEER_CNTR`.
        FI_CLASS_PEER_CNTR = 29,
        /// `FI_CLASS_PROFILE`.
        FI_CLASS_PROFILE = 30,
    }
}

/// `struct fi_ops`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops {
    /// `size`.
    pub size: usize,
    /// `close`.
    pub close: Option<unsafe extern "C" fn(fid: *mut fid) -> c_int>,
    /// `bind`.
    pub bind: Option<unsafe extern "C" fn(fid: *mut fid, bfid: *mut fid, flags: u64) -> c_int>,
    /// `control`.
    pub control:
        Option<unsafe extern "C" fn(fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int>,
    /// `ops_open`.
    pub ops_open: Option<
        unsafe extern "C" fn(
            fid: *mut fid,
            name: *const c_char,
            flags: u64,
            ops: *mut *mut c_void,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `tostr`.
    pub tostr: Option<unsafe extern "C" fn(fid: *const fid, buf: *mut c_char, len: usize) -> c_int>,
    /// `ops_set`.
    pub ops_set: Option<
        unsafe extern "C" fn(
            fid: *mut fid,
            name: *const c_char,
            flags: u64,
            ops: *mut c_void,
            context: *mut c_void,
        ) -> c_int,
    >,
}

/// `struct fid`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid {
    /// `fclass`.
    pub fclass: usize,
    /// `context`.
    pub context: *mut c_void,
    /// `ops`.
    pub ops: *mut fi_ops,
}

extern "C" {
    /// `fi_getinfo`.
    pub fn fi_getinfo(
        version: u32,
        node: *const c_char,
        service: *const c_char,
        flags: u64,
        hints: *const fi_info,
        info: *mut *mut fi_info,
    ) -> c_int;
}

extern "C" {
    /// `fi_freeinfo`.
    pub fn fi_freeinfo(info: *mut fi_info);
}

extern "C" {
    /// `fi_dupinfo`.
    pub fn fi_dupinfo(info: *const fi_info) -> *mut fi_info;
}

/// `struct fi_ops_fabric`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_fabric {
    /// `size`.
    pub size: usize,
    /// `domain`.
    pub domain: Option<
        unsafe extern "C" fn(
            fabric: *mut fid_fabric,
            info: *mut fi_info,
            dom: *mut *mut fid_domain,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `passive_ep`.
    pub passive_ep: Option<
        unsafe extern "C" fn(
            fabric: *mut fid_fabric,
            info: *mut fi_info,
            pep: *mut *mut fid_pep,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `eq_open`.
    pub eq_open: Option<
        unsafe extern "C" fn(
            fabric: *mut fid_fabric,
            attr: *mut fi_eq_attr,
            eq: *mut *mut fid_eq,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `wait_open`.
    pub wait_open: Option<
        unsafe extern "C" fn(
            fabric: *mut fid_fabric,
            attr: *mut fi_wait_attr,
            waitset: *mut *mut fid_wait,
        ) -> c_int,
    >,
    /// `trywait`.
    pub trywait: Option<
        unsafe extern "C" fn(fabric: *mut fid_fabric, fids: *mut *mut fid, count: c_int) -> c_int,
    >,
    /// `domain2`.
    pub domain2: Option<
        unsafe extern "C" fn(
            fabric: *mut fid_fabric,
            info: *mut fi_info,
            dom: *mut *mut fid_domain,
            flags: u64,
            context: *mut c_void,
        ) -> c_int,
    >,
}

/// `struct fid_fabric`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_fabric {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_fabric,
    /// `api_version`.
    pub api_version: u32,
}

extern "C" {
    /// `fi_fabric2` (libfabric 2.0): opens the fabric an `fi_info` names.
    pub fn fi_fabric2(
        info: *mut fi_info,
        fabric: *mut *mut fid_fabric,
        flags: u64,
        context: *mut c_void,
    ) -> c_int;
}

extern "C" {
    /// `fi_fabric`.
    pub fn fi_fabric(
        attr: *mut fi_fabric_attr,
        fabric: *mut *mut fid_fabric,
        context: *mut c_void,
    ) -> c_int;
}

extern "C" {
    /// `fi_open`.
    pub fn fi_open(
        version: u32,
        name: *const c_char,
        attr: *mut c_void,
        attr_len: usize,
        flags: u64,
        fid: *mut *mut fid,
        context: *mut c_void,
    ) -> c_int;
}

/// `struct fid_nic`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_nic {
    /// `fid`.
    pub fid: fid,
    /// `device_attr`.
    pub device_attr: *mut fi_device_attr,
    /// `bus_attr`.
    pub bus_attr: *mut fi_bus_attr,
    /// `link_attr`.
    pub link_attr: *mut fi_link_attr,
    /// `prov_attr`.
    pub prov_attr: *mut c_void,
}

/// `struct fi_alias`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_alias {
    /// `fid`.
    pub fid: *mut *mut fid,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_fid_var`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_fid_var {
    /// `name`.
    pub name: c_int,
    /// `val`.
    pub val: *mut c_void,
}

/// `struct fi_mr_raw_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mr_raw_attr {
    /// `flags`.
    pub flags: u64,
    /// `base_addr`.
    pub base_addr: *mut u64,
    /// `raw_key`.
    pub raw_key: *mut u8,
    /// `key_size`.
    pub key_size: *mut usize,
}

/// `struct fi_mr_map_raw`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mr_map_raw {
    /// `flags`.
    pub flags: u64,
    /// `base_addr`.
    pub base_addr: u64,
    /// `raw_key`.
    pub raw_key: *mut u8,
    /// `key_size`.
    pub key_size: usize,
    /// `key`.
    pub key: *mut u64,
}

c_anon_enum! {
    /// Anonymous enum starting at `FI_GETFIDFLAG`.
    pub enum anon_fi_getfidflag : c_int {
        /// `FI_GETFIDFLAG`.
        FI_GETFIDFLAG = 0,
        /// `FI_SETFIDFLAG`.
        FI_SETFIDFLAG = 1,
        /// `FI_GETOPSFLAG`.
        FI_GETOPSFLAG = 2,
        /// `FI_SETOPSFLAG`.
        FI_SETOPSFLAG = 3,
        /// `FI_ALIAS`.
        FI_ALIAS = 4,
        /// `FI_GETWAIT`.
        FI_GETWAIT = 5,
        /// `FI_ENABLE`.
        FI_ENABLE = 6,
        /// `FI_BACKLOG`.
        FI_BACKLOG = 7,
        /// `FI_GET_RAW_MR`.
        FI_GET_RAW_MR = 8,
        /// `FI_MAP_RAW_MR`.
        FI_MAP_RAW_MR = 9,
        /// `FI_UNMAP_KEY`.
        FI_UNMAP_KEY = 10,
        /// `FI_QUEUE_WORK`.
        FI_QUEUE_WORK = 11,
        /// `FI_CANCEL_WORK`.
        FI_CANCEL_WORK = 12,
        /// `FI_FLUSH_WORK`.
        FI_FLUSH_WORK = 13,
        /// `FI_REFRESH`.
        FI_REFRESH = 14,
        /// `FI_DUP`.
        FI_DUP = 15,
        /// `FI_GETWAITOBJ`.
        FI_GETWAITOBJ = 16,
        /// `FI_GET_VAL`.
        FI_GET_VAL = 17,
        /// `FI_SET_VAL`.
        FI_SET_VAL = 18,
        /// `FI_EXPORT_FID`.
        FI_EXPORT_FID = 19,
        /// `FI_GET_FD` (2.2): the `int` file descriptor underneath an
        /// endpoint (a tcp socket), for socket options libfabric does not
        /// expose.
        FI_GET_FD = 20,
    }
}

c_enum! {
    /// `enum fi_type`.
    pub enum fi_type : c_uint {
        /// `FI_TYPE_INFO`.
        FI_TYPE_INFO = 0,
        /// `FI_TYPE_EP_TYPE`.
        FI_TYPE_EP_TYPE = 1,
        /// `FI_TYPE_CAPS`.
        FI_TYPE_CAPS = 2,
        /// `FI_TYPE_OP_FLAGS`.
        FI_TYPE_OP_FLAGS = 3,
        /// `FI_TYPE_ADDR_FORMAT`.
        FI_TYPE_ADDR_FORMAT = 4,
        /// `FI_TYPE_TX_ATTR`.
        FI_TYPE_TX_ATTR = 5,
        /// `FI_TYPE_RX_ATTR`.
        FI_TYPE_RX_ATTR = 6,
        /// `FI_TYPE_EP_ATTR`.
        FI_TYPE_EP_ATTR = 7,
        /// `FI_TYPE_DOMAIN_ATTR`.
        FI_TYPE_DOMAIN_ATTR = 8,
        /// `FI_TYPE_FABRIC_ATTR`.
        FI_TYPE_FABRIC_ATTR = 9,
        /// `FI_TYPE_THREADING`.
        FI_TYPE_THREADING = 10,
        /// `FI_TYPE_PROGRESS`.
        FI_TYPE_PROGRESS = 11,
        /// `FI_TYPE_PROTOCOL`.
        FI_TYPE_PROTOCOL = 12,
        /// `FI_TYPE_MSG_ORDER`.
        FI_TYPE_MSG_ORDER = 13,
        /// `FI_TYPE_MODE`.
        FI_TYPE_MODE = 14,
        /// `FI_TYPE_AV_TYPE`.
        FI_TYPE_AV_TYPE = 15,
        /// `FI_TYPE_ATOMIC_TYPE`.
        FI_TYPE_ATOMIC_TYPE = 16,
        /// `FI_TYPE_ATOMIC_OP`.
        FI_TYPE_ATOMIC_OP = 17,
        /// `FI_TYPE_VERSION`.
        FI_TYPE_VERSION = 18,
        /// `FI_TYPE_EQ_EVENT`.
        FI_TYPE_EQ_EVENT = 19,
        /// `FI_TYPE_CQ_EVENT_FLAGS`.
        FI_TYPE_CQ_EVENT_FLAGS = 20,
        /// `FI_TYPE_MR_MODE`.
        FI_TYPE_MR_MODE = 21,
        /// `FI_TYPE_OP_TYPE`.
        FI_TYPE_OP_TYPE = 22,
        /// `FI_TYPE_FID`.
        FI_TYPE_FID = 23,
        /// `FI_TYPE_COLLECTIVE_OP`.
        FI_TYPE_COLLECTIVE_OP = 24,
        /// `FI_TYPE_HMEM_IFACE`.
        FI_TYPE_HMEM_IFACE = 25,
        /// `FI_TYPE_CQ_FORMAT`.
        FI_TYPE_CQ_FORMAT = 26,
        /// `FI_TYPE_LOG_LEVEL`.
        FI_TYPE_LOG_LEVEL = 27,
        /// `FI_TYPE_LOG_SUBSYS`.
        FI_TYPE_LOG_SUBSYS = 28,
        /// `FI_TYPE_AV_ATTR`.
        FI_TYPE_AV_ATTR = 29,
        /// `FI_TYPE_CQ_ATTR`.
        FI_TYPE_CQ_ATTR = 30,
        /// `FI_TYPE_MR_ATTR`.
        FI_TYPE_MR_ATTR = 31,
        /// `FI_TYPE_CNTR_ATTR`.
        FI_TYPE_CNTR_ATTR = 32,
        /// `FI_TYPE_CQ_ERR_ENTRY`.
        FI_TYPE_CQ_ERR_ENTRY = 33,
        /// `FI_TYPE_CQ_WAIT_COND` (by 2.4): an `enum fi_cq_wait_cond`.
        FI_TYPE_CQ_WAIT_COND = 34,
        /// `FI_TYPE_WAIT_OBJ` (by 2.4): an `enum fi_wait_obj`.
        FI_TYPE_WAIT_OBJ = 35,
    }
}

extern "C" {
    /// `fi_tostr`.
    pub fn fi_tostr(data: *const c_void, datatype: fi_type) -> *mut c_char;
}

extern "C" {
    /// `fi_tostr_r`.
    pub fn fi_tostr_r(
        buf: *mut c_char,
        len: usize,
        data: *const c_void,
        datatype: fi_type,
    ) -> *mut c_char;
}

c_enum! {
    /// `enum fi_param_type`.
    pub enum fi_param_type : c_uint {
        /// `FI_PARAM_STRING`.
        FI_PARAM_STRING = 0,
        /// `FI_PARAM_INT`.
        FI_PARAM_INT = 1,
        /// `FI_PARAM_BOOL`.
        FI_PARAM_BOOL = 2,
        /// `FI_PARAM_SIZE_T`.
        FI_PARAM_SIZE_T = 3,
    }
}

/// `struct fi_param`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_param {
    /// `name`.
    pub name: *const c_char,
    /// `type`.
    pub r#type: fi_param_type,
    /// `help_string`.
    pub help_string: *const c_char,
    /// `value`.
    pub value: *const c_char,
}

extern "C" {
    /// `fi_getparams`.
    pub fn fi_getparams(params: *mut *mut fi_param, count: *mut c_int) -> c_int;
}

extern "C" {
    /// `fi_freeparams`.
    pub fn fi_freeparams(params: *mut fi_param);
}

/// `struct fi_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_context {
    /// `internal`.
    pub internal: [*mut c_void; 4],
}

/// `struct fi_context2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_context2 {
    /// `internal`.
    pub internal: [*mut c_void; 8],
}

/// `struct fi_recv_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_recv_context {
    /// `ep`.
    pub ep: *mut fid_ep,
    /// `context`.
    pub context: *mut c_void,
}

/// `FI_VARIABLE_MSG`: dropped in 2.0, defined as no bit so old sources build.
pub const FI_VARIABLE_MSG: u64 = 0;

/// `FI_NOTIFY_FLAGS_ONLY`: dropped in 2.0, no bit.
pub const FI_NOTIFY_FLAGS_ONLY: u64 = 0;

/// `FI_RESTRICTED_COMP`: dropped in 2.0, no bit.
pub const FI_RESTRICTED_COMP: u64 = 0;

/// `FI_EP_SOCK_STREAM`: dropped in 2.0, an alias of `FI_EP_UNSPEC`.
pub const FI_EP_SOCK_STREAM: fi_ep_type = FI_EP_UNSPEC;
