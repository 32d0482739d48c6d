//! `oxi_loopback`: a test-only provider that proves the engine's endpoint
//! core is enough to write a provider on. It offers `FI_EP_MSG`,
//! `FI_EP_RDM` and `FI_EP_DGRAM` endpoints with `FI_MSG` and `FI_TAGGED`
//! between processes of one host, addressed as IPv4 or IPv6 loopback; its "wire" is one Unix datagram socket per endpoint in the
//! abstract namespace, named `oxi_loopback:PORT` after the port of the
//! endpoint's `sockaddr_in` address (so fabtests' `-B PORT`/`-P PORT`
//! conventions work unchanged). Bindings, completion routing, matching,
//! multi-receive, peek/claim/discard, cancel and truncation all come from
//! the engine (`service::ep_core`, `service::rxq`); this crate only moves
//! datagrams.
//!
//! It is hidden: `fi_getinfo` lists it only when the application names it
//! (`hints->fabric_attr->prov_name`, as `-p oxi_loopback` does), when
//! `FI_PROVIDER` names it, or when `OXI_TEST_PROVIDERS=1` is set.

mod ep;
mod pep;

use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::{DomainAttr, EpAttr, FabricAttr, Info, RxAttr, TxAttr};
use oxifabric::ops::{DomainOps, EndpointOps, FabricOps, IoVec, PassiveEpOps};
use oxifabric::provider::{Provider, Request};
use oxifabric::service::progress::{AutoProgress, Progress};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// The name applications select it by.
pub const NAME: &str = "oxi_loopback";
const CAPS: u64 = FI_MSG
    | FI_TAGGED
    | FI_SEND
    | FI_RECV
    | FI_MULTI_RECV
    | FI_SOURCE
    | FI_DIRECTED_RECV
    | FI_LOCAL_COMM;
const DGRAM_CAPS: u64 = FI_MSG | FI_SEND | FI_RECV | FI_MULTI_RECV | FI_SOURCE | FI_LOCAL_COMM;
const QUEUE_SIZE: usize = 4096;
/// Largest message: a reliable endpoint's messages travel in fragments.
const MAX_MSG: usize = 64 << 20;
/// Largest connection private data.
const CM_DATA_SIZE: usize = 256;
/// Largest datagram-endpoint message (one fragment).
const DGRAM_MAX_MSG: usize = ep::FRAG;

/// The provider's registration.
pub struct Loopback;

/// The instance the library lists.
pub static PROVIDER: Loopback = Loopback;

/// Whether this request asked for the provider.
fn wanted(req: &Request<'_>) -> bool {
    let named = |s: &str| {
        s.split([',', ';'])
            .any(|p| p.trim().trim_start_matches('^').eq_ignore_ascii_case(NAME))
    };
    std::env::var("OXI_TEST_PROVIDERS").is_ok_and(|v| v == "1")
        || std::env::var("FI_PROVIDER").is_ok_and(|v| named(&v))
        || req
            .hints
            .and_then(|h| h.fabric.prov_name.as_deref())
            .is_some_and(named)
}

