//! Scalable endpoints (`fi_scalable_ep`): one endpoint per context pair,
//! context `k` listening at the scalable endpoint's port + `k` on the same
//! address. The scalable endpoint's address is context 0's, so a peer
//! that has it in its AV reaches receive context `k` by adding `k` (the
//! `fi_rx_addr` bits of the destination) to the port, and the AV names a
//! sender that is context `k` by its scalable endpoint's entry
//! (`AddressVector::reverse`). Each context has its own connections,
//! queues and CQs, so the contexts of one scalable endpoint never contend
//! for a lock.

use super::*;
use crate::domain::SockDomain;
use oxifabric::service::av::AddressVector;

/// The socket address of `dest`, with its receive context's port.
pub(super) fn ctx_sockaddr(av: &AddressVector, dest: fi_addr_t) -> Option<SocketAddr> {
    let mut sa = av.sockaddr(dest)?;
    let k = av.rx_ctx(dest);
    if k != 0 {
        sa.set_port(sa.port().checked_add(u16::try_from(k).ok()?)?);
    }
    Some(sa)
}

/// Attempts at finding a run of free ports when the entry names none.
const ATTEMPTS: usize = 16;

/// The endpoints of a scalable endpoint opened from `info`.
pub fn open(domain: &Arc<SockDomain>, info: &Info) -> Result<Vec<Arc<dyn EndpointOps>>> {
    if info.ep.ep_type == FI_EP_MSG {
        return Err(Error::NoSys);
    }
    let count = |c: usize| if c == 0 { 1 } else { c };
    let (ntx, nrx) = (count(info.ep.tx_ctx_cnt), count(info.ep.rx_ctx_cnt));
    let n = ntx.max(nrx);
    if n > attrs::MAX_EP_CTX || info.ep.tx_ctx_cnt == FI_SHARED_CONTEXT {
        prov_log!(
            PROV,
            FI_LOG_WARN,
            FI_LOG_EP_CTRL,
            "fi_scalable_ep: {ntx} transmit and {nrx} receive contexts (at most {})",
            attrs::MAX_EP_CTX
        );
        return Err(Error::Inval);
    }
    // Each context sends, receives or both, as its index says.
    let dirs = if info.caps & (FI_SEND | FI_RECV) == 0 {
        FI_SEND | FI_RECV
    } else {
        info.caps & (FI_SEND | FI_RECV)
    };
    let ctx_info = |k: usize, at: Option<SocketAddr>| {
        let mut i = info.clone();
        i.ep.tx_ctx_cnt = 1;
        i.ep.rx_ctx_cnt = 1;
        let mut d = dirs;
        if k >= ntx {
            d &= !FI_SEND;
        }
        if k >= nrx {
            d &= !FI_RECV;
        }
        i.caps = (i.caps & !(FI_SEND | FI_RECV)) | d;
        if let Some(a) = at {
            i.src_addr = Some(addr::to_sockaddr(&a));
        }
        i
    };
    let fixed = info
        .src_addr
        .as_ref()
        .and_then(|b| sockaddr(b))
        .is_some_and(|a| a.port() != 0);
    let mut last = Error::AddrInUse;
    for _ in 0..ATTEMPTS {
        let first = SockEp::new(domain.clone(), &ctx_info(0, None))?;
        let base = first.lock().local.ok_or(Error::Inval)?;
        let mut eps: Vec<Arc<dyn EndpointOps>> = vec![first];
        for k in 1..n {
            let Some(port) = base.port().checked_add(k as u16) else {
                last = Error::AddrInUse;
                break;
            };
            match SockEp::new(
                domain.clone(),
                &ctx_info(k, Some(SocketAddr::new(base.ip(), port))),
            ) {
                Ok(ep) => eps.push(ep),
                Err(e) => {
                    last = e;
                    break;
                }
            }
        }
        if eps.len() == n {
            return Ok(eps);
        }
        for ep in &eps {
            ep.close();
        }
        if fixed {
            break;
        }
    }
    prov_log!(
        PROV,
        FI_LOG_WARN,
        FI_LOG_EP_CTRL,
        "fi_scalable_ep: no run of {n} free ports for its contexts"
    );
    Err(last)
}
