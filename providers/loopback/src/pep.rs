//! A loopback passive endpoint: a socket that receives `CONNREQ` control
//! datagrams and reports each as an `FI_CONNREQ` event. The request behind
//! `info->handle` is kept by the engine (`service::connreq`); `fi_accept`
//! on a new endpoint takes it back and answers from that endpoint's own
//! socket, `fi_reject` answers from here.

use crate::ep::{bind, control, name_of, port_in, port_of, CONNREQ, CTRL, REJECT};
use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::PassiveEpOps;
use oxifabric::service::connreq::{self, PepCore};
use oxifabric::service::eq::EventQueue;
use oxifabric::service::progress::Progress;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::sync::{Arc, Mutex, Weak};

/// What `info->handle` of a connection request stands for: who asked.
pub struct Request {
    /// The port of the requesting endpoint.
    pub from: u16,
    /// The passive endpoint's port (the connection's name on this side).
    pub pep_port: u16,
}

struct State {
    core: PepCore,
    sock: Option<UnixDatagram>,
    port: u16,
}

/// A loopback passive endpoint.
pub struct LoopPep {
    me: Weak<LoopPep>,
    info: Info,
    st: Mutex<State>,
}

impl LoopPep {
    pub fn new(info: &Info) -> Arc<LoopPep> {
        let port = info.src_addr.as_deref().and_then(port_in).unwrap_or(0);
        Arc::new_cyclic(|me| LoopPep {
            me: me.clone(),
            info: info.clone(),
            st: Mutex::new(State {
                core: PepCore::default(),
                sock: None,
                port,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn addr(&self, port: u16) -> Vec<u8> {
        let v6 = self.info.addr_format == FI_SOCKADDR_IN6 as u32;
        addr::to_sockaddr(&crate::local_addr(v6, port))
    }
}

impl Progress for LoopPep {
    fn progress(&self) {
        let Ok(mut guard) = self.st.try_lock() else {
            return;
        };
        let st = &mut *guard;
        let mut buf = [0u8; 64 + 1024];
        while let Some(sock) = &st.sock {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                break;
            };
            let (Some(from), true) = (port_of(&from), n >= 32) else {
                continue;
            };
            if buf[0] & CTRL == 0 || buf[1] != CONNREQ {
                continue;
            }
            let mut info = self.info.clone();
            info.dest_addr = Some(self.addr(from));
            info.src_addr = None;
            let req = Request {
                from,
                pep_port: st.port,
            };
            st.core.request(info, req, buf[32..n].to_vec());
        }
    }

    fn wait_fd(&self) -> Option<RawFd> {
        self.lock().sock.as_ref().map(|s| s.as_raw_fd())
    }
}

impl PassiveEpOps for LoopPep {
    fn bind_eq(&self, eq: Arc<EventQueue>) -> Result<()> {
        self.lock().core.bind_eq(eq, self.me.clone());
        Ok(())
    }

    fn listen(&self) -> Result<()> {
        let mut st = self.lock();
        st.core.check_listen()?;
        let (sock, port) = bind(st.port)?;
        st.port = port;
        st.sock = Some(sock);
        st.core.listening = true;
        Ok(())
    }

    fn getname(&self) -> Result<Vec<u8>> {
        Ok(self.addr(self.lock().port))
    }

    fn setname(&self, a: &[u8]) -> Result<()> {
        let mut st = self.lock();
        if st.sock.is_some() {
            return Err(Error::OpBadState);
        }
        st.port = port_in(a).ok_or(Error::Inval)?;
        Ok(())
    }

    fn reject(&self, handle: usize, data: &[u8]) -> Result<()> {
        if data.len() > crate::CM_DATA_SIZE {
            return Err(Error::Inval);
        }
        let Request { from, .. } = connreq::take(handle).ok_or(Error::Inval)?;
        let st = self.lock();
        let sock = st.sock.as_ref().ok_or(Error::OpBadState)?;
        sock.send_to_addr(&control(REJECT, data), &name_of(from)?)?;
        Ok(())
    }

    fn close(&self) {
        let mut st = self.lock();
        st.sock = None;
        st.core.close::<Request>(self.me.clone());
    }

    fn cm_data_size(&self) -> usize {
        crate::CM_DATA_SIZE
    }

    fn set_fid(&self, fid: usize) {
        self.lock().core.fid = fid;
    }
}
