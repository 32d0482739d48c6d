//! `fi_getinfo`: asks every selected provider for candidates, checks each
//! candidate against every hint the man page describes, and fills in what
//! the response echoes back. Each candidate that a hint rules out is logged
//! (at info level, and at warn level when nothing at all matched) naming the
//! attribute, so `-FI_ENODATA` is never a mystery.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::info::{FabricAttr, Info};
use crate::provider::{Provider, Request};

/// Capabilities an application must ask for to get (man fi_getinfo).
pub const PRIMARY_CAPS: u64 = FI_MSG
    | FI_RMA
    | FI_TAGGED
    | FI_ATOMIC
    | FI_MULTICAST
    | FI_NAMED_RX_CTX
    | FI_DIRECTED_RECV
    | crate::abi::layouts::v1::FI_VARIABLE_MSG
    | FI_HMEM
    | FI_COLLECTIVE
    | FI_READ
    | FI_WRITE
    | FI_RECV
    | FI_SEND
    | FI_REMOTE_READ
    | FI_REMOTE_WRITE;

/// Capabilities a provider may report even when not asked for.
pub const SECONDARY_CAPS: u64 = FI_MULTI_RECV
    | FI_SOURCE
    | FI_RMA_EVENT
    | FI_SHARED_AV
    | FI_TRIGGER
    | FI_FENCE
    | FI_LOCAL_COMM
    | FI_REMOTE_COMM
    | FI_SOURCE_ERR
    | FI_RMA_PMEM;

/// `fi_getinfo` flags this library understands. `FI_RESCAN` (2.2) asks for
/// a fresh look at the network interfaces: every call reads them afresh
/// already, so it needs nothing more.
pub const VALID_FLAGS: u64 = FI_NUMERICHOST | FI_SOURCE | FI_PROV_ATTR_ONLY | FI_RESCAN;

/// Memory registration bits that the old `FI_MR_BASIC` mode stands for.
pub const MR_BASIC_MAP: c_int = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

/// The old `mr_mode` enum values, as the `int` the field holds.
const MR_UNSPEC: c_int = FI_MR_UNSPEC as c_int;
const MR_BASIC: c_int = FI_MR_BASIC as c_int;
const MR_SCALABLE: c_int = FI_MR_SCALABLE as c_int;

/// `FI_VERSION(1, 5)`: where `mr_mode` became bit flags.
const V1_5: u32 = (1 << 16) | 5;

fn mismatch<T>(what: &str, prov: T, hint: T) -> core::result::Result<(), String>
where
    T: core::fmt::Debug,
{
    Err(format!(
        "{what}: provider has {prov:?}, hints ask for {hint:?}"
    ))
}

/// Fails when the hint asks for bits the provider lacks.
fn check_bits(what: &str, prov: u64, hint: u64) -> core::result::Result<(), String> {
    if hint & !prov != 0 {
        Err(format!(
            "{what}: hints ask for {:#x}, provider lacks {:#x}",
            hint,
            hint & !prov
        ))
    } else {
        Ok(())
    }
}

/// Fails when a hinted size exceeds the provider's.
fn check_max<T: PartialOrd + core::fmt::Debug>(
    what: &str,
    prov: T,
    hint: T,
) -> core::result::Result<(), String> {
    if hint > prov {
        mismatch(what, prov, hint)
    } else {
        Ok(())
    }
}

/// Fails when a provider needs mode bits the application did not offer.
fn check_mode(what: &str, prov: u64, hint: u64) -> core::result::Result<(), String> {
    if prov & !hint != 0 {
        Err(format!(
            "{what}: provider requires mode {:#x} that the hints do not support",
            prov & !hint
        ))
    } else {
        Ok(())
    }
}

