//! The one unsafe boundary between oxifabric and rdma-core's `libibverbs`
//! and `librdmacm`.
//!
//! # Contract
//!
//! - **Loaded at run time, never linked.** `libibverbs.so.1` and then
//!   `librdmacm.so.1` are opened with `dlopen` the first time anything here
//!   is used, and every symbol the crate calls is looked up with `dlsym`
//!   into one [`Lib`] table, once per process ([`lib`]). A missing library
//!   (either of the two) or a missing required symbol makes
//!   that table an [`VerbsError::Unavailable`] for the rest of the process:
//!   "no verbs here", an error the caller reports, never a panic.
//!   `libfabric.so.1` therefore loads and runs on hosts without rdma-core.
//!   The library is never closed (rdma-core's providers are not built to be
//!   unloaded, and contexts may outlive any one caller).
//! - **Prototypes.** Each function-pointer type in [`Lib`] is the C
//!   prototype in `<infiniband/verbs.h>` or `<rdma/rdma_cma.h>` of
//!   rdma-core ≥ 32 (Debian 12 ships 44). `dlsym` returns a symbol's default version (`ibv_query_port@@
//!   IBVERBS_1.1` and so on), the one a program linked today binds to.
//!   `ibv_query_port` is that exported function, which takes the older,
//!   shorter port attribute struct; we always hand it a zeroed full-size
//!   [`ibv_port_attr`], so whatever it writes fits, and the two tail fields
//!   it may not fill stay zero.
//! - **Mirrors.** The structs below are hand-written `#[repr(C)]` copies of
//!   the few rdma-core types this crate reads, with C's names, so that the
//!   layout test (`tests/layout.rs`) can compile a C program against the
//!   installed header and compare the size and every field offset; the
//!   sizes are also `const` assertions, so every build checks them.
//!   rdma-core's ABI is stable (fields are only ever appended, behind
//!   `_ex` calls), so a mirror written against v44 holds for later
//!   versions.
//! - **The data path.** `ibv_post_send`, `ibv_post_recv` and `ibv_poll_cq`
//!   are `static inline` in `verbs.h` and have no symbol: like the header,
//!   [`QueuePair`] and [`CompletionQueue`] call the provider's functions in
//!   the `ops` table of the object's own `context` (`qp->context`,
//!   `cq->context`), with mirrored work requests and completions;
//!   `ibv_post_srq_recv` likewise through `srq->context` (`owned::Srq`).
//! - **Ownership.** Pointers from rdma-core never leave this module raw:
//!   [`DeviceList`] owns `ibv_get_device_list`'s array and frees it on drop,
//!   [`Context`] owns an opened device and closes it on drop. Everything a
//!   query returns is copied into plain Rust values before the call returns.
//!   The connection objects are owners too, and their borrows encode the
//!   order rdma-core needs them torn down in: an [`EventChannel`] outlives
//!   its [`CmId`]s; a [`CmEvent`] is acknowledged on drop; the
//!   [`ProtectionDomain`] and [`CompletionQueue`] allocated on an id's
//!   device ([`DeviceRef`]) go before the id; a [`MemoryRegion`] (which
//!   owns its buffer and never lends a reference to it, since the device
//!   writes it behind Rust's back) is deregistered before its PD and only
//!   then freed; a [`QueuePair`] goes before its id, PD and CQ; a shared
//!   receive queue (`owned::Srq`) goes after every queue pair made on it
//!   and before its PD.
//! - **Bounded waits.** [`EventChannel::next_event`] polls the channel's
//!   descriptor with a timeout before reading, so a lost CM event is
//!   [`VerbsError::Timeout`], never a hang; completions are polled.
//! - **Threads.** libibverbs' calls used here are thread-safe; a
//!   [`Context`] may move between threads (`Send`), and shared use goes
//!   through `&self` queries that rdma-core serialises itself (`Sync`).
//!
//! # Why hand-written mirrors, not bindgen or `rdma-core-sys`
//!
//! Both generate `extern "C"` declarations that link `-libverbs` at build
//! time, which is exactly what must not happen; we would throw away their
//! functions and keep only their types. `bindgen` at build time would also
//! need libclang and the rdma-core headers on every build machine, while
//! the provider must build (and is built) on hosts without them. The set
//! we use is small (three attribute structs, the GID types, the context's
//! ops table for the `static inline` data path), rdma-core's ABI only grows
//! at the tail, and the layout test proves each mirror against the
//! installed header, so writing them by hand costs less than carrying a
//! generator and stays as trustworthy.

#![allow(non_camel_case_types)]

pub mod owned;

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::mem::{offset_of, size_of};
use std::sync::OnceLock;

/// The library the provider loads.
pub const LIBIBVERBS: &str = "libibverbs.so.1";

/// Environment variable naming another file to load instead of
/// [`LIBIBVERBS`]: tests point it at a missing name to prove that a host
/// without rdma-core gets "no verbs here" cleanly.
pub const LIBIBVERBS_ENV: &str = "OXI_VERBS_LIBIBVERBS";

/// The connection manager library, loaded with [`LIBIBVERBS`]; without it
/// there are no verbs either.
pub const LIBRDMACM: &str = "librdmacm.so.1";

/// Environment variable naming another file to load instead of
/// [`LIBRDMACM`] (tests: a host with libibverbs but no librdmacm).
pub const LIBRDMACM_ENV: &str = "OXI_VERBS_LIBRDMACM";

/// Environment variable that, when set, makes the crate behave as with a
/// library older than rdma-core 32 (no `_ibv_query_gid_table`), so the
/// guest test also proves the `ibv_query_gid` + sysfs fallback.
pub const NO_GID_TABLE_ENV: &str = "OXI_VERBS_NO_GID_TABLE";

/// Why verbs cannot be used, or which call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerbsError {
    /// libibverbs (or one of its required symbols) is not there: no verbs
    /// on this host. The text is `dlerror`'s.
    Unavailable(String),
    /// A bounded wait ended with nothing: this call was not reached.
    Timeout(&'static str),
    /// A CM event other than the one expected (or with a non-zero status).
    Event {
        /// The event wanted.
        want: CmEventKind,
        /// The event that came.
        got: CmEventKind,
        /// Its status.
        status: c_int,
    },
    /// A verbs call failed with this errno.
    Call {
        /// The rdma-core function.
        call: &'static str,
        /// Its errno (positive).
        errno: c_int,
    },
}

impl fmt::Display for VerbsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerbsError::Unavailable(why) => write!(f, "verbs unavailable: {why}"),
            VerbsError::Timeout(call) => write!(f, "timed out waiting for {call}"),
            VerbsError::Event { want, got, status } => {
                write!(f, "expected CM event {want}, got {got} (status {status})")
            }
            VerbsError::Call { call, errno } => write!(
                f,
                "{call} failed: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
        }
    }
}

impl std::error::Error for VerbsError {}

/// "No verbs here" is `FI_ENODEV`; a failed call keeps its errno.
impl From<VerbsError> for oxifabric::error::Error {
    fn from(e: VerbsError) -> Self {
        match e {
            VerbsError::Unavailable(_) => oxifabric::error::Error::NoDev,
            VerbsError::Timeout(_) => oxifabric::error::Error::TimedOut,
            VerbsError::Event { .. } => oxifabric::error::Error::Os {
                code: libc::ECONNREFUSED,
                errno: libc::ECONNREFUSED,
            },
            VerbsError::Call { errno, .. } => oxifabric::error::Error::Os { code: errno, errno },
        }
    }
}

// ---------------------------------------------------------------------------
// Mirrors of <infiniband/verbs.h> (rdma-core 44). C names on purpose: the
// layout test prints C's offsetof for the same names.

/// `struct ibv_device`: only ever behind a pointer.
#[repr(C)]
pub struct ibv_device {
    _opaque: [u8; 0],
}

/// Opaque objects the ops table's prototypes name.
#[repr(C)]
pub struct ibv_opaque {
    _opaque: [u8; 0],
}

/// `struct ibv_device_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: u32,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    pub max_ee_init_rd_atom: c_int,
    /// `enum ibv_atomic_cap`, kept as the integer C wrote.
    pub atomic_cap: u32,
    pub max_ee: c_int,
    pub max_rdd: c_int,
    pub max_mw: c_int,
    pub max_raw_ipv6_qp: c_int,
    pub max_raw_ethy_qp: c_int,
    pub max_mcast_grp: c_int,
    pub max_mcast_qp_attach: c_int,
    pub max_total_mcast_qp_attach: c_int,
    pub max_ah: c_int,
    pub max_fmr: c_int,
    pub max_map_per_fmr: c_int,
    pub max_srq: c_int,
    pub max_srq_wr: c_int,
    pub max_srq_sge: c_int,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

/// `struct ibv_port_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_port_attr {
    /// `enum ibv_port_state`.
    pub state: u32,
    /// `enum ibv_mtu`.
    pub max_mtu: u32,
    /// `enum ibv_mtu`.
    pub active_mtu: u32,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
}

/// The `global` view of `union ibv_gid`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_gid_global {
    pub subnet_prefix: u64,
    pub interface_id: u64,
}

/// `union ibv_gid`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_gid {
    pub raw: [u8; 16],
    pub global: ibv_gid_global,
}

/// `struct ibv_gid_entry` (`ibv_query_gid_table`, rdma-core ≥ 32).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_gid_entry {
    pub gid: ibv_gid,
    pub gid_index: u32,
    pub port_num: u32,
    /// `enum ibv_gid_type`.
    pub gid_type: u32,
    pub ndev_ifindex: u32,
}

impl ibv_gid_entry {
    /// The GID's bytes.
    pub fn raw(&self) -> [u8; 16] {
        // SAFETY: both views of the union are plain bytes; every bit
        // pattern is a valid [u8; 16].
        unsafe { self.gid.raw }
    }
}

/// A slot of the ops table that oxifabric never calls.
pub type UnusedSlot = *const c_void;

