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
