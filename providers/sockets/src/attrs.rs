//! What the provider advertises: one `fi_info` entry per endpoint type and
//! local interface address, narrowed by node, service and `FI_SOURCE`.

use crate::iface::{self, Iface};
use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::{DomainAttr, EpAttr, FabricAttr, Info, RxAttr, TxAttr};
use oxifabric::provider::Request;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Capabilities of reliable endpoints (MSG, RDM).
pub const RELIABLE_CAPS: u64 = FI_MSG
    | FI_TAGGED
    | FI_RMA
    | FI_ATOMIC
    | FI_READ
    | FI_WRITE
    | FI_REMOTE_READ
    | FI_REMOTE_WRITE
    | FI_RMA_EVENT
    | FI_TRIGGER
    | FI_FENCE
    | FI_SEND
    | FI_RECV
    | FI_DIRECTED_RECV
    | FI_SOURCE
    | FI_MULTI_RECV
    | FI_LOCAL_COMM
    | FI_REMOTE_COMM
    | FI_SHARED_AV
    | FI_NAMED_RX_CTX
    | FI_COLLECTIVE;
/// Capabilities of datagram endpoints. Tagged messages travel in the same
/// datagram header as on reliable endpoints (`wire.rs`), so `FI_TAGGED`
/// costs nothing here (upstream's sockets DGRAM entry offers it too).
pub const DGRAM_CAPS: u64 = FI_MSG
    | FI_TAGGED
    | FI_SEND
    | FI_RECV
    | FI_DIRECTED_RECV
    | FI_SOURCE
    | FI_LOCAL_COMM
    | FI_REMOTE_COMM
    | FI_SHARED_AV
    | FI_NAMED_RX_CTX;
/// Most endpoints sharing one shared transmit (receive) context.
pub const MAX_EP_STX: usize = 128;
/// Most transmit (receive) contexts of a scalable endpoint (`ep/sep.rs`).
pub const MAX_EP_CTX: usize = 16;
/// Transmit-side capabilities. `FI_NAMED_RX_CTX` is one: the initiator
/// names the peer's receive context in the address it sends to
/// (fi_getinfo(3)), so an entry that has it carries it in `tx_attr->caps`.
const TX_CAPS: u64 = FI_MSG
    | FI_TAGGED
    | FI_SEND
    | FI_RMA
    | FI_ATOMIC
    | FI_READ
    | FI_WRITE
    | FI_FENCE
    | FI_TRIGGER
    | FI_NAMED_RX_CTX
    | FI_COLLECTIVE;
const RX_CAPS: u64 = FI_MSG
    | FI_TAGGED
    | FI_RECV
    | FI_DIRECTED_RECV
    | FI_SOURCE
    | FI_MULTI_RECV
    | FI_RMA
    | FI_ATOMIC
    | FI_REMOTE_READ
    | FI_REMOTE_WRITE
    | FI_RMA_EVENT
    | FI_TRIGGER
    | FI_COLLECTIVE;
/// The message orders kept on reliable endpoints: every frame of a
/// connection is handled in order at the target, except that a read's
/// answer leaves from registered memory after the request was handled, so
/// a later write (or a send into that memory) may overtake it: no
/// write-after-read or send-after-read.
pub const RELIABLE_ORDER: u64 = FI_ORDER_SAS
    | FI_ORDER_RAR
    | FI_ORDER_RAW
    | FI_ORDER_RAS
    | FI_ORDER_WAW
    | FI_ORDER_WAS
    | FI_ORDER_SAW;
/// Operation flags supported on sends (the entry's default is what the
/// hints ask for, see `getinfo::alter`).
const TX_OP_FLAGS: u64 = FI_COMPLETION
    | FI_INJECT
    | FI_INJECT_COMPLETE
    | FI_TRANSMIT_COMPLETE
    | FI_DELIVERY_COMPLETE
    | FI_FENCE;
/// Operation flags supported on receives.
const RX_OP_FLAGS: u64 = FI_COMPLETION | FI_MULTI_RECV;