/// `struct ibv_context_ops`: the table `verbs.h`'s `static inline`
/// `ibv_post_send`, `ibv_post_recv`, `ibv_poll_cq` and `ibv_req_notify_cq`
/// jump through; mirrored so the data path can do the same without a
/// symbol (those four have none to `dlsym`).
#[repr(C)]
pub struct ibv_context_ops {
    pub _compat_query_device: UnusedSlot,
    pub _compat_query_port: UnusedSlot,
    pub _compat_alloc_pd: UnusedSlot,
    pub _compat_dealloc_pd: UnusedSlot,
    pub _compat_reg_mr: UnusedSlot,
    pub _compat_rereg_mr: UnusedSlot,
    pub _compat_dereg_mr: UnusedSlot,
    pub alloc_mw: UnusedSlot,
    pub bind_mw: UnusedSlot,
    pub dealloc_mw: UnusedSlot,
    pub _compat_create_cq: UnusedSlot,
    pub poll_cq: Option<unsafe extern "C" fn(*mut ibv_opaque, c_int, *mut ibv_opaque) -> c_int>,
    pub req_notify_cq: Option<unsafe extern "C" fn(*mut ibv_opaque, c_int) -> c_int>,
    pub _compat_cq_event: UnusedSlot,
    pub _compat_resize_cq: UnusedSlot,
    pub _compat_destroy_cq: UnusedSlot,
    pub _compat_create_srq: UnusedSlot,
    pub _compat_modify_srq: UnusedSlot,
    pub _compat_query_srq: UnusedSlot,
    pub _compat_destroy_srq: UnusedSlot,
    pub post_srq_recv: Option<
        unsafe extern "C" fn(*mut ibv_opaque, *mut ibv_opaque, *mut *mut ibv_opaque) -> c_int,
    >,
    pub _compat_create_qp: UnusedSlot,
    pub _compat_query_qp: UnusedSlot,
    pub _compat_modify_qp: UnusedSlot,
    pub _compat_destroy_qp: UnusedSlot,
    pub post_send: Option<
        unsafe extern "C" fn(*mut ibv_opaque, *mut ibv_opaque, *mut *mut ibv_opaque) -> c_int,
    >,
    pub post_recv: Option<
        unsafe extern "C" fn(*mut ibv_opaque, *mut ibv_opaque, *mut *mut ibv_opaque) -> c_int,
    >,
    pub _compat_create_ah: UnusedSlot,
    pub _compat_destroy_ah: UnusedSlot,
    pub _compat_attach_mcast: UnusedSlot,
    pub _compat_detach_mcast: UnusedSlot,
    pub _compat_async_event: UnusedSlot,
}

/// The head of `struct ibv_context` up to the fields oxifabric reads (the
/// mutex and `abi_compat` after them are rdma-core's own).
#[repr(C)]
pub struct ibv_context {
    pub device: *mut ibv_device,
    pub ops: ibv_context_ops,
    pub cmd_fd: c_int,
    pub async_fd: c_int,
    pub num_comp_vectors: c_int,
}

/// `struct ibv_pd`: only ever behind a pointer.
#[repr(C)]
pub struct ibv_pd {
    _opaque: [u8; 0],
}

/// The head of `struct ibv_cq`: the data path reads `context` (as
/// `ibv_poll_cq` does); the rest is rdma-core's.
#[repr(C)]
pub struct ibv_cq {
    pub context: *mut ibv_context,
}

/// The head of `struct ibv_qp` up to the fields oxifabric reads.
#[repr(C)]
pub struct ibv_qp {
    pub context: *mut ibv_context,
    pub qp_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut c_void,
    pub handle: u32,
    pub qp_num: u32,
}

/// The head of `struct ibv_srq` up to the fields oxifabric reads
/// (`ibv_post_srq_recv` goes through `context`'s ops table); the mutex
/// and condition variable after them are rdma-core's.
#[repr(C)]
pub struct ibv_srq {
    pub context: *mut ibv_context,
    pub srq_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub handle: u32,
}

/// `struct ibv_srq_attr`: the sizes a shared receive queue is asked for
/// and granted.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_srq_attr {
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
}

/// `struct ibv_srq_init_attr`.
#[repr(C)]
pub struct ibv_srq_init_attr {
    pub srq_context: *mut c_void,
    pub attr: ibv_srq_attr,
}

/// `struct ibv_mr`.
#[repr(C)]
pub struct ibv_mr {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `struct ibv_sge`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// The `rdma` member of `ibv_send_wr.wr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_send_wr_rdma {
    pub remote_addr: u64,
    pub rkey: u32,
}

/// The `atomic` member of `ibv_send_wr.wr` (the largest; it gives the
/// union its size).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_send_wr_atomic {
    pub remote_addr: u64,
    pub compare_add: u64,
    pub swap: u64,
    pub rkey: u32,
}

/// `ibv_send_wr.wr`; the `ud` member is not used.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_send_wr_wr {
    pub rdma: ibv_send_wr_rdma,
    pub atomic: ibv_send_wr_atomic,
}

/// `struct ibv_send_wr`. The anonymous unions keep the name of their
/// first member (`imm_data`, `bind_mw`); `qp_type` is the XRC SRQ number;
/// `bind_mw` (memory-window binds and TSO) is never used, only sized.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_send_wr {
    pub wr_id: u64,
    pub next: *mut ibv_send_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    /// `enum ibv_wr_opcode`.
    pub opcode: u32,
    pub send_flags: u32,
    /// Big-endian immediate data (or the rkey to invalidate).
    pub imm_data: u32,
    pub wr: ibv_send_wr_wr,
    pub qp_type: u32,
    pub bind_mw: [u64; 6],
}

/// `struct ibv_recv_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_recv_wr {
    pub wr_id: u64,
    pub next: *mut ibv_recv_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
}

/// `struct ibv_wc`: one completion.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_wc {
    pub wr_id: u64,
    /// `enum ibv_wc_status`.
    pub status: u32,
    /// `enum ibv_wc_opcode`.
    pub opcode: u32,
    pub vendor_err: u32,
    pub byte_len: u32,
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: u32,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

/// `struct ibv_qp_cap`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `struct ibv_qp_attr`, as `ibv_modify_qp` reads it: only
/// `min_rnr_timer` is ever set (its mask bit tells the library to read
/// that field alone); the rest is the C struct's other fields, zeroed.
#[repr(C, align(4))]
pub struct ibv_qp_attr {
    _before: [u8; 128],
    pub min_rnr_timer: u8,
    _after: [u8; 15],
}

impl ibv_qp_attr {
    /// Zeroed but for `min_rnr_timer`.
    pub fn min_rnr_timer(t: u8) -> ibv_qp_attr {
        ibv_qp_attr {
            _before: [0; 128],
            min_rnr_timer: t,
            _after: [0; 15],
        }
    }
}

/// `IBV_QP_MIN_RNR_TIMER` (`enum ibv_qp_attr_mask`).
pub const IBV_QP_MIN_RNR_TIMER: c_int = 1 << 15;

/// `struct ibv_qp_init_attr`.
#[repr(C)]
pub struct ibv_qp_init_attr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut c_void,
    pub cap: ibv_qp_cap,
    /// `enum ibv_qp_type`.
    pub qp_type: u32,
    pub sq_sig_all: c_int,
}

// Values of <infiniband/verbs.h>'s enums used here (the layout test
// compares each with C).
/// `IBV_QPT_RC`.
pub const IBV_QPT_RC: u32 = 2;
/// `IBV_WR_RDMA_WRITE`.
pub const IBV_WR_RDMA_WRITE: u32 = 0;
/// `IBV_WR_SEND`.
pub const IBV_WR_SEND: u32 = 2;
/// `IBV_SEND_SIGNALED`.
pub const IBV_SEND_SIGNALED: u32 = 2;
/// `IBV_ACCESS_LOCAL_WRITE`.
pub const IBV_ACCESS_LOCAL_WRITE: c_int = 1;
/// `IBV_ACCESS_REMOTE_WRITE`.
pub const IBV_ACCESS_REMOTE_WRITE: c_int = 2;
/// `IBV_ACCESS_REMOTE_READ`.
pub const IBV_ACCESS_REMOTE_READ: c_int = 4;
/// `IBV_ACCESS_REMOTE_ATOMIC`.
pub const IBV_ACCESS_REMOTE_ATOMIC: c_int = 8;
/// `IBV_WC_SUCCESS`.
pub const IBV_WC_SUCCESS: u32 = 0;
/// `IBV_WC_REM_ACCESS_ERR`: the peer's device refused an RDMA access
/// (bad key or range).
pub const IBV_WC_REM_ACCESS_ERR: u32 = 10;
/// `IBV_WC_SEND`.
pub const IBV_WC_SEND: u32 = 0;
/// `IBV_WC_RDMA_WRITE`.
pub const IBV_WC_RDMA_WRITE: u32 = 1;
/// `IBV_WC_RECV`.
pub const IBV_WC_RECV: u32 = 128;

// ---------------------------------------------------------------------------
// Mirrors of <rdma/rdma_cma.h> (rdma-core 44).

/// `struct rdma_event_channel`.
#[repr(C)]
pub struct rdma_event_channel {
    pub fd: c_int,
}

/// The head of `struct rdma_addr`: the source and destination socket
/// addresses (each a union whose largest member is a `sockaddr_storage`).
#[repr(C)]
pub struct rdma_addr {
    pub src_addr: libc::sockaddr_storage,
    pub dst_addr: libc::sockaddr_storage,
}

/// The head of `struct rdma_route`.
#[repr(C)]
pub struct rdma_route {
    pub addr: rdma_addr,
}

/// The head of `struct rdma_cm_id` up to the fields oxifabric reads
/// (`route.addr` is what the header's inline `rdma_get_local_addr` and
/// `rdma_get_peer_addr` return).
#[repr(C)]
pub struct rdma_cm_id {
    pub verbs: *mut ibv_context,
    pub channel: *mut rdma_event_channel,
    pub context: *mut c_void,
    pub qp: *mut ibv_qp,
    pub route: rdma_route,
}

/// The head of `struct ibv_comp_channel`.
#[repr(C)]
pub struct ibv_comp_channel {
    pub context: *mut ibv_context,
    pub fd: c_int,
}

/// `struct rdma_conn_param`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_conn_param {
    pub private_data: *const c_void,
    pub private_data_len: u8,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub flow_control: u8,
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    pub srq: u8,
    pub qp_num: u32,
}

/// The head of `struct rdma_cm_event`: `param` is a union whose `ud`
/// member is not read; only the `conn` member is mirrored, and the event
/// is always librdmacm's memory, never ours.
#[repr(C)]
pub struct rdma_cm_event {
    pub id: *mut rdma_cm_id,
    pub listen_id: *mut rdma_cm_id,
    /// `enum rdma_cm_event_type`.
    pub event: u32,
    pub status: c_int,
    pub param: rdma_conn_param,
}

