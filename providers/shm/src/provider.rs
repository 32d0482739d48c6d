//! The `shm` provider's registration: its `fi_info` entry (shaped like
//! upstream `shm`'s: one fabric and one domain named `shm`, `FI_EP_RDM`,
//! `FI_PROTO_SHM`, `FI_ADDR_STR` addresses), its fabric and its domain.
//! Endpoints are in `ep.rs`.

use crate::ep::ShmEp;
use oxifabric::abi::*;
use oxifabric::error::{Error, Result};
use oxifabric::info::{DomainAttr, EpAttr, FabricAttr, Info, RxAttr, TxAttr};
use oxifabric::ops::{DomainOps, EndpointOps, FabricOps, IoVec};
use oxifabric::provider::{Provider, Request};
use oxifabric::service::mr::MrTable;
use oxifabric::service::progress::{AutoProgress, Progress};
use std::sync::{Arc, Weak};

/// The name applications select it by (and its fabric's and domain's).
pub const NAME: &str = "shm";
/// The version it reports (as upstream's of the same API level).
const PROV_VERSION: u32 = 117 << 16;
/// What an endpoint offers.
const CAPS: u64 = FI_MSG
    | FI_TAGGED
    | FI_RMA
    | FI_ATOMIC
    | FI_READ
    | FI_WRITE
    | FI_SEND
    | FI_RECV
    | FI_REMOTE_READ
    | FI_REMOTE_WRITE
    | FI_MULTI_RECV
    | FI_RMA_EVENT
    | FI_SOURCE
    | FI_DIRECTED_RECV
    | FI_TRIGGER
    | FI_FENCE
    | FI_LOCAL_COMM
    | FI_COLLECTIVE;
/// Capabilities only the initiating side has (left out of `rx_attr`).
const TX_ONLY: u64 = FI_SEND | FI_READ | FI_WRITE | FI_FENCE;
/// Capabilities only the receiving (target) side has (left out of
/// `tx_attr`).
const RX_ONLY: u64 = FI_RECV
    | FI_MULTI_RECV
    | FI_SOURCE
    | FI_DIRECTED_RECV
    | FI_REMOTE_READ
    | FI_REMOTE_WRITE
    | FI_RMA_EVENT;
/// Orders kept: sends in order, and a send after a write is received
/// after the write's data landed (`ep/rma.rs`).
const ORDER: u64 = FI_ORDER_SAS | FI_ORDER_SAW;
/// Orders a target keeps: it takes every operation of one sender in the
/// order it was posted, one ring in one order, and carries out each (a
/// message matched, an RMA part or atomic applied) before the next; the
/// cells behind a part that waits for the transport wait with it
/// (`ep/rma.rs`), a rendezvous that matches is pulled before the next
/// cell is looked at.
const RX_ORDER: u64 = FI_ORDER_RAR
    | FI_ORDER_RAW
    | FI_ORDER_RAS
    | FI_ORDER_WAR
    | FI_ORDER_WAW
    | FI_ORDER_WAS
    | FI_ORDER_SAR
    | FI_ORDER_SAW
    | FI_ORDER_SAS
    | FI_ORDER_RMA_RAR
    | FI_ORDER_RMA_RAW
    | FI_ORDER_RMA_WAR
    | FI_ORDER_RMA_WAW
    | FI_ORDER_ATOMIC_RAR
    | FI_ORDER_ATOMIC_RAW
    | FI_ORDER_ATOMIC_WAR
    | FI_ORDER_ATOMIC_WAW;
/// Operation flags sends may carry (as defaults too): a send completes
/// once its bytes are in the peer's memory (its ring, or its receive
/// after a rendezvous); with `FI_DELIVERY_COMPLETE`, once the peer has
/// taken it (an answer comes back).
/// One-sided operations complete once the target has done them, which is
/// each of these; `FI_FENCE` holds one until earlier ones completed.
const TX_OP_FLAGS: u64 = FI_COMPLETION
    | FI_INJECT
    | FI_INJECT_COMPLETE
    | FI_TRANSMIT_COMPLETE
    | FI_DELIVERY_COMPLETE
    | FI_FENCE;
