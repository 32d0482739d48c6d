//! oxifabric's verbs provider (`verbs`): `FI_EP_MSG` endpoints over RC
//! queue pairs of rdma-core's verbs, connected with rdma-cm (issue 23).
//!
//! - [`ibv`]: the crate's one unsafe boundary. libibverbs and librdmacm
//!   are opened with `dlopen` on first use and never linked, so everything
//!   here works (by reporting "no verbs here") on hosts without rdma-core.
//!   Besides the queries: rdma-cm connections, protection domains, memory
//!   registration, completion queues and RC queue pairs with the
//!   `static inline` data path (send, receive, RDMA WRITE, poll);
//!   [`ibv::owned`] holds the same objects shared with `Arc` for the
//!   provider's domains and endpoints.
//! - [`device`]: the devices present, their limits, ports and GIDs, as
//!   plain Rust values.
//! - [`info`]: `fi_getinfo` entries (one per device and address), the
//!   `FI_VERBS_*` parameters.
//! - `domain`, `ep`, `pep`, `rdm`: the fabric and domain (one device, one
//!   protection domain, registrations through the engine's MR table), the
//!   MSG endpoint, the passive endpoint and the RDM endpoint (its own
//!   RC connections per peer under the engine's receive queue; offered
//!   as [`VerbsRxm`], `verbs;ofi_rxm`).
//! - `mr_cache`, `uffd`: the domain's registration cache for buffers
//!   posted without descriptors, and the userfaultfd calls (the crate's
//!   other unsafe module, with its contract) that tell it when memory is
//!   freed or unmapped.
//!
//! `src/bin/verbs-probe.rs` prints what [`device::devices`] finds; the
//! soft-RoCE guest test (`tests/verbs/` at the top of the repository)
//! compares it with `ibv_devinfo`, runs `src/bin/verbs-rc-pingpong.rs`
//! and Debian's `fi_info` and `fi_pingpong` against the library.

pub mod device;
mod domain;
mod ep;
pub mod ibv;
pub mod info;
mod mr_cache;
mod pep;
mod rdm;
mod uffd;
mod watch;

use oxifabric::abi::FI_EP_MSG;
use oxifabric::abi::FI_EP_RDM;
use oxifabric::error::Result;
use oxifabric::info::{FabricAttr, Info};
use oxifabric::ops::FabricOps;
use oxifabric::provider::{Provider, Request};
use std::sync::Arc;

/// The provider's version as `fi_info` shows it (117.0), as upstream's
/// providers of the release whose API we carry.
pub const VERSION: u32 = 117 << 16;

/// The provider's registration.
pub struct Verbs;

/// The instance the library lists.
pub static PROVIDER: Verbs = Verbs;

impl Provider for Verbs {
    fn name(&self) -> &'static str {
        info::NAME
    }

    fn version(&self) -> u32 {
        VERSION
    }

    /// MSG entries; RDM entries too when the request asks for delivery
    /// complete (`info::rdm_named_verbs`: Open MPI's `btl ofi`).
    fn getinfo(&self, req: &Request<'_>) -> Result<Vec<Info>> {
        let mut v = info::getinfo(req, FI_EP_MSG)?;
        if info::rdm_named_verbs(req) {
            v.extend(info::getinfo(req, FI_EP_RDM)?);
        }
        Ok(v)
    }

    fn params(&self) -> &'static [(&'static str, oxifabric::abi::fi_param_type, &'static str)] {
        info::PARAMS
    }

    fn fabric(&self, _attr: &FabricAttr) -> Result<Arc<dyn FabricOps>> {
        Ok(Arc::new(domain::VerbsFabric))
    }
}

/// The RDM side of the provider, under the name upstream's verbs RDM
/// entries carry (`verbs;ofi_rxm`): `-p verbs`, `FI_PROVIDER=verbs` and
/// `prov_name = "verbs"` select it too, as upstream's utility layer over
/// verbs. Its endpoints are ours (`rdm.rs`), not a utility layer's.
pub struct VerbsRxm;

/// The RDM provider's registration.
pub static RXM_PROVIDER: VerbsRxm = VerbsRxm;

impl Provider for VerbsRxm {
    fn name(&self) -> &'static str {
        info::RXM_NAME
    }

    fn version(&self) -> u32 {
        VERSION
    }

    /// RDM entries, unless the `verbs` provider lists them for this
    /// request (`info::rdm_named_verbs`).
    fn getinfo(&self, req: &Request<'_>) -> Result<Vec<Info>> {
        if info::rdm_named_verbs(req) {
            return Ok(Vec::new());
        }
        info::getinfo(req, FI_EP_RDM)
    }

    /// Upstream's rxm variables (`FI_OFI_RXM_*`) that the RDM endpoint
    /// reads, so `fi_info -e` lists them as upstream's does.
    fn params(&self) -> &'static [(&'static str, oxifabric::abi::fi_param_type, &'static str)] {
        rdm::RXM_PARAMS
    }

    fn params_prov(&self) -> &'static str {
        rdm::RXM_PARAMS_PROV
    }

    fn fabric(&self, _attr: &FabricAttr) -> Result<Arc<dyn FabricOps>> {
        Ok(Arc::new(domain::VerbsFabric))
    }
}