/// `IBV_WR_RDMA_WRITE_WITH_IMM`.
pub const IBV_WR_RDMA_WRITE_WITH_IMM: u32 = 1;
/// `IBV_WR_SEND_WITH_IMM`.
pub const IBV_WR_SEND_WITH_IMM: u32 = 3;
/// `IBV_WR_RDMA_READ`.
pub const IBV_WR_RDMA_READ: u32 = 4;
/// `IBV_WR_ATOMIC_CMP_AND_SWP`: 64-bit compare-and-swap at the peer.
pub const IBV_WR_ATOMIC_CMP_AND_SWP: u32 = 5;
/// `IBV_WR_ATOMIC_FETCH_AND_ADD`: 64-bit fetch-and-add at the peer.
pub const IBV_WR_ATOMIC_FETCH_AND_ADD: u32 = 6;
/// `IBV_SEND_INLINE`: the data is copied into the work request at post.
pub const IBV_SEND_INLINE: u32 = 8;
/// `IBV_SEND_FENCE`: the work request waits for the queue pair's earlier
/// RDMA READs and atomics to complete.
pub const IBV_SEND_FENCE: u32 = 1;
/// `IBV_WC_WITH_IMM` (in `ibv_wc.wc_flags`).
pub const IBV_WC_WITH_IMM: u32 = 2;
/// `IBV_WC_RECV_RDMA_WITH_IMM`.
pub const IBV_WC_RECV_RDMA_WITH_IMM: u32 = 129;
/// `IBV_WC_RDMA_READ`.
pub const IBV_WC_RDMA_READ: u32 = 2;
/// `IBV_WC_WR_FLUSH_ERR`: the queue pair went to the error state (a
/// disconnect) before the work request ran.
pub const IBV_WC_WR_FLUSH_ERR: u32 = 5;
/// `IBV_WC_LOC_LEN_ERR`: a message longer than the receive buffer.
pub const IBV_WC_LOC_LEN_ERR: u32 = 1;
/// `IBV_WC_RETRY_EXC_ERR`: the peer stopped answering.
pub const IBV_WC_RETRY_EXC_ERR: u32 = 12;
/// `IBV_WC_RNR_RETRY_EXC_ERR`: the peer had no receive posted, for too long.
pub const IBV_WC_RNR_RETRY_EXC_ERR: u32 = 13;
/// `RDMA_CM_EVENT_ADDR_ERROR`.
pub const RDMA_CM_EVENT_ADDR_ERROR: u32 = 1;
/// `RDMA_CM_EVENT_ROUTE_ERROR`.
pub const RDMA_CM_EVENT_ROUTE_ERROR: u32 = 3;
/// `RDMA_CM_EVENT_CONNECT_ERROR`.
pub const RDMA_CM_EVENT_CONNECT_ERROR: u32 = 6;
/// `RDMA_CM_EVENT_UNREACHABLE`.
pub const RDMA_CM_EVENT_UNREACHABLE: u32 = 7;
/// `RDMA_CM_EVENT_REJECTED`.
pub const RDMA_CM_EVENT_REJECTED: u32 = 8;
/// `RDMA_CM_EVENT_DEVICE_REMOVAL`.
pub const RDMA_CM_EVENT_DEVICE_REMOVAL: u32 = 11;
/// `RDMA_CM_EVENT_TIMEWAIT_EXIT`.
pub const RDMA_CM_EVENT_TIMEWAIT_EXIT: u32 = 15;
/// `RDMA_PS_TCP`: reliable connected, as `FI_EP_MSG` uses.
pub const RDMA_PS_TCP: u32 = 0x0106;
/// `RDMA_CM_EVENT_ADDR_RESOLVED`.
pub const RDMA_CM_EVENT_ADDR_RESOLVED: u32 = 0;
/// `RDMA_CM_EVENT_ROUTE_RESOLVED`.
pub const RDMA_CM_EVENT_ROUTE_RESOLVED: u32 = 2;
/// `RDMA_CM_EVENT_CONNECT_REQUEST`.
pub const RDMA_CM_EVENT_CONNECT_REQUEST: u32 = 4;
/// `RDMA_CM_EVENT_ESTABLISHED`.
pub const RDMA_CM_EVENT_ESTABLISHED: u32 = 9;
/// `RDMA_CM_EVENT_DISCONNECTED`.
pub const RDMA_CM_EVENT_DISCONNECTED: u32 = 10;

// Every build proves the sizes (the layout test proves every offset too).
const _: () = assert!(size_of::<ibv_device_attr>() == 232);
const _: () = assert!(size_of::<ibv_port_attr>() == 52);
const _: () = assert!(size_of::<ibv_gid>() == 16);
const _: () = assert!(size_of::<ibv_gid_entry>() == 32);
const _: () = assert!(size_of::<ibv_context_ops>() == 32 * 8);
const _: () = assert!(offset_of!(ibv_context, num_comp_vectors) == 272);
const _: () = assert!(size_of::<ibv_mr>() == 48);
const _: () = assert!(size_of::<ibv_sge>() == 16);
const _: () = assert!(size_of::<ibv_send_wr>() == 128);
const _: () = assert!(size_of::<ibv_recv_wr>() == 32);
const _: () = assert!(size_of::<ibv_wc>() == 48);
const _: () = assert!(size_of::<ibv_qp_init_attr>() == 64);
const _: () = assert!(size_of::<rdma_conn_param>() == 24);
const _: () = assert!(offset_of!(ibv_qp, qp_num) == 52);
const _: () = assert!(offset_of!(rdma_cm_event, param) == 24);
const _: () = assert!(size_of::<ibv_srq_init_attr>() == 24);
const _: () = assert!(size_of::<ibv_qp_attr>() == 144);
const _: () = assert!(offset_of!(ibv_srq, handle) == 24);

/// Every mirrored struct's size and every field's offset, as
/// `("struct.field", offset)` and `("struct", size)`, for the layout test.
pub fn layout() -> Vec<(&'static str, usize)> {
    macro_rules! fields {
        ($v:ident, $t:ident { $($f:ident),* $(,)? }) => {
            $v.push((stringify!($t), size_of::<$t>()));
            $($v.push((concat!(stringify!($t), ".", stringify!($f)), offset_of!($t, $f)));)*
        };
    }
    macro_rules! heads {
        ($v:ident, $t:ident { $($f:ident),* $(,)? }) => {
            $($v.push((concat!(stringify!($t), ".", stringify!($f)), offset_of!($t, $f)));)*
        };
    }
    let mut v = Vec::new();
    fields!(
        v,
        ibv_device_attr {
            fw_ver,
            node_guid,
            sys_image_guid,
            max_mr_size,
            page_size_cap,
            vendor_id,
            vendor_part_id,
            hw_ver,
            max_qp,
            max_qp_wr,
            device_cap_flags,
            max_sge,
            max_sge_rd,
            max_cq,
            max_cqe,
            max_mr,
            max_pd,
            max_qp_rd_atom,
            max_ee_rd_atom,
            max_res_rd_atom,
            max_qp_init_rd_atom,
            max_ee_init_rd_atom,
            atomic_cap,
            max_ee,
            max_rdd,
            max_mw,
            max_raw_ipv6_qp,
            max_raw_ethy_qp,
            max_mcast_grp,
            max_mcast_qp_attach,
            max_total_mcast_qp_attach,
            max_ah,
            max_fmr,
            max_map_per_fmr,
            max_srq,
            max_srq_wr,
            max_srq_sge,
            max_pkeys,
            local_ca_ack_delay,
            phys_port_cnt,
        }
    );
    fields!(
        v,
        ibv_port_attr {
            state,
            max_mtu,
            active_mtu,
            gid_tbl_len,
            port_cap_flags,
            max_msg_sz,
            bad_pkey_cntr,
            qkey_viol_cntr,
            pkey_tbl_len,
            lid,
            sm_lid,
            lmc,
            max_vl_num,
            sm_sl,
            subnet_timeout,
            init_type_reply,
            active_width,
            active_speed,
            phys_state,
            link_layer,
            flags,
            port_cap_flags2,
        }
    );
    fields!(v, ibv_gid { raw, global });
    fields!(
        v,
        ibv_gid_entry {
            gid,
            gid_index,
            port_num,
            gid_type,
            ndev_ifindex
        }
    );
    fields!(
        v,
        ibv_context_ops {
            _compat_query_device,
            _compat_query_port,
            _compat_alloc_pd,
            _compat_dealloc_pd,
            _compat_reg_mr,
            _compat_rereg_mr,
            _compat_dereg_mr,
            alloc_mw,
            bind_mw,
            dealloc_mw,
            _compat_create_cq,
            poll_cq,
            req_notify_cq,
            _compat_cq_event,
            _compat_resize_cq,
            _compat_destroy_cq,
            _compat_create_srq,
            _compat_modify_srq,
            _compat_query_srq,
            _compat_destroy_srq,
            post_srq_recv,
            _compat_create_qp,
            _compat_query_qp,
            _compat_modify_qp,
            _compat_destroy_qp,
            post_send,
            post_recv,
            _compat_create_ah,
            _compat_destroy_ah,
            _compat_attach_mcast,
            _compat_detach_mcast,
            _compat_async_event,
        }
    );
    fields!(
        v,
        ibv_mr {
            context,
            pd,
            addr,
            length,
            handle,
            lkey,
            rkey
        }
    );
    fields!(v, ibv_sge { addr, length, lkey });
    fields!(
        v,
        ibv_send_wr {
            wr_id,
            next,
            sg_list,
            num_sge,
            opcode,
            send_flags,
            imm_data,
            wr,
            qp_type,
            bind_mw,
        }
    );
    let wr = offset_of!(ibv_send_wr, wr);
    v.extend([
        (
            "ibv_send_wr.wr.rdma.remote_addr",
            wr + offset_of!(ibv_send_wr_rdma, remote_addr),
        ),
        (
            "ibv_send_wr.wr.rdma.rkey",
            wr + offset_of!(ibv_send_wr_rdma, rkey),
        ),
        (
            "ibv_send_wr.wr.atomic.compare_add",
            wr + offset_of!(ibv_send_wr_atomic, compare_add),
        ),
        (
            "ibv_send_wr.wr.atomic.swap",
            wr + offset_of!(ibv_send_wr_atomic, swap),
        ),
        (
            "ibv_send_wr.wr.atomic.rkey",
            wr + offset_of!(ibv_send_wr_atomic, rkey),
        ),
    ]);
    fields!(
        v,
        ibv_recv_wr {
            wr_id,
            next,
            sg_list,
            num_sge
        }
    );
    fields!(
        v,
        ibv_wc {
            wr_id,
            status,
            opcode,
            vendor_err,
            byte_len,
            imm_data,
            qp_num,
            src_qp,
            wc_flags,
            pkey_index,
            slid,
            sl,
            dlid_path_bits,
        }
    );
    fields!(
        v,
        ibv_qp_cap {
            max_send_wr,
            max_recv_wr,
            max_send_sge,
            max_recv_sge,
            max_inline_data
        }
    );
    fields!(
        v,
        ibv_qp_init_attr {
            qp_context,
            send_cq,
            recv_cq,
            srq,
            cap,
            qp_type,
            sq_sig_all
        }
    );
    fields!(v, rdma_event_channel { fd });
    fields!(
        v,
        rdma_conn_param {
            private_data,
            private_data_len,
            responder_resources,
            initiator_depth,
            flow_control,
            retry_count,
            rnr_retry_count,
            srq,
            qp_num,
        }
    );
    // These are mirrored only up to the fields read: their sizes are C's
    // business, so only the offsets are compared.
    heads!(
        v,
        ibv_context {
            device,
            ops,
            cmd_fd,
            async_fd,
            num_comp_vectors
        }
    );
    heads!(v, ibv_cq { context });
    heads!(
        v,
        ibv_qp {
            context,
            qp_context,
            pd,
            send_cq,
            recv_cq,
            srq,
            handle,
            qp_num
        }
    );
    heads!(
        v,
        rdma_cm_id {
            verbs,
            channel,
            context,
            qp,
            route
        }
    );
    let route = offset_of!(rdma_cm_id, route) + offset_of!(rdma_route, addr);
    v.extend([
        (
            "rdma_cm_id.route.addr.src_addr",
            route + offset_of!(rdma_addr, src_addr),
        ),
        (
            "rdma_cm_id.route.addr.dst_addr",
            route + offset_of!(rdma_addr, dst_addr),
        ),
    ]);
    heads!(v, ibv_comp_channel { context, fd });
    fields!(v, ibv_qp_attr { min_rnr_timer });
    fields!(
        v,
        ibv_srq_attr {
            max_wr,
            max_sge,
            srq_limit
        }
    );
    fields!(v, ibv_srq_init_attr { srq_context, attr });
    heads!(
        v,
        ibv_srq {
            context,
            srq_context,
            pd,
            handle
        }
    );
    heads!(
        v,
        rdma_cm_event {
            id,
            listen_id,
            event,
            status,
            param
        }
    );
    v
}

