//! oxifabric's engine: the ABI mirror of libfabric 1.17 and the provider-
//! independent core (fi_info handling, providers registry, errors, logging,
//! parameters, `fi_tostr`).
pub mod abi;
pub mod addr;
pub mod error;
pub mod filter;
pub mod getinfo;
pub mod info;
pub mod log;
pub mod param;
pub mod provider;

/// `FI_VERSION(1, 17)`: the API version this library implements.
pub const FI_VERSION_CURRENT: u32 = (1 << 16) | 17;
pub mod compat;
pub mod object;
pub mod ops;
pub mod service;
pub mod strerror;
pub mod tostr;
