//! Domains: the unit that owns the auto-progress thread (the engine's
//! `AutoProgress`, started with the first enabled endpoint when the domain
//! uses `FI_PROGRESS_AUTO`) and the memory-registration table (the
//! engine's `MrTable`) that its endpoints check peers' RMA against.

use crate::ep::SockEp;
use oxifabric::abi::*;
use oxifabric::error::Result;
use oxifabric::info::Info;
use oxifabric::ops::{DomainOps, EndpointOps};
use oxifabric::service::mr::MrTable;
use oxifabric::service::progress::{AutoProgress, Progress};
use std::sync::{Arc, Weak};

/// A sockets domain.
pub struct SockDomain {
    me: Weak<SockDomain>,
    auto: Option<AutoProgress>,
    /// Registered memory: peers' RMA into this domain is checked here.
    pub mr: Arc<MrTable>,
    /// `fi_domain_attr.auth_key`: the key its endpoints require of peers
    /// unless their own `fi_ep_attr.auth_key` names another.
    pub auth_key: Option<Vec<u8>>,
}

impl SockDomain {
    pub fn new(info: &Info) -> Arc<SockDomain> {
        let auto = (info.domain.data_progress != FI_PROGRESS_MANUAL)
            .then(|| AutoProgress::new("oxifabric-sockets-progress"));
        Arc::new_cyclic(|me| SockDomain {
            me: me.clone(),
            auto,
            auth_key: info.domain.auth_key.clone().filter(|k| !k.is_empty()),
            mr: Arc::new(MrTable::new(
                info.domain.mr_mode,
                info.domain.mr_iov_limit.min(crate::attrs::MR_IOV_LIMIT),
            )),
        })
    }

    /// Adds an enabled endpoint to the set the progress thread drives
    /// (auto progress only).
    pub fn register(&self, ep: Weak<SockEp>) {
        if let Some(a) = &self.auto {
            let ep: Weak<dyn Progress> = ep;
            a.register(ep);
        }
    }
}

impl DomainOps for SockDomain {
    fn endpoint(&self, info: &Info) -> Result<Arc<dyn EndpointOps>> {
        let me = self.me.upgrade().ok_or(oxifabric::error::Error::Inval)?;
        let ep: Arc<dyn EndpointOps> = SockEp::new(me, info)?;
        Ok(ep)
    }

    fn srx_context(&self, _attr: &oxifabric::info::RxAttr) -> Result<Arc<dyn EndpointOps>> {
        let srx: Arc<dyn EndpointOps> = crate::ep::srx::SharedRx::new();
        Ok(srx)
    }

    fn scalable_ep(&self, info: &Info) -> Result<Vec<Arc<dyn EndpointOps>>> {
        let me = self.me.upgrade().ok_or(oxifabric::error::Error::Inval)?;
        crate::ep::sep::open(&me, info)
    }

    fn mr_table(&self) -> Option<Arc<MrTable>> {
        Some(self.mr.clone())
    }

    fn atomic_limit(&self) -> usize {
        crate::attrs::ATOMIC_LIMIT
    }
}