/// The C enum values this crate writes or compares, as `(NAME, value)`,
/// for the layout test.
pub fn constants() -> Vec<(&'static str, i64)> {
    macro_rules! consts {
        ($($c:ident),* $(,)?) => { vec![$((stringify!($c), i64::from($c))),*] };
    }
    consts![
        IBV_QPT_RC,
        IBV_WR_RDMA_WRITE,
        IBV_WR_SEND,
        IBV_SEND_SIGNALED,
        IBV_ACCESS_LOCAL_WRITE,
        IBV_ACCESS_REMOTE_WRITE,
        IBV_ACCESS_REMOTE_READ,
        IBV_WC_SUCCESS,
        IBV_WC_REM_ACCESS_ERR,
        IBV_WC_SEND,
        IBV_WC_RDMA_WRITE,
        IBV_WC_RECV,
        RDMA_PS_TCP,
        RDMA_CM_EVENT_ADDR_RESOLVED,
        RDMA_CM_EVENT_ROUTE_RESOLVED,
        RDMA_CM_EVENT_CONNECT_REQUEST,
        RDMA_CM_EVENT_ESTABLISHED,
        RDMA_CM_EVENT_DISCONNECTED,
        IBV_WR_RDMA_WRITE_WITH_IMM,
        IBV_WR_SEND_WITH_IMM,
        IBV_WR_RDMA_READ,
        IBV_WR_ATOMIC_CMP_AND_SWP,
        IBV_WR_ATOMIC_FETCH_AND_ADD,
        IBV_ACCESS_REMOTE_ATOMIC,
        IBV_SEND_INLINE,
        IBV_SEND_FENCE,
        IBV_QP_MIN_RNR_TIMER,
        IBV_WC_WITH_IMM,
        IBV_WC_RECV_RDMA_WITH_IMM,
        IBV_WC_RDMA_READ,
        IBV_WC_WR_FLUSH_ERR,
        IBV_WC_LOC_LEN_ERR,
        IBV_WC_RETRY_EXC_ERR,
        IBV_WC_RNR_RETRY_EXC_ERR,
        IBV_ACCESS_REMOTE_ATOMIC,
        RDMA_CM_EVENT_ADDR_ERROR,
        RDMA_CM_EVENT_ROUTE_ERROR,
        RDMA_CM_EVENT_CONNECT_ERROR,
        RDMA_CM_EVENT_UNREACHABLE,
        RDMA_CM_EVENT_REJECTED,
        RDMA_CM_EVENT_DEVICE_REMOVAL,
        RDMA_CM_EVENT_TIMEWAIT_EXIT,
    ]
}

// ---------------------------------------------------------------------------
// The symbol table.

type GetDeviceList = unsafe extern "C" fn(*mut c_int) -> *mut *mut ibv_device;
type FreeDeviceList = unsafe extern "C" fn(*mut *mut ibv_device);
type GetDeviceName = unsafe extern "C" fn(*mut ibv_device) -> *const c_char;
type OpenDevice = unsafe extern "C" fn(*mut ibv_device) -> *mut ibv_context;
type CloseDevice = unsafe extern "C" fn(*mut ibv_context) -> c_int;
type QueryDevice = unsafe extern "C" fn(*mut ibv_context, *mut ibv_device_attr) -> c_int;
type QueryPort = unsafe extern "C" fn(*mut ibv_context, u8, *mut ibv_port_attr) -> c_int;
type QueryGid = unsafe extern "C" fn(*mut ibv_context, u8, c_int, *mut ibv_gid) -> c_int;
type QueryGidTable =
    unsafe extern "C" fn(*mut ibv_context, *mut ibv_gid_entry, usize, u32, usize) -> isize;
type AllocPd = unsafe extern "C" fn(*mut ibv_context) -> *mut ibv_pd;
type DeallocPd = unsafe extern "C" fn(*mut ibv_pd) -> c_int;
type CreateCq =
    unsafe extern "C" fn(*mut ibv_context, c_int, *mut c_void, *mut c_void, c_int) -> *mut ibv_cq;
type DestroyCq = unsafe extern "C" fn(*mut ibv_cq) -> c_int;
type RegMr = unsafe extern "C" fn(*mut ibv_pd, *mut c_void, usize, c_int) -> *mut ibv_mr;
type DeregMr = unsafe extern "C" fn(*mut ibv_mr) -> c_int;
type CreateCompChannel = unsafe extern "C" fn(*mut ibv_context) -> *mut ibv_comp_channel;
type DestroyCompChannel = unsafe extern "C" fn(*mut ibv_comp_channel) -> c_int;
type GetCqEvent =
    unsafe extern "C" fn(*mut ibv_comp_channel, *mut *mut ibv_cq, *mut *mut c_void) -> c_int;
type AckCqEvents = unsafe extern "C" fn(*mut ibv_cq, std::ffi::c_uint);
type GetDevices = unsafe extern "C" fn(*mut c_int) -> *mut *mut ibv_context;
type FreeDevices = unsafe extern "C" fn(*mut *mut ibv_context);
type MigrateId = unsafe extern "C" fn(*mut rdma_cm_id, *mut rdma_event_channel) -> c_int;
type Reject = unsafe extern "C" fn(*mut rdma_cm_id, *const c_void, u8) -> c_int;
type ModifyQp = unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int) -> c_int;
type CreateSrq = unsafe extern "C" fn(*mut ibv_pd, *mut ibv_srq_init_attr) -> *mut ibv_srq;
type DestroySrq = unsafe extern "C" fn(*mut ibv_srq) -> c_int;

type CreateEventChannel = unsafe extern "C" fn() -> *mut rdma_event_channel;
type DestroyEventChannel = unsafe extern "C" fn(*mut rdma_event_channel);
type CreateId =
    unsafe extern "C" fn(*mut rdma_event_channel, *mut *mut rdma_cm_id, *mut c_void, u32) -> c_int;
type IdCall = unsafe extern "C" fn(*mut rdma_cm_id) -> c_int;
type BindAddr = unsafe extern "C" fn(*mut rdma_cm_id, *const libc::sockaddr) -> c_int;
type Listen = unsafe extern "C" fn(*mut rdma_cm_id, c_int) -> c_int;
type ResolveAddr = unsafe extern "C" fn(
    *mut rdma_cm_id,
    *const libc::sockaddr,
    *const libc::sockaddr,
    c_int,
) -> c_int;
type ResolveRoute = unsafe extern "C" fn(*mut rdma_cm_id, c_int) -> c_int;
type GetCmEvent = unsafe extern "C" fn(*mut rdma_event_channel, *mut *mut rdma_cm_event) -> c_int;
type AckCmEvent = unsafe extern "C" fn(*mut rdma_cm_event) -> c_int;
type ConnCall = unsafe extern "C" fn(*mut rdma_cm_id, *const rdma_conn_param) -> c_int;
type CreateQp = unsafe extern "C" fn(*mut rdma_cm_id, *mut ibv_pd, *mut ibv_qp_init_attr) -> c_int;
type DestroyQp = unsafe extern "C" fn(*mut rdma_cm_id);
type EventStr = unsafe extern "C" fn(u32) -> *const c_char;

