//! Mirror of `rdma/fi_domain.h`.

use super::*;

/// `FI_SYMMETRIC`.
pub const FI_SYMMETRIC: u64 = 1 << 59;

/// `FI_SYNC_ERR`.
pub const FI_SYNC_ERR: u64 = 1 << 58;

/// `FI_UNIVERSE`.
pub const FI_UNIVERSE: u64 = 1 << 57;

/// `FI_BARRIER_SET`.
pub const FI_BARRIER_SET: u64 = 1 << 40;

/// `FI_BROADCAST_SET`.
pub const FI_BROADCAST_SET: u64 = 1 << 41;

/// `FI_ALLTOALL_SET`.
pub const FI_ALLTOALL_SET: u64 = 1 << 42;

/// `FI_ALLREDUCE_SET`.
pub const FI_ALLREDUCE_SET: u64 = 1 << 43;

/// `FI_ALLGATHER_SET`.
pub const FI_ALLGATHER_SET: u64 = 1 << 44;

/// `FI_REDUCE_SCATTER_SET`.
pub const FI_REDUCE_SCATTER_SET: u64 = 1 << 45;

/// `FI_REDUCE_SET`.
pub const FI_REDUCE_SET: u64 = 1 << 46;

/// `FI_SCATTER_SET`.
pub const FI_SCATTER_SET: u64 = 1 << 47;

/// `FI_GATHER_SET`.
pub const FI_GATHER_SET: u64 = 1 << 48;

/// `FI_SET_OPS_HMEM_OVERRIDE`.
pub const FI_SET_OPS_HMEM_OVERRIDE: &core::ffi::CStr = c"hmem_override_ops";

/// `FI_COLLECTIVE_OFFSET`.
pub const FI_COLLECTIVE_OFFSET: c_int = 0x100;

/// `FI_REG_MR` (deprecated).
pub const FI_REG_MR: u64 = 1 << 59;

/// `FI_MR_DMABUF` (1.20): `fi_mr_attr` names a dma-buf, not an iovec.
pub const FI_MR_DMABUF: u64 = 1 << 40;

/// `FI_MR_SINGLE_USE` (2.0).
pub const FI_MR_SINGLE_USE: u64 = 1 << 41;

/// `FI_HMEM_HOST_ALLOC` (a registration flag since 2.0).
pub const FI_HMEM_HOST_ALLOC: u64 = 1 << 45;

/// `FI_HMEM_DEVICE_ONLY` (a registration flag since 2.0).
pub const FI_HMEM_DEVICE_ONLY: u64 = 1 << 46;