/// Operation flags receives may carry.
const RX_OP_FLAGS: u64 = FI_COMPLETION | FI_MULTI_RECV;
/// Operations a transmit or receive context may have queued.
pub(crate) const QUEUE_SIZE: usize = 1024;
/// Largest `fi_inject`: copied at once, so the buffer is free on return.
pub(crate) const INJECT_SIZE: usize = 4096;
/// Buffers per operation.
const IOV_LIMIT: usize = 4;

/// The provider's parameters (`fi_info -e`), named as upstream's.
const PARAMS: &[(&str, fi_param_type, &str)] = &[(
    "disable_cma",
    FI_PARAM_BOOL,
    "Never copy between processes with cross-memory attach (process_vm_readv/writev): \
     large messages and RMA data travel through the shared ring instead (default: false; \
     it is also off towards a peer the kernel does not let us read)",
)];

/// Whether `FI_SHM_DISABLE_CMA` turns cross-memory attach off.
pub(crate) fn cma_disabled() -> bool {
    matches!(
        oxifabric::param::get(NAME, "disable_cma"),
        Ok(oxifabric::param::Value::Bool(true))
    )
}

/// The provider's registration.
pub struct Shm;

/// The instance the library lists.
pub static PROVIDER: Shm = Shm;

/// The one entry: everything but the addresses, which depend on the call.
fn entry() -> Info {
    Info {
        caps: CAPS,
        addr_format: FI_ADDR_STR as u32,
        tx: TxAttr {
            caps: CAPS & !(RX_ONLY | FI_LOCAL_COMM),
            op_flags: TX_OP_FLAGS,
            msg_order: ORDER,
            comp_order: FI_ORDER_NONE,
            inject_size: INJECT_SIZE,
            size: QUEUE_SIZE,
            iov_limit: IOV_LIMIT,
            rma_iov_limit: IOV_LIMIT,
            ..Default::default()
        },
        rx: RxAttr {
            caps: CAPS & !(TX_ONLY | FI_LOCAL_COMM),
            op_flags: RX_OP_FLAGS,
            msg_order: RX_ORDER,
            comp_order: FI_ORDER_NONE,
            size: QUEUE_SIZE,
            iov_limit: IOV_LIMIT,
            ..Default::default()
        },
        ep: EpAttr {
            ep_type: FI_EP_RDM,
            protocol: FI_PROTO_SHM as u32,
            protocol_version: 1,
            max_msg_size: usize::MAX,
            mem_tag_format: 0xaaaa_aaaa_aaaa_aaaa,
            tx_ctx_cnt: 1,
            rx_ctx_cnt: 1,
            ..Default::default()
        },
        domain: DomainAttr {
            name: Some(NAME.into()),
            threading: FI_THREAD_SAFE,
            control_progress: FI_PROGRESS_MANUAL,
            // The engine's progress thread drives endpoints of domains
            // opened with FI_PROGRESS_AUTO (see `tailor`).
            data_progress: FI_PROGRESS_MANUAL,
            resource_mgmt: FI_RM_ENABLED,
            av_type: FI_AV_UNSPEC,
            // Any mode the application accepts: the engine's table keys
            // registrations as the application's mode says.
            mr_mode: 0,
            mr_key_size: 8,
            cq_data_size: 8,
            cq_cnt: 1024,
            ep_cnt: 256,
            tx_ctx_cnt: 1024,
            rx_ctx_cnt: 1024,
            max_ep_tx_ctx: 1,
            max_ep_rx_ctx: 1,
            cntr_cnt: 256,
            mr_iov_limit: IOV_LIMIT,
            caps: FI_LOCAL_COMM,
            ..Default::default()
        },
        fabric: FabricAttr {
            name: Some(NAME.into()),
            prov_version: PROV_VERSION,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// An address given as text (a node name, or `FI_ADDR_STR` bytes): the
/// bytes an endpoint's `fi_getname` would give, NUL-terminated.
pub(crate) fn str_addr(s: &str) -> Vec<u8> {
    let mut v = s.trim_end_matches('\0').as_bytes().to_vec();
    v.push(0);
    v
}

impl Provider for Shm {
    fn name(&self) -> &'static str {
        NAME
    }

    fn version(&self) -> u32 {
        PROV_VERSION
    }

    fn getinfo(&self, req: &Request<'_>) -> Result<Vec<Info>> {
        if let Some(h) = req.hints {
            // Same-host peers only, named as FI_ADDR_STR.
            if h.addr_format != FI_FORMAT_UNSPEC as u32 && h.addr_format != FI_ADDR_STR as u32 {
                return Ok(Vec::new());
            }
        }
        let mut e = entry();
        // A node and service name an endpoint: ours with FI_SOURCE, the
        // peer's otherwise (any name: as upstream's shm, nothing is
        // resolved). Every peer is on this host, so with a service the
        // node adds nothing ("127.0.0.1", "localhost" or no node at
        // all name the same endpoint, as `-B PORT` and `-P PORT 127.0.0.1`
        // expect); an address in our own form stands for itself.
        let named = match (req.node, req.service) {
            (Some(n), _) if n.contains("://") => Some((n.to_string(), true)),
            (_, Some(s)) => Some((format!("shm-service:{s}"), true)),
            (Some(n), None) => Some((n.to_string(), false)),
            (None, None) => None,
        };
        if let Some((n, well_known)) = named {
            if n.len() + 1 > oxifabric::service::addr_format::MAX_STR_ADDR {
                return Err(Error::NoData);
            }
            // A service (or an address of ours) names one endpoint: it is
            // given as the address that endpoint will have, so that what
            // the application inserts in its AV is what `fi_getname` and
            // FI_SOURCE give. A node alone names no endpoint in
            // particular: as a source it only says "this host" (each
            // endpoint then makes up its own address, so two processes
            // given the same node do not collide), as a destination it is
            // the name some endpoint took with `fi_setname`.
            let canonical = crate::ep::addr_for_name(n.as_bytes()).to_string();
            if req.flags & FI_SOURCE != 0 {
                e.src_addr = Some(if well_known {
                    str_addr(&canonical)
                } else {
                    str_addr(&format!("fi_shm://{n}"))
                });
            } else {
                e.dest_addr = Some(str_addr(&canonical));
            }
        }
        if e.src_addr.is_none() {
            // As upstream's: a source is always given; this one says only
            // "a process of this host" (the endpoint makes up its own).
            e.src_addr = req
                .hints
                .and_then(|h| h.src_addr.clone())
                .filter(|a| !a.is_empty())
                .or_else(|| Some(str_addr(&format!("fi_shm://{}", std::process::id()))));
        }
        oxifabric::getinfo::tailor(&mut e, req.hints);
        Ok(vec![e])
    }

    fn params(&self) -> &'static [(&'static str, fi_param_type, &'static str)] {
        PARAMS
    }

    fn fabric(&self, _attr: &FabricAttr) -> Result<Arc<dyn FabricOps>> {
        Ok(Arc::new(ShmFabric))
    }
}

struct ShmFabric;

impl FabricOps for ShmFabric {
    fn domain(&self, info: &Info) -> Result<Arc<dyn DomainOps>> {
        Ok(ShmDomain::new(info))
    }
}

/// A domain: the registration table peers' accesses are checked against,
/// and with `FI_PROGRESS_AUTO` the engine's progress thread.
pub(crate) struct ShmDomain {
    me: Weak<ShmDomain>,
    auto: Option<AutoProgress>,
    pub(crate) mr: Arc<MrTable>,
}

impl ShmDomain {
    fn new(info: &Info) -> Arc<ShmDomain> {
        let auto = (info.domain.data_progress == FI_PROGRESS_AUTO)
            .then(|| AutoProgress::new("oxifabric-shm-progress"));
        Arc::new_cyclic(|me| ShmDomain {
            me: me.clone(),
            auto,
            mr: Arc::new(MrTable::new(
                info.domain.mr_mode,
                info.domain.mr_iov_limit.clamp(1, IoVec::CAP),
            )),
        })
    }
}

impl DomainOps for ShmDomain {
    fn endpoint(&self, info: &Info) -> Result<Arc<dyn EndpointOps>> {
        if info.ep.ep_type != FI_EP_RDM {
            return Err(Error::Inval);
        }
        let dom = self.me.upgrade().ok_or(Error::Inval)?;
        let ep = ShmEp::new(info, dom)?;
        if let Some(a) = &self.auto {
            a.register(Arc::downgrade(&ep) as Weak<dyn Progress>);
        }
        let ep: Arc<dyn EndpointOps> = ep;
        Ok(ep)
    }

    fn mr_table(&self) -> Option<Arc<MrTable>> {
        Some(self.mr.clone())
    }

    fn atomic_limit(&self) -> usize {
        crate::ep::ATOMIC_LIMIT
    }
}