/// librdmacm's functions, looked up once with libibverbs'.
struct CmLib {
    create_event_channel: CreateEventChannel,
    destroy_event_channel: DestroyEventChannel,
    create_id: CreateId,
    destroy_id: IdCall,
    bind_addr: BindAddr,
    listen: Listen,
    resolve_addr: ResolveAddr,
    resolve_route: ResolveRoute,
    get_cm_event: GetCmEvent,
    ack_cm_event: AckCmEvent,
    connect: ConnCall,
    accept: ConnCall,
    disconnect: IdCall,
    create_qp: CreateQp,
    destroy_qp: DestroyQp,
    event_str: EventStr,
    get_devices: GetDevices,
    free_devices: FreeDevices,
    migrate_id: MigrateId,
    reject: Reject,
}

/// libibverbs' functions, looked up once.
pub struct Lib {
    get_device_list: GetDeviceList,
    free_device_list: FreeDeviceList,
    get_device_name: GetDeviceName,
    open_device: OpenDevice,
    close_device: CloseDevice,
    query_device: QueryDevice,
    query_port: QueryPort,
    query_gid: QueryGid,
    /// `_ibv_query_gid_table` (rdma-core ≥ 32): valid entries with their
    /// types in one call. Optional: older libraries fall back to
    /// `ibv_query_gid` and sysfs.
    query_gid_table: Option<QueryGidTable>,
    alloc_pd: AllocPd,
    dealloc_pd: DeallocPd,
    create_cq: CreateCq,
    destroy_cq: DestroyCq,
    reg_mr: RegMr,
    dereg_mr: DeregMr,
    create_comp_channel: CreateCompChannel,
    destroy_comp_channel: DestroyCompChannel,
    get_cq_event: GetCqEvent,
    ack_cq_events: AckCqEvents,
    create_srq: CreateSrq,
    destroy_srq: DestroySrq,
    modify_qp: ModifyQp,
    cm: CmLib,
}

/// The most recent `dlerror` text.
fn dlerror_text() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until
    // the next dl* call on this thread; it is copied at once.
    let p = unsafe { libc::dlerror() };
    if p.is_null() {
        return "unknown dl error".into();
    }
    // SAFETY: p is non-NULL and NUL-terminated (above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Looks `name` up in `handle`; `None` when absent.
