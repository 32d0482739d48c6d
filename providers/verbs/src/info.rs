//! `fi_getinfo` for verbs: one `FI_EP_MSG` entry per RDMA device and IP
//! address of the network interface that device serves, its attributes
//! taken from the device's own limits.
//!
//! Names follow upstream's verbs provider: the domain is the device's name
//! (`rxe0`, `mlx5_0`); the fabric is `IB-0x` and the subnet prefix (hex)
//! of the port's GID at index `FI_VERBS_GID_IDX`, or by default of the
//! GID of the entry's address ([`chosen_gid`]), so two ports on one
//! subnet share a fabric. Addresses are `FI_SOCKADDR_IN` or
//! `FI_SOCKADDR_IN6` (not link-local): rdma-cm connects by IP address and
//! port. Which device serves an IP
//! address is rdma-cm's answer: an id bound to the address reports it.
//!
//! On a host without rdma-core, or without devices, or with devices but
//! no active port or no IP address on their interfaces, there are no
//! entries (and nothing is printed beyond an info log line).

use crate::device::{self, Device, Gid, GidType, PortState};
use crate::ibv::owned::{Channel, Id};
use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::{DomainAttr, EpAttr, FabricAttr, Info, RxAttr, TxAttr};
use oxifabric::ops::IoVec;
use oxifabric::param::{self, Value};
use oxifabric::provider::Request;
use std::net::{IpAddr, SocketAddr, UdpSocket};

/// The name applications select the provider by.
pub const NAME: &str = "verbs";

/// The name of the RDM entries, as upstream's verbs RDM entries look.
pub const RXM_NAME: &str = "verbs;ofi_rxm";

/// Largest private data of `fi_connect`/`fi_accept`/`fi_reject`: the 56
/// bytes rdma-cm carries in a connection request on a TCP port space,
/// less the one byte of ours that says how many are the application's.
pub const CM_DATA_SIZE: usize = 55;

/// Defaults of the parameters (upstream's values).
const DEF_TX_SIZE: usize = 384;
const DEF_RX_SIZE: usize = 384;
const DEF_INLINE: usize = 256;
/// 0.64 ms in IB's RNR timer code (upstream's default).
const DEF_MIN_RNR_TIMER: usize = 12;

/// The provider's parameters, as `fi_info -e` lists them
/// (`FI_VERBS_<NAME>`).
pub const PARAMS: &[(&str, fi_param_type, &str)] = &[
    (
        "iface",
        FI_PARAM_STRING,
        "The prefix or the full name of the network interface whose addresses MSG endpoints use",
    ),
    (
        "device_name",
        FI_PARAM_STRING,
        "The prefix or the full name of the verbs device to use",
    ),
    (
        "inline_size",
        FI_PARAM_INT,
        "Largest message sent inline (fi_inject, inject_size); default 256",
    ),
    (
        "tx_size",
        FI_PARAM_INT,
        "Transmit queue size when the application asks for none; default 384",
    ),
    (
        "rx_size",
        FI_PARAM_INT,
        "Receive queue size when the application asks for none; default 384",
    ),
    (
        "max_unexp_sz",
        FI_PARAM_SIZE_T,
        "RDM endpoints: bytes held for messages that arrived before their receive, each message counting 288 bytes on top of its payload; beyond it pieces wait in their receive slots and senders in RNR retries (default 268435456)",
    ),
    (
        "min_rnr_timer",
        FI_PARAM_INT,
        "Set min_rnr_timer QP attribute (0 - 31): the RNR NAK timer code connected queue pairs give peers whose send found no posted receive; default 12 (0.64 ms; rdma-cm's 0 means 655 ms)",
    ),
    (
        "gid_idx",
        FI_PARAM_INT,
        "Index of the GID whose subnet prefix names the fabric (0 - 255); default: the GID of each listed address (IPv4-mapped or IPv6, RoCE v2 first), else 0",
    ),
];

