//! The PSM2 provider's extension (`rdma/fi_ext_psm2.h`).
//!
//! One provider-specific value name for `fi_set_val`/`fi_get_val`. No
//! provider here is PSM2: the header exists so that programs written for it
//! build; the library refuses the name as it does any value name it lacks.

/// `fi_set_val` name asking PSM2 to disconnect from its peers: bit 31 (the
/// provider-specific range) plus 1. An `unsigned long` since 2.0, an
/// `unsigned int` in 1.x; the value is the same.
pub const FI_PSM2_DISCONNECT: u64 = 1 | (1 << 31);
