//! The EFA provider's extension (`rdma/fi_ext_efa.h`).
//!
//! Extra domain operations an application opens with `fi_open_ops` under
//! the name [`FI_EFA_DOMAIN_OPS`], and the memory-registration attributes
//! they report. No provider here is EFA: the header exists so that programs
//! written for it build, and `fi_open_ops` with the name answers
//! `-FI_ENOSYS` like any operations set the domain does not have.

use super::*;

/// Name of the EFA domain operations for `fi_open_ops`.
pub const FI_EFA_DOMAIN_OPS: &core::ffi::CStr = c"efa domain ops";

/// What `query_mr` reports about a registration: which interconnect ids
/// are valid (`FI_EFA_MR_ATTR_*` bits in `ic_id_validity`) and the ids
/// used for receives, RDMA reads and RDMA receives.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_efa_mr_attr {
    /// `FI_EFA_MR_ATTR_*` bits: which of the ids below are set.
    pub ic_id_validity: u16,
    /// Interconnect id for receives.
    pub recv_ic_id: u16,
    /// Interconnect id for RDMA reads.
    pub rdma_read_ic_id: u16,
    /// Interconnect id for RDMA receives.
    pub rdma_recv_ic_id: u16,
}

c_anon_enum! {
    /// Bits of `fi_efa_mr_attr.ic_id_validity`.
    pub enum fi_efa_mr_attr_validity : c_int {
        /// `recv_ic_id` is valid.
        FI_EFA_MR_ATTR_RECV_IC_ID = 1 << 0,
        /// `rdma_read_ic_id` is valid.
        FI_EFA_MR_ATTR_RDMA_READ_IC_ID = 1 << 1,
        /// `rdma_recv_ic_id` is valid.
        FI_EFA_MR_ATTR_RDMA_RECV_IC_ID = 1 << 2,
    }
}

/// The operations [`FI_EFA_DOMAIN_OPS`] names (no size field).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_efa_ops_domain {
    /// Reports a registration's interconnect ids.
    pub query_mr:
        Option<unsafe extern "C" fn(mr: *mut fid_mr, mr_attr: *mut fi_efa_mr_attr) -> c_int>,
}

// What 2.2–2.6 added (docs/api-2.2-2.6.md): the device-direct ("GDA")
// operations, external completion-queue and counter memory, the feature
// query and a data-transfer flag.

/// Name of the EFA device-direct operations for `fi_open_ops` (2.3).
pub const FI_EFA_GDA_OPS: &core::ffi::CStr = c"efa gda ops";
/// Name of the EFA feature query for `fi_open_ops` (2.6).
pub const FI_EFA_FEATURE_OPS: &core::ffi::CStr = c"efa feature ops";
/// Data-transfer flag (the provider-specific bits 60–63): hint the device
/// to favour message rate for this RDMA operation (2.6).
pub const FI_EFA_WR_HIGH_PPS: u64 = 1 << 60;

c_anon_enum! {
    /// Bits of `fi_efa_cq_init_attr.flags` (2.2).
    pub enum fi_efa_cq_init_flags : c_int {
        /// The CQ lives in the dma-buf `ext_mem_dmabuf` describes.
        FI_EFA_CQ_INIT_FLAGS_EXT_MEM_DMABUF = 1 << 0,
    }
}

/// A work queue as `query_qp_wqs` reports it (2.2).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_efa_wq_attr {
    /// The queue's memory.
    pub buffer: *mut u8,
    /// Bytes per entry.
    pub entry_size: u32,
    /// Entries in the queue.
    pub num_entries: u32,
    /// The doorbell register.
    pub doorbell: *mut u32,
    /// Most entries posted with one doorbell ring.
    pub max_batch: u32,
}

/// A completion queue as `query_cq` reports it (2.2).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_efa_cq_attr {
    /// The queue's memory.
    pub buffer: *mut u8,
    /// Bytes per entry.
    pub entry_size: u32,
    /// Entries in the queue.
    pub num_entries: u32,
}

/// Member `ext_mem_dmabuf` of `fi_efa_cq_init_attr`: where the queue
/// lives when `FI_EFA_CQ_INIT_FLAGS_EXT_MEM_DMABUF` is set.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct __anon_fi_efa_cq_init_attr_ext_mem_dmabuf {
    /// Its address in the process.
    pub buffer: *mut u8,
    /// Its length.
    pub length: u64,
    /// Offset of the queue in the dma-buf.
    pub offset: u64,
    /// The dma-buf's descriptor.
    pub fd: u32,
}

/// Extra attributes of `cq_open_ext` (2.2).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_efa_cq_init_attr {
    /// `FI_EFA_CQ_INIT_FLAGS_*` bits.
    pub flags: u64,
    /// The queue's external memory.
    pub ext_mem_dmabuf: __anon_fi_efa_cq_init_attr_ext_mem_dmabuf,
}

c_enum! {
    /// What kind of memory a `fi_efa_memory_location` names (2.6; the
    /// `type` byte holds one).
    pub enum fi_efa_memory_location_type : c_uint {
        /// A virtual address (`ptr`).
        FI_EFA_MEMORY_LOCATION_VA = 0,
        /// A dma-buf (`dmabuf`).
        FI_EFA_MEMORY_LOCATION_DMABUF = 1,
    }
}