/// Largest payload the provider buffers per inject.
pub const INJECT_SIZE: usize = 4096;
/// Outstanding operations per direction.
pub const QUEUE_SIZE: usize = 65536;
/// Messages above this size go by rendezvous (`Rts`, `Cts`, `Data`):
/// one round trip more, but never buffered or copied at the receiver.
pub const RNDV_THRESHOLD: usize = 256 << 10;
/// iovec entries per operation: as many as the engine's `IoVec` holds
/// (writev takes them all in one call).
pub const IOV_LIMIT: usize = oxifabric::ops::IoVec::CAP;
/// Bytes of operands one atomic operation may carry per remote piece
/// (`fi_query_atomic`'s count is this over the element size).
pub const ATOMIC_LIMIT: usize = 4096;
/// Remote pieces (`fi_rma_iov` entries) per RMA operation.
pub const RMA_IOV_LIMIT: usize = oxifabric::ops::IoVec::CAP;
/// iovec entries per memory registration (each remote piece of an RMA
/// operation then covers at most this many pieces of memory).
pub const MR_IOV_LIMIT: usize = oxifabric::ops::IoVec::CAP;

/// Largest datagram payload (UDP payload limit minus our header).
pub const DGRAM_MAX_MSG: usize = 65507 - crate::wire::HEADER_LEN;
/// Largest message on reliable endpoints.
pub const MAX_MSG: usize = isize::MAX as usize;
/// CM private data limit.
pub const CM_DATA_SIZE: usize = 256;
/// Generic tag format: every other bit, as upstream's providers advertise.
pub const TAG_FORMAT: u64 = 0xaaaa_aaaa_aaaa_aaaa;

/// Memory bounds of an endpoint, from the provider's parameters (read
/// once per process).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `FI_SOCKETS_MAX_UNEXP_SZ`: bytes held for messages that arrived
    /// before their receive, each counted with `rxq::ENTRY_COST` on top
    /// of its payload (rendezvous announcements too). Peers beyond it
    /// wait in TCP flow control.
    pub unexp: usize,
    /// `FI_SOCKETS_MAX_INJECT_QUEUE_SZ`: bytes of our own copies (injected
    /// sends, control frames, each with `rxq::ENTRY_COST`) queued for
    /// peers that do not read. Injects beyond it get `-FI_EAGAIN`; a
    /// connection with this much queued is not read until it drains.
    pub inject_queue: usize,
}

/// Default of [`Limits::unexp`].
pub const DEF_UNEXP: usize = oxifabric::service::rxq::UNEXPECTED_LIMIT;
/// Default of [`Limits::inject_queue`].
pub const DEF_INJECT_QUEUE: usize = 4 << 20;

/// The provider's parameters as `fi_info -e` lists them.
pub const PARAMS: &[(&str, fi_param_type, &str)] = &[
    (
        "iface",
        FI_PARAM_STRING,
        "Only list and use network interfaces whose name starts with this (e.g. lo, eth0)",
    ),
    (
        "tx_coalesce",
        FI_PARAM_BOOL,
        "Hold sends posted back to back (no progress call in between) and write them \
         together at the next progress call, within about 1 ms (default: true)",
    ),
    (
        "conn_timeout",
        FI_PARAM_INT,
        "Milliseconds an RDM endpoint keeps retrying to connect to a peer that is not listening (yet) before failing the sends to it; a peer it had reached whose listener now refuses gets at most 1000 (default: 5000)",
    ),
    (
        "max_conns",
        FI_PARAM_SIZE_T,
        "Connections an RDM endpoint keeps open; past it, the least recently used idle one is closed (by agreement with its peer) and reopened on the next send (default: 0, no limit)",
    ),
    (
        "shm",
        FI_PARAM_BOOL,
        "Reach peers on this host (same network namespace, same user) by shared memory instead of TCP, from RDM endpoints without an authorization key (default: true)",
    ),
    (
        "max_unexp_sz",
        FI_PARAM_SIZE_T,
        "Bytes an endpoint holds for messages that arrived before their receive, counting 288 per message on top of its payload; senders beyond wait (default: 268435456)",
    ),
    (
        "max_inject_queue_sz",
        FI_PARAM_SIZE_T,
        "Bytes an endpoint holds in copies of injected sends and control frames queued for peers that do not read, counting 288 per frame on top of its payload; injects beyond get -FI_EAGAIN (default: 4194304)",
    ),
];