/// A parameter's text (`Str`), or None when unset or empty.
fn param_str(name: &str) -> Option<String> {
    match param::get(NAME, name) {
        Ok(Value::Str(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// A non-negative integer parameter, or `def` (with a warning when the
/// value is out of range).
pub fn param_int(name: &str, def: usize, max: usize) -> usize {
    match param::get(NAME, name) {
        Ok(Value::Int(v)) if v >= 0 && (v as usize) <= max => v as usize,
        Ok(Value::Int(v)) => {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_CORE,
                "FI_VERBS_{}={v} is out of range (0 - {max}); using {def}",
                name.to_uppercase()
            );
            def
        }
        _ => def,
    }
}

/// The inline (inject) size endpoints ask their queue pairs for.
pub fn inline_size() -> usize {
    param_int("inline_size", DEF_INLINE, 1 << 16)
}

/// `FI_VERBS_MIN_RNR_TIMER`, read once.
fn min_rnr_timer() -> u8 {
    static V: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *V.get_or_init(|| param_int("min_rnr_timer", DEF_MIN_RNR_TIMER, 31) as u8)
}

/// Gives the queue pair of a connection just established its RNR NAK
/// timer (`FI_VERBS_MIN_RNR_TIMER`), as upstream's verbs provider does
/// at the same point: rdma-cm leaves the longest (655 ms), which a sender
/// facing a receiver without a posted receive would wait each time.
/// A device that refuses it (iWARP has no such timer) keeps its own,
/// with an info line.
pub fn set_rnr_timer(id: &crate::ibv::owned::Id) {
    if let Err(e) = id.set_min_rnr_timer(min_rnr_timer()) {
        oxifabric::prov_log!(
            NAME,
            FI_LOG_INFO,
            FI_LOG_EP_CTRL,
            "the connection keeps its device's RNR timer: {e}"
        );
    }
}

/// `FI_VERBS_MAX_UNEXP_SZ`: the bound on an RDM endpoint's unexpected
/// messages (`rdm/flow.rs`), read once.
pub fn max_unexp() -> usize {
    static V: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *V.get_or_init(|| match param::get(NAME, "max_unexp_sz") {
        Ok(Value::Size(v)) => v,
        _ => oxifabric::service::rxq::UNEXPECTED_LIMIT,
    })
}

/// Where entries can be made: a device and one of its interface's IP
/// addresses.
#[derive(Clone)]
struct Place {
    dev: Device,
    ip: IpAddr,
}

/// The device rdma-cm picks for a local address, if any.
fn device_of(ip: IpAddr) -> Option<String> {
    let ch = Channel::new().ok()?;
    let id = Id::new(&ch).ok()?;
    id.bind(&SocketAddr::new(ip, 0)).ok()?;
    id.device_name()
}

/// Every (device, address) pair, after `FI_VERBS_DEVICE_NAME` and
/// `FI_VERBS_IFACE`; devices without an active port are left out.
fn places() -> Vec<Place> {
    let devs = match device::devices() {
        Ok(d) => d,
        Err(e) => {
            oxifabric::prov_log!(NAME, FI_LOG_INFO, FI_LOG_FABRIC, "no verbs devices: {e}");
            return Vec::new();
        }
    };
    let want_dev = param_str("device_name");
    let devs: Vec<Device> = devs
        .into_iter()
        .filter(|d| want_dev.as_deref().is_none_or(|w| d.name.starts_with(w)))
        .filter(|d| d.ports.iter().any(|p| p.state == PortState::Active))
        .collect();
    if devs.is_empty() {
        return Vec::new();
    }
    let want_if = param_str("iface");
    let mut out = Vec::new();
    for i in oxifabric::iface::list() {
        // Loopback addresses are no RDMA device's (rdma-cm would bind them
        // to any device); IPv6 link-local ones need a scope, which an
        // fi_info address does not carry.
        let link_local = matches!(i.ip, IpAddr::V6(a) if a.segments()[0] & 0xffc0 == 0xfe80);
        if link_local
            || i.ip.is_loopback()
            || want_if.as_deref().is_some_and(|w| !i.name.starts_with(w))
        {
            continue;
        }
        let Some(name) = device_of(i.ip) else {
            continue;
        };
        if let Some(d) = devs.iter().find(|d| d.name == name) {
            out.push(Place {
                dev: d.clone(),
                ip: i.ip,
            });
        }
    }
    out
}

/// The GID a place's entries stand for, and why: `FI_VERBS_GID_IDX` when
/// set (upstream's meaning); otherwise the GID of the address itself (the
/// IPv4-mapped `::ffff:a.b.c.d` or the IPv6 address), RoCE v2 before
/// v1, so that the name never follows a link-local GID that reaches no
/// other subnet (upstream defaults to index 0; ofiwg/libfabric issue
/// 12673); index 0 only when no GID carries the address.
pub fn chosen_gid(d: &Device, ip: IpAddr) -> Option<(&Gid, &'static str)> {
    let port = d.ports.iter().find(|p| p.state == PortState::Active)?;
    if let Ok(Value::Int(_)) = param::get(NAME, "gid_idx") {
        let idx = param_int("gid_idx", 0, 255) as u32;
        let g = port.gids.iter().find(|g| g.index == idx);
        return g.or(port.gids.first()).map(|g| (g, "FI_VERBS_GID_IDX"));
    }
    gid_of_addr(&port.gids, ip)
        .map(|g| (g, "the address's GID"))
        .or_else(|| port.gids.first().map(|g| (g, "no GID carries the address")))
}

/// The GID equal to `ip` (IPv4 addresses as `::ffff:a.b.c.d`), RoCE v2
/// preferred when the table holds it under both types.
fn gid_of_addr(gids: &[Gid], ip: IpAddr) -> Option<&Gid> {
    let want = match ip {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    };
    let mut matching = gids.iter().filter(|g| g.addr() == want);
    let first = matching.clone().next();
    matching.find(|g| g.kind == GidType::RoceV2).or(first)
}

/// The fabric name, as upstream forms it: `IB-0x` and the subnet prefix
/// (the first 8 bytes) of the chosen GID ([`chosen_gid`]).
fn fabric_name(d: &Device, ip: IpAddr) -> String {
    let prefix = chosen_gid(d, ip).map_or(0, |(g, _)| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&g.raw[..8]);
        u64::from_be_bytes(b)
    });
    format!("IB-0x{prefix:x}")
}

/// Capabilities of an MSG endpoint: messages, and RMA by RDMA READ and
/// WRITE (the target's device serves peers' accesses; no target events).
pub const CAPS: u64 = FI_MSG
    | FI_RMA
    | FI_SEND
    | FI_RECV
    | FI_READ
    | FI_WRITE
    | FI_REMOTE_READ
    | FI_REMOTE_WRITE
    | FI_FENCE
    | FI_LOCAL_COMM
    | FI_REMOTE_COMM;

/// Ordering an RC queue pair gives: sends in order, writes in order with
/// each other and with sends, reads after writes and sends.
const ORDER: u64 = FI_ORDER_SAS
    | FI_ORDER_WAW
    | FI_ORDER_WAS
    | FI_ORDER_SAW
    | FI_ORDER_RAW
    | FI_ORDER_RAS
    | FI_ORDER_RAR;

/// The entry for one place.
fn entry(
    p: &Place,
    src: Option<SocketAddr>,
    dest: Option<SocketAddr>,
    hints: Option<&Info>,
) -> Info {
    let a = &p.dev.attr;
    let port = p.dev.ports.iter().find(|p| p.state == PortState::Active);
    let max_wr = a.max_qp_wr.max(1) as usize;
    let hinted = |f: fn(&Info) -> usize| hints.map_or(0, f) > 0;
    let tx_size = if hinted(|h| h.tx.size) {
        max_wr
    } else {
        param_int("tx_size", DEF_TX_SIZE, usize::MAX).clamp(1, max_wr)
    };
    let rx_size = if hinted(|h| h.rx.size) {
        max_wr
    } else {
        param_int("rx_size", DEF_RX_SIZE, usize::MAX).clamp(1, max_wr)
    };
    let iov = (a.max_sge.max(1) as usize).min(IoVec::CAP);
    let max_msg = port.map_or(1 << 31, |p| p.max_msg_sz as usize);
    Info {
        caps: CAPS,
        addr_format: if p.ip.is_ipv4() {
            FI_SOCKADDR_IN as u32
        } else {
            FI_SOCKADDR_IN6 as u32
        },
        src_addr: src.map(|a| addr::to_sockaddr(&a)),
        dest_addr: dest.map(|a| addr::to_sockaddr(&a)),
        tx: TxAttr {
            // FI_FENCE: IBV_SEND_FENCE on the work request (`ep.rs`).
            caps: FI_MSG | FI_RMA | FI_SEND | FI_READ | FI_WRITE | FI_FENCE,
            rma_iov_limit: 1,
            op_flags: FI_INJECT | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_COMPLETION,
            msg_order: ORDER,
            comp_order: FI_ORDER_STRICT as u64,
            inject_size: inline_size(),
            size: tx_size,
            iov_limit: iov,
            ..Default::default()
        },
        rx: RxAttr {
            caps: FI_MSG | FI_RMA | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE,
            // A peer's fi_writedata (RDMA WRITE with immediate data)
            // consumes a posted receive, as upstream's verbs says.
            mode: FI_RX_CQ_DATA,
            op_flags: FI_COMPLETION,
            msg_order: ORDER,
            comp_order: FI_ORDER_STRICT as u64 | FI_ORDER_DATA,
            size: rx_size,
            iov_limit: iov,
            ..Default::default()
        },
        ep: EpAttr {
            ep_type: FI_EP_MSG,
            protocol: FI_PROTO_RDMA_CM_IB_RC as u32,
            protocol_version: 1,
            max_msg_size: max_msg,
            // RC keeps reads after writes and writes after writes in
            // order for any size (the ordering msg_order promises).
            max_order_raw_size: max_msg,
            max_order_waw_size: max_msg,
            tx_ctx_cnt: 1,
            rx_ctx_cnt: 1,
            ..Default::default()
        },
        domain: DomainAttr {
            name: Some(p.dev.name.clone()),
            threading: FI_THREAD_SAFE,
            control_progress: FI_PROGRESS_MANUAL,
            data_progress: FI_PROGRESS_MANUAL,
            resource_mgmt: FI_RM_ENABLED,
            av_type: FI_AV_UNSPEC,
            mr_mode: FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
            mr_key_size: 4,
            cq_data_size: 4,
            cq_cnt: a.max_cq.max(0) as usize,
            ep_cnt: a.max_qp.max(0) as usize,
            tx_ctx_cnt: (a.max_qp.max(0) as usize).min(1024),
            rx_ctx_cnt: (a.max_qp.max(0) as usize).min(1024),
            max_ep_tx_ctx: 1,
            max_ep_rx_ctx: 1,
            // Shared receive contexts over the device's shared receive
            // queues (MSG endpoints), as upstream's verbs; no shared
            // transmit contexts.
            max_ep_srx_ctx: a.max_srq.max(0) as usize,
            // Counters are the engine's, counted as completions arrive.
            cntr_cnt: 1024,
            mr_iov_limit: 1,
            mr_cnt: a.max_mr.max(0) as usize,
            caps: FI_LOCAL_COMM | FI_REMOTE_COMM,
            max_err_data: 255,
            ..Default::default()
        },
        fabric: FabricAttr {
            name: Some(fabric_name(&p.dev, p.ip)),
            prov_version: crate::VERSION,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Bits of the capabilities that RMA and atomics need (keys and addresses of the
/// device's registrations).
const RMA_CAPS: u64 = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

/// Whether the request comes from an application that cannot follow
/// `FI_MR_LOCAL` (API 1.5 or later, its `mr_mode` hints without it) and
/// asks for no RMA: it gets entries that register its buffers per
/// operation instead.
fn unregistered(req: &Request<'_>) -> bool {
    req.version >= (1 << 16 | 5)
        && req
            .hints
            .is_some_and(|h| h.domain.mr_mode & FI_MR_LOCAL == 0 && h.caps & RMA_CAPS == 0)
}

/// An entry for such an application: no `mr_mode` bits required, no RMA
/// (its keys and addresses would have to be the device's).
fn without_mr_local(e: &mut Info) {
    e.domain.mr_mode = 0;
    e.caps &= !RMA_CAPS;
    e.tx.caps &= !RMA_CAPS;
    e.rx.caps &= !RMA_CAPS;
    e.rx.mode &= !FI_RX_CQ_DATA;
    e.tx.rma_iov_limit = 0;
}

/// Capabilities of an RDM endpoint (`rdm.rs`): messages and tagged
/// messages through the engine's receive queue, with `FI_SOURCE`,
/// directed receives and multi-receive buffers; triggered operations and
/// deferred work (the engine's `service::trigger`, which issues them
/// through the endpoint's ordinary calls).
pub const RDM_CAPS: u64 = FI_MSG
    | FI_TAGGED
    | FI_SEND
    | FI_RECV
    | FI_MULTI_RECV
    | FI_SOURCE
    | FI_DIRECTED_RECV
    | FI_TRIGGER
    | FI_FENCE
    | FI_COLLECTIVE
    | FI_LOCAL_COMM
    | FI_REMOTE_COMM;

/// Bytes an RDM `fi_inject` may carry (copied into a bounce buffer at
/// post, then sent like any eager message).
pub const RDM_INJECT_SIZE: usize = 192;

/// Largest RDM message (segmented into pieces, so not the port's
/// `max_msg_sz`).
pub const RDM_MAX_MSG_SIZE: usize = 1 << 30;

/// Receives an RDM endpoint holds posted, and sends under way.
///
/// Both are software queues (the engine's receive queue; sends wait in
/// their connection's queue), so they are as deep as the sockets
/// provider's: fabtests-compat/mpi's mpi_suite posts 10000 receives
/// before the matching sends, and over Open MPI's ofi MTL at 2048 (which
/// answers the 2049th with `-FI_EAGAIN`, retried until it fits) that run
/// went no further.
pub const RDM_QUEUE_SIZE: usize = 65536;

/// The `mr_mode` bits RMA on RDM endpoints needs: the target's device
/// checks the peer's key (its rkey) and virtual address.
const RDM_RMA_MR: i32 = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

/// The `mr_mode` of an RDM entry with RMA for this request, or None when
/// the application cannot follow [`RDM_RMA_MR`] (its entry then has no
/// RMA and needs no registration). `FI_MR_LOCAL` is kept where the
/// application supports it, as upstream's `verbs;ofi_rxm` does (an RMA
/// operation then needs descriptors on buffers longer than a piece).
///
/// From API 1.5 on, `FI_MR_LOCAL` is kept only when the hints' `mr_mode`
/// has it: the old `FI_LOCAL_MR` mode bit (fabtests sets `mode = ~0`)
/// lets an entry that requires local registration through the check, but
/// an application of 1.5 or later reads the entry's `mr_mode`, and
/// upstream fabtests' getinfo_mr_mode6 refuses any bit its hints lack.
fn rdm_rma_mr_mode(req: &Request<'_>) -> Option<i32> {
    let Some(h) = req.hints else {
        return Some(RDM_RMA_MR | FI_MR_LOCAL);
    };
    let ok =
        |m| oxifabric::getinfo::check_mr_mode(req.version, h.mode, m, h.domain.mr_mode).is_ok();
    if !ok(RDM_RMA_MR) {
        return None;
    }
    let local_named = req.version < (1 << 16 | 5) || h.domain.mr_mode & FI_MR_LOCAL != 0;
    Some(if local_named && ok(RDM_RMA_MR | FI_MR_LOCAL) {
        RDM_RMA_MR | FI_MR_LOCAL
    } else {
        RDM_RMA_MR
    })
}

/// Whether this request's RDM entries are offered under the name `verbs`
/// (by the `verbs` provider) instead of `verbs;ofi_rxm`.
///
/// Open MPI 4.1's `btl ofi` (one-sided MPI over `osc rdma`) asks for
/// `FI_DELIVERY_COMPLETE` in `tx_attr.op_flags` and then refuses every
/// entry whose provider name contains `ofi_rxm`, because upstream's rxm
/// cannot complete on delivery. Our RDM endpoint can (`rdm/delivery.rs`)
/// and is no rxm, so a request that asks for delivery complete gets the
/// RDM entries under the core name `verbs` (as upstream's verbs core
/// provider names its own connectionless entries, `FI_EP_DGRAM`), and
/// `verbs;ofi_rxm` steps aside so that each entry is listed once. Every
/// other request, `fi_info -p verbs` included, still sees upstream's
/// names. A request that names `verbs;ofi_rxm` (or `ofi_rxm`) in its
/// hints or in `FI_PROVIDER` keeps that name (fabtests `-U -p
/// "verbs;ofi_rxm"`), since the `verbs` provider is not asked then.
pub fn rdm_named_verbs(req: &Request<'_>) -> bool {
    let Some(h) = req.hints else {
        return false;
    };
    let rdm = h.ep.ep_type == FI_EP_RDM || h.ep.ep_type == FI_EP_UNSPEC;
    let asked_by_name = h
        .fabric
        .prov_name
        .as_deref()
        .is_none_or(|n| oxifabric::provider::hint_selects(n, NAME));
    rdm && h.tx.op_flags & FI_DELIVERY_COMPLETE != 0
        && asked_by_name
        && oxifabric::filter::Filter::from_env("FI_PROVIDER").allows_provider(NAME)
}

/// Turns an RDM entry into one with RMA (`rdm/rma.rs`) under `mr_mode`:
/// RDMA READ and WRITE with one remote piece, as upstream. Every
/// operation to a peer goes on one connection in the order posted, so the
/// queue pair's order holds between messages and RMA (a message after a
/// write finds the write's bytes in place), as upstream's entry says.
///
/// `FI_RMA_EVENT`: the initiator follows each access with a notice when
/// the target asked for them (`rdm/rma.rs`), which the target counts.
/// `FI_ATOMIC`: requests applied by the target's engine (`rdm/atomic.rs`),
/// which need the same keys and addresses.
fn rdm_rma(e: &mut Info, mr_mode: i32) {
    e.tx.msg_order = ORDER;
    e.rx.msg_order = ORDER;
    e.caps |= RMA_CAPS | FI_RMA_EVENT | FI_ATOMIC;
    e.tx.caps |= FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE;
    e.rx.caps |= FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT;
    e.tx.rma_iov_limit = 1;
    e.domain.mr_mode = mr_mode;
}

/// `FI_RMA_EVENT` stays in an RDM entry only when the hints ask for it
/// (or there are none: a listing). It is a secondary capability, which
/// fi_getinfo(3) lets a provider report unasked only "if doing so would
/// not compromise performance": here an endpoint with it asks its peers
/// for a notice after every RMA access (`rdm/rma.rs`), a second work
/// request per write for the initiator and a receive for the target
/// (fi_rma_bw -e rdm at 8 bytes ran at 0.43x upstream's rate with them).
/// Applications that count RMA at the target ask for it, as they must
/// (fi_cntr(3), fi_mr(3)).
fn rma_event_if_asked(e: &mut Info, hints: Option<&Info>) {
    if hints.is_some_and(|h| (h.caps | h.rx.caps) & FI_RMA_EVENT == 0) {
        e.caps &= !FI_RMA_EVENT;
        e.rx.caps &= !FI_RMA_EVENT;
    }
}

/// Turns an MSG entry of a place into its RDM entry, shaped like
/// upstream's `verbs;ofi_rxm` (protocol `FI_PROTO_RXM`, the same fabric
/// and domain names), offering only what `rdm.rs` implements, without
/// RMA (see [`rdm_rma`]): no memory registration needed (every byte goes
/// through the endpoint's own registered bounce buffers); remote CQ data
/// is our header's 8 bytes.
fn rdm_entry(e: &mut Info) {
    e.caps = RDM_CAPS;
    e.mode = 0;
    // FI_FENCE: held in the connection's queue until what was handed
    // to it before has completed (`rdm.rs`'s pump).
    // FI_COLLECTIVE: the engine's collectives over tagged messages.
    e.tx.caps = RDM_CAPS & (FI_MSG | FI_TAGGED | FI_SEND | FI_FENCE | FI_COLLECTIVE);
    e.tx.caps |= FI_TRIGGER;
    e.tx.rma_iov_limit = 0;
    // What a hint may ask for as the default (upstream's fi_msg_inject
    // sets FI_INJECT, or FI_INJECT_COMPLETE with `-A inj_complete`):
    // `rdm.rs` honours FI_INJECT on any send. Every completion is at least
    // transmit complete (RC's acknowledgement), so also inject complete,
    // and delivery complete where asked (`rdm/delivery.rs`).
    e.tx.op_flags = FI_INJECT
        | FI_COMPLETION
        | FI_INJECT_COMPLETE
        | FI_TRANSMIT_COMPLETE
        | FI_DELIVERY_COMPLETE;
    e.tx.msg_order = FI_ORDER_SAS;
    e.tx.comp_order = FI_ORDER_NONE;
    e.tx.inject_size = RDM_INJECT_SIZE;
    e.tx.iov_limit = IoVec::CAP;
    // FI_FENCE orders transmits: a transmit capability only, as
    // fi_getinfo(3) lists it (upstream's fabtests 2.x getinfo_test checks
    // that receive capabilities hold none).
    e.rx.caps = RDM_CAPS & !(FI_SEND | FI_FENCE | FI_LOCAL_COMM | FI_REMOTE_COMM);
    e.rx.mode = 0;
    e.rx.op_flags = FI_COMPLETION | FI_MULTI_RECV;
    e.rx.msg_order = FI_ORDER_SAS;
    e.rx.comp_order = FI_ORDER_NONE;
    e.rx.iov_limit = IoVec::CAP;
    e.ep.ep_type = FI_EP_RDM;
    e.ep.protocol = FI_PROTO_RXM as u32;
    e.ep.mem_tag_format = 0xaaaa_aaaa_aaaa_aaaa;
    // Pieces, not one work request: the port's limit does not apply.
    e.ep.max_msg_size = RDM_MAX_MSG_SIZE;
    // Posted receives and sends under way wait in software queues, not in
    // a queue pair.
    e.tx.size = RDM_QUEUE_SIZE;
    e.rx.size = RDM_QUEUE_SIZE;
    e.domain.mr_mode = 0;
    // No shared receive context for RDM endpoints.
    e.domain.max_ep_srx_ctx = 0;
    e.domain.cq_data_size = 8;
    e.domain.max_err_data = 255;
}

/// The local address the kernel routes to `dest` from.
fn route_source(dest: &SocketAddr) -> Option<IpAddr> {
    let any = if dest.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let s = UdpSocket::bind(any).ok()?;
    s.connect(dest).ok()?;
    Some(s.local_addr().ok()?.ip())
}

fn port_of(service: Option<&str>) -> Result<u16> {
    match service {
        None => Ok(0),
        Some(s) => s.parse::<u16>().map_err(|_| Error::NoData),
    }
}

/// The candidate entries of endpoint type `ep_type` (`FI_EP_MSG`: the
/// `verbs` provider's; `FI_EP_RDM`: `verbs;ofi_rxm`'s) for a request.
pub fn getinfo(req: &Request<'_>, ep_type: fi_ep_type) -> Result<Vec<Info>> {
    let hints = req.hints;
    if hints.is_some_and(|h| h.ep.ep_type != FI_EP_UNSPEC && h.ep.ep_type != ep_type) {
        return Ok(Vec::new());
    }
    // The address families the hints allow: IPv4, IPv6.
    let (v4_ok, v6_ok) = match hints.map_or(FI_FORMAT_UNSPEC as u32, |h| h.addr_format) {
        f if f == FI_SOCKADDR_IN as u32 => (true, false),
        f if f == FI_SOCKADDR_IN6 as u32 => (false, true),
        f if f == FI_FORMAT_UNSPEC as u32
            || f == FI_SOCKADDR as u32
            || f == FI_SOCKADDR_IP as u32 =>
        {
            (true, true)
        }
        _ => return Ok(Vec::new()),
    };
    let all = places();
    if all.is_empty() {
        return Ok(Vec::new());
    }
    let fam = |a: &SocketAddr| if a.is_ipv4() { v4_ok } else { v6_ok };
    let hint_src = hints
        .and_then(|h| h.src_addr.as_deref())
        .and_then(oxifabric::service::addr_format::decode)
        .filter(fam);
    let hint_dest = hints
        .and_then(|h| h.dest_addr.as_deref())
        .and_then(oxifabric::service::addr_format::decode)
        .filter(fam);
    let numeric = req.flags & FI_NUMERICHOST != 0;
    let mut out = Vec::new();
    let unregistered = unregistered(req);
    let rdm_mr = rdm_rma_mr_mode(req);
    let mut add = |p: &Place, src: SocketAddr, dest: Option<SocketAddr>| {
        let mut e = entry(p, Some(src), dest, hints);
        crate::ep::atomic::advertise(&mut e, p.dev.attr.atomic_cap);
        if ep_type == FI_EP_RDM {
            rdm_entry(&mut e);
            if let Some(m) = rdm_mr {
                rdm_rma(&mut e, m);
                rma_event_if_asked(&mut e, hints);
            }
        } else if unregistered {
            without_mr_local(&mut e);
        }
        oxifabric::getinfo::tailor(&mut e, hints);
        out.push(e);
    };
    if req.node.is_some() && req.flags & FI_SOURCE == 0 || req.node.is_none() && hint_dest.is_some()
    {
        // Active side: the device that routes to the destination.
        let dests = match req.node {
            Some(_) => addr::resolve(req.node, req.service.or(Some("0")), numeric, false)?,
            None => hint_dest.into_iter().collect(),
        };
        for d in dests.into_iter().filter(fam) {
            let Some(ip) = route_source(&d) else { continue };
            for p in all.iter().filter(|p| p.ip == ip) {
                let src = hint_src
                    .filter(|s| s.ip() == ip)
                    .unwrap_or(SocketAddr::new(ip, 0));
                add(p, src, Some(d));
            }
        }
    } else {
        // Passive side (or no address at all): the local address named by
        // node (with FI_SOURCE) or the hints, the port by the service.
        let port = port_of(req.service)?;
        let want_ip = match req.node {
            Some(_) => {
                let a = addr::resolve(req.node, None, numeric, true)?;
                Some(a.into_iter().find(fam).ok_or(Error::NoData)?.ip())
            }
            None => hint_src.map(|s| s.ip()).filter(|ip| !ip.is_unspecified()),
        };
        let port = if req.service.is_none() {
            hint_src.map_or(0, |s| s.port())
        } else {
            port
        };
        for p in &all {
            let here = SocketAddr::new(p.ip, port);
            if fam(&here) && want_ip.is_none_or(|ip| ip == p.ip) {
                add(p, here, hint_dest);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{AtomicCap, DeviceAttr, Gid, GidType, LinkLayer, Port};

    fn rxe() -> Device {
        let gid = |index, raw: [u8; 16]| Gid {
            index,
            raw,
            kind: GidType::RoceV2,
        };
        let mut link_local = [0u8; 16];
        link_local[..2].copy_from_slice(&[0xfe, 0x80]);
        link_local[8..].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let mapped = std::net::Ipv4Addr::new(10, 77, 0, 1)
            .to_ipv6_mapped()
            .octets();
        Device {
            name: "rxe0".into(),
            attr: DeviceAttr {
                fw_ver: String::new(),
                node_guid: 0,
                max_mr_size: u64::MAX,
                page_size_cap: 0,
                vendor_id: 0,
                vendor_part_id: 0,
                max_qp: 1 << 20,
                max_qp_wr: 1 << 20,
                max_sge: 32,
                max_sge_rd: 32,
                max_cq: 1 << 20,
                max_cqe: 32767,
                max_mr: 1 << 19,
                max_pd: 1 << 20,
                max_qp_rd_atom: 128,
                max_qp_init_rd_atom: 128,
                atomic_cap: AtomicCap::Hca,
                max_srq: 1 << 18,
                max_srq_wr: 1 << 20,
                max_srq_sge: 27,
                device_cap_flags: 0,
                phys_port_cnt: 1,
            },
            ports: vec![Port {
                num: 1,
                state: PortState::Active,
                link_layer: LinkLayer::Ethernet,
                active_mtu: 1024,
                max_mtu: 4096,
                max_msg_sz: 1 << 23,
                gid_tbl_len: 1024,
                lid: 0,
                gids: vec![gid(0, link_local), gid(1, mapped)],
            }],
        }
    }

    #[test]
    fn entries_are_named_as_upstream_and_sized_from_the_device() {
        let p = Place {
            dev: rxe(),
            ip: "10.77.0.1".parse().unwrap(),
        };
        assert_eq!(
            fabric_name(&p.dev, p.ip),
            "IB-0x0",
            "the IPv4-mapped GID's prefix, not link-local GID 0's"
        );
        let e = entry(&p, Some("10.77.0.1:0".parse().unwrap()), None, None);
        assert_eq!(e.domain.name.as_deref(), Some("rxe0"));
        assert_eq!(e.ep.ep_type, FI_EP_MSG);
        assert_eq!(e.ep.protocol, FI_PROTO_RDMA_CM_IB_RC as u32);
        assert_eq!(e.ep.max_msg_size, 1 << 23, "max_msg_size is the port's");
        assert_eq!(
            e.tx.iov_limit,
            IoVec::CAP,
            "max_sge, capped by the engine's iovec"
        );
        assert_eq!(
            e.tx.size, DEF_TX_SIZE,
            "the default queue size without hints"
        );
        assert_eq!(e.domain.cq_data_size, 4);
        assert_ne!(e.domain.mr_mode & FI_MR_LOCAL, 0);
        assert_eq!(e.domain.max_ep_srx_ctx, 1 << 18, "the device's max_srq");
        assert_eq!(e.domain.max_ep_stx_ctx, 0, "no shared transmit contexts");
        let mut hints = Info::default();
        hints.tx.size = 5000;
        let e = entry(&p, None, None, Some(&hints));
        assert_eq!(
            e.tx.size,
            1 << 20,
            "up to max_qp_wr when the hints ask for a size"
        );
    }

    #[test]
    fn rdm_entries_offer_what_the_rdm_endpoint_implements() {
        let p = Place {
            dev: rxe(),
            ip: "10.77.0.1".parse().unwrap(),
        };
        let mut e = entry(&p, Some("10.77.0.1:0".parse().unwrap()), None, None);
        rdm_entry(&mut e);
        assert_eq!(e.ep.ep_type, FI_EP_RDM);
        assert_eq!(
            e.ep.protocol, FI_PROTO_RXM as u32,
            "upstream's verbs;ofi_rxm"
        );
        assert_eq!(e.caps, RDM_CAPS);
        assert_eq!(e.caps & RMA_CAPS, 0, "no RMA before rdm_rma");
        assert_eq!(e.domain.mr_mode, 0, "bounce buffers: nothing to register");
        assert_eq!(e.domain.cq_data_size, 8, "our header carries 8 bytes");
        assert_eq!(
            e.ep.max_msg_size, RDM_MAX_MSG_SIZE,
            "pieces, not the port's limit"
        );
        assert_eq!(e.domain.name.as_deref(), Some("rxe0"));
        assert_eq!((e.tx.size, e.rx.size), (RDM_QUEUE_SIZE, RDM_QUEUE_SIZE));
        assert_eq!(e.domain.max_ep_srx_ctx, 0, "no shared receive contexts");
        assert_ne!(
            e.tx.caps & e.rx.caps & FI_TRIGGER,
            0,
            "triggered sends and receives"
        );
        rdm_rma(&mut e, RDM_RMA_MR);
        assert_eq!(e.caps & RMA_CAPS, RMA_CAPS);
        assert_ne!(e.rx.caps & FI_RMA_EVENT, 0, "targets count by notices");
        let mut listed = e.clone();
        rma_event_if_asked(&mut listed, None);
        assert_ne!(listed.caps & FI_RMA_EVENT, 0, "a listing shows it");
        let mut h = Info {
            caps: FI_MSG | FI_RMA,
            ..Default::default()
        };
        let mut unasked = e.clone();
        rma_event_if_asked(&mut unasked, Some(&h));
        assert_eq!(
            (unasked.caps | unasked.rx.caps) & FI_RMA_EVENT,
            0,
            "not reported unasked: it costs a notice per access"
        );
        h.caps |= FI_RMA_EVENT;
        let mut asked = e.clone();
        rma_event_if_asked(&mut asked, Some(&h));
        assert_ne!(asked.caps & asked.rx.caps & FI_RMA_EVENT, 0);
        assert_ne!(
            e.tx.caps & e.rx.caps & FI_ATOMIC,
            0,
            "atomics by request and answer"
        );
        assert_eq!(
            e.tx.caps & (FI_RMA | FI_READ | FI_WRITE),
            FI_RMA | FI_READ | FI_WRITE
        );
        assert_eq!(
            e.rx.caps & (FI_REMOTE_READ | FI_REMOTE_WRITE),
            FI_REMOTE_READ | FI_REMOTE_WRITE
        );
        assert_eq!(e.tx.rma_iov_limit, 1, "as upstream");
        assert_eq!(e.domain.cq_data_size, 8, "fi_writedata's notice carries 8");
        assert_eq!(e.rx.mode, 0, "remote CQ data consumes no receive");
        assert_eq!(
            e.tx.msg_order & FI_ORDER_SAW,
            FI_ORDER_SAW,
            "a message after a write"
        );
    }

    #[test]
    fn rdm_rma_needs_the_device_keys_and_addresses() {
        let req = |version: u32, hints: Option<&'static Info>| Request {
            version,
            node: None,
            service: None,
            flags: 0,
            hints,
        };
        let v117 = 1 << 16 | 17;
        let hinted = |mr_mode: i32| -> &'static Info {
            let mut h = Info::default();
            h.domain.mr_mode = mr_mode;
            Box::leak(Box::new(h))
        };
        assert_eq!(
            rdm_rma_mr_mode(&req(v117, None)),
            Some(RDM_RMA_MR | FI_MR_LOCAL)
        );
        let all = hinted(RDM_RMA_MR | FI_MR_LOCAL | FI_MR_ENDPOINT);
        assert_eq!(
            rdm_rma_mr_mode(&req(v117, Some(all))),
            Some(RDM_RMA_MR | FI_MR_LOCAL)
        );
        let no_local = hinted(RDM_RMA_MR);
        assert_eq!(
            rdm_rma_mr_mode(&req(v117, Some(no_local))),
            Some(RDM_RMA_MR)
        );
        let none = hinted(0);
        assert_eq!(
            rdm_rma_mr_mode(&req(v117, Some(none))),
            None,
            "no RMA, no mr_mode bits"
        );
        let no_virt = hinted(FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY);
        assert_eq!(rdm_rma_mr_mode(&req(v117, Some(no_virt))), None);
    }

    /// Upstream fabtests' getinfo_mr_mode6: hints with `mode = ~0` (the
    /// old `FI_LOCAL_MR` bit among them) and every combination of eight
    /// `mr_mode` bits; an entry may require no bit its hints lack.
    #[test]
    fn rdm_mr_mode_never_adds_a_bit_the_hints_lack() {
        let bits = [
            FI_MR_LOCAL,
            FI_MR_RAW,
            FI_MR_VIRT_ADDR,
            FI_MR_ALLOCATED,
            FI_MR_PROV_KEY,
            FI_MR_MMU_NOTIFY,
            FI_MR_RMA_EVENT,
            FI_MR_ENDPOINT,
        ];
        let mut offered = 0;
        for combo in 0..1u32 << bits.len() {
            let hint = bits
                .iter()
                .enumerate()
                .filter(|(i, _)| combo & 1 << i != 0)
                .fold(0, |m, (_, b)| m | b);
            let mut h = Info {
                mode: !0,
                ..Default::default()
            };
            h.domain.mr_mode = hint;
            if let Some(m) = rdm_rma_mr_mode(&request(1 << 16 | 17, Some(&h))) {
                offered += 1;
                assert_eq!(m & !hint, 0, "hints {hint:#x} got mr_mode {m:#x}");
            }
        }
        assert_eq!(offered, 32, "RMA wherever the hints allow its three bits");
        let mut old = Info {
            mode: FI_LOCAL_MR,
            ..Default::default()
        };
        old.domain.mr_mode = FI_MR_BASIC;
        assert_eq!(
            rdm_rma_mr_mode(&request(1 << 16 | 4, Some(&old))),
            Some(RDM_RMA_MR | FI_MR_LOCAL),
            "before 1.5 the mode bit is how FI_MR_LOCAL is said"
        );
    }

    /// A request without node, service or flags.
    fn request(version: u32, hints: Option<&Info>) -> Request<'_> {
        Request {
            version,
            node: None,
            service: None,
            flags: 0,
            hints,
        }
    }

    #[test]
    fn delivery_complete_requests_get_rdm_entries_named_verbs() {
        fn req(h: &Info) -> Request<'_> {
            request(1 << 16 | 5, Some(h))
        }
        // Open MPI 4.1's btl ofi.
        let mut h = Info {
            caps: FI_RMA | FI_ATOMIC,
            ..Default::default()
        };
        h.ep.ep_type = FI_EP_RDM;
        h.tx.op_flags = FI_DELIVERY_COMPLETE;
        h.domain.mr_mode = RDM_RMA_MR;
        assert!(rdm_named_verbs(&req(&h)));
        h.fabric.prov_name = Some("VERBS".into());
        assert!(rdm_named_verbs(&req(&h)), "-p verbs");
        h.fabric.prov_name = Some("verbs;ofi_rxm".into());
        assert!(
            !rdm_named_verbs(&req(&h)),
            "-p \"verbs;ofi_rxm\" keeps its name"
        );
        h.fabric.prov_name = None;
        h.ep.ep_type = FI_EP_MSG;
        assert!(!rdm_named_verbs(&req(&h)), "MSG asked");
        h.ep.ep_type = FI_EP_RDM;
        h.tx.op_flags = FI_COMPLETION;
        assert!(
            !rdm_named_verbs(&req(&h)),
            "plain requests see upstream's names"
        );
        assert!(!rdm_named_verbs(&request(1 << 16 | 5, None)));
        let p = Place {
            dev: rxe(),
            ip: "10.77.0.1".parse().unwrap(),
        };
        let mut e = entry(&p, None, None, None);
        rdm_entry(&mut e);
        assert_ne!(e.tx.op_flags & FI_DELIVERY_COMPLETE, 0, "rdm/delivery.rs");
        assert_ne!(
            e.tx.op_flags & FI_TRANSMIT_COMPLETE,
            0,
            "RC's acknowledgement"
        );
        assert_ne!(
            e.tx.op_flags & FI_INJECT_COMPLETE,
            0,
            "upstream's fi_msg_inject -A inj_complete asks for it"
        );
    }

    #[test]
    fn applications_without_fi_mr_local_get_entries_without_rma() {
        let mut hints = Info::default();
        fn req(hints: Option<&Info>) -> Request<'_> {
            Request {
                version: 1 << 16 | 17,
                node: None,
                service: None,
                flags: 0,
                hints,
            }
        }
        assert!(unregistered(&req(Some(&hints))));
        hints.caps = FI_RMA;
        assert!(
            !unregistered(&req(Some(&hints))),
            "RMA needs the device's keys"
        );
        hints.caps = FI_MSG;
        hints.domain.mr_mode = FI_MR_LOCAL;
        assert!(!unregistered(&req(Some(&hints))));
        assert!(!unregistered(&req(None)));
        let p = Place {
            dev: rxe(),
            ip: "10.77.0.1".parse().unwrap(),
        };
        let mut e = entry(&p, None, None, None);
        without_mr_local(&mut e);
        assert_eq!(e.domain.mr_mode, 0);
        assert_eq!(e.caps & RMA_CAPS, 0);
        assert_eq!(e.rx.mode & FI_RX_CQ_DATA, 0);
    }

    #[test]
    fn the_default_gid_is_the_one_of_the_address() {
        let d = rxe();
        let (g, why) = chosen_gid(&d, "10.77.0.1".parse().unwrap()).unwrap();
        assert_eq!((g.index, why), (1, "the address's GID"));
        let (g, why) = chosen_gid(&d, "10.77.0.9".parse().unwrap()).unwrap();
        assert_eq!(
            (g.index, why),
            (0, "no GID carries the address"),
            "index 0 only as the fallback"
        );
        let mut gids = d.ports[0].gids.clone();
        let mut v1 = gids[1];
        v1.kind = GidType::RoceV1;
        v1.index = 2;
        gids.insert(1, v1);
        let ip: IpAddr = "10.77.0.1".parse().unwrap();
        assert_eq!(
            gid_of_addr(&gids, ip).map(|g| (g.index, g.kind)),
            Some((1, GidType::RoceV2)),
            "RoCE v2 before v1"
        );
        let ula: std::net::Ipv6Addr = "fd77::1".parse().unwrap();
        gids.push(Gid {
            index: 3,
            raw: ula.octets(),
            kind: GidType::RoceV2,
        });
        assert_eq!(
            gid_of_addr(&gids, IpAddr::V6(ula)).map(|g| g.index),
            Some(3)
        );
    }
}