/// `struct fi_av_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_av_attr {
    /// `type`.
    pub r#type: fi_av_type,
    /// `rx_ctx_bits`.
    pub rx_ctx_bits: c_int,
    /// `count`.
    pub count: usize,
    /// `ep_per_node`.
    pub ep_per_node: usize,
    /// `name`.
    pub name: *const c_char,
    /// `map_addr`.
    pub map_addr: *mut c_void,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_av_set_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_av_set_attr {
    /// `count`.
    pub count: usize,
    /// `start_addr`.
    pub start_addr: fi_addr_t,
    /// `end_addr`.
    pub end_addr: fi_addr_t,
    /// `stride`.
    pub stride: u64,
    /// `comm_key_size`.
    pub comm_key_size: usize,
    /// `comm_key`.
    pub comm_key: *mut u8,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_ops_av`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av {
    /// `size`.
    pub size: usize,
    /// `insert`.
    pub insert: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            addr: *const c_void,
            count: usize,
            fi_addr: *mut fi_addr_t,
            flags: u64,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `insertsvc`.
    pub insertsvc: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            node: *const c_char,
            service: *const c_char,
            fi_addr: *mut fi_addr_t,
            flags: u64,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `insertsym`.
    pub insertsym: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            node: *const c_char,
            nodecnt: usize,
            service: *const c_char,
            svccnt: usize,
            fi_addr: *mut fi_addr_t,
            flags: u64,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `remove`.
    pub remove: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            fi_addr: *mut fi_addr_t,
            count: usize,
            flags: u64,
        ) -> c_int,
    >,
    /// `lookup`.
    pub lookup: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            fi_addr: fi_addr_t,
            addr: *mut c_void,
            addrlen: *mut usize,
        ) -> c_int,
    >,
    /// `straddr`.
    pub straddr: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            addr: *const c_void,
            buf: *mut c_char,
            len: *mut usize,
        ) -> *const c_char,
    >,
    /// `av_set`.
    pub av_set: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            attr: *mut fi_av_set_attr,
            av_set: *mut *mut fid_av_set,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `insert_auth_key` (1.20).
    pub insert_auth_key: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            auth_key: *const c_void,
            auth_key_size: usize,
            fi_addr: *mut fi_addr_t,
            flags: u64,
        ) -> c_int,
    >,
    /// `lookup_auth_key` (1.20).
    pub lookup_auth_key: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            fi_addr: fi_addr_t,
            auth_key: *mut c_void,
            auth_key_size: *mut usize,
        ) -> c_int,
    >,
    /// `set_user_id` (1.20).
    pub set_user_id: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            fi_addr: fi_addr_t,
            user_id: fi_addr_t,
            flags: u64,
        ) -> c_int,
    >,
}

/// `struct fid_av`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_av {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_av,
}

/// `struct fid_mr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_mr {
    /// `fid`.
    pub fid: fid,
    /// `mem_desc`.
    pub mem_desc: *mut c_void,
    /// `key`.
    pub key: u64,
}

c_enum! {
    /// `enum fi_hmem_iface`.
    pub enum fi_hmem_iface : c_uint {
        /// `FI_HMEM_SYSTEM`.
        FI_HMEM_SYSTEM = 0,
        /// `FI_HMEM_CUDA`.
        FI_HMEM_CUDA = 1,
        /// `FI_HMEM_ROCR`.
        FI_HMEM_ROCR = 2,
        /// `FI_HMEM_ZE`.
        FI_HMEM_ZE = 3,
        /// `FI_HMEM_NEURON`.
        FI_HMEM_NEURON = 4,
        /// `FI_HMEM_SYNAPSEAI`.
        FI_HMEM_SYNAPSEAI = 5,
    }
}

/// Anonymous member `device` of `fi_mr_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_mr_attr_device {
    /// `reserved`.
    pub reserved: u64,
    /// `cuda`.
    pub cuda: c_int,
    /// `ze`.
    pub ze: c_int,
    /// `neuron`.
    pub neuron: c_int,
    /// `synapseai`.
    pub synapseai: c_int,
}

/// `struct fi_mr_dmabuf` (1.20): memory to register, by dma-buf.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mr_dmabuf {
    /// `fd`.
    pub fd: c_int,
    /// `offset`.
    pub offset: u64,
    /// `len`.
    pub len: usize,
    /// `base_addr`.
    pub base_addr: *mut c_void,
}

/// `struct fi_mr_auth_key` (1.20): an AV-based authorization key.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mr_auth_key {
    /// `av`.
    pub av: *mut fid_av,
    /// `src_addr`.
    pub src_addr: fi_addr_t,
}

/// The anonymous union at the head of `fi_mr_attr` (1.20): the memory to
/// register, as an iovec array or (with `FI_MR_DMABUF`) a dma-buf.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_mr_attr_mem {
    /// `mr_iov`.
    pub mr_iov: *const iovec,
    /// `dmabuf`.
    pub dmabuf: *const fi_mr_dmabuf,
}

/// `struct fi_mr_attr`. Which fields an application's struct has depends on
/// the API version it asked for (`compat::mr_attr_size`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mr_attr {
    /// `mr_iov` / `dmabuf` (an anonymous union in C).
    pub __anon_mem: __anon_fi_mr_attr_mem,
    /// `iov_count`.
    pub iov_count: usize,
    /// `access`.
    pub access: u64,
    /// `offset`.
    pub offset: u64,
    /// `requested_key`.
    pub requested_key: u64,
    /// `context`.
    pub context: *mut c_void,
    /// `auth_key_size`.
    pub auth_key_size: usize,
    /// `auth_key`.
    pub auth_key: *mut u8,
    /// `iface`.
    pub iface: fi_hmem_iface,
    /// `device`.
    pub device: __anon_fi_mr_attr_device,
    /// `hmem_data` (1.19).
    pub hmem_data: *mut c_void,
    /// `page_size` (1.22).
    pub page_size: usize,
    /// `base_mr` (2.0).
    pub base_mr: *const fid_mr,
    /// `sub_mr_cnt` (2.0).
    pub sub_mr_cnt: usize,
}

