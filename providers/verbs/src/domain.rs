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
use std::collections::HashMap;
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
                rdm: info.ep.ep_type == FI_EP_RDM,
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
///
/// Beside each key the set keeps, for a registration peers may read
/// (`FI_REMOTE_READ`, or `FI_SEND` on an RDM domain), its remote key and
/// range, so that a rendezvous send can announce the application's own
/// registration ([`LkeySet::readable`]).
#[derive(Default)]
pub struct LkeySet {
    keys: RwLock<HashMap<u32, Option<Readable>, KeyedU64>>,
    hot: [AtomicU64; HOT_KEYS],
}

/// A registration's remote key and the range it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Readable {
    pub rkey: u32,
    addr: usize,
    len: usize,
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
        let found = keys.contains_key(&lkey);
        if found {
            hot.store(tagged, Ordering::Release);
        }
        found
    }

    /// The remote key under which peers may read `buf` through the
    /// registration whose local key is `lkey`; None when that is not one
    /// of the domain's registrations, does not let peers read, or does not
    /// hold all of `buf` (a descriptor that names another buffer's
    /// registration is not announced: the peer's read would fail).
    pub fn readable(&self, lkey: u32, buf: IoBuf) -> Option<u32> {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        let r = (*keys.get(&lkey)?)?;
        let end = buf.addr().checked_add(buf.len())?;
        (buf.addr() >= r.addr && end <= r.addr.checked_add(r.len)?).then_some(r.rkey)
    }

    fn insert(&self, lkey: u32, readable: Option<Readable>) {
        let mut s = self.keys.write().unwrap_or_else(|p| p.into_inner());
        s.insert(lkey, readable);
    }

    fn remove(&self, lkey: u32) {
        let mut s = self.keys.write().unwrap_or_else(|p| p.into_inner());
        for h in &self.hot {
            h.store(0, Ordering::Release);
        }
        s.remove(&lkey);
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
        self.lkeys.remove(self.mr.lkey());
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
    /// The domain is an RDM entry's: peers read send buffers
    /// ([`with_rendezvous`]).
    rdm: bool,
}

/// `access` widened as an RDM domain registers it: a region the
/// application sends from (`FI_SEND`) is readable by peers too, so that
/// its descriptor can name it in a rendezvous announcement and the
/// receiver reads it in place (`rdm/rndv.rs`). Upstream's `ofi_rxm`
/// widens its registrations the same way (`FI_SEND` adds
/// `FI_REMOTE_READ`). The price, the same as upstream's: a peer that
/// learns such a region's remote key may read all of it, as long as it
/// is registered. The engine's table keeps the application's bits.
fn with_rendezvous(access: u64, rdm: bool) -> u64 {
    if rdm && access & FI_SEND != 0 {
        access | FI_REMOTE_READ
    } else {
        access
    }
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
        let device_access = with_rendezvous(access, self.rdm);
        let mr = self
            .pd
            .register(buf, ibv_access(device_access, self.atomics))
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
        let readable = (device_access & FI_REMOTE_READ != 0).then(|| Readable {
            rkey: mr.rkey(),
            addr: buf.addr(),
            len: buf.len(),
        });
        self.lkeys.insert(mr.lkey(), readable);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(mem: &mut [u8], off: usize, len: usize) -> IoBuf {
        // SAFETY: `mem` outlives every use of the buffer in these tests,
        // and only addresses and lengths are read.
        unsafe { IoBuf::new(mem.as_mut_ptr().add(off), len) }
    }

    #[test]
    fn an_rdm_domain_lets_peers_read_send_buffers_only() {
        assert_eq!(with_rendezvous(FI_SEND, true), FI_SEND | FI_REMOTE_READ);
        assert_eq!(with_rendezvous(FI_RECV, true), FI_RECV);
        assert_eq!(with_rendezvous(FI_REMOTE_WRITE, true), FI_REMOTE_WRITE);
        assert_eq!(
            with_rendezvous(FI_SEND, false),
            FI_SEND,
            "MSG domains keep the bits"
        );
    }

    #[test]
    fn readable_answers_for_buffers_inside_a_readable_registration() {
        let mut mem = vec![0u8; 4096];
        let set = LkeySet::default();
        let whole = buf(&mut mem, 0, 4096);
        set.insert(
            7,
            Some(Readable {
                rkey: 70,
                addr: whole.addr(),
                len: 4096,
            }),
        );
        set.insert(8, None);
        assert_eq!(set.readable(7, whole), Some(70));
        assert_eq!(set.readable(7, buf(&mut mem, 100, 3996)), Some(70));
        assert_eq!(
            set.readable(7, buf(&mut mem, 100, 3997)),
            None,
            "past the end"
        );
        assert_eq!(set.readable(8, whole), None, "not readable by peers");
        assert!(set.contains(8));
        assert_eq!(set.readable(9, whole), None, "not a registration");
        set.remove(7);
        assert_eq!(set.readable(7, whole), None, "closed");
        assert!(!set.contains(7));
    }
}