/// Checks `mr_mode` with both of its meanings: before API 1.5 it is the old
/// enum (`FI_MR_UNSPEC`, `FI_MR_BASIC`, `FI_MR_SCALABLE`); from 1.5 on it is
/// the set of modes the application supports, and the provider may require
/// only those. `info_mode` carries the old `FI_LOCAL_MR` mode bit.
pub fn check_mr_mode(
    version: u32,
    info_mode: u64,
    prov: c_int,
    hint: c_int,
) -> core::result::Result<(), String> {
    let prov_required = if prov & MR_BASIC != 0 && prov & !(MR_BASIC | MR_SCALABLE) == 0 {
        MR_BASIC_MAP
    } else {
        prov & !(MR_BASIC | MR_SCALABLE)
    };
    let supported = if version < V1_5 {
        match hint {
            x if x == MR_UNSPEC => return Ok(()),
            x if x == MR_BASIC => MR_BASIC_MAP,
            x if x == MR_SCALABLE => 0,
            _ => {
                return Err(format!(
                    "mr_mode: {hint} is not an FI_MR_* value of API < 1.5"
                ))
            }
        }
    } else if hint & (MR_BASIC | MR_SCALABLE) != 0 && hint != MR_BASIC && hint != MR_SCALABLE {
        // fi_mr(3): the old values are set alone, never with mode bits.
        return Err(format!(
            "mr_mode: {hint:#x} combines FI_MR_BASIC or FI_MR_SCALABLE with other bits"
        ));
    } else {
        let mut s = hint & !(MR_BASIC | MR_SCALABLE);
        if hint & MR_BASIC != 0 {
            s |= MR_BASIC_MAP;
        }
        if info_mode & FI_LOCAL_MR != 0 {
            s |= FI_MR_LOCAL;
        }
        s
    };
    if prov_required & !supported != 0 {
        Err(format!(
            "mr_mode: provider requires {:#x}, hints support {:#x}",
            prov_required, supported
        ))
    } else {
        Ok(())
    }
}

/// Whether an entry of format `prov` serves hints asking for `hint`: the
/// umbrella formats `FI_SOCKADDR` and (2.3) `FI_SOCKADDR_IP` take the IPv4
/// and IPv6 entries.
fn addr_format_ok(prov: u32, hint: u32) -> bool {
    let umbrella = hint == FI_SOCKADDR as u32 || hint == FI_SOCKADDR_IP as u32;
    hint == FI_FORMAT_UNSPEC as u32
        || prov == hint
        || (umbrella && (prov == FI_SOCKADDR_IN as u32 || prov == FI_SOCKADDR_IN6 as u32))
}