/// Member `dmabuf` of `fi_efa_memory_location`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct __anon_fi_efa_memory_location_dmabuf {
    /// Offset in the dma-buf.
    pub offset: u64,
    /// The dma-buf's descriptor.
    pub fd: i32,
    /// Must be 0.
    pub reserved: u32,
}

/// Memory a counter may live in (2.6), by address or by dma-buf.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_efa_memory_location {
    /// The address (`FI_EFA_MEMORY_LOCATION_VA`).
    pub ptr: *mut u8,
    /// The dma-buf (`FI_EFA_MEMORY_LOCATION_DMABUF`).
    pub dmabuf: __anon_fi_efa_memory_location_dmabuf,
    /// A `fi_efa_memory_location_type`.
    pub r#type: u8,
    /// Must be 0.
    pub reserved: [u8; 7],
}

c_anon_enum! {
    /// Bits of `fi_efa_comp_cntr_init_attr.flags` (2.6).
    pub enum fi_efa_comp_cntr_init_flags : c_int {
        /// The completion count lives in `comp_cntr_ext_mem`.
        FI_EFA_COMP_CNTR_INIT_WITH_COMP_EXTERNAL_MEM = 1 << 0,
        /// The error count lives in `err_cntr_ext_mem`.
        FI_EFA_COMP_CNTR_INIT_WITH_ERR_EXTERNAL_MEM = 1 << 1,
    }
}

/// Extra attributes of `cntr_open_ext` (2.6).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_efa_comp_cntr_init_attr {
    /// Must be 0.
    pub comp_mask: u64,
    /// `FI_EFA_COMP_CNTR_INIT_WITH_*` bits.
    pub flags: u32,
    /// Must be 0.
    pub reserved: u32,
    /// Where the completion count lives.
    pub comp_cntr_ext_mem: fi_efa_memory_location,
    /// Where the error count lives.
    pub err_cntr_ext_mem: fi_efa_memory_location,
}

/// The operations [`FI_EFA_GDA_OPS`] names (2.3; no size field): what a
/// program driving the device itself needs to know of the provider's
/// objects.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_efa_ops_gda {
    /// A peer's address handle number, queue pair number and key.
    pub query_addr: Option<
        unsafe extern "C" fn(
            ep_fid: *mut fid_ep,
            addr: fi_addr_t,
            ahn: *mut u16,
            remote_qpn: *mut u16,
            remote_qkey: *mut u32,
        ) -> c_int,
    >,
    /// The endpoint's send and receive work queues.
    pub query_qp_wqs: Option<
        unsafe extern "C" fn(
            ep_fid: *mut fid_ep,
            sq_attr: *mut fi_efa_wq_attr,
            rq_attr: *mut fi_efa_wq_attr,
        ) -> c_int,
    >,
    /// A CQ's queue.
    pub query_cq:
        Option<unsafe extern "C" fn(cq_fid: *mut fid_cq, cq_attr: *mut fi_efa_cq_attr) -> c_int>,
    /// `fi_cq_open` with extra attributes.
    pub cq_open_ext: Option<
        unsafe extern "C" fn(
            domain_fid: *mut fid_domain,
            attr: *mut fi_cq_attr,
            efa_cq_init_attr: *mut fi_efa_cq_init_attr,
            cq_fid: *mut *mut fid_cq,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// A registration's local key.
    pub get_mr_lkey: Option<unsafe extern "C" fn(mr: *mut fid_mr) -> u64>,
    /// `fi_cntr_open` with extra attributes (2.6).
    pub cntr_open_ext: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_cntr_attr,
            cntr: *mut *mut fid_cntr,
            context: *mut c_void,
            efa_attr: *mut fi_efa_comp_cntr_init_attr,
        ) -> c_int,
    >,
}

/// The operation [`FI_EFA_FEATURE_OPS`] names (2.6): whether the provider
/// has a behaviour or fix, by name, independently of the API version.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_efa_feature_ops {
    /// True when the provider has `feature`.
    pub query: Option<unsafe extern "C" fn(feature: *const c_char) -> bool>,
}

// The 2.2–2.6 layouts (x86_64), as upstream's 2.6 header has them; Debian
// 13's 2.1 header, which the oracle reads, predates them.
const _: () = assert!(core::mem::size_of::<fi_efa_wq_attr>() == 32);
const _: () = assert!(core::mem::offset_of!(fi_efa_wq_attr, max_batch) == 24);
const _: () = assert!(core::mem::size_of::<fi_efa_cq_attr>() == 16);
const _: () = assert!(core::mem::size_of::<fi_efa_cq_init_attr>() == 40);
const _: () = assert!(core::mem::size_of::<fi_efa_memory_location>() == 32);
const _: () = assert!(core::mem::offset_of!(fi_efa_memory_location, r#type) == 24);
const _: () = assert!(core::mem::size_of::<fi_efa_comp_cntr_init_attr>() == 80);
const _: () = assert!(core::mem::offset_of!(fi_efa_comp_cntr_init_attr, err_cntr_ext_mem) == 48);
const _: () = assert!(core::mem::size_of::<fi_efa_ops_gda>() == 48);
const _: () = assert!(core::mem::offset_of!(fi_efa_ops_gda, cntr_open_ext) == 40);
