//! oxifabric's sockets provider: `FI_EP_MSG` and `FI_EP_RDM` over TCP,
//! `FI_EP_DGRAM` over UDP, with two-sided messaging (`fi_msg`,
//! `fi_tagged`), and on MSG and RDM endpoints RMA and atomics over the
//! engine's registration table (`ep/rma.rs`). Triggered operations and
//! deferred work (`FI_TRIGGER`, fi_trigger(3)) are the engine's
//! (`service::trigger`) on MSG and RDM endpoints; the provider only hands
//! it its completion sinks.

mod addrmap;
mod attrs;
mod conn;
mod domain;
mod ep;
mod fabric;
mod idmap;
pub(crate) use oxifabric::iface;
mod pep;
mod sock;
pub mod wire;

use oxifabric::error::Result;
use oxifabric::info::FabricAttr;
use oxifabric::ops::FabricOps;
use oxifabric::provider::{Provider, Request};
use std::sync::Arc;

/// The provider's registration.
pub struct Sockets;

/// The instance the library lists.
pub static PROVIDER: Sockets = Sockets;

impl Provider for Sockets {
    fn name(&self) -> &'static str {
        "sockets"
    }

    fn version(&self) -> u32 {
        attrs::PROV_VERSION
    }

    fn getinfo(&self, req: &Request<'_>) -> Result<Vec<oxifabric::info::Info>> {
        attrs::getinfo(req)
    }

    fn params(&self) -> &'static [(&'static str, oxifabric::abi::fi_param_type, &'static str)] {
        attrs::PARAMS
    }

    fn fabric(&self, attr: &FabricAttr) -> Result<Arc<dyn FabricOps>> {
        let prov = attr.prov_name.clone().unwrap_or_else(|| self.name().into());
        Ok(Arc::new(fabric::SockFabric { prov }))
    }
}
