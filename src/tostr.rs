//! `fi_tostr` and `fi_tostr_r`: the text libfabric prints for its values,
//! byte for byte as Debian's `fi_info -v` shows it (checked by
//! `tests/c/t-tostr-diff.sh` against upstream's library).
//!
//! Output goes through [`Out`], which models the bounded buffer of
//! `fi_tostr_r`: text beyond the buffer is dropped piece by piece, and the
//! trailing `", "` of a flag list is removed from whatever was kept, which
//! is what upstream's output shows for short buffers.
//!
//! # Raw memory
//!
//! `fi_tostr` takes an untyped pointer and a type code, so [`write()`] reads
//! C memory: the value the code names, and for `fi_info` and the attribute
//! structs the strings and addresses they point to. It relies on the
//! caller's promise that each is NULL or valid for its stated length (rule
//! 2 of the pointer contract in `oxifabric_capi`'s crate docs); every
//! `unsafe` read below says which part of that promise it uses. Nothing is
//! written or freed.

use crate::abi::layouts::v1;
use crate::abi::*;
use core::ffi::CStr;

/// A text sink with an optional capacity (in bytes of text).
pub struct Out {
    s: String,
    cap: Option<usize>,
}

impl Out {
    /// Unbounded (for `fi_tostr`).
    pub fn new() -> Out {
        Out {
            s: String::new(),
            cap: None,
        }
    }

    /// Bounded like a `fi_tostr_r` buffer of `len` bytes.
    pub fn bounded(len: usize) -> Out {
        Out {
            s: String::new(),
            cap: Some(len.saturating_sub(2)),
        }
    }

    fn push(&mut self, t: &str) {
        match self.cap {
            None => self.s.push_str(t),
            Some(c) => {
                let room = c.saturating_sub(self.s.len());
                let k = t.len().min(room);
                self.s.push_str(&t[..k]);
            }
        }
    }

    fn trim_sep(&mut self) {
        if self.s.ends_with(", ") {
            self.s.truncate(self.s.len() - 2);
        }
    }

    /// The text.
    pub fn into_string(self) -> String {
        self.s
    }
}

impl Default for Out {
    fn default() -> Self {
        Out::new()
    }
}