/// Checks one candidate against every hint. The error names the attribute.
pub fn check(prov: &Info, hints: &Info, version: u32) -> core::result::Result<(), String> {
    check_bits("caps", prov.caps, hints.caps)?;
    if hints.mode != 0 || version >= V1_5 {
        check_mode("mode", prov.mode, hints.mode)?;
    }
    if !addr_format_ok(prov.addr_format, hints.addr_format) {
        return mismatch("addr_format", prov.addr_format, hints.addr_format);
    }

    let (p, h) = (&prov.ep, &hints.ep);
    if h.ep_type != FI_EP_UNSPEC && h.ep_type != p.ep_type {
        return mismatch("ep_type", p.ep_type, h.ep_type);
    }
    if h.protocol != FI_PROTO_UNSPEC as u32 && h.protocol != p.protocol {
        return mismatch("protocol", p.protocol, h.protocol);
    }
    if h.protocol_version > p.protocol_version {
        return mismatch("protocol_version", p.protocol_version, h.protocol_version);
    }
    check_max("max_msg_size", p.max_msg_size, h.max_msg_size)?;
    check_max(
        "max_order_raw_size",
        p.max_order_raw_size,
        h.max_order_raw_size,
    )?;
    check_max(
        "max_order_war_size",
        p.max_order_war_size,
        h.max_order_war_size,
    )?;
    check_max(
        "max_order_waw_size",
        p.max_order_waw_size,
        h.max_order_waw_size,
    )?;
    if h.msg_prefix_size != 0 && p.msg_prefix_size > h.msg_prefix_size {
        return mismatch("msg_prefix_size", p.msg_prefix_size, h.msg_prefix_size);
    }
    for (what, hc) in [
        ("ep_attr.tx_ctx_cnt", h.tx_ctx_cnt),
        ("ep_attr.rx_ctx_cnt", h.rx_ctx_cnt),
    ] {
        let max = if what.starts_with("ep_attr.tx") {
            prov.domain.max_ep_tx_ctx
        } else {
            prov.domain.max_ep_rx_ctx
        };
        if hc == FI_SHARED_CONTEXT {
            let shared = if what.starts_with("ep_attr.tx") {
                prov.domain.max_ep_stx_ctx
            } else {
                prov.domain.max_ep_srx_ctx
            };
            if shared == 0 {
                return Err(format!("{what}: shared contexts are not supported"));
            }
        } else if max != 0 {
            check_max(what, max, hc)?;
        }
    }
    // A provider that checks keys (max_ep_auth_key > 0) takes the
    // application's key of any length; others only what they advertise.
    if prov.domain.max_ep_auth_key == 0 {
        check_max("ep_attr.auth_key_size", p.auth_key_size, h.auth_key_size)?;
    }

    let (p, h) = (&prov.tx, &hints.tx);
    check_bits("tx_attr.caps", p.caps, h.caps)?;
    if h.mode != 0 {
        check_mode("tx_attr.mode", p.mode, h.mode)?;
    }
    check_bits("tx_attr.op_flags", p.op_flags, h.op_flags)?;
    check_bits("tx_attr.msg_order", p.msg_order, h.msg_order)?;
    check_bits("tx_attr.comp_order", p.comp_order, h.comp_order)?;
    check_max("tx_attr.inject_size", p.inject_size, h.inject_size)?;
    check_max("tx_attr.size", p.size, h.size)?;
    check_max("tx_attr.iov_limit", p.iov_limit, h.iov_limit)?;
    check_max("tx_attr.rma_iov_limit", p.rma_iov_limit, h.rma_iov_limit)?;

    let (p, h) = (&prov.rx, &hints.rx);
    check_bits("rx_attr.caps", p.caps, h.caps)?;
    if h.mode != 0 {
        check_mode("rx_attr.mode", p.mode, h.mode)?;
    }
    check_bits("rx_attr.op_flags", p.op_flags, h.op_flags)?;
    check_bits("rx_attr.msg_order", p.msg_order, h.msg_order)?;
    check_bits("rx_attr.comp_order", p.comp_order, h.comp_order)?;
    check_max(
        "rx_attr.total_buffered_recv",
        p.total_buffered_recv,
        h.total_buffered_recv,
    )?;
    check_max("rx_attr.size", p.size, h.size)?;
    check_max("rx_attr.iov_limit", p.iov_limit, h.iov_limit)?;

    let (p, h) = (&prov.domain, &hints.domain);
    if let Some(name) = &h.name {
        if p.name.as_deref() != Some(name.as_str()) {
            return mismatch("domain name", &p.name, &h.name);
        }
    }
    // FI_THREAD_SAFE (1) is the strongest level and serves every request;
    // a provider serves any level numerically at or above its own.
    if h.threading > FI_THREAD_ENDPOINT {
        return mismatch(
            "threading (not a threading level)",
            p.threading,
            h.threading,
        );
    }
    if h.threading != FI_THREAD_UNSPEC && p.threading > h.threading {
        return mismatch("threading", p.threading, h.threading);
    }
    if h.control_progress != FI_PROGRESS_UNSPEC && p.control_progress != h.control_progress {
        return mismatch("control_progress", p.control_progress, h.control_progress);
    }
    if h.data_progress != FI_PROGRESS_UNSPEC && p.data_progress != h.data_progress {
        return mismatch("data_progress", p.data_progress, h.data_progress);
    }
    if h.resource_mgmt != FI_RM_UNSPEC && p.resource_mgmt != h.resource_mgmt {
        return mismatch("resource_mgmt", p.resource_mgmt, h.resource_mgmt);
    }
    if h.av_type > FI_AV_TABLE {
        return mismatch("av_type (not an AV type)", p.av_type, h.av_type);
    }
    if h.av_type != FI_AV_UNSPEC && p.av_type != FI_AV_UNSPEC && p.av_type != h.av_type {
        return mismatch("av_type", p.av_type, h.av_type);
    }
    check_mr_mode(version, hints.mode, p.mr_mode, h.mr_mode)?;
    check_max("mr_key_size", p.mr_key_size, h.mr_key_size)?;
    check_max("cq_data_size", p.cq_data_size, h.cq_data_size)?;
    check_max("cq_cnt", p.cq_cnt, h.cq_cnt)?;
    check_max("ep_cnt", p.ep_cnt, h.ep_cnt)?;
    check_max("domain tx_ctx_cnt", p.tx_ctx_cnt, h.tx_ctx_cnt)?;
    check_max("domain rx_ctx_cnt", p.rx_ctx_cnt, h.rx_ctx_cnt)?;
    check_max("max_ep_tx_ctx", p.max_ep_tx_ctx, h.max_ep_tx_ctx)?;
    check_max("max_ep_rx_ctx", p.max_ep_rx_ctx, h.max_ep_rx_ctx)?;
    check_max("max_ep_stx_ctx", p.max_ep_stx_ctx, h.max_ep_stx_ctx)?;
    check_max("max_ep_srx_ctx", p.max_ep_srx_ctx, h.max_ep_srx_ctx)?;
    check_max("cntr_cnt", p.cntr_cnt, h.cntr_cnt)?;
    check_max("mr_iov_limit", p.mr_iov_limit, h.mr_iov_limit)?;
    check_bits("domain caps", p.caps, h.caps)?;
    if h.mode != 0 {
        check_mode("domain mode", p.mode, h.mode)?;
    }
    if p.max_ep_auth_key == 0 {
        check_max("domain auth_key_size", p.auth_key_size, h.auth_key_size)?;
    }
    check_max("max_err_data", p.max_err_data, h.max_err_data)?;
    check_max("mr_cnt", p.mr_cnt, h.mr_cnt)?;
    // Fields later ABI nodes appended mean something only to applications
    // of the API that added them (an older one's struct lacks them).
    if version >= crate::compat::API_1_20 {
        check_max("max_ep_auth_key", p.max_ep_auth_key, h.max_ep_auth_key)?;
    }
    if version >= crate::compat::API_2_0 {
        check_max("max_group_id", p.max_group_id, h.max_group_id)?;
    }
    if version >= crate::compat::API_2_5 {
        check_max("max_cntr_value", p.max_cntr_value, h.max_cntr_value)?;
        check_max(
            "max_err_cntr_value",
            p.max_err_cntr_value,
            h.max_err_cntr_value,
        )?;
    }

    let (p, h) = (&prov.fabric, &hints.fabric);
    if let Some(name) = &h.name {
        if p.name.as_deref() != Some(name.as_str()) {
            return mismatch("fabric name", &p.name, &h.name);
        }
    }
    if let Some(name) = &h.prov_name {
        if !p
            .prov_name
            .as_deref()
            .is_some_and(|n| crate::provider::hint_selects(name, n))
        {
            return mismatch("prov_name", &p.prov_name, &h.prov_name);
        }
    }
    if h.prov_version != 0 && h.prov_version != p.prov_version {
        return mismatch("prov_version", p.prov_version, h.prov_version);
    }
    Ok(())
}