fn sym(handle: *mut c_void, name: &str) -> Option<*mut c_void> {
    let cname = CString::new(name).ok()?;
    // SAFETY: handle came from a successful dlopen and is never closed;
    // cname is NUL-terminated.
    let p = unsafe { libc::dlsym(handle, cname.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// Opens the library named by `env` (or `default`) and returns its handle
/// and name.
fn open(env: &str, default: &str) -> Result<(*mut c_void, String), VerbsError> {
    let name = std::env::var(env).unwrap_or_else(|_| default.to_string());
    let cname = CString::new(name.clone())
        .map_err(|_| VerbsError::Unavailable(format!("bad library name {name:?}")))?;
    // SAFETY: cname is NUL-terminated. Loading runs rdma-core's
    // constructors, which only initialise its own state. librdmacm's own
    // dependency on libibverbs.so.1 resolves to the copy already loaded,
    // so contexts rdma-cm opens are usable with libibverbs' calls here.
    let handle = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(VerbsError::Unavailable(dlerror_text()));
    }
    Ok((handle, name))
}

impl Lib {
    fn load() -> Result<Lib, VerbsError> {
        let (handle, name) = open(LIBIBVERBS_ENV, LIBIBVERBS)?;
        let need = |n: &str| {
            sym(handle, n).ok_or_else(|| VerbsError::Unavailable(format!("{name}: no symbol {n}")))
        };
        // SAFETY (all transmutes below): each symbol is the rdma-core
        // function of that name, whose C prototype is the type it becomes
        // (module contract, "Prototypes"); data and function pointers have
        // the same size and representation on every platform rdma-core
        // supports.
        macro_rules! func {
            ($ty:ty, $n:expr) => {
                func!(need, $ty, $n)
            };
            ($need:ident, $ty:ty, $n:expr) => {{
                let p = $need($n)?;
                // SAFETY: see the comment above the macro.
                unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
            }};
        }
        let query_gid_table = sym(handle, "_ibv_query_gid_table")
            .filter(|_| std::env::var_os(NO_GID_TABLE_ENV).is_none())
            // SAFETY: as for `func!`: _ibv_query_gid_table's prototype.
            .map(|p| unsafe { std::mem::transmute::<*mut c_void, QueryGidTable>(p) });
        Ok(Lib {
            get_device_list: func!(GetDeviceList, "ibv_get_device_list"),
            free_device_list: func!(FreeDeviceList, "ibv_free_device_list"),
            get_device_name: func!(GetDeviceName, "ibv_get_device_name"),
            open_device: func!(OpenDevice, "ibv_open_device"),
            close_device: func!(CloseDevice, "ibv_close_device"),
            query_device: func!(QueryDevice, "ibv_query_device"),
            query_port: func!(QueryPort, "ibv_query_port"),
            query_gid: func!(QueryGid, "ibv_query_gid"),
            query_gid_table,
            alloc_pd: func!(AllocPd, "ibv_alloc_pd"),
            dealloc_pd: func!(DeallocPd, "ibv_dealloc_pd"),
            create_cq: func!(CreateCq, "ibv_create_cq"),
            destroy_cq: func!(DestroyCq, "ibv_destroy_cq"),
            reg_mr: func!(RegMr, "ibv_reg_mr"),
            dereg_mr: func!(DeregMr, "ibv_dereg_mr"),
            create_comp_channel: func!(CreateCompChannel, "ibv_create_comp_channel"),
            destroy_comp_channel: func!(DestroyCompChannel, "ibv_destroy_comp_channel"),
            get_cq_event: func!(GetCqEvent, "ibv_get_cq_event"),
            ack_cq_events: func!(AckCqEvents, "ibv_ack_cq_events"),
            create_srq: func!(CreateSrq, "ibv_create_srq"),
            destroy_srq: func!(DestroySrq, "ibv_destroy_srq"),
            modify_qp: func!(ModifyQp, "ibv_modify_qp"),
            // Fields are evaluated in order: librdmacm is opened only once
            // libibverbs proved complete, so the first complaint names the
            // first thing missing.
            cm: {
                let (cm_handle, cm_name) = open(LIBRDMACM_ENV, LIBRDMACM)?;
                let cm_need = |n: &str| {
                    sym(cm_handle, n)
                        .ok_or_else(|| VerbsError::Unavailable(format!("{cm_name}: no symbol {n}")))
                };
                CmLib {
                    create_event_channel: func!(
                        cm_need,
                        CreateEventChannel,
                        "rdma_create_event_channel"
                    ),
                    destroy_event_channel: func!(
                        cm_need,
                        DestroyEventChannel,
                        "rdma_destroy_event_channel"
                    ),
                    create_id: func!(cm_need, CreateId, "rdma_create_id"),
                    destroy_id: func!(cm_need, IdCall, "rdma_destroy_id"),
                    bind_addr: func!(cm_need, BindAddr, "rdma_bind_addr"),
                    listen: func!(cm_need, Listen, "rdma_listen"),
                    resolve_addr: func!(cm_need, ResolveAddr, "rdma_resolve_addr"),
                    resolve_route: func!(cm_need, ResolveRoute, "rdma_resolve_route"),
                    get_cm_event: func!(cm_need, GetCmEvent, "rdma_get_cm_event"),
                    ack_cm_event: func!(cm_need, AckCmEvent, "rdma_ack_cm_event"),
                    connect: func!(cm_need, ConnCall, "rdma_connect"),
                    accept: func!(cm_need, ConnCall, "rdma_accept"),
                    disconnect: func!(cm_need, IdCall, "rdma_disconnect"),
                    create_qp: func!(cm_need, CreateQp, "rdma_create_qp"),
                    destroy_qp: func!(cm_need, DestroyQp, "rdma_destroy_qp"),
                    event_str: func!(cm_need, EventStr, "rdma_event_str"),
                    get_devices: func!(cm_need, GetDevices, "rdma_get_devices"),
                    free_devices: func!(cm_need, FreeDevices, "rdma_free_devices"),
                    migrate_id: func!(cm_need, MigrateId, "rdma_migrate_id"),
                    reject: func!(cm_need, Reject, "rdma_reject"),
                }
            },
        })
    }
}

/// The process's libibverbs table: loaded on first use, checked once; the
/// same answer afterwards.
pub fn lib() -> Result<&'static Lib, VerbsError> {
    static LIB: OnceLock<Result<Lib, VerbsError>> = OnceLock::new();
    LIB.get_or_init(Lib::load).as_ref().map_err(Clone::clone)
}

/// The errno of the last failed call on this thread (rdma-core sets it;
/// `EIO` if it did not).
fn last_errno() -> c_int {
    std::io::Error::last_os_error()
        .raw_os_error()
        .filter(|&e| e != 0)
        .unwrap_or(libc::EIO)
}

/// rdma-core's calls returning 0 or an errno (some return -1 and set errno).
fn check(call: &'static str, rc: c_int) -> Result<(), VerbsError> {
    match rc {
        0 => Ok(()),
        rc if rc > 0 => Err(VerbsError::Call { call, errno: rc }),
        _ => Err(VerbsError::Call {
            call,
            errno: last_errno(),
        }),
    }
}

/// rdma-core's constructors returning NULL (and setting errno) on failure.
fn made<T>(call: &'static str, p: *mut T) -> Result<*mut T, VerbsError> {
    if p.is_null() {
        return Err(VerbsError::Call {
            call,
            errno: last_errno(),
        });
    }
    Ok(p)
}

/// verbs.h's inline `ibv_poll_cq`: the provider's `poll_cq` from the
/// CQ's context's ops table, filling the front of `wc`.
///
/// # Safety
/// `cq` is a live completion queue.
unsafe fn poll_cq(cq: *mut ibv_cq, wc: &mut [ibv_wc]) -> Result<usize, VerbsError> {
    // SAFETY: cq is live (caller); `wc` is room for its length.
    unsafe { poll_cq_into(cq, wc.as_mut_ptr(), wc.len()) }
}

/// [`poll_cq`] into `room` entries at `wc` that need not be
/// initialised: the provider writes the entries it reports (the count
/// returned, at most `room`) and reads none.
///
/// # Safety
/// `cq` is a live completion queue; `wc` is valid for writes of `room`
/// `ibv_wc`s.
unsafe fn poll_cq_into(cq: *mut ibv_cq, wc: *mut ibv_wc, room: usize) -> Result<usize, VerbsError> {
    // SAFETY: cq is live (caller); its context (mirror proven by the
    // layout test) is open while it is, and so is the ops table.
    let poll = unsafe { (*(*cq).context).ops.poll_cq }.ok_or(VerbsError::Call {
        call: "ibv_poll_cq",
        errno: libc::ENOSYS,
    })?;
    let n = c_int::try_from(room).unwrap_or(c_int::MAX);
    // SAFETY: the provider's poll_cq with the cq and room for n ibv_wc
    // (mirror proven by the layout test).
    let rc = unsafe { poll(cq.cast(), n, wc.cast()) };
    match usize::try_from(rc) {
        // rdma-core reports at most the room it was given.
        Ok(got) if got <= room => Ok(got),
        _ => Err(VerbsError::Call {
            call: "ibv_poll_cq",
            errno: libc::EIO,
        }),
    }
}

/// verbs.h's inline `ibv_post_send`.
///
/// # Safety
/// `qp` is a live queue pair; `wr` is one well-formed work request
/// (`next` NULL) whose scatter/gather entries name memory registered on
/// the queue pair's protection domain (or, inline, memory readable for
/// the call) that stays valid until its completion.
unsafe fn post_send(qp: *mut ibv_qp, wr: &mut ibv_send_wr) -> Result<(), VerbsError> {
    // SAFETY: qp is live (caller); its context's ops table is rdma-core's;
    // the slot's request type is ibv_send_wr.
    unsafe {
        post_through(
            "ibv_post_send",
            (*(*qp).context).ops.post_send,
            qp.cast(),
            std::ptr::from_mut(wr).cast(),
        )
    }
}

/// The type of the ops table's posting slots.
type PostFn = unsafe extern "C" fn(*mut ibv_opaque, *mut ibv_opaque, *mut *mut ibv_opaque) -> c_int;

/// Calls a posting slot of the ops table (what `verbs.h`'s inline
/// `ibv_post_*` do): the object, its one request, an out-parameter for
/// the request that failed.
///
/// # Safety
/// `slot` was read from the ops table of `obj`'s live context, `obj` is
/// live, and `wr` is one well-formed request of the slot's type, read
/// during the call.
unsafe fn post_through(
    call: &'static str,
    slot: Option<PostFn>,
    obj: *mut ibv_opaque,
    wr: *mut ibv_opaque,
) -> Result<(), VerbsError> {
    let post = slot.ok_or(VerbsError::Call {
        call,
        errno: libc::ENOSYS,
    })?;
    let mut bad = std::ptr::null_mut();
    // SAFETY: the caller's contract.
    check(call, unsafe { post(obj, wr, &mut bad) })
}

/// verbs.h's inline `ibv_post_recv`.
///
/// # Safety
/// As [`post_send`], for a receive (the memory stays writable until the
/// receive completes).
unsafe fn post_recv(qp: *mut ibv_qp, wr: &mut ibv_recv_wr) -> Result<(), VerbsError> {
    // SAFETY: as in post_send, for the slot taking an ibv_recv_wr.
    unsafe {
        post_through(
            "ibv_post_recv",
            (*(*qp).context).ops.post_recv,
            qp.cast(),
            std::ptr::from_mut(wr).cast(),
        )
    }
}

/// verbs.h's inline `ibv_post_srq_recv`: the provider's `post_srq_recv`
/// from the shared receive queue's context's ops table.
///
/// # Safety
/// `srq` is a live shared receive queue; `wr` as for [`post_recv`].
unsafe fn post_srq_recv(srq: *mut ibv_srq, wr: &mut ibv_recv_wr) -> Result<(), VerbsError> {
    // SAFETY: srq is live (caller); its context's ops table is rdma-core's
    // (mirror proven by the layout test); the slot takes an ibv_recv_wr.
    unsafe {
        post_through(
            "ibv_post_srq_recv",
            (*(*srq).context).ops.post_srq_recv,
            srq.cast(),
            std::ptr::from_mut(wr).cast(),
        )
    }
}

// ---------------------------------------------------------------------------
// Owners.

/// `ibv_get_device_list`'s array; freed on drop. Contexts opened from it
/// stay valid after that (rdma-core keeps devices alive while open).
pub struct DeviceList {
    lib: &'static Lib,
    list: *mut *mut ibv_device,
    len: usize,
}

impl DeviceList {
    /// The devices present now (none is not an error).
    pub fn get() -> Result<DeviceList, VerbsError> {
        let lib = lib()?;
        let mut n: c_int = 0;
        // SAFETY: n is a valid out-parameter; the result is NULL or an array
        // of n device pointers (NULL-terminated) owned by the caller.
        let list = unsafe { (lib.get_device_list)(&mut n) };
        if list.is_null() {
            // rdma-core returns NULL with ENOSYS when the kernel has no
            // RDMA support at all: that is "no devices" too.
            return match last_errno() {
                libc::ENOSYS | libc::ENODEV | libc::ENOENT => Ok(DeviceList { lib, list, len: 0 }),
                errno => Err(VerbsError::Call {
                    call: "ibv_get_device_list",
                    errno,
                }),
            };
        }
        Ok(DeviceList {
            lib,
            list,
            len: usize::try_from(n).unwrap_or(0),
        })
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn device(&self, i: usize) -> *mut ibv_device {
        assert!(i < self.len, "device index {i} out of range");
        // SAFETY: list holds len valid entries (get) and i < len.
        unsafe { *self.list.add(i) }
    }

    /// The kernel name of device `i` (`rxe0`, `mlx5_0`).
    pub fn name(&self, i: usize) -> String {
        // SAFETY: the device pointer is live while the list is.
        let p = unsafe { (self.lib.get_device_name)(self.device(i)) };
        if p.is_null() {
            return String::new();
        }
        // SAFETY: a non-NULL name is NUL-terminated and lives with the device.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// Opens device `i`.
    pub fn open(&self, i: usize) -> Result<Context, VerbsError> {
        // SAFETY: the device pointer is live while the list is.
        let ctx = unsafe { (self.lib.open_device)(self.device(i)) };
        let ctx = made("ibv_open_device", ctx)?;
        Ok(Context { lib: self.lib, ctx })
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        if !self.list.is_null() {
            // SAFETY: list came from ibv_get_device_list and is freed once.
            unsafe { (self.lib.free_device_list)(self.list) };
        }
    }
}

/// An opened device (`struct ibv_context`); closed on drop.
pub struct Context {
    lib: &'static Lib,
    ctx: *mut ibv_context,
}

// SAFETY: an ibv_context is not tied to the thread that opened it, and the
// calls made through &self are thread-safe in libibverbs (module contract).
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl Context {
    /// `ibv_query_device`.
    pub fn query_device(&self) -> Result<ibv_device_attr, VerbsError> {
        // SAFETY: all-zero is a valid ibv_device_attr (integers and chars).
        let mut attr: ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: ctx is open; attr is a writable ibv_device_attr.
        let rc = unsafe { (self.lib.query_device)(self.ctx, &mut attr) };
        check("ibv_query_device", rc).map(|()| attr)
    }

    /// `ibv_query_port` for port `port` (1-based).
    pub fn query_port(&self, port: u8) -> Result<ibv_port_attr, VerbsError> {
        let mut attr = ibv_port_attr::default();
        // SAFETY: ctx is open; attr is a zeroed full-size ibv_port_attr,
        // larger than or equal to what the exported symbol writes.
        let rc = unsafe { (self.lib.query_port)(self.ctx, port, &mut attr) };
        check("ibv_query_port", rc).map(|()| attr)
    }

    /// `ibv_query_gid` for one index.
    pub fn query_gid(&self, port: u8, index: c_int) -> Result<[u8; 16], VerbsError> {
        let mut gid = ibv_gid { raw: [0; 16] };
        // SAFETY: ctx is open; gid is a writable ibv_gid.
        let rc = unsafe { (self.lib.query_gid)(self.ctx, port, index, &mut gid) };
        // SAFETY: every bit pattern is a valid [u8; 16].
        check("ibv_query_gid", rc).map(|()| unsafe { gid.raw })
    }

    /// `ibv_query_gid_table`: every valid GID of every port, with its type.
    /// `None` when the library is older than rdma-core 32.
    pub fn query_gid_table(&self, max: usize) -> Option<Result<Vec<ibv_gid_entry>, VerbsError>> {
        let f = self.lib.query_gid_table?;
        let blank = ibv_gid_entry {
            gid: ibv_gid { raw: [0; 16] },
            gid_index: 0,
            port_num: 0,
            gid_type: 0,
            ndev_ifindex: 0,
        };
        let mut v = vec![blank; max];
        // SAFETY: ctx is open; v has room for max entries of the size
        // passed, which is the header's sizeof(struct ibv_gid_entry).
        let n = unsafe { f(self.ctx, v.as_mut_ptr(), max, 0, size_of::<ibv_gid_entry>()) };
        Some(match usize::try_from(n) {
            Ok(n) => {
                v.truncate(n.min(max));
                Ok(v)
            }
            Err(_) => Err(VerbsError::Call {
                call: "ibv_query_gid_table",
                errno: c_int::try_from(-n).unwrap_or(libc::EIO),
            }),
        })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: ctx came from ibv_open_device and is closed once. A
        // failure cannot be acted on here.
        unsafe { (self.lib.close_device)(self.ctx) };
    }
}

// ---------------------------------------------------------------------------
// rdma-cm owners. Borrows encode the teardown order rdma-core needs: a
// queue pair goes before its CQ, PD and id; memory regions before their
// PD; CQs and PDs (allocated on the id's device) before the id; ids before
// their event channel.

/// An `rdma_event_channel`: where the CM events of its ids arrive.
/// Destroyed on drop (after every id on it, which borrow it).
pub struct EventChannel {
    lib: &'static Lib,
    ch: *mut rdma_event_channel,
}

/// The kind of a CM event (`enum rdma_cm_event_type`), with its name for
/// messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmEventKind(pub u32);

impl fmt::Display for CmEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ok(lib) = lib() else {
            return write!(f, "event {}", self.0);
        };
        // SAFETY: rdma_event_str returns a static string for any value
        // (an "UNKNOWN" one for values it does not know).
        let p = unsafe { (lib.cm.event_str)(self.0) };
        if p.is_null() {
            return write!(f, "event {}", self.0);
        }
        // SAFETY: p is a static NUL-terminated string (above).
        let name = unsafe { CStr::from_ptr(p) };
        f.write_str(&name.to_string_lossy())
    }
}

/// A socket address as the `sockaddr` rdma-cm takes.
fn sockaddr_in(addr: std::net::SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// Milliseconds for rdma-cm's timeouts, saturating.
fn millis(d: std::time::Duration) -> c_int {
    c_int::try_from(d.as_millis()).unwrap_or(c_int::MAX)
}

impl EventChannel {
    /// `rdma_create_event_channel`.
    pub fn new() -> Result<EventChannel, VerbsError> {
        let lib = lib()?;
        // SAFETY: no arguments; the result is NULL or a channel we own.
        let ch = unsafe { (lib.cm.create_event_channel)() };
        let ch = made("rdma_create_event_channel", ch)?;
        Ok(EventChannel { lib, ch })
    }

    /// `rdma_create_id` for a reliable connected (`RDMA_PS_TCP`) id whose
    /// events arrive here.
    pub fn create_id(&self) -> Result<CmId<'_>, VerbsError> {
        let mut id = std::ptr::null_mut();
        // SAFETY: ch is live; id is a valid out-parameter.
        let rc =
            unsafe { (self.lib.cm.create_id)(self.ch, &mut id, std::ptr::null_mut(), RDMA_PS_TCP) };
        check("rdma_create_id", rc)?;
        Ok(CmId {
            lib: self.lib,
            id,
            _channel: std::marker::PhantomData,
        })
    }

    /// The next event, waiting at most `timeout`: `Timeout` when none
    /// came (bounded, never a hang).
    pub fn next_event(&self, timeout: std::time::Duration) -> Result<CmEvent<'_>, VerbsError> {
        // SAFETY: ch is live; its first field is the fd (mirror proven by
        // the layout test).
        let fd = unsafe { (*self.ch).fd };
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            // SAFETY: pfd is one valid pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, millis(left)) };
            match n {
                1.. => break,
                0 => return Err(VerbsError::Timeout("rdma_get_cm_event")),
                _ if last_errno() == libc::EINTR => continue,
                _ => {
                    return Err(VerbsError::Call {
                        call: "poll",
                        errno: last_errno(),
                    })
                }
            }
        }
        let mut ev = std::ptr::null_mut();
        // SAFETY: ch is live and readable (poll above), so this does not
        // block; ev is a valid out-parameter.
        let rc = unsafe { (self.lib.cm.get_cm_event)(self.ch, &mut ev) };
        check("rdma_get_cm_event", rc)?;
        Ok(CmEvent {
            lib: self.lib,
            ev,
            _channel: std::marker::PhantomData,
        })
    }
}

