//! oxifabric's binding to rdma-core's verbs: the foundation of the verbs
//! provider (issue 23). It is not a provider yet and appears in no
//! `fi_info`.
//!
//! - [`ibv`]: the crate's one unsafe boundary. libibverbs and librdmacm
//!   are opened with `dlopen` on first use and never linked, so everything
//!   here works (by reporting "no verbs here") on hosts without rdma-core.
//!   Besides the queries: rdma-cm connections, protection domains, memory
//!   registration, completion queues and RC queue pairs with the
//!   `static inline` data path (send, receive, RDMA WRITE, poll).
//! - [`device`]: the devices present, their limits, ports and GIDs, as
//!   plain Rust values.
//!
//! `src/bin/verbs-probe.rs` prints what [`device::devices`] finds; the
//! soft-RoCE guest test (`tests/verbs/` at the top of the repository)
//! compares it with `ibv_devinfo`, and runs `src/bin/verbs-rc-pingpong.rs`
//! (server and client over one RC connection: checked sends of several
//! sizes, RDMA WRITE with the peer's rkey, clean disconnect).

pub mod device;
pub mod ibv;