fn entry(ep_type: fi_ep_type, v6: bool, src: Option<SocketAddr>, dest: Option<SocketAddr>) -> Info {
    let (caps, max_msg) = if ep_type == FI_EP_DGRAM {
        (DGRAM_CAPS, DGRAM_MAX_MSG)
    } else {
        (CAPS, MAX_MSG)
    };
    Info {
        caps,
        addr_format: if v6 {
            FI_SOCKADDR_IN6 as u32
        } else {
            FI_SOCKADDR_IN as u32
        },
        src_addr: src.map(|a| addr::to_sockaddr(&a)),
        dest_addr: dest.map(|a| addr::to_sockaddr(&a)),
        // Each side lists only the capabilities fi_endpoint(3) gives it
        // (FI_LOCAL_COMM is the entry's and the domain's).
        tx: TxAttr {
            caps: caps & !(FI_RECV | FI_MULTI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM),
            op_flags: 0,
            msg_order: FI_ORDER_SAS,
            inject_size: 4096.min(max_msg),
            size: QUEUE_SIZE,
            iov_limit: IoVec::CAP,
            ..Default::default()
        },
        rx: RxAttr {
            caps: caps & !(FI_SEND | FI_LOCAL_COMM),
            msg_order: FI_ORDER_SAS,
            size: QUEUE_SIZE,
            iov_limit: IoVec::CAP,
            ..Default::default()
        },
        ep: EpAttr {
            ep_type,
            protocol: FI_PROTO_UNSPEC as u32,
            max_msg_size: max_msg,
            mem_tag_format: if ep_type == FI_EP_DGRAM {
                0
            } else {
                0xaaaa_aaaa_aaaa_aaaa
            },
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
            cq_data_size: 8,
            max_err_data: CM_DATA_SIZE,
            cq_cnt: 256,
            ep_cnt: 1024,
            tx_ctx_cnt: 1024,
            rx_ctx_cnt: 1024,
            max_ep_tx_ctx: 1,
            max_ep_rx_ctx: 1,
            cntr_cnt: 256,
            mr_iov_limit: 1,
            caps: FI_LOCAL_COMM,
            ..Default::default()
        },
        fabric: FabricAttr {
            name: Some(NAME.into()),
            prov_version: 1 << 16,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The loopback address of a family with a port: the provider reaches
/// only local processes, and only the port names an endpoint.
pub(crate) fn local_addr(v6: bool, port: u16) -> SocketAddr {
    let ip = if v6 {
        IpAddr::V6(Ipv6Addr::LOCALHOST)
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    };
    SocketAddr::new(ip, port)
}

impl Provider for Loopback {
    fn name(&self) -> &'static str {
        NAME
    }

    fn version(&self) -> u32 {
        1 << 16
    }

    fn getinfo(&self, req: &Request<'_>) -> Result<Vec<Info>> {
        if !wanted(req) {
            return Ok(Vec::new());
        }
        // The families a node names (both for "localhost" or no node).
        let families: &[bool] = match req.node {
            None => &[false, true],
            Some("127.0.0.1") => &[false],
            Some("::1") => &[true],
            Some("localhost") if req.flags & FI_NUMERICHOST == 0 => &[false, true],
            Some(_) => return Err(Error::NoData),
        };
        let port = match req.service {
            None => 0,
            Some(s) => s.parse::<u16>().map_err(|_| Error::NoData)?,
        };
        let hinted = req
            .hints
            .and_then(|h| h.src_addr.as_deref())
            .and_then(oxifabric::service::addr_format::decode);
        let mut out = Vec::new();
        for &v6 in families {
            let here = local_addr(v6, port);
            let (src, dest) = match hinted {
                Some(h) if req.node.is_none() => (Some(h), None),
                _ if req.flags & FI_SOURCE != 0 => (Some(here), None),
                _ if req.node.is_some() || req.service.is_some() => (None, Some(here)),
                _ => (None, None),
            };
            if src.is_some_and(|s| s.is_ipv6() != v6) {
                continue;
            }
            for t in [FI_EP_MSG, FI_EP_RDM, FI_EP_DGRAM] {
                let mut e = entry(t, v6, src, dest);
                oxifabric::getinfo::tailor(&mut e, req.hints);
                out.push(e);
            }
        }
        Ok(out)
    }

    fn fabric(&self, _attr: &FabricAttr) -> Result<Arc<dyn FabricOps>> {
        Ok(Arc::new(LoopFabric))
    }
}

struct LoopFabric;

impl FabricOps for LoopFabric {
    fn domain(&self, info: &Info) -> Result<Arc<dyn DomainOps>> {
        let auto = (info.domain.data_progress == FI_PROGRESS_AUTO)
            .then(|| AutoProgress::new("oxifabric-loopback-progress"));
        Ok(Arc::new(LoopDomain { auto }))
    }

    fn passive_ep(&self, info: &Info) -> Result<Arc<dyn PassiveEpOps>> {
        let p: Arc<dyn PassiveEpOps> = pep::LoopPep::new(info);
        Ok(p)
    }
}

/// A domain: with `FI_PROGRESS_AUTO`, the engine's progress thread.
struct LoopDomain {
    auto: Option<AutoProgress>,
}

impl DomainOps for LoopDomain {
    fn endpoint(&self, info: &Info) -> Result<Arc<dyn EndpointOps>> {
        if ![FI_EP_MSG, FI_EP_RDM, FI_EP_DGRAM].contains(&info.ep.ep_type) {
            return Err(Error::Inval);
        }
        let ep = ep::LoopEp::new(info);
        if let Some(a) = &self.auto {
            a.register(Arc::downgrade(&ep) as std::sync::Weak<dyn Progress>);
        }
        let ep: Arc<dyn EndpointOps> = ep;
        Ok(ep)
    }
}