impl Drop for EventChannel {
    fn drop(&mut self) {
        // SAFETY: ch came from rdma_create_event_channel and is destroyed
        // once; every id on it borrowed it and is gone.
        unsafe { (self.lib.cm.destroy_event_channel)(self.ch) };
    }
}

/// One CM event; acknowledged (`rdma_ack_cm_event`) on drop.
pub struct CmEvent<'ch> {
    lib: &'static Lib,
    ev: *mut rdma_cm_event,
    _channel: std::marker::PhantomData<&'ch EventChannel>,
}

impl<'ch> CmEvent<'ch> {
    /// What happened.
    pub fn kind(&self) -> CmEventKind {
        // SAFETY: ev is live until acked in drop.
        CmEventKind(unsafe { (*self.ev).event })
    }

    /// The event's status (0, or a negative errno / a reject reason).
    pub fn status(&self) -> c_int {
        // SAFETY: as in kind.
        unsafe { (*self.ev).status }
    }

    /// Fails unless this is a `want` event with status 0.
    pub fn expect(self, want: u32) -> Result<(), VerbsError> {
        if self.kind().0 == want && self.status() == 0 {
            return Ok(());
        }
        Err(VerbsError::Event {
            want: CmEventKind(want),
            got: self.kind(),
            status: self.status(),
        })
    }

    /// The new id of a `CONNECT_REQUEST` event, now owned by the caller
    /// (accept or drop it); the event is acknowledged.
    pub fn into_request(self) -> Result<CmId<'ch>, VerbsError> {
        // SAFETY: as in kind.
        let id = unsafe { (*self.ev).id };
        self.expect(RDMA_CM_EVENT_CONNECT_REQUEST)?;
        // The request's id belongs to the application from this event on
        // (rdma_cm(7)); it is on the listener's channel, which 'ch keeps.
        Ok(CmId {
            lib: lib()?,
            id,
            _channel: std::marker::PhantomData,
        })
    }
}

impl Drop for CmEvent<'_> {
    fn drop(&mut self) {
        // SAFETY: ev came from rdma_get_cm_event and is acked once.
        unsafe { (self.lib.cm.ack_cm_event)(self.ev) };
    }
}

/// An `rdma_cm_id` (one endpoint of a connection, or a listener);
/// destroyed on drop.
pub struct CmId<'ch> {
    lib: &'static Lib,
    id: *mut rdma_cm_id,
    _channel: std::marker::PhantomData<&'ch EventChannel>,
}

/// Options of `rdma_connect`/`rdma_accept`.
#[derive(Clone, Copy, Debug)]
pub struct ConnParam {
    /// RDMA READ/atomic depth as responder and initiator.
    pub rd_atomic: u8,
    /// Transport retries (0–7).
    pub retry_count: u8,
    /// RNR retries (0–7; 7 is "forever").
    pub rnr_retry_count: u8,
}

impl ConnParam {
    fn raw(&self) -> rdma_conn_param {
        rdma_conn_param {
            private_data: std::ptr::null(),
            private_data_len: 0,
            responder_resources: self.rd_atomic,
            initiator_depth: self.rd_atomic,
            flow_control: 1,
            retry_count: self.retry_count,
            rnr_retry_count: self.rnr_retry_count,
            srq: 0,
            qp_num: 0,
        }
    }
}

impl<'ch> CmId<'ch> {
    /// `rdma_bind_addr`.
    pub fn bind(&self, addr: std::net::SocketAddrV4) -> Result<(), VerbsError> {
        let sa = sockaddr_in(addr);
        // SAFETY: id is live; sa is a sockaddr_in, read during the call.
        let rc = unsafe { (self.lib.cm.bind_addr)(self.id, std::ptr::from_ref(&sa).cast()) };
        check("rdma_bind_addr", rc)
    }

    /// `rdma_listen`.
    pub fn listen(&self, backlog: c_int) -> Result<(), VerbsError> {
        // SAFETY: id is live and bound.
        check("rdma_listen", unsafe {
            (self.lib.cm.listen)(self.id, backlog)
        })
    }

    /// `rdma_resolve_addr` to `dst` (ADDR_RESOLVED follows on the channel).
    pub fn resolve_addr(
        &self,
        dst: std::net::SocketAddrV4,
        timeout: std::time::Duration,
    ) -> Result<(), VerbsError> {
        let sa = sockaddr_in(dst);
        // SAFETY: id is live; sa is read during the call; NULL source
        // lets rdma-cm choose.
        let rc = unsafe {
            (self.lib.cm.resolve_addr)(
                self.id,
                std::ptr::null(),
                std::ptr::from_ref(&sa).cast(),
                millis(timeout),
            )
        };
        check("rdma_resolve_addr", rc)
    }

    /// `rdma_resolve_route` (ROUTE_RESOLVED follows on the channel).
    pub fn resolve_route(&self, timeout: std::time::Duration) -> Result<(), VerbsError> {
        // SAFETY: id is live with a resolved address.
        let rc = unsafe { (self.lib.cm.resolve_route)(self.id, millis(timeout)) };
        check("rdma_resolve_route", rc)
    }

    /// `rdma_connect` (ESTABLISHED or an error event follows).
    pub fn connect(&self, p: &ConnParam) -> Result<(), VerbsError> {
        let raw = p.raw();
        // SAFETY: id is live with a resolved route; raw is read during the
        // call and carries no private data.
        check("rdma_connect", unsafe {
            (self.lib.cm.connect)(self.id, &raw)
        })
    }

    /// `rdma_accept` on a request's id (ESTABLISHED follows).
    pub fn accept(&self, p: &ConnParam) -> Result<(), VerbsError> {
        let raw = p.raw();
        // SAFETY: as in connect; id came from a CONNECT_REQUEST.
        check("rdma_accept", unsafe {
            (self.lib.cm.accept)(self.id, &raw)
        })
    }

    /// `rdma_disconnect` (DISCONNECTED follows on both sides).
    pub fn disconnect(&self) -> Result<(), VerbsError> {
        // SAFETY: id is live.
        check("rdma_disconnect", unsafe {
            (self.lib.cm.disconnect)(self.id)
        })
    }

    /// The device rdma-cm bound this id to (after address resolution or
    /// for a request's id); `None` before that.
    pub fn device(&self) -> Option<DeviceRef<'_>> {
        // SAFETY: id is live; verbs is NULL or a context librdmacm keeps
        // open while the id exists.
        let ctx = unsafe { (*self.id).verbs };
        (!ctx.is_null()).then_some(DeviceRef {
            lib: self.lib,
            ctx,
            _id: std::marker::PhantomData,
        })
    }

    /// `rdma_create_qp`: an RC queue pair on this id, on `pd`, with both
    /// queues completing on `cq`; rdma-cm moves it through its states as
    /// the connection forms.
    pub fn create_qp<'q>(
        &'q self,
        pd: &'q ProtectionDomain<'_>,
        cq: &'q CompletionQueue<'_>,
        cap: ibv_qp_cap,
    ) -> Result<QueuePair<'q>, VerbsError> {
        let mut attr = ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: cq.cq,
            recv_cq: cq.cq,
            srq: std::ptr::null_mut(),
            cap,
            qp_type: IBV_QPT_RC,
            sq_sig_all: 0,
        };
        // SAFETY: id, pd and cq are live (borrowed for 'q, so they outlive
        // the queue pair); attr is read and updated during the call.
        let rc = unsafe { (self.lib.cm.create_qp)(self.id, pd.pd, &mut attr) };
        check("rdma_create_qp", rc)?;
        // SAFETY: on success rdma-cm stored the new queue pair in id->qp.
        let qp = unsafe { (*self.id).qp };
        Ok(QueuePair {
            lib: self.lib,
            id: self.id,
            qp,
            _borrows: std::marker::PhantomData,
        })
    }
}