/// The caps an entry reports: what was asked for among the primary caps
/// (everything the provider has when nothing was asked), plus the secondary
/// caps the provider has.
///
/// `FI_COLLECTIVE` is reported only when asked for (upstream lists it in
/// separate entries), and brings `FI_TAGGED` with it: collectives travel
/// as tagged messages (`service::coll`).
fn response_caps(prov: u64, hint: u64) -> u64 {
    let primary = if hint & PRIMARY_CAPS != 0 {
        hint & PRIMARY_CAPS
    } else {
        prov & PRIMARY_CAPS & !FI_COLLECTIVE
    };
    let mut caps = primary | (prov & SECONDARY_CAPS) | (hint & prov & !PRIMARY_CAPS);
    if caps & FI_COLLECTIVE != 0 {
        caps |= prov & FI_TAGGED;
    }
    // Asking for a message class without a direction means both.
    if caps & (FI_MSG | FI_TAGGED) != 0 && caps & (FI_SEND | FI_RECV) == 0 {
        caps |= prov & (FI_SEND | FI_RECV);
    }
    if caps & (FI_RMA | FI_ATOMIC) != 0
        && caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE) == 0
    {
        caps |= prov & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE);
    }
    caps & prov
}

/// Adapts a provider's entry to what the hints ask for where the provider
/// supports several choices: either progress model (a provider that offers
/// `FI_PROGRESS_AUTO` runs a progress thread only when asked), either
/// resource-management mode, either AV type. Providers call it from their
/// `getinfo`.
pub fn tailor(e: &mut Info, hints: Option<&Info>) {
    let Some(h) = hints else { return };
    for (mine, want) in [
        (&mut e.domain.control_progress, h.domain.control_progress),
        (&mut e.domain.data_progress, h.domain.data_progress),
    ] {
        if want == FI_PROGRESS_AUTO || want == FI_PROGRESS_MANUAL {
            *mine = want;
        }
    }
    if h.domain.resource_mgmt == FI_RM_DISABLED || h.domain.resource_mgmt == FI_RM_ENABLED {
        e.domain.resource_mgmt = h.domain.resource_mgmt;
    }
    if h.domain.av_type == FI_AV_MAP || h.domain.av_type == FI_AV_TABLE {
        e.domain.av_type = h.domain.av_type;
    }
}

