//! The verbs fabric and domain. A domain is one device: it holds
//! librdmacm's context of that device and one protection domain, in which
//! every memory registration and queue pair of the domain lives.
//! Registrations go through the engine's table (`service::mr`), which
//! calls [`DomainMr`] so that a region's key is the device's remote key
//! and `fi_mr_desc` its local key.

use crate::ep::atomic::{device_has_atomics, offers, ATOMIC_SIZE};
use crate::ibv::owned::{DevCtx, Mr, Pd};
use crate::ibv::{
    IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_READ,
    IBV_ACCESS_REMOTE_WRITE,
};
use crate::info::NAME;
use crate::mr_cache::{Limits, MrCache};
use oxifabric::abi::*;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::{DomainOps, EndpointOps, FabricOps, IoBuf, PassiveEpOps};
use oxifabric::service::atomic::AtomicKind;
use oxifabric::service::keyhash::KeyedU64;
use oxifabric::service::mr::{DeviceMr, DeviceReg, MrTable};
use oxifabric::service::progress::{AutoProgress, Progress};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// A verbs fabric (a subnet): it opens domains and passive endpoints.
pub struct VerbsFabric;

impl FabricOps for VerbsFabric {
    fn domain(&self, info: &Info) -> Result<Arc<dyn DomainOps>> {
        let name = info.domain.name.as_deref().ok_or(Error::Inval)?;
        let dev = DevCtx::open(name).map_err(|e| {
            oxifabric::prov_log!(NAME, FI_LOG_WARN, FI_LOG_DOMAIN, "domain {name}: {e}");
            Error::NoDev
        })?;
        let pd = dev.alloc_pd()?;
        // Atomics where the device has them and the entry advertises them
        // (an entry without FI_ATOMIC answers fi_query_atomic -FI_ENOSYS).
        let dev_atomics = crate::device::devices()
            .ok()
            .and_then(|ds| ds.into_iter().find(|d| d.name == name))
            .is_some_and(|d| device_has_atomics(d.attr.atomic_cap));
        let atomics = dev_atomics && info.caps & FI_ATOMIC != 0;
        let lkeys = Arc::new(LkeySet::default());
        let mrs = Arc::new(MrTable::with_device(
            info.domain.mr_mode,
            1,
            Arc::new(DomainMr {
                pd: pd.clone(),
                lkeys: lkeys.clone(),
                atomics: dev_atomics,
            }),
        ));
        let auto = (info.domain.data_progress == FI_PROGRESS_AUTO
            || info.domain.control_progress == FI_PROGRESS_AUTO)
            .then(|| AutoProgress::new("oxifabric-verbs-progress"));
        let cache = Arc::new(MrCache::new(pd.clone(), Limits::from_env()));
        Ok(Arc::new(VerbsDomain {
            dev,
            pd,
            cache,
            mrs,
            lkeys,
            auto,
            mr_mode: info.domain.mr_mode,
            atomics,
            rdm_atomics: info.ep.ep_type == FI_EP_RDM && info.caps & FI_ATOMIC != 0,
        }))
    }

    fn passive_ep(&self, info: &Info) -> Result<Arc<dyn PassiveEpOps>> {
        let p: Arc<dyn PassiveEpOps> = crate::pep::VerbsPep::new(info)?;
        Ok(p)
    }
}

/// A domain: one device, one protection domain.
pub struct VerbsDomain {
    pub dev: Arc<DevCtx>,
    pub pd: Arc<Pd>,
    /// Registrations of buffers posted without descriptors (`mr_cache`).
    pub cache: Arc<MrCache>,
    pub mrs: Arc<MrTable>,
    /// The local keys of the domain's registrations (`fi_mr_desc`).
    pub lkeys: Arc<LkeySet>,
    auto: Option<AutoProgress>,
    /// The domain's `mr_mode` (a shared receive context's descriptor rule).
    pub mr_mode: i32,
    /// The device has atomics (`fi_query_atomic` answers for them).
    atomics: bool,
    /// The domain is an RDM entry's with atomics: `fi_query_atomic`
    /// answers for the RDM endpoints' (`rdm/atomic.rs`: every combination
    /// the engine offers, software at the target), not the device's.
    rdm_atomics: bool,
}

/// The local keys a domain's registrations hand out as descriptors, so
/// that an endpoint refuses a descriptor of another domain at post time
/// instead of the device failing the work request.
///
/// The keys found last are kept beside the set (`hot`, a few entries,
/// each a key with bit 32 set or 0) and answered without the lock or a
/// hash: a ping-pong posts the same one or two buffers over and over. An
/// entry is stored only under the read lock after the set said yes, and
/// all are cleared under the write lock before any key leaves, so none
/// outlives its registration's removal.
#[derive(Default)]
pub struct LkeySet {
    keys: RwLock<HashSet<u32, KeyedU64>>,
    hot: [AtomicU64; HOT_KEYS],
}

impl LkeySet {
    /// Whether `lkey` is one of this domain's registrations.
    #[inline]
    pub fn contains(&self, lkey: u32) -> bool {
        let tagged = HOT | u64::from(lkey);
        let hot = &self.hot[hot_index(lkey)];
        if hot.load(Ordering::Acquire) == tagged {
            return true;
        }
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        let found = keys.contains(&lkey);
        if found {
            hot.store(tagged, Ordering::Release);
        }
        found
    }