impl Drop for CmId<'_> {
    fn drop(&mut self) {
        // SAFETY: id is destroyed once; its queue pair (which borrowed it)
        // is gone, and every event naming it was acked (CmEvent borrows
        // the channel only for its own lifetime and acks on drop).
        unsafe { (self.lib.cm.destroy_id)(self.id) };
    }
}

/// A device context rdma-cm opened, borrowed from an id.
#[derive(Clone, Copy)]
pub struct DeviceRef<'id> {
    lib: &'static Lib,
    ctx: *mut ibv_context,
    _id: std::marker::PhantomData<&'id ()>,
}

impl<'id> DeviceRef<'id> {
    /// `ibv_alloc_pd`.
    pub fn alloc_pd(&self) -> Result<ProtectionDomain<'id>, VerbsError> {
        // SAFETY: ctx is open while the id is ('id).
        let pd = unsafe { (self.lib.alloc_pd)(self.ctx) };
        let pd = made("ibv_alloc_pd", pd)?;
        Ok(ProtectionDomain {
            lib: self.lib,
            pd,
            _id: std::marker::PhantomData,
        })
    }

    /// `ibv_create_cq` with room for `cqe` completions, polled (no
    /// completion channel).
    pub fn create_cq(&self, cqe: c_int) -> Result<CompletionQueue<'id>, VerbsError> {
        // SAFETY: ctx is open while the id is; no context pointer or
        // channel is attached.
        let cq = unsafe {
            (self.lib.create_cq)(self.ctx, cqe, std::ptr::null_mut(), std::ptr::null_mut(), 0)
        };
        let cq = made("ibv_create_cq", cq)?;
        Ok(CompletionQueue {
            lib: self.lib,
            cq,
            _id: std::marker::PhantomData,
        })
    }
}

/// A protection domain; deallocated on drop.
pub struct ProtectionDomain<'id> {
    lib: &'static Lib,
    pd: *mut ibv_pd,
    _id: std::marker::PhantomData<&'id ()>,
}

impl ProtectionDomain<'_> {
    /// `ibv_reg_mr` over a new zeroed buffer of `len` bytes, which the
    /// region owns; `access` is `IBV_ACCESS_*` bits.
    pub fn register(&self, len: usize, access: c_int) -> Result<MemoryRegion<'_>, VerbsError> {
        let buf: Box<[u8]> = vec![0u8; len].into_boxed_slice();
        let buf = Box::into_raw(buf);
        // SAFETY: pd is live; buf is an allocation of len bytes that stays
        // put until the region is deregistered (drop).
        let mr = unsafe { (self.lib.reg_mr)(self.pd, buf.cast(), len, access) };
        if mr.is_null() {
            let errno = last_errno();
            // SAFETY: buf came from Box::into_raw above and was not
            // registered.
            drop(unsafe { Box::from_raw(buf) });
            return Err(VerbsError::Call {
                call: "ibv_reg_mr",
                errno,
            });
        }
        Ok(MemoryRegion {
            lib: self.lib,
            mr,
            buf,
            _pd: std::marker::PhantomData,
        })
    }
}

impl Drop for ProtectionDomain<'_> {
    fn drop(&mut self) {
        // SAFETY: pd is deallocated once, after its regions and queue
        // pairs (which borrow it).
        unsafe { (self.lib.dealloc_pd)(self.pd) };
    }
}

/// A registered buffer the region owns. The device reads and writes it
/// behind Rust's back (receives, remote writes), so no Rust reference to
/// its bytes is ever handed out: [`MemoryRegion::write`] and
/// [`MemoryRegion::read`] copy, and are meaningful between the
/// completions that order them with the device's accesses.
pub struct MemoryRegion<'pd> {
    lib: &'static Lib,
    mr: *mut ibv_mr,
    buf: *mut [u8],
    _pd: std::marker::PhantomData<&'pd ()>,
}

impl MemoryRegion<'_> {
    /// The registered length.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether the length is 0.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The buffer's address (what a peer's RDMA names with [`Self::rkey`]).
    pub fn addr(&self) -> u64 {
        self.buf.cast::<u8>() as u64
    }

    /// The local key (for this side's work requests).
    pub fn lkey(&self) -> u32 {
        // SAFETY: mr is live until drop.
        unsafe { (*self.mr).lkey }
    }

    /// The remote key (for a peer's RDMA).
    pub fn rkey(&self) -> u32 {
        // SAFETY: mr is live until drop.
        unsafe { (*self.mr).rkey }
    }

    fn check_range(&self, off: usize, len: usize) {
        assert!(
            off.checked_add(len).is_some_and(|end| end <= self.len()),
            "range {off}+{len} outside a region of {}",
            self.len()
        );
    }

    /// Copies `data` into the buffer at `off` (panics outside it).
    pub fn write(&self, off: usize, data: &[u8]) {
        self.check_range(off, data.len());
        // SAFETY: the range is inside the owned allocation (checked);
        // the bytes are copied through raw pointers, no reference to the
        // buffer exists.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.buf.cast::<u8>().add(off), data.len())
        };
    }

    /// Copies `len` bytes at `off` out of the buffer (panics outside it).
    pub fn read(&self, off: usize, len: usize) -> Vec<u8> {
        self.check_range(off, len);
        let mut v = vec![0u8; len];
        // SAFETY: as in write.
        unsafe {
            std::ptr::copy_nonoverlapping(self.buf.cast::<u8>().add(off), v.as_mut_ptr(), len)
        };
        v
    }

    /// A scatter-gather entry for `len` bytes at `off` (panics outside).
    fn sge(&self, off: usize, len: usize) -> ibv_sge {
        self.check_range(off, len);
        ibv_sge {
            addr: self.addr() + off as u64,
            length: u32::try_from(len).expect("one work request moves less than 4 GiB"),
            lkey: self.lkey(),
        }
    }
}

impl Drop for MemoryRegion<'_> {
    fn drop(&mut self) {
        // SAFETY: mr is deregistered once; after ibv_dereg_mr returns the
        // device no longer accesses the buffer through this region's keys,
        // so the buffer can be freed. If it fails (EBUSY: still bound),
        // the buffer is leaked rather than freed under the device.
        let rc = unsafe { (self.lib.dereg_mr)(self.mr) };
        if rc == 0 {
            // SAFETY: buf came from Box::into_raw in register.
            drop(unsafe { Box::from_raw(self.buf) });
        }
    }
}

/// A completion queue, polled; destroyed on drop.
pub struct CompletionQueue<'id> {
    lib: &'static Lib,
    cq: *mut ibv_cq,
    _id: std::marker::PhantomData<&'id ()>,
}

impl CompletionQueue<'_> {
    /// `ibv_poll_cq`: fills the front of `wc`, returns how many.
    pub fn poll(&self, wc: &mut [ibv_wc]) -> Result<usize, VerbsError> {
        // SAFETY: cq is live until drop.
        unsafe { poll_cq(self.cq, wc) }
    }
}

impl Drop for CompletionQueue<'_> {
    fn drop(&mut self) {
        // SAFETY: cq is destroyed once, after the queue pairs using it
        // (which borrow it).
        unsafe { (self.lib.destroy_cq)(self.cq) };
    }
}

/// What a send-queue work request does.
#[derive(Clone, Copy, Debug)]
pub enum SendOp {
    /// A two-sided send (consumes a receive at the peer).
    Send,
    /// An RDMA WRITE to the peer's `remote_addr` under its `rkey`.
    Write {
        /// The peer's address (its [`MemoryRegion::addr`] plus an offset).
        remote_addr: u64,
        /// The peer's [`MemoryRegion::rkey`].
        rkey: u32,
    },
}

/// An RC queue pair created by rdma-cm on an id; destroyed on drop.
///
/// Posting is safe: a work request names a region's bytes by its keys, and
/// the device refuses (with an error completion) any access after the
/// region is deregistered, so a region dropped with work in flight never
/// lets the device touch freed memory.
pub struct QueuePair<'q> {
    lib: &'static Lib,
    id: *mut rdma_cm_id,
    qp: *mut ibv_qp,
    _borrows: std::marker::PhantomData<&'q ()>,
}

impl QueuePair<'_> {
    /// The queue pair number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: qp is live until drop.
        unsafe { (*self.qp).qp_num }
    }

    /// Posts one signaled send-queue work request over `len` bytes of
    /// `mr` at `off`; its completion carries `wr_id`.
    pub fn post_send(
        &self,
        wr_id: u64,
        op: SendOp,
        mr: &MemoryRegion<'_>,
        off: usize,
        len: usize,
    ) -> Result<(), VerbsError> {
        let mut sge = mr.sge(off, len);
        let (opcode, rdma) = match op {
            SendOp::Send => (IBV_WR_SEND, ibv_send_wr_rdma::default()),
            SendOp::Write { remote_addr, rkey } => {
                (IBV_WR_RDMA_WRITE, ibv_send_wr_rdma { remote_addr, rkey })
            }
        };
        let mut wr = ibv_send_wr {
            wr_id,
            next: std::ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
            opcode,
            send_flags: IBV_SEND_SIGNALED,
            imm_data: 0,
            wr: ibv_send_wr_wr {
                atomic: ibv_send_wr_atomic::default(),
            },
            qp_type: 0,
            bind_mw: [0; 6],
        };
        wr.wr.rdma = rdma;
        // SAFETY: qp is live; wr is one well-formed request over a
        // region this queue pair's PD registered.
        unsafe { post_send(self.qp, &mut wr) }
    }

    /// Posts one receive of up to `len` bytes into `mr` at `off`.
    pub fn post_recv(
        &self,
        wr_id: u64,
        mr: &MemoryRegion<'_>,
        off: usize,
        len: usize,
    ) -> Result<(), VerbsError> {
        let mut sge = mr.sge(off, len);
        let mut wr = ibv_recv_wr {
            wr_id,
            next: std::ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        // SAFETY: as in post_send.
        unsafe { post_recv(self.qp, &mut wr) }
    }
}

impl Drop for QueuePair<'_> {
    fn drop(&mut self) {
        // SAFETY: the id is live (borrowed for 'q) and holds this qp;
        // rdma_destroy_qp destroys it once and clears id->qp.
        unsafe { (self.lib.cm.destroy_qp)(self.id) };
    }
}