/// The endpoint memory bounds (parameters, else the defaults; a value of
/// 0 is taken as the default).
pub fn limits() -> Limits {
    static L: std::sync::OnceLock<Limits> = std::sync::OnceLock::new();
    *L.get_or_init(|| {
        let size = |name: &str, def: usize| match oxifabric::param::get("sockets", name) {
            Ok(oxifabric::param::Value::Size(v)) if v > 0 => v,
            _ => def,
        };
        Limits {
            unexp: size("max_unexp_sz", DEF_UNEXP),
            inject_queue: size("max_inject_queue_sz", DEF_INJECT_QUEUE),
        }
    })
}

/// The provider's version as `fi_info` shows it (117.0).
pub const PROV_VERSION: u32 = 117 << 16;

/// One entry for an endpoint type on an interface address.
pub fn entry(
    ep_type: fi_ep_type,
    iface: &Iface,
    src: SocketAddr,
    dest: Option<SocketAddr>,
) -> Info {
    let (caps, max_msg, order) = match ep_type {
        FI_EP_DGRAM => (DGRAM_CAPS, DGRAM_MAX_MSG, FI_ORDER_SAS),
        // Scalable endpoints are connectionless only.
        // Collectives (the engine's `service::coll`) need an AV.
        FI_EP_MSG => (
            RELIABLE_CAPS & !(FI_NAMED_RX_CTX | FI_COLLECTIVE),
            MAX_MSG,
            RELIABLE_ORDER,
        ),
        _ => (RELIABLE_CAPS, MAX_MSG, RELIABLE_ORDER),
    };
    let rma = ep_type != FI_EP_DGRAM;
    Info {
        caps,
        mode: 0,
        addr_format: if src.is_ipv4() {
            FI_SOCKADDR_IN as u32
        } else {
            FI_SOCKADDR_IN6 as u32
        },
        src_addr: Some(addr::to_sockaddr(&src)),
        dest_addr: dest.map(|d| addr::to_sockaddr(&d)),
        handle: 0,
        tx: TxAttr {
            caps: caps & TX_CAPS,
            mode: 0,
            op_flags: TX_OP_FLAGS,
            msg_order: order,
            comp_order: FI_ORDER_NONE,
            inject_size: INJECT_SIZE.min(max_msg),
            size: QUEUE_SIZE,
            iov_limit: IOV_LIMIT,
            rma_iov_limit: if rma { RMA_IOV_LIMIT } else { 0 },
            tclass: 0,
        },
        rx: RxAttr {
            caps: caps & RX_CAPS,
            mode: 0,
            op_flags: RX_OP_FLAGS,
            msg_order: order,
            comp_order: FI_ORDER_NONE,
            total_buffered_recv: 0,
            size: QUEUE_SIZE,
            iov_limit: IOV_LIMIT,
        },
        ep: EpAttr {
            ep_type,
            protocol: FI_PROTO_SOCK_TCP as u32,
            protocol_version: crate::wire::VERSION as u32,
            max_msg_size: max_msg,
            msg_prefix_size: 0,
            max_order_raw_size: if rma { max_msg } else { 0 },
            max_order_war_size: 0,
            max_order_waw_size: if rma { max_msg } else { 0 },
            mem_tag_format: TAG_FORMAT,
            // The most a scalable endpoint may have (hints ask for fewer).
            tx_ctx_cnt: if ep_type == FI_EP_MSG { 1 } else { MAX_EP_CTX },
            rx_ctx_cnt: if ep_type == FI_EP_MSG { 1 } else { MAX_EP_CTX },
            auth_key_size: 0,
            auth_key: None,
        },
        domain: DomainAttr {
            domain: 0,
            name: Some(iface.name.clone()),
            threading: FI_THREAD_SAFE,
            control_progress: FI_PROGRESS_AUTO,
            data_progress: FI_PROGRESS_AUTO,
            resource_mgmt: FI_RM_ENABLED,
            av_type: FI_AV_UNSPEC,
            // No mode is required: local buffers are reached directly,
            // and regions are addressed by offset or by virtual address
            // and keyed by the application or by us, as the domain's
            // mr_mode says (the engine echoes FI_MR_BASIC/SCALABLE).
            mr_mode: 0,
            mr_key_size: 8,
            cq_data_size: 8,
            cq_cnt: 256,
            ep_cnt: 1024,
            tx_ctx_cnt: 1024,
            rx_ctx_cnt: 1024,
            // Scalable endpoints (RDM, DGRAM; `ep/sep.rs`).
            max_ep_tx_ctx: if ep_type == FI_EP_MSG { 1 } else { MAX_EP_CTX },
            max_ep_rx_ctx: if ep_type == FI_EP_MSG { 1 } else { MAX_EP_CTX },
            // Shared transmit contexts (the C boundary's `ep/stx.rs`):
            // how many endpoints may share one.
            max_ep_stx_ctx: MAX_EP_STX,
            // Shared receive contexts (`ep/srx.rs`).
            max_ep_srx_ctx: MAX_EP_STX,
            cntr_cnt: 256,
            mr_iov_limit: MR_IOV_LIMIT,
            // Named AVs (the engine's shm_av) are shared between the
            // processes of a host.
            caps: FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV,
            mode: 0,
            auth_key_size: 0,
            auth_key: None,
            max_err_data: CM_DATA_SIZE,
            mr_cnt: 1 << 16,
            tclass: 0,
            // One authorization key per endpoint (no default one:
            // auth_key_size 0, as upstream); no group ids; counters are
            // 64-bit.
            max_ep_auth_key: 1,
            max_group_id: 0,
            max_cntr_value: u64::MAX,
            max_err_cntr_value: u64::MAX,
        },
        fabric: FabricAttr {
            fabric: 0,
            name: Some(iface.network()),
            prov_name: None,
            prov_version: PROV_VERSION,
            api_version: 0,
        },
        nic: 0,
    }
}