/// Fills in the response for a candidate that passed [`check`]: the caps
/// and levels the application asked for, the API version, old-style
/// `mr_mode` for old applications.
pub fn alter(prov: &Info, hints: Option<&Info>, version: u32) -> Info {
    let mut out = prov.clone();
    out.fabric.api_version = version;
    if hints.is_none() {
        out.tx.op_flags = 0;
        out.rx.op_flags = 0;
    }
    if let Some(h) = hints {
        out.caps = response_caps(prov.caps, h.caps);
        out.tx.caps = prov.tx.caps & out.caps;
        out.rx.caps = prov.rx.caps & out.caps;
        // Providers list the op_flags they support; the entry carries the
        // defaults the application asked for.
        out.tx.op_flags = h.tx.op_flags;
        out.rx.op_flags = h.rx.op_flags;
        // Context counts asked for (up to the domain's maximum, checked
        // above) are what the endpoint gets: a scalable endpoint's.
        for (out, hint) in [
            (&mut out.ep.tx_ctx_cnt, h.ep.tx_ctx_cnt),
            (&mut out.ep.rx_ctx_cnt, h.ep.rx_ctx_cnt),
        ] {
            if hint != 0 {
                *out = hint;
            }
        }
        if h.domain.threading != FI_THREAD_UNSPEC {
            out.domain.threading = h.domain.threading;
        }
        if h.domain.resource_mgmt != FI_RM_UNSPEC {
            out.domain.resource_mgmt = h.domain.resource_mgmt;
        }
        if h.domain.av_type != FI_AV_UNSPEC {
            out.domain.av_type = h.domain.av_type;
        }
        if h.domain.caps != 0 {
            out.domain.caps = prov.domain.caps & (h.domain.caps | SECONDARY_CAPS);
        }
        if h.ep.auth_key.is_some() {
            out.ep.auth_key = h.ep.auth_key.clone();
            out.ep.auth_key_size = h.ep.auth_key_size;
        }
        if h.domain.auth_key.is_some() && prov.domain.max_ep_auth_key > 0 {
            out.domain.auth_key = h.domain.auth_key.clone();
            out.domain.auth_key_size = h.domain.auth_key_size;
        }
        // Tags are matched on all 64 bits, so any layout the application
        // gives its tags works; it gets its own format back (MPI libraries
        // ask for theirs and expect it).
        if h.ep.mem_tag_format != 0 && prov.ep.mem_tag_format != 0 {
            out.ep.mem_tag_format = h.ep.mem_tag_format;
        }
        if h.dest_addr.is_some() && out.dest_addr.is_none() {
            out.dest_addr = h.dest_addr.clone();
        }
        // A passive endpoint named in the hints travels with every entry:
        // `fi_endpoint` on such an entry takes that endpoint's address.
        if h.handle != 0 {
            out.handle = h.handle;
        }
    }
    // The answer is what the provider requires (fi_getinfo(3)), which
    // [`check`] found the application supports; bits it offered and the
    // provider does not need are cleared. The old FI_MR_BASIC and
    // FI_MR_SCALABLE, asked for alone, are kept as asked (fi_mr(3)).
    let asked = hints.map_or(0, |h| h.domain.mr_mode);
    if asked == MR_BASIC || asked == MR_SCALABLE {
        out.domain.mr_mode = asked;
    } else if version < V1_5 {
        // Old applications read an enum here.
        let required = out.domain.mr_mode & !(MR_BASIC | MR_SCALABLE);
        out.domain.mr_mode = if required & MR_BASIC_MAP != 0 || out.domain.mr_mode & MR_BASIC != 0 {
            MR_BASIC
        } else {
            MR_SCALABLE
        };
    }
    out
}

