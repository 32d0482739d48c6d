//! oxifabric's engine: the ABI mirror of libfabric 2.x (and its older ABI
//! nodes) and the provider-
//! independent core (fi_info handling, providers registry, errors, logging,
//! parameters, `fi_tostr`).
pub mod abi;
pub mod addr;
pub mod error;
pub mod filter;
pub mod getinfo;
pub mod iface;
pub mod info;
pub mod log;
pub mod param;
pub mod provider;

/// `FI_VERSION(2, 6)`: the API version this library implements, that of
/// upstream's newest release (2.6, ABI node `FABRIC_1.9`) and of the
/// headers generated from [`abi`]. Every older API version is accepted too;
/// what each one changes in the structs applications allocate is in
/// [`compat`].
pub const FI_VERSION_CURRENT: u32 =
    ((abi::FI_MAJOR_VERSION as u32) << 16) | abi::FI_MINOR_VERSION as u32;
pub mod compat;
pub mod object;
pub mod ops;
pub mod service;
pub mod strerror;
pub mod tostr;
