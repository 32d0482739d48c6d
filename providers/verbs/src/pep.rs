//! A verbs passive endpoint: an rdma-cm id listening on its own event
//! channel. Each `CONNECT_REQUEST` becomes an `FI_CONNREQ` event whose
//! `info` names the device the request came in on (the domain to open)
//! and whose `handle` holds the request's id (`ep::Request`) until
//! `fi_endpoint` takes it, or `fi_reject` refuses it.

use crate::ep::{cm_data_in, cm_data_out, Request};
use crate::ibv::owned::{Channel, Id};
use crate::ibv::RDMA_CM_EVENT_CONNECT_REQUEST;
use crate::info::{CM_DATA_SIZE, NAME};
use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::PassiveEpOps;
use oxifabric::service::connreq::{self, PepCore};
use oxifabric::service::eq::EventQueue;
use oxifabric::service::progress::Progress;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, Weak};

struct State {
    core: PepCore,
    /// The listening id, from `fi_listen` on.
    id: Option<Id>,
    /// Where to listen (`fi_setname`, or the entry's source address).
    addr: SocketAddr,
    backlog: i32,
}

/// A verbs passive endpoint.
pub struct VerbsPep {
    me: Weak<VerbsPep>,
    info: Info,
    chan: Arc<Channel>,
    st: Mutex<State>,
}

fn warn(what: &str, e: crate::ibv::VerbsError) -> Error {
    oxifabric::prov_log!(NAME, FI_LOG_WARN, FI_LOG_EP_CTRL, "{what}: {e}");
    Error::from(e)
}

impl VerbsPep {
    pub fn new(info: &Info) -> Result<Arc<VerbsPep>> {
        let chan = Channel::new().map_err(|e| warn("rdma_create_event_channel", e))?;
        let addr = info
            .src_addr
            .as_deref()
            .and_then(addr::sockaddr_from_bytes)
            .unwrap_or(if info.addr_format == FI_SOCKADDR_IN6 as u32 {
                SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0)
            } else {
                SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0)
            });
        Ok(Arc::new_cyclic(|me| VerbsPep {
            me: me.clone(),
            info: info.clone(),
            chan,
            st: Mutex::new(State {
                core: PepCore::default(),
                id: None,
                addr,
                backlog: 128,
            }),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The `fi_info` of a request that came in on `id`.
    fn request_info(&self, id: &Id) -> Info {
        let mut info = self.info.clone();
        info.src_addr = id.local_addr().map(|a| addr::to_sockaddr(&a));
        info.dest_addr = id.peer_addr().map(|a| addr::to_sockaddr(&a));
        if let Some(dev) = id.device_name() {
            info.domain.name = Some(dev);
        }
        info
    }
}

impl Progress for VerbsPep {
    fn progress(&self) {
        let Ok(mut st) = self.st.try_lock() else {
            return;
        };
        while let Some(ev) = self.chan.next() {
            if ev.kind != RDMA_CM_EVENT_CONNECT_REQUEST {
                continue;
            }
            let Some(id) = ev.request else { continue };
            crate::ep::settle_accepting();
            let info = self.request_info(&id);
            st.core.request(info, Request { id }, cm_data_in(&ev.data));
        }
    }

    fn wait_fd(&self) -> Option<RawFd> {
        Some(self.chan.fd())
    }
}

impl PassiveEpOps for VerbsPep {
    fn bind_eq(&self, eq: Arc<EventQueue>) -> Result<()> {
        self.lock().core.bind_eq(eq, self.me.clone());
        Ok(())
    }

    fn listen(&self) -> Result<()> {
        let mut st = self.lock();
        st.core.check_listen()?;
        let id = Id::new(&self.chan).map_err(|e| warn("rdma_create_id", e))?;
        id.bind(&st.addr).map_err(|e| warn("rdma_bind_addr", e))?;
        id.listen(st.backlog).map_err(|e| warn("rdma_listen", e))?;
        st.id = Some(id);
        st.core.listening = true;
        Ok(())
    }

    fn getname(&self) -> Result<Vec<u8>> {
        let st = self.lock();
        let a = st.id.as_ref().and_then(Id::local_addr).unwrap_or(st.addr);
        Ok(addr::to_sockaddr(&a))
    }

    fn setname(&self, a: &[u8]) -> Result<()> {
        let mut st = self.lock();
        if st.id.is_some() {
            return Err(Error::OpBadState);
        }
        st.addr = addr::sockaddr_from_bytes(a).ok_or(Error::Inval)?;
        Ok(())
    }

    fn reject(&self, handle: usize, data: &[u8]) -> Result<()> {
        let data = cm_data_out(data)?;
        let Some(Request { id }) = connreq::take(handle) else {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_WARN,
                FI_LOG_EP_CTRL,
                "fi_reject: not a pending request"
            );
            return Err(Error::Inval);
        };
        id.reject(&data).map_err(|e| warn("rdma_reject", e))
    }

    fn set_backlog(&self, n: i32) -> Result<()> {
        self.lock().backlog = n.max(1);
        Ok(())
    }

    fn close(&self) {
        let mut st = self.lock();
        st.id = None;
        st.core.close::<Request>(self.me.clone());
    }

    fn cm_data_size(&self) -> usize {
        CM_DATA_SIZE
    }

    fn set_fid(&self, fid: usize) {
        self.lock().core.fid = fid;
    }
}
