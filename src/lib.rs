//! oxifabric's engine: the ABI mirror of libfabric 1.17 and the provider-
//! independent core (fi_info handling, providers registry, errors, logging,
//! parameters, `fi_tostr`).
pub mod abi;