fn port_of(service: Option<&str>) -> Result<u16> {
    match service {
        None => Ok(0),
        Some(s) => match s.parse::<u16>() {
            Ok(p) => Ok(p),
            Err(_) => addr::resolve(None, Some(s), false, true)?
                .first()
                .map(|a| a.port())
                .ok_or(Error::NoData),
        },
    }
}

/// Interfaces that can reach `dest`: loopback for a loopback destination,
/// otherwise every non-loopback address of the same family (an address of
/// our own host counts as local).
fn ifaces_for_dest<'a>(all: &'a [Iface], dest: &SocketAddr) -> Vec<&'a Iface> {
    let own: Vec<&Iface> = all.iter().filter(|i| i.ip == dest.ip()).collect();
    if !own.is_empty() {
        return own;
    }
    all.iter()
        .filter(|i| {
            i.ip.is_ipv4() == dest.is_ipv4() && i.ip.is_loopback() == dest.ip().is_loopback()
        })
        .collect()
}

/// The candidate entries for a request.
pub fn getinfo(req: &Request<'_>) -> Result<Vec<Info>> {
    let mut all = iface::list();
    // FI_SOCKETS_IFACE: only the interfaces named (by prefix).
    if let Ok(oxifabric::param::Value::Str(want)) = oxifabric::param::get("sockets", "iface") {
        if !want.is_empty() {
            all.retain(|i| i.name.starts_with(want.as_str()));
        }
    }
    let hints = req.hints;
    let hint_src = hints
        .and_then(|h| h.src_addr.as_ref())
        .and_then(|b| oxifabric::service::addr_format::decode(b));
    let hint_dest = hints
        .and_then(|h| h.dest_addr.as_ref())
        .and_then(|b| oxifabric::service::addr_format::decode(b));
    let numeric = req.flags & FI_NUMERICHOST != 0;

    // (interface, source address, destination) triples.
    let mut places: Vec<(Iface, SocketAddr, Option<SocketAddr>)> = Vec::new();
    if req.node.is_some() && req.flags & FI_SOURCE == 0 {
        let dests = addr::resolve(req.node, req.service.or(Some("0")), numeric, false)?;
        for d in dests {
            for i in ifaces_for_dest(&all, &d) {
                places.push((i.clone(), SocketAddr::new(i.ip, 0), Some(d)));
            }
        }
    } else if req.node.is_some() || req.service.is_some() {
        // FI_SOURCE (or only a service): node/service name the local address.
        let port = port_of(req.service)?;
        match req.node {
            Some(n) => {
                for s in addr::resolve(Some(n), req.service.or(Some("0")), numeric, true)? {
                    if s.ip().is_unspecified() {
                        for i in all.iter().filter(|i| i.ip.is_ipv4() == s.is_ipv4()) {
                            places.push((i.clone(), SocketAddr::new(i.ip, s.port()), hint_dest));
                        }
                    } else if let Some(i) = all.iter().find(|i| i.ip == s.ip()) {
                        places.push((i.clone(), s, hint_dest));
                    }
                }
            }
            None => {
                // No node: the port on every address of the family (what a
                // server listening for anyone wants), as upstream does. An
                // endpoint bound there names itself by its interface's
                // address (see `ep.rs`).
                for i in &all {
                    let any: IpAddr = if i.ip.is_ipv4() {
                        Ipv4Addr::UNSPECIFIED.into()
                    } else {
                        Ipv6Addr::UNSPECIFIED.into()
                    };
                    places.push((i.clone(), SocketAddr::new(any, port), hint_dest));
                }
            }
        }
    } else {
        for i in &all {
            let src = match hint_src {
                Some(s) if s.ip() == i.ip => s,
                Some(s) if s.ip().is_unspecified() && s.is_ipv4() == i.ip.is_ipv4() => {
                    SocketAddr::new(i.ip, s.port())
                }
                Some(_) => continue,
                None => SocketAddr::new(i.ip, 0),
            };
            let dest = match hint_dest {
                Some(d) if d.is_ipv4() != i.ip.is_ipv4() => continue,
                Some(d)
                    if d.ip().is_loopback() != i.ip.is_loopback()
                        && !all.iter().any(|x| x.ip == d.ip()) =>
                {
                    continue
                }
                d => d,
            };
            places.push((i.clone(), src, dest));
        }
    }
    if places.is_empty() {
        return Err(Error::NoData);
    }

    let mut out = Vec::new();
    for ep_type in [FI_EP_RDM, FI_EP_MSG, FI_EP_DGRAM] {
        for (i, src, dest) in &places {
            let mut e = entry(ep_type, i, *src, *dest);
            oxifabric::getinfo::tailor(&mut e, hints);
            out.push(e);
        }
    }
    Ok(out)
}

/// The address an endpoint bound to `bound` gives peers: a wildcard bind
/// is named by the address of the entry's interface (`domain`), or by
/// loopback when that interface is gone.
pub fn advertised(bound: SocketAddr, domain: Option<&str>) -> SocketAddr {
    if !bound.ip().is_unspecified() {
        return bound;
    }
    let ip = iface::list()
        .into_iter()
        .find(|i| Some(i.name.as_str()) == domain && i.ip.is_ipv4() == bound.is_ipv4())
        .map(|i| i.ip)
        .unwrap_or(if bound.is_ipv4() {
            Ipv4Addr::LOCALHOST.into()
        } else {
            Ipv6Addr::LOCALHOST.into()
        });
    SocketAddr::new(ip, bound.port())
}