/// `struct fi_mr_modify`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mr_modify {
    /// `flags`.
    pub flags: u64,
    /// `attr`.
    pub attr: fi_mr_attr,
}

/// `struct fi_hmem_override_ops`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_hmem_override_ops {
    /// `size`.
    pub size: usize,
    /// `copy_from_hmem_iov`.
    pub copy_from_hmem_iov: Option<
        unsafe extern "C" fn(
            dest: *mut c_void,
            size: usize,
            iface: fi_hmem_iface,
            device: u64,
            hmem_iov: *const iovec,
            hmem_iov_count: usize,
            hmem_iov_offset: u64,
        ) -> isize,
    >,
    /// `copy_to_hmem_iov`.
    pub copy_to_hmem_iov: Option<
        unsafe extern "C" fn(
            iface: fi_hmem_iface,
            device: u64,
            hmem_iov: *const iovec,
            hmem_iov_count: usize,
            hmem_iov_offset: u64,
            src: *const c_void,
            size: usize,
        ) -> isize,
    >,
}

c_enum! {
    /// `enum fi_datatype`.
    pub enum fi_datatype : c_uint {
        /// `FI_INT8`.
        FI_INT8 = 0,
        /// `FI_UINT8`.
        FI_UINT8 = 1,
        /// `FI_INT16`.
        FI_INT16 = 2,
        /// `FI_UINT16`.
        FI_UINT16 = 3,
        /// `FI_INT32`.
        FI_INT32 = 4,
        /// `FI_UINT32`.
        FI_UINT32 = 5,
        /// `FI_INT64`.
        FI_INT64 = 6,
        /// `FI_UINT64`.
        FI_UINT64 = 7,
        /// `FI_FLOAT`.
        FI_FLOAT = 8,
        /// `FI_DOUBLE`.
        FI_DOUBLE = 9,
        /// `FI_FLOAT_COMPLEX`.
        FI_FLOAT_COMPLEX = 10,
        /// `FI_DOUBLE_COMPLEX`.
        FI_DOUBLE_COMPLEX = 11,
        /// `FI_LONG_DOUBLE`.
        FI_LONG_DOUBLE = 12,
        /// `FI_LONG_DOUBLE_COMPLEX`.
        FI_LONG_DOUBLE_COMPLEX = 13,
        /// `FI_INT128`.
        FI_INT128 = 14,
        /// `FI_UINT128`.
        FI_UINT128 = 15,
        /// `FI_FLOAT16` (2.0).
        FI_FLOAT16 = 16,
        /// `FI_BFLOAT16` (2.0).
        FI_BFLOAT16 = 17,
        /// `FI_FLOAT8_E4M3` (2.0).
        FI_FLOAT8_E4M3 = 18,
        /// `FI_FLOAT8_E5M2` (2.0).
        FI_FLOAT8_E5M2 = 19,
        /// `FI_VOID`.
        FI_VOID = 256,
    }
}

c_enum! {
    /// `enum fi_op`.
    pub enum fi_op : c_uint {
        /// `FI_MIN`.
        FI_MIN = 0,
        /// `FI_MAX`.
        FI_MAX = 1,
        /// `FI_SUM`.
        FI_SUM = 2,
        /// `FI_PROD`.
        FI_PROD = 3,
        /// `FI_LOR`.
        FI_LOR = 4,
        /// `FI_LAND`.
        FI_LAND = 5,
        /// `FI_BOR`.
        FI_BOR = 6,
        /// `FI_BAND`.
        FI_BAND = 7,
        /// `FI_LXOR`.
        FI_LXOR = 8,
        /// `FI_BXOR`.
        FI_BXOR = 9,
        /// `FI_ATOMIC_READ`.
        FI_ATOMIC_READ = 10,
        /// `FI_ATOMIC_WRITE`.
        FI_ATOMIC_WRITE = 11,
        /// `FI_CSWAP`.
        FI_CSWAP = 12,
        /// `FI_CSWAP_NE`.
        FI_CSWAP_NE = 13,
        /// `FI_CSWAP_LE`.
        FI_CSWAP_LE = 14,
        /// `FI_CSWAP_LT`.
        FI_CSWAP_LT = 15,
        /// `FI_CSWAP_GE`.
        FI_CSWAP_GE = 16,
        /// `FI_CSWAP_GT`.
        FI_CSWAP_GT = 17,
        /// `FI_MSWAP`.
        FI_MSWAP = 18,
        /// `FI_DIFF` (2.0).
        FI_DIFF = 19,
        /// `FI_NOOP`.
        FI_NOOP = 256,
    }
}

