//! Fabrics: open domains and passive endpoints.

use crate::domain::SockDomain;
use crate::pep::SockPep;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::{DomainOps, FabricOps, PassiveEpOps};
use std::sync::Arc;

/// A sockets fabric (one network), opened under `prov`: `sockets` or one
/// of the names the library also offers the engine under (`tcp`, ...).
pub struct SockFabric {
    pub prov: String,
}

impl FabricOps for SockFabric {
    fn domain(&self, info: &Info) -> Result<Arc<dyn DomainOps>> {
        if info
            .fabric
            .prov_name
            .as_deref()
            .is_some_and(|p| !p.eq_ignore_ascii_case(&self.prov))
        {
            return Err(Error::Inval);
        }
        let d: Arc<dyn DomainOps> = SockDomain::new(info);
        Ok(d)
    }

    fn passive_ep(&self, info: &Info) -> Result<Arc<dyn PassiveEpOps>> {
        let p: Arc<dyn PassiveEpOps> = SockPep::new(info)?;
        Ok(p)
    }
}
