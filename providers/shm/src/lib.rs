//! oxifabric's shared-memory transport: the foundation the `shm` provider
//! (issue 25) and the sockets provider's RDM endpoint (for peers on the
//! same host, issue 26) are to be built on. It is not a provider and
//! appears in no `fi_info`.
//!
//! It only moves bytes and says what arrived; matching, completions and
//! memory registration stay in the engine (`oxifabric::service`).
//!
//! - [`region`]: a `memfd` mapped shared and passed as a descriptor; the
//!   crate's one unsafe boundary for memory other processes write.
//! - [`ring`]: each receiver's queue of fixed-size cells that many senders
//!   append to without locks.
//! - [`attach`]: how two processes exchange their regions over an
//!   abstract-namespace Unix socket, check each other's credentials and
//!   keep a handle on each other's liveness.
//! - [`doorbell`]: the eventfd a sender rings when the receiver sleeps;
//!   the second, small unsafe boundary.
//! - [`cma`]: cross-memory attach (`process_vm_readv`) for large
//!   messages, with a probe of whether the kernel allows it.
//! - [`transport`]: the per-endpoint object built on all of these: an
//!   address, peers connected on first send by a non-blocking handshake,
//!   queued sends, liveness, and progress that reports events.
//!
//! The layout, ordering rules and lifecycle are described in
//! `docs/shm-transport.md`.

pub mod alive;
pub mod attach;
pub mod bounce;
pub mod cma;
pub mod doorbell;
mod ep;
pub mod path;
mod proto;
pub mod provider;
pub mod region;
pub mod ring;
pub mod slots;
pub mod transport;

#[cfg(test)]
mod forge_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod transport_tests;