/// The API version this library implements (`FI_VERSION_CURRENT`).
pub const fn current_version() -> u32 {
    crate::FI_VERSION_CURRENT
}

/// The whole of `fi_getinfo` above the C boundary.
pub fn getinfo(providers: &[&dyn Provider], req: &Request<'_>) -> Result<Vec<Info>> {
    if req.version > current_version() {
        crate::core_warn!(
            FI_LOG_CORE,
            "fi_getinfo: requested API version {}.{} is newer than this library's {}.{}",
            req.version >> 16,
            req.version & 0xffff,
            current_version() >> 16,
            current_version() & 0xffff
        );
        return Err(Error::NoSys);
    }
    if req.flags & FI_SOURCE != 0 && req.node.is_none() && req.service.is_none() {
        crate::core_warn!(
            FI_LOG_CORE,
            "fi_getinfo: FI_SOURCE needs a node or a service to name the source"
        );
        return Err(Error::NoData);
    }
    if req.flags & !VALID_FLAGS != 0 {
        crate::core_warn!(
            FI_LOG_CORE,
            "fi_getinfo: unsupported flags {:#x}",
            req.flags & !VALID_FLAGS
        );
        return Err(Error::BadFlags);
    }
    let env_filter = Filter::from_env("FI_PROVIDER");
    let hint_prov = req.hints.and_then(|h| h.fabric.prov_name.clone());
    let mut out = Vec::new();
    let mut reasons = Vec::new();
    for prov in providers {
        let name = prov.name();
        if !env_filter.allows_provider(name) {
            reasons.push(format!("{name}: excluded by FI_PROVIDER"));
            continue;
        }
        if let Some(hp) = &hint_prov {
            if !crate::provider::hint_selects(hp, name) {
                reasons.push(format!("{name}: hints ask for provider {hp}"));
                continue;
            }
        }
        if prov.fi_version() < req.version {
            reasons.push(format!("{name}: implements an older API version"));
            continue;
        }
        if req.flags & FI_PROV_ATTR_ONLY != 0 {
            let listed = crate::provider::listed_name(name);
            if out
                .iter()
                .any(|i: &Info| i.fabric.prov_name.as_deref() == Some(listed))
            {
                continue;
            }
            out.push(Info {
                fabric: FabricAttr {
                    prov_name: Some(listed.to_string()),
                    prov_version: prov.version(),
                    api_version: req.version,
                    ..Default::default()
                },
                ..Default::default()
            });
            continue;
        }
        let candidates = match prov.getinfo(req) {
            Ok(c) => c,
            Err(e) => {
                crate::core_info!(
                    FI_LOG_CORE,
                    "fi_getinfo: provider {name} returned {} ({e})",
                    e.code()
                );
                reasons.push(format!("{name}: returned {} ({e})", e.code()));
                continue;
            }
        };
        let before = out.len();
        for mut c in candidates {
            c.fabric.prov_name = Some(name.to_string());
            c.fabric.prov_version = prov.version();
            let verdict = match req.hints {
                Some(h) => check(&c, h, req.version),
                None => Ok(()),
            };
            match verdict {
                Ok(()) => out.push(alter(&c, req.hints, req.version)),
                Err(why) => {
                    crate::core_info!(
                        FI_LOG_CORE,
                        "{name}: entry {:?} skipped: {why}",
                        c.domain.name
                    );
                    reasons.push(format!("{name}: {why}"));
                }
            }
        }
        if out.len() == before && reasons.last().is_none_or(|r| !r.starts_with(name)) {
            reasons.push(format!("{name}: no entries for this node/service"));
        }
    }
    if out.is_empty() {
        for r in &reasons {
            crate::core_warn!(FI_LOG_CORE, "fi_getinfo: {r}");
        }
        if providers.is_empty() {
            crate::core_warn!(FI_LOG_CORE, "fi_getinfo: no providers are available");
        }
        return Err(Error::NoData);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::info::{DomainAttr, EpAttr, TxAttr};
    use crate::ops::FabricOps;
    use std::sync::Arc;

    /// A test-only provider with one RDM entry.
    struct TestProv(&'static str);

    fn entry() -> Info {
        Info {
            caps: FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV,
            addr_format: FI_SOCKADDR_IN as u32,
            tx: TxAttr {
                caps: FI_MSG | FI_SEND,
                op_flags: FI_COMPLETION | FI_INJECT,
                msg_order: FI_ORDER_SAS,
                inject_size: 64,
                size: 128,
                iov_limit: 4,
                ..Default::default()
            },
            ep: EpAttr {
                ep_type: FI_EP_RDM,
                max_msg_size: 1 << 20,
                ..Default::default()
            },
            domain: DomainAttr {
                name: Some("lo".into()),
                threading: FI_THREAD_SAFE,
                control_progress: FI_PROGRESS_AUTO,
                data_progress: FI_PROGRESS_AUTO,
                mr_mode: 0,
                cq_data_size: 8,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    impl Provider for TestProv {
        fn name(&self) -> &'static str {
            self.0
        }
        fn version(&self) -> u32 {
            1 << 16
        }
        fn getinfo(&self, _req: &Request<'_>) -> Result<Vec<Info>> {
            Ok(vec![entry()])
        }
        fn fabric(&self, _attr: &FabricAttr) -> Result<Arc<dyn FabricOps>> {
            Err(Error::NoSys)
        }
    }

    fn req(hints: Option<&Info>) -> Request<'_> {
        Request {
            version: crate::FI_VERSION_CURRENT,
            node: None,
            service: None,
            flags: 0,
            hints,
        }
    }

    #[test]
    fn version_flags_and_no_providers() {
        let p = TestProv("test");
        let mut r = req(None);
        r.version = crate::FI_VERSION_CURRENT + 1;
        assert_eq!(getinfo(&[&p], &r).err(), Some(Error::NoSys));
        let mut r = req(None);
        r.flags = 1 << 62;
        assert_eq!(getinfo(&[&p], &r).err(), Some(Error::BadFlags));
        assert_eq!(getinfo(&[], &req(None)).err(), Some(Error::NoData));
    }

    #[test]
    fn hints_filter_and_responses_echo() {
        let p = TestProv("test");
        let all = getinfo(&[&p], &req(None)).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].fabric.prov_name.as_deref(), Some("test"));
        assert_eq!(all[0].tx.op_flags, 0, "no hints: no default op flags");

        let mut h = Info {
            caps: FI_TAGGED,
            ..Default::default()
        };
        h.domain.threading = FI_THREAD_DOMAIN;
        h.tx.op_flags = FI_COMPLETION;
        let got = getinfo(&[&p], &req(Some(&h))).unwrap();
        assert_eq!(
            got[0].domain.threading, FI_THREAD_DOMAIN,
            "weaker threading echoed"
        );
        assert_eq!(got[0].tx.op_flags, FI_COMPLETION);
        assert_eq!(got[0].caps & PRIMARY_CAPS, FI_TAGGED | FI_SEND | FI_RECV);
        assert!(got[0].caps & FI_SOURCE != 0, "secondary caps reported");

        for (name, bad) in [
            (
                "caps",
                Info {
                    caps: FI_RMA,
                    ..Default::default()
                },
            ),
            (
                "ep_type",
                Info {
                    ep: EpAttr {
                        ep_type: FI_EP_MSG,
                        ..Default::default()
                    },
                    ..Default::default()
                },
            ),
            (
                "max_msg_size",
                Info {
                    ep: EpAttr {
                        max_msg_size: 1 << 30,
                        ..Default::default()
                    },
                    ..Default::default()
                },
            ),
            (
                "inject_size",
                Info {
                    tx: TxAttr {
                        inject_size: 1 << 20,
                        ..Default::default()
                    },
                    ..Default::default()
                },
            ),
            (
                "addr_format",
                Info {
                    addr_format: FI_SOCKADDR_IN6 as u32,
                    ..Default::default()
                },
            ),
            (
                "cq_data_size",
                Info {
                    domain: DomainAttr {
                        cq_data_size: 16,
                        ..Default::default()
                    },
                    ..Default::default()
                },
            ),
        ] {
            assert_eq!(
                getinfo(&[&p], &req(Some(&bad))).err(),
                Some(Error::NoData),
                "{name}"
            );
        }
        let e = entry();
        assert!(check(
            &e,
            &Info {
                caps: FI_RMA,
                ..Default::default()
            },
            crate::FI_VERSION_CURRENT
        )
        .unwrap_err()
        .starts_with("caps"));
    }

    #[test]
    fn provider_selection() {
        let a = TestProv("alpha");
        let b = TestProv("beta");
        let mut h = Info::default();
        h.fabric.prov_name = Some("BETA".into());
        let got = getinfo(&[&a, &b], &req(Some(&h))).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].fabric.prov_name.as_deref(), Some("beta"));
        let mut r = req(None);
        r.flags = FI_PROV_ATTR_ONLY;
        let only = getinfo(&[&a, &b], &r).unwrap();
        assert_eq!(only.len(), 2);
        assert!(only
            .iter()
            .all(|i| i.ep.ep_type == FI_EP_UNSPEC && i.fabric.prov_version == 1 << 16));
    }

    #[test]
    fn appended_domain_fields_count_from_their_api_version() {
        let e = entry();
        let v = |maj: u32, min: u32| (maj << 16) | min;
        let mut h = Info::default();
        h.domain.max_ep_auth_key = e.domain.max_ep_auth_key + 1;
        assert!(check(&e, &h, v(1, 19)).is_ok());
        assert!(check(&e, &h, v(1, 20))
            .unwrap_err()
            .starts_with("max_ep_auth_key"));
        let mut h = Info::default();
        h.domain.max_group_id = e.domain.max_group_id + 1;
        assert!(check(&e, &h, v(1, 22)).is_ok());
        assert!(check(&e, &h, v(2, 0)).is_err());
        let mut h = Info::default();
        h.domain.max_cntr_value = e.domain.max_cntr_value + 1;
        assert!(check(&e, &h, v(2, 4)).is_ok());
        assert!(check(&e, &h, v(2, 5)).is_err());
    }

    #[test]
    fn mr_mode_both_meanings() {
        let v14 = (1 << 16) | 4;
        let v117 = crate::FI_VERSION_CURRENT;
        // API < 1.5: the old enum.
        assert!(check_mr_mode(v14, 0, FI_MR_LOCAL, MR_SCALABLE).is_err());
        assert!(check_mr_mode(v14, 0, FI_MR_LOCAL, MR_BASIC).is_ok());
        assert!(check_mr_mode(v14, 0, 0, MR_UNSPEC).is_ok());
        // API >= 1.5: bits the application supports.
        assert!(check_mr_mode(v117, 0, FI_MR_LOCAL, 0).is_err());
        assert!(check_mr_mode(v117, 0, FI_MR_LOCAL, FI_MR_LOCAL).is_ok());
        assert!(check_mr_mode(v117, FI_LOCAL_MR, FI_MR_LOCAL, 0).is_ok());
        // Old applications get the enum back.
        let mut e = entry();
        e.domain.mr_mode = FI_MR_LOCAL;
        assert_eq!(alter(&e, None, v14).domain.mr_mode, MR_BASIC);
    }

    #[test]
    fn mr_mode_answer_is_what_the_provider_requires() {
        let v117 = crate::FI_VERSION_CURRENT;
        let e = entry();
        let mut h = Info::default();
        // Offered bits the provider does not need are cleared.
        h.domain.mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
        assert!(check(&e, &h, v117).is_ok());
        assert_eq!(alter(&e, Some(&h), v117).domain.mr_mode, 0);
        // The old values asked for alone are kept, at any API version.
        for old in [MR_BASIC, MR_SCALABLE] {
            h.domain.mr_mode = old;
            for v in [(1 << 16) | 4, v117] {
                assert!(check(&e, &h, v).is_ok());
                assert_eq!(alter(&e, Some(&h), v).domain.mr_mode, old);
            }
            // ... and never combined with mode bits.
            h.domain.mr_mode = old | FI_MR_LOCAL;
            assert!(check(&e, &h, v117).is_err());
        }
        h.domain.mr_mode = MR_BASIC | MR_SCALABLE;
        assert!(check(&e, &h, v117).is_err());
    }
}