    fn set(&self, lkey: u32, present: bool) {
        let mut s = self.keys.write().unwrap_or_else(|p| p.into_inner());
        if present {
            s.insert(lkey);
        } else {
            for h in &self.hot {
                h.store(0, Ordering::Release);
            }
            s.remove(&lkey);
        }
    }
}

/// How many keys [`LkeySet`] answers without its lock.
const HOT_KEYS: usize = 4;

/// Marks an [`LkeySet`] entry as holding a key (a key may be 0).
const HOT: u64 = 1 << 32;

/// The entry a key is kept in: its low bits mixed with the region index
/// above them (rdma-core keys put a region's index above an 8-bit tag).
fn hot_index(lkey: u32) -> usize {
    ((lkey ^ (lkey >> 8)) as usize) % HOT_KEYS
}

/// A registration of the domain: its local key leaves the set when the
/// region is closed, before the memory is deregistered.
struct DomainReg {
    mr: Mr,
    lkeys: Arc<LkeySet>,
}

impl Drop for DomainReg {
    fn drop(&mut self) {
        self.lkeys.set(self.mr.lkey(), false);
    }
}

impl DomainOps for VerbsDomain {
    fn endpoint(&self, info: &Info) -> Result<Arc<dyn EndpointOps>> {
        let ep: Arc<dyn EndpointOps> = match info.ep.ep_type {
            FI_EP_MSG => {
                let ep = crate::ep::VerbsEp::new(info, self)?;
                if let Some(a) = &self.auto {
                    a.register(Arc::downgrade(&ep) as std::sync::Weak<dyn Progress>);
                }
                ep
            }
            FI_EP_RDM => {
                let ep = crate::rdm::RdmEp::new(info, self)?;
                if let Some(a) = &self.auto {
                    a.register(Arc::downgrade(&ep) as std::sync::Weak<dyn Progress>);
                }
                ep
            }
            t => {
                oxifabric::prov_log!(
                    NAME,
                    FI_LOG_WARN,
                    FI_LOG_DOMAIN,
                    "fi_endpoint: only FI_EP_MSG and FI_EP_RDM endpoints (asked for type {t})"
                );
                return Err(Error::Inval);
            }
        };
        Ok(ep)
    }

    fn mr_table(&self) -> Option<Arc<MrTable>> {
        Some(self.mrs.clone())
    }

    /// A shared receive context over a shared receive queue, for MSG
    /// endpoints (`ep/srx.rs`).
    fn srx_context(&self, attr: &oxifabric::info::RxAttr) -> Result<Arc<dyn EndpointOps>> {
        let srx: Arc<dyn EndpointOps> = crate::ep::VerbsSrx::new(attr, self)?;
        Ok(srx)
    }

    /// As the endpoints': an RDM domain's are the RDM endpoints' software
    /// atomics (`rdm/atomic.rs`), otherwise the MSG endpoints' native ones
    /// (`ep/atomic.rs`) where the device has atomics.
    fn atomic_limit(&self) -> usize {
        if self.rdm_atomics {
            crate::rdm::ATOMIC_LIMIT
        } else if self.atomics {
            ATOMIC_SIZE
        } else {
            0
        }
    }

    fn atomic_offers(&self, kind: AtomicKind, op: fi_op, dt: fi_datatype) -> bool {
        self.rdm_atomics || offers(kind, op, dt)
    }
}

/// `ibv_reg_mr` for the engine's table.
struct DomainMr {
    pd: Arc<Pd>,
    lkeys: Arc<LkeySet>,
    /// Peers' atomics need remote atomic access where remote writes are
    /// allowed (only asked of a device that has atomics).
    atomics: bool,
}

/// The verbs access bits for `FI_*` access bits: receives and reads into
/// the memory need local write; peers' writes and reads their remote bits.
fn ibv_access(access: u64, atomics: bool) -> i32 {
    let mut a = 0;
    if atomics && access & FI_REMOTE_WRITE != 0 {
        a |= IBV_ACCESS_REMOTE_ATOMIC;
    }
    if access & (FI_RECV | FI_READ | FI_REMOTE_WRITE) != 0 {
        a |= IBV_ACCESS_LOCAL_WRITE;
    }
    if access & FI_REMOTE_WRITE != 0 {
        a |= IBV_ACCESS_REMOTE_WRITE;
    }
    if access & FI_REMOTE_READ != 0 {
        a |= IBV_ACCESS_REMOTE_READ;
    }
    a
}

impl DeviceMr for DomainMr {
    fn register(&self, buf: IoBuf, access: u64) -> Result<DeviceReg> {
        let mr = self
            .pd
            .register(buf, ibv_access(access, self.atomics))
            .map_err(|e| {
                oxifabric::prov_log!(
                    NAME,
                    FI_LOG_WARN,
                    FI_LOG_MR,
                    "registering {} bytes at {:#x}: {e}",
                    buf.len(),
                    buf.addr()
                );
                Error::from(e)
            })?;
        self.lkeys.set(mr.lkey(), true);
        // A region peers may not access has no remote key to give (soft-RoCE
        // answers 0 for every such region), but the table's keys must be
        // unique: its local key stands in (the device's keys are unique).
        let remote = access & (FI_REMOTE_READ | FI_REMOTE_WRITE) != 0;
        Ok(DeviceReg {
            key: u64::from(if remote { mr.rkey() } else { mr.lkey() }),
            desc: mr.lkey() as usize,
            handle: Box::new(DomainReg {
                mr,
                lkeys: self.lkeys.clone(),
            }),
        })
    }
}