const CAPS: &[(u64, &str)] = &[
    (FI_MSG, "FI_MSG"),
    (FI_RMA, "FI_RMA"),
    (FI_TAGGED, "FI_TAGGED"),
    (FI_ATOMIC, "FI_ATOMIC"),
    (FI_MULTICAST, "FI_MULTICAST"),
    (FI_COLLECTIVE, "FI_COLLECTIVE"),
    (FI_READ, "FI_READ"),
    (FI_WRITE, "FI_WRITE"),
    (FI_RECV, "FI_RECV"),
    (FI_SEND, "FI_SEND"),
    (FI_REMOTE_READ, "FI_REMOTE_READ"),
    (FI_REMOTE_WRITE, "FI_REMOTE_WRITE"),
    (FI_MULTI_RECV, "FI_MULTI_RECV"),
    (FI_REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA"),
    (FI_TRIGGER, "FI_TRIGGER"),
    (FI_FENCE, "FI_FENCE"),
    (v1::FI_VARIABLE_MSG, "FI_VARIABLE_MSG"),
    (FI_RMA_PMEM, "FI_RMA_PMEM"),
    (FI_SOURCE_ERR, "FI_SOURCE_ERR"),
    (FI_LOCAL_COMM, "FI_LOCAL_COMM"),
    (FI_REMOTE_COMM, "FI_REMOTE_COMM"),
    (FI_SHARED_AV, "FI_SHARED_AV"),
    (FI_RMA_EVENT, "FI_RMA_EVENT"),
    (FI_SOURCE, "FI_SOURCE"),
    (FI_NAMED_RX_CTX, "FI_NAMED_RX_CTX"),
    (FI_DIRECTED_RECV, "FI_DIRECTED_RECV"),
    (FI_HMEM, "FI_HMEM"),
];

const OP_FLAGS: &[(u64, &str)] = &[
    (FI_MULTICAST, "FI_MULTICAST"),
    (FI_MULTI_RECV, "FI_MULTI_RECV"),
    (FI_REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA"),
    (FI_MORE, "FI_MORE"),
    (FI_PEEK, "FI_PEEK"),
    (FI_TRIGGER, "FI_TRIGGER"),
    (FI_FENCE, "FI_FENCE"),
    (FI_COMPLETION, "FI_COMPLETION"),
    (FI_INJECT, "FI_INJECT"),
    (FI_INJECT_COMPLETE, "FI_INJECT_COMPLETE"),
    (FI_TRANSMIT_COMPLETE, "FI_TRANSMIT_COMPLETE"),
    (FI_DELIVERY_COMPLETE, "FI_DELIVERY_COMPLETE"),
    (FI_MATCH_COMPLETE, "FI_MATCH_COMPLETE"),
    (FI_AFFINITY, "FI_AFFINITY"),
    (FI_CLAIM, "FI_CLAIM"),
    (FI_DISCARD, "FI_DISCARD"),
];

const MSG_ORDER: &[(u64, &str)] = &[
    (FI_ORDER_RAR, "FI_ORDER_RAR"),
    (FI_ORDER_RAW, "FI_ORDER_RAW"),
    (FI_ORDER_RAS, "FI_ORDER_RAS"),
    (FI_ORDER_WAR, "FI_ORDER_WAR"),
    (FI_ORDER_WAW, "FI_ORDER_WAW"),
    (FI_ORDER_WAS, "FI_ORDER_WAS"),
    (FI_ORDER_SAR, "FI_ORDER_SAR"),
    (FI_ORDER_SAW, "FI_ORDER_SAW"),
    (FI_ORDER_SAS, "FI_ORDER_SAS"),
    (FI_ORDER_RMA_RAR, "FI_ORDER_RMA_RAR"),
    (FI_ORDER_RMA_RAW, "FI_ORDER_RMA_RAW"),
    (FI_ORDER_RMA_WAR, "FI_ORDER_RMA_WAR"),
    (FI_ORDER_RMA_WAW, "FI_ORDER_RMA_WAW"),
    (FI_ORDER_ATOMIC_RAR, "FI_ORDER_ATOMIC_RAR"),
    (FI_ORDER_ATOMIC_RAW, "FI_ORDER_ATOMIC_RAW"),
    (FI_ORDER_ATOMIC_WAR, "FI_ORDER_ATOMIC_WAR"),
    (FI_ORDER_ATOMIC_WAW, "FI_ORDER_ATOMIC_WAW"),
];

const MODE: &[(u64, &str)] = &[
    (FI_CONTEXT, "FI_CONTEXT"),
    (FI_MSG_PREFIX, "FI_MSG_PREFIX"),
    (FI_ASYNC_IOV, "FI_ASYNC_IOV"),
    (FI_RX_CQ_DATA, "FI_RX_CQ_DATA"),
    (FI_LOCAL_MR, "FI_LOCAL_MR"),
    (v1::FI_NOTIFY_FLAGS_ONLY, "FI_NOTIFY_FLAGS_ONLY"),
    (v1::FI_RESTRICTED_COMP, "FI_RESTRICTED_COMP"),
    (FI_CONTEXT2, "FI_CONTEXT2"),
    (v1::FI_BUFFERED_RECV, "FI_BUFFERED_RECV"),
];

const CQ_FLAGS: &[(u64, &str)] = &[
    (FI_SEND, "FI_SEND"),
    (FI_RECV, "FI_RECV"),
    (FI_RMA, "FI_RMA"),
    (FI_ATOMIC, "FI_ATOMIC"),
    (FI_MSG, "FI_MSG"),
    (FI_TAGGED, "FI_TAGGED"),
    (FI_READ, "FI_READ"),
    (FI_WRITE, "FI_WRITE"),
    (FI_REMOTE_READ, "FI_REMOTE_READ"),
    (FI_REMOTE_WRITE, "FI_REMOTE_WRITE"),
    (FI_REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA"),
    (FI_MULTI_RECV, "FI_MULTI_RECV"),
    (FI_MORE, "FI_MORE"),
    (FI_CLAIM, "FI_CLAIM"),
];

const MR_MODE: &[(c_int, &str)] = &[
    (FI_MR_BASIC as c_int, "FI_MR_BASIC"),
    (FI_MR_SCALABLE as c_int, "FI_MR_SCALABLE"),
    (FI_MR_LOCAL, "FI_MR_LOCAL"),
    (FI_MR_RAW, "FI_MR_RAW"),
    (FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"),
    (FI_MR_ALLOCATED, "FI_MR_ALLOCATED"),
    (FI_MR_PROV_KEY, "FI_MR_PROV_KEY"),
    (FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"),
    (FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"),
    (FI_MR_ENDPOINT, "FI_MR_ENDPOINT"),
    (FI_MR_HMEM, "FI_MR_HMEM"),
    (FI_MR_COLLECTIVE, "FI_MR_COLLECTIVE"),
];

const EP_TYPES: &[&str] = &[
    "FI_EP_UNSPEC",
    "FI_EP_MSG",
    "FI_EP_DGRAM",
    "FI_EP_RDM",
    "FI_EP_SOCK_STREAM",
    "FI_EP_SOCK_DGRAM",
];
const ADDR_FORMATS: &[&str] = &[
    "FI_FORMAT_UNSPEC",
    "FI_SOCKADDR",
    "FI_SOCKADDR_IN",
    "FI_SOCKADDR_IN6",
    "FI_SOCKADDR_IB",
    "FI_ADDR_PSMX",
    "FI_ADDR_GNI",
    "FI_ADDR_BGQ",
    "FI_ADDR_MLX",
    "FI_ADDR_STR",
    "FI_ADDR_PSMX2",
    "FI_ADDR_IB_UD",
    "FI_ADDR_EFA",
    "FI_ADDR_PSMX3",
    "FI_ADDR_OPX",
    "FI_ADDR_CXI",
    "FI_ADDR_UCX",
    "FI_SOCKADDR_IP",
];
const THREADING: &[&str] = &[
    "FI_THREAD_UNSPEC",
    "FI_THREAD_SAFE",
    "FI_THREAD_FID",
    "FI_THREAD_DOMAIN",
    "FI_THREAD_COMPLETION",
    "FI_THREAD_ENDPOINT",
];
const PROGRESS: &[&str] = &[
    "FI_PROGRESS_UNSPEC",
    "FI_PROGRESS_AUTO",
    "FI_PROGRESS_MANUAL",
];
const PROTOCOLS: &[(u32, &str)] = &[
    (0, "FI_PROTO_UNSPEC"),
    (1, "FI_PROTO_RDMA_CM_IB_RC"),
    (2, "FI_PROTO_IWARP"),
    (3, "FI_PROTO_IB_UD"),
    (4, "FI_PROTO_PSMX"),
    (5, "FI_PROTO_UDP"),
    (6, "FI_PROTO_SOCK_TCP"),
    (8, "FI_PROTO_IWARP_RDM"),
    (9, "FI_PROTO_IB_RDM"),
    (10, "FI_PROTO_GNI"),
    (11, "FI_PROTO_RXM"),
    (12, "FI_PROTO_RXD"),
    (13, "FI_PROTO_MLX"),
    (14, "FI_PROTO_NETWORKDIRECT"),
    (15, "FI_PROTO_PSMX2"),
    (16, "FI_PROTO_SHM"),
    (18, "FI_PROTO_RSTREAM"),
    (19, "FI_PROTO_RDMA_CM_IB_XRC"),
    (20, "FI_PROTO_EFA"),
    (21, "FI_PROTO_PSMX3"),
    (22, "FI_PROTO_RXM_TCP"),
    (23, "FI_PROTO_OPX"),
    (24, "FI_PROTO_CXI"),
    (25, "FI_PROTO_XNET"),
];
const AV_TYPES: &[&str] = &["FI_AV_UNSPEC", "FI_AV_MAP", "FI_AV_TABLE"];
const DATATYPES: &[&str] = &[
    "FI_INT8",
    "FI_UINT8",
    "FI_INT16",
    "FI_UINT16",
    "FI_INT32",
    "FI_UINT32",
    "FI_INT64",
    "FI_UINT64",
    "FI_FLOAT",
    "FI_DOUBLE",
    "FI_FLOAT_COMPLEX",
    "FI_DOUBLE_COMPLEX",
    "FI_LONG_DOUBLE",
    "FI_LONG_DOUBLE_COMPLEX",
    "FI_INT128",
    "FI_UINT128",
];
const ATOMIC_OPS: &[&str] = &[
    "FI_MIN",
    "FI_MAX",
    "FI_SUM",
    "FI_PROD",
    "FI_LOR",
    "FI_LAND",
    "FI_BOR",
    "FI_BAND",
    "FI_LXOR",
    "FI_BXOR",
    "FI_ATOMIC_READ",
    "FI_ATOMIC_WRITE",
    "FI_CSWAP",
    "FI_CSWAP_NE",
    "FI_CSWAP_LE",
    "FI_CSWAP_LT",
    "FI_CSWAP_GE",
    "FI_CSWAP_GT",
    "FI_MSWAP",
];
const EQ_EVENTS: &[&str] = &[
    "FI_NOTIFY",
    "FI_CONNREQ",
    "FI_CONNECTED",
    "FI_SHUTDOWN",
    "FI_MR_COMPLETE",
    "FI_AV_COMPLETE",
    "FI_JOIN_COMPLETE",
];
const OP_TYPES: &[&str] = &[
    "FI_OP_RECV",
    "FI_OP_SEND",
    "FI_OP_TRECV",
    "FI_OP_TSEND",
    "FI_OP_READ",
    "FI_OP_WRITE",
    "FI_OP_ATOMIC",
    "FI_OP_FETCH_ATOMIC",
    "FI_OP_COMPARE_ATOMIC",
    "FI_OP_CNTR_SET",
    "FI_OP_CNTR_ADD",
];
const COLLECTIVES: &[&str] = &[
    "FI_BARRIER",
    "FI_BROADCAST",
    "FI_ALLTOALL",
    "FI_ALLREDUCE",
    "FI_ALLGATHER",
    "FI_REDUCE_SCATTER",
    "FI_REDUCE",
    "FI_SCATTER",
    "FI_GATHER",
];
const HMEM_IFACES: &[&str] = &[
    "FI_HMEM_SYSTEM",
    "FI_HMEM_CUDA",
    "FI_HMEM_ROCR",
    "FI_HMEM_ZE",
    "FI_HMEM_NEURON",
    "FI_HMEM_SYNAPSEAI",
];
const CQ_FORMATS: &[&str] = &[
    "FI_CQ_FORMAT_UNSPEC",
    "FI_CQ_FORMAT_CONTEXT",
    "FI_CQ_FORMAT_MSG",
    "FI_CQ_FORMAT_DATA",
    "FI_CQ_FORMAT_TAGGED",
];
const LOG_LEVELS: &[&str] = &["warn", "trace", "info", "debug"];
const LOG_SUBSYS: &[&str] = &[
    "core", "fabric", "domain", "ep_ctrl", "ep_data", "av", "cq", "eq", "mr", "cntr",
];

const WAIT_OBJS: &[&str] = &[
    "FI_WAIT_NONE",
    "FI_WAIT_UNSPEC",
    "FI_WAIT_SET",
    "FI_WAIT_FD",
    "FI_WAIT_MUTEX_COND",
    "FI_WAIT_YIELD",
    "FI_WAIT_POLLFD",
];
const CQ_WAIT_CONDS: &[&str] = &["FI_CQ_COND_NONE", "FI_CQ_COND_THRESHOLD"];

/// The release string `FI_TYPE_VERSION` prints whatever the data (upstream
/// prints its package version): that of the API the headers carry, "2.6.0",
/// the same release `fi_version()` and pkg-config name.
pub fn library_version() -> String {
    format!("{FI_MAJOR_VERSION}.{FI_MINOR_VERSION}.{FI_REVISION_VERSION}")
}

/// Bit 31 marks provider-specific address formats and protocols.
const PROV_SPECIFIC_BIT: u32 = 1 << 31;

fn name_of(table: &[&'static str], v: u32) -> &'static str {
    table.get(v as usize).copied().unwrap_or("Unknown")
}

fn flags(o: &mut Out, v: u64, table: &[(u64, &str)]) {
    for (bit, n) in table {
        if v & bit != 0 {
            o.push(n);
            o.push(", ");
        }
    }
    o.trim_sep();
}

fn mr_mode(o: &mut Out, v: c_int) {
    for (bit, n) in MR_MODE {
        if v & bit != 0 {
            o.push(n);
            o.push(", ");
        }
    }
    o.trim_sep();
}

fn comp_order(o: &mut Out, v: u64) {
    if v == FI_ORDER_NONE {
        o.push("FI_ORDER_NONE, ");
    }
    if v & FI_ORDER_STRICT as u64 != 0 {
        o.push("FI_ORDER_STRICT, ");
    }
    if v & FI_ORDER_DATA != 0 {
        o.push("FI_ORDER_DATA, ");
    }
    o.trim_sep();
}

fn addr_format(v: u32) -> &'static str {
    if v & PROV_SPECIFIC_BIT != 0 {
        "Provider specific"
    } else {
        name_of(ADDR_FORMATS, v)
    }
}

fn protocol(v: u32) -> &'static str {
    if v & PROV_SPECIFIC_BIT != 0 {
        return "Provider specific";
    }
    PROTOCOLS
        .iter()
        .find(|(k, _)| *k == v)
        .map_or("Unknown", |(_, n)| n)
}

fn line(o: &mut Out, indent: &str, key: &str, val: &str) {
    o.push(indent);
    o.push(key);
    o.push(": ");
    o.push(val);
    o.push("\n");
}

fn list(o: &mut Out, indent: &str, key: &str, f: impl FnOnce(&mut Out)) {
    o.push(indent);
    o.push(key);
    o.push(": [ ");
    f(o);
    o.push(" ]\n");
}

/// A C string's text, `(null)` for NULL.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn cstr_or_null(p: *const c_char) -> String {
    if p.is_null() {
        "(null)".into()
    } else {
        // SAFETY: not NULL, and NUL-terminated by the caller's promise.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

fn ptr_text(p: usize) -> String {
    if p == 0 {
        "(nil)".into()
    } else {
        format!("{p:#x}")
    }
}

fn version_text(v: u32) -> String {
    format!("{}.{}", v >> 16, v & 0xffff)
}

/// Text for an address of a given format (upstream's URL-like style).
///
/// # Safety
/// `p` is NULL or valid for `len` bytes; for `FI_ADDR_STR`, a C string.
unsafe fn addr_text(format: u32, p: *const c_void, len: usize) -> String {
    if p.is_null() {
        return "(null)".into();
    }
    match format as c_int {
        FI_SOCKADDR | FI_SOCKADDR_IN | FI_SOCKADDR_IN6 => {
            // SAFETY: p holds len bytes, by the caller's promise.
            match unsafe { crate::addr::from_sockaddr(p as *const u8, len) } {
                Some(std::net::SocketAddr::V4(a)) => {
                    format!("fi_sockaddr_in://{}:{}", a.ip(), a.port())
                }
                Some(std::net::SocketAddr::V6(a)) => {
                    format!("fi_sockaddr_in6://[{}]:{}", a.ip(), a.port())
                }
                None => "(unknown)".into(),
            }
        }
        // SAFETY: an FI_ADDR_STR address is a C string.
        FI_ADDR_STR => unsafe { cstr_or_null(p as *const c_char) },
        _ => "(unknown)".into(),
    }
}

fn tx_attr(o: &mut Out, a: &fi_tx_attr, ind: &str) {
    list(o, ind, "caps", |o| flags(o, a.caps, CAPS));
    list(o, ind, "mode", |o| flags(o, a.mode, MODE));
    list(o, ind, "op_flags", |o| flags(o, a.op_flags, OP_FLAGS));
    list(o, ind, "msg_order", |o| flags(o, a.msg_order, MSG_ORDER));
    list(o, ind, "comp_order", |o| comp_order(o, a.comp_order));
    line(o, ind, "inject_size", &a.inject_size.to_string());
    line(o, ind, "size", &a.size.to_string());
    line(o, ind, "iov_limit", &a.iov_limit.to_string());
    line(o, ind, "rma_iov_limit", &a.rma_iov_limit.to_string());
    line(o, ind, "tclass", &format!("{:#x}", a.tclass));
}

fn rx_attr(o: &mut Out, a: &fi_rx_attr, ind: &str) {
    list(o, ind, "caps", |o| flags(o, a.caps, CAPS));
    list(o, ind, "mode", |o| flags(o, a.mode, MODE));
    list(o, ind, "op_flags", |o| flags(o, a.op_flags, OP_FLAGS));
    list(o, ind, "msg_order", |o| flags(o, a.msg_order, MSG_ORDER));
    list(o, ind, "comp_order", |o| comp_order(o, a.comp_order));
    line(
        o,
        ind,
        "total_buffered_recv",
        &a.total_buffered_recv.to_string(),
    );
    line(o, ind, "size", &a.size.to_string());
    line(o, ind, "iov_limit", &a.iov_limit.to_string());
}

fn ep_attr(o: &mut Out, a: &fi_ep_attr, ind: &str) {
    line(o, ind, "type", name_of(EP_TYPES, a.r#type));
    line(o, ind, "protocol", protocol(a.protocol));
    line(o, ind, "protocol_version", &a.protocol_version.to_string());
    line(o, ind, "max_msg_size", &a.max_msg_size.to_string());
    line(o, ind, "msg_prefix_size", &a.msg_prefix_size.to_string());
    line(
        o,
        ind,
        "max_order_raw_size",
        &a.max_order_raw_size.to_string(),
    );
    line(
        o,
        ind,
        "max_order_war_size",
        &a.max_order_war_size.to_string(),
    );
    line(
        o,
        ind,
        "max_order_waw_size",
        &a.max_order_waw_size.to_string(),
    );
    line(
        o,
        ind,
        "mem_tag_format",
        &format!("0x{:016x}", a.mem_tag_format),
    );
    line(o, ind, "tx_ctx_cnt", &a.tx_ctx_cnt.to_string());
    line(o, ind, "rx_ctx_cnt", &a.rx_ctx_cnt.to_string());
    line(o, ind, "auth_key_size", &a.auth_key_size.to_string());
}

/// # Safety
/// `a.name` is NULL or a C string.
unsafe fn domain_attr(o: &mut Out, a: &fi_domain_attr, ind: &str) {
    line(o, ind, "domain", &format!("{:#x}", a.domain as usize));
    // SAFETY: the caller's promise.
    line(o, ind, "name", &unsafe { cstr_or_null(a.name) });
    line(o, ind, "threading", name_of(THREADING, a.threading));
    line(
        o,
        ind,
        "control_progress",
        name_of(PROGRESS, a.control_progress),
    );
    // SAFETY: both members of the union are the same fi_progress.
    let data_progress = unsafe { a.__anon_progress.data_progress };
    line(o, ind, "data_progress", name_of(PROGRESS, data_progress));
    line(
        o,
        ind,
        "resource_mgmt",
        match a.resource_mgmt {
            FI_RM_UNSPEC => "FI_RM_UNSPEC",
            FI_RM_DISABLED => "FI_RM_DISABLED",
            FI_RM_ENABLED => "FI_RM_ENABLED",
            _ => "Unknown",
        },
    );
    line(o, ind, "av_type", name_of(AV_TYPES, a.av_type));
    list(o, ind, "mr_mode", |o| mr_mode(o, a.mr_mode));
    line(o, ind, "mr_key_size", &a.mr_key_size.to_string());
    line(o, ind, "cq_data_size", &a.cq_data_size.to_string());
    line(o, ind, "cq_cnt", &a.cq_cnt.to_string());
    line(o, ind, "ep_cnt", &a.ep_cnt.to_string());
    line(o, ind, "tx_ctx_cnt", &a.tx_ctx_cnt.to_string());
    line(o, ind, "rx_ctx_cnt", &a.rx_ctx_cnt.to_string());
    line(o, ind, "max_ep_tx_ctx", &a.max_ep_tx_ctx.to_string());
    line(o, ind, "max_ep_rx_ctx", &a.max_ep_rx_ctx.to_string());
    line(o, ind, "max_ep_stx_ctx", &a.max_ep_stx_ctx.to_string());
    line(o, ind, "max_ep_srx_ctx", &a.max_ep_srx_ctx.to_string());
    line(o, ind, "cntr_cnt", &a.cntr_cnt.to_string());
    line(o, ind, "mr_iov_limit", &a.mr_iov_limit.to_string());
    list(o, ind, "caps", |o| flags(o, a.caps, CAPS));
    list(o, ind, "mode", |o| flags(o, a.mode, MODE));
    line(o, ind, "auth_key_size", &a.auth_key_size.to_string());
    line(o, ind, "max_err_data", &a.max_err_data.to_string());
    line(o, ind, "mr_cnt", &a.mr_cnt.to_string());
    line(o, ind, "tclass", &format!("{:#x}", a.tclass));
}

/// # Safety
/// `a.name` and `a.prov_name` are NULL or C strings.
unsafe fn fabric_attr(o: &mut Out, a: &fi_fabric_attr, ind: &str) {
    // SAFETY: the caller's promise.
    line(o, ind, "name", &unsafe { cstr_or_null(a.name) });
    // SAFETY: the caller's promise.
    line(o, ind, "prov_name", &unsafe { cstr_or_null(a.prov_name) });
    line(o, ind, "prov_version", &version_text(a.prov_version));
    line(o, ind, "api_version", &version_text(a.api_version));
}

/// Prints a sub-attribute inside `fi_info`: its title, then its fields one
/// level deeper, or `(null)`.
///
/// # Safety
/// `p` is NULL or a readable `T` that meets `f`'s own requirements.
unsafe fn nested<T>(o: &mut Out, title: &str, p: *const T, f: unsafe fn(&mut Out, &T, &str)) {
    o.push("    ");
    o.push(title);
    // SAFETY: the caller's promise.
    match unsafe { p.as_ref() } {
        None => o.push(": (null)\n"),
        Some(a) => {
            o.push(":\n");
            // SAFETY: the caller's promise.
            unsafe { f(o, a, "        ") };
        }
    }
}

/// # Safety
/// Every pointer in `i` is NULL or valid for its stated length (rule 2).
unsafe fn info(o: &mut Out, i: &fi_info) {
    let ind = "    ";
    o.push("fi_info:\n");
    list(o, ind, "caps", |o| flags(o, i.caps, CAPS));
    list(o, ind, "mode", |o| flags(o, i.mode, MODE));
    line(o, ind, "addr_format", addr_format(i.addr_format));
    line(o, ind, "src_addrlen", &i.src_addrlen.to_string());
    line(o, ind, "dest_addrlen", &i.dest_addrlen.to_string());
    // SAFETY: (this and the reads below) the caller's promise.
    let src = unsafe { addr_text(i.addr_format, i.src_addr, i.src_addrlen) };
    line(o, ind, "src_addr", &src);
    // SAFETY: as above.
    let dest = unsafe { addr_text(i.addr_format, i.dest_addr, i.dest_addrlen) };
    line(o, ind, "dest_addr", &dest);
    line(o, ind, "handle", &ptr_text(i.handle as usize));
    // SAFETY: as above.
    unsafe {
        nested(o, "fi_tx_attr", i.tx_attr, tx_attr);
        nested(o, "fi_rx_attr", i.rx_attr, rx_attr);
        nested(o, "fi_ep_attr", i.ep_attr, ep_attr);
        nested(o, "fi_domain_attr", i.domain_attr, domain_attr);
        nested(o, "fi_fabric_attr", i.fabric_attr, fabric_attr);
    }
    line(o, ind, "nic", &ptr_text(i.nic as usize));
}

/// Writes the text for `data` of type `datatype` into `o`. False when
/// upstream gives no text at all (NULL data).
///
/// # Safety
/// `data` is NULL or points to a valid value of the C type `datatype` names.
pub unsafe fn write(o: &mut Out, data: *const c_void, datatype: c_int) -> bool {
    if data.is_null() {
        return false;
    }
    // SAFETY: (here and in every arm) data points to a value of the type
    // datatype names, by the caller's promise.
    let u32v = || unsafe { *(data as *const u32) };
    // SAFETY: as above.
    let u64v = || unsafe { *(data as *const u64) };
    match datatype as u32 {
        // SAFETY: as above.
        FI_TYPE_INFO => unsafe { info(o, &*(data as *const fi_info)) },
        FI_TYPE_EP_TYPE => o.push(name_of(EP_TYPES, u32v())),
        FI_TYPE_CAPS => flags(o, u64v(), CAPS),
        FI_TYPE_OP_FLAGS => flags(o, u64v(), OP_FLAGS),
        FI_TYPE_ADDR_FORMAT => o.push(addr_format(u32v())),
        FI_TYPE_TX_ATTR => {
            o.push("fi_tx_attr:\n");
            // SAFETY: as above.
            tx_attr(o, unsafe { &*(data as *const fi_tx_attr) }, "    ");
        }
        FI_TYPE_RX_ATTR => {
            o.push("fi_rx_attr:\n");
            // SAFETY: as above.
            rx_attr(o, unsafe { &*(data as *const fi_rx_attr) }, "    ");
        }
        FI_TYPE_EP_ATTR => {
            o.push("fi_ep_attr:\n");
            // SAFETY: as above.
            ep_attr(o, unsafe { &*(data as *const fi_ep_attr) }, "    ");
        }
        FI_TYPE_DOMAIN_ATTR => {
            o.push("fi_domain_attr:\n");
            // SAFETY: as above, including the name it points to.
            unsafe { domain_attr(o, &*(data as *const fi_domain_attr), "    ") };
        }
        FI_TYPE_FABRIC_ATTR => {
            o.push("fi_fabric_attr:\n");
            // SAFETY: as above, including the names it points to.
            unsafe { fabric_attr(o, &*(data as *const fi_fabric_attr), "    ") };
        }
        FI_TYPE_THREADING => o.push(name_of(THREADING, u32v())),
        FI_TYPE_PROGRESS => o.push(name_of(PROGRESS, u32v())),
        FI_TYPE_PROTOCOL => o.push(protocol(u32v())),
        FI_TYPE_MSG_ORDER => flags(o, u64v(), MSG_ORDER),
        FI_TYPE_MODE => flags(o, u64v(), MODE),
        FI_TYPE_AV_TYPE => o.push(name_of(AV_TYPES, u32v())),
        FI_TYPE_ATOMIC_TYPE => o.push(name_of(DATATYPES, u32v())),
        FI_TYPE_ATOMIC_OP => o.push(name_of(ATOMIC_OPS, u32v())),
        FI_TYPE_VERSION => o.push(&library_version()),
        FI_TYPE_EQ_EVENT => o.push(name_of(EQ_EVENTS, u32v())),
        FI_TYPE_CQ_EVENT_FLAGS => flags(o, u64v(), CQ_FLAGS),
        // SAFETY: as above.
        FI_TYPE_MR_MODE => mr_mode(o, unsafe { *(data as *const c_int) }),
        FI_TYPE_OP_TYPE => o.push(name_of(OP_TYPES, u32v())),
        FI_TYPE_FID => o.push(&format!("fid: {data:p}\n")),
        FI_TYPE_COLLECTIVE_OP => o.push(name_of(COLLECTIVES, u32v())),
        FI_TYPE_HMEM_IFACE => o.push(name_of(HMEM_IFACES, u32v())),
        FI_TYPE_CQ_FORMAT => o.push(name_of(CQ_FORMATS, u32v())),
        FI_TYPE_LOG_LEVEL => o.push(name_of(LOG_LEVELS, u32v())),
        FI_TYPE_LOG_SUBSYS => o.push(name_of(LOG_SUBSYS, u32v())),
        FI_TYPE_CQ_WAIT_COND => o.push(name_of(CQ_WAIT_CONDS, u32v())),
        FI_TYPE_WAIT_OBJ => o.push(name_of(WAIT_OBJS, u32v())),
        _ => o.push("Unknown type"),
    }
    true
}

/// The text for `data` of type `datatype`, None where upstream returns NULL.
///
/// # Safety
/// As for [`write()`].
pub unsafe fn tostr(data: *const c_void, datatype: c_int) -> Option<String> {
    let mut o = Out::new();
    // SAFETY: the caller's promise.
    unsafe { write(&mut o, data, datatype) }.then(|| o.into_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text for a value of C type `T` (the tests' safe view of
    /// [`tostr`]).
    fn text<T>(v: &T, datatype: u32) -> Option<String> {
        // SAFETY: v is a live T; each test names the type code for T.
        unsafe { tostr(v as *const T as *const c_void, datatype as c_int) }
    }

    #[test]
    fn enums_flags_and_unknowns() {
        let v: u32 = FI_EP_RDM;
        assert_eq!(text(&v, FI_TYPE_EP_TYPE).unwrap(), "FI_EP_RDM");
        let c: u64 = FI_MSG | FI_TAGGED | FI_SEND;
        assert_eq!(
            text(&c, FI_TYPE_CAPS).unwrap(),
            "FI_MSG, FI_TAGGED, FI_SEND"
        );
        assert_eq!(text(&c, 999).unwrap(), "Unknown type");
        // SAFETY: NULL is allowed.
        let null = unsafe { tostr(core::ptr::null(), FI_TYPE_INFO as c_int) };
        assert_eq!(null, None);
        let bad: u32 = 77;
        assert_eq!(text(&bad, FI_TYPE_THREADING).unwrap(), "Unknown");
    }

    #[test]
    fn bounded_output_matches_upstream_truncation() {
        let c: u64 = FI_MSG | FI_RMA | FI_TAGGED;
        let at = |n: usize| {
            let mut o = Out::bounded(n);
            // SAFETY: c is a live u64, as FI_TYPE_CAPS names.
            unsafe {
                write(
                    &mut o,
                    &c as *const u64 as *const c_void,
                    FI_TYPE_CAPS as c_int,
                )
            };
            o.into_string()
        };
        assert_eq!(at(8), "FI_MSG");
        assert_eq!(at(9), "FI_MSG,");
        assert_eq!(at(10), "FI_MSG");
        assert_eq!(at(1), "");
    }
}