c_enum! {
    /// `enum fi_collective_op`.
    pub enum fi_collective_op : c_uint {
        /// `FI_BARRIER`.
        FI_BARRIER = 0,
        /// `FI_BROADCAST`.
        FI_BROADCAST = 1,
        /// `FI_ALLTOALL`.
        FI_ALLTOALL = 2,
        /// `FI_ALLREDUCE`.
        FI_ALLREDUCE = 3,
        /// `FI_ALLGATHER`.
        FI_ALLGATHER = 4,
        /// `FI_REDUCE_SCATTER`.
        FI_REDUCE_SCATTER = 5,
        /// `FI_REDUCE`.
        FI_REDUCE = 6,
        /// `FI_SCATTER`.
        FI_SCATTER = 7,
        /// `FI_GATHER`.
        FI_GATHER = 8,
    }
}

/// `struct fi_ops_domain`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_domain {
    /// `size`.
    pub size: usize,
    /// `av_open`.
    pub av_open: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_av_attr,
            av: *mut *mut fid_av,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `cq_open`.
    pub cq_open: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_cq_attr,
            cq: *mut *mut fid_cq,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `endpoint`.
    pub endpoint: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            info: *mut fi_info,
            ep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `scalable_ep`.
    pub scalable_ep: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            info: *mut fi_info,
            sep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `cntr_open`.
    pub cntr_open: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_cntr_attr,
            cntr: *mut *mut fid_cntr,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `poll_open`.
    pub poll_open: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_poll_attr,
            pollset: *mut *mut fid_poll,
        ) -> c_int,
    >,
    /// `stx_ctx`.
    pub stx_ctx: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_tx_attr,
            stx: *mut *mut fid_stx,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `srx_ctx`.
    pub srx_ctx: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_rx_attr,
            rx_ep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `query_atomic`.
    pub query_atomic: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            datatype: fi_datatype,
            op: fi_op,
            attr: *mut fi_atomic_attr,
            flags: u64,
        ) -> c_int,
    >,
    /// `query_collective`.
    pub query_collective: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            coll: fi_collective_op,
            attr: *mut fi_collective_attr,
            flags: u64,
        ) -> c_int,
    >,
    /// `endpoint2`.
    pub endpoint2: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            info: *mut fi_info,
            ep: *mut *mut fid_ep,
            flags: u64,
            context: *mut c_void,
        ) -> c_int,
    >,
}

/// `struct fi_ops_mr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_mr {
    /// `size`.
    pub size: usize,
    /// `reg`.
    pub reg: Option<
        unsafe extern "C" fn(
            fid: *mut fid,
            buf: *const c_void,
            len: usize,
            access: u64,
            offset: u64,
            requested_key: u64,
            flags: u64,
            mr: *mut *mut fid_mr,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `regv`.
    pub regv: Option<
        unsafe extern "C" fn(
            fid: *mut fid,
            iov: *const iovec,
            count: usize,
            access: u64,
            offset: u64,
            requested_key: u64,
            flags: u64,
            mr: *mut *mut fid_mr,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `regattr`.
    pub regattr: Option<
        unsafe extern "C" fn(
            fid: *mut fid,
            attr: *const fi_mr_attr,
            flags: u64,
            mr: *mut *mut fid_mr,
        ) -> c_int,
    >,
}

/// `struct fid_domain`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_domain {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_domain,
    /// `mr`.
    pub mr: *mut fi_ops_mr,
}
