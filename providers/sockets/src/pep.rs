//! Passive endpoints: listen for MSG connection requests, report each as an
//! `FI_CONNREQ` event whose `info->handle` names it, and hand the socket to
//! the endpoint that accepts it (or answer a rejection).

use crate::conn::RxState;
use crate::ep::auth::{self, AUTH_LEN};
use crate::sock::{self, Epoll};
use crate::wire::{Header, Op, HEADER_LEN};
use oxifabric::abi::*;
use oxifabric::addr;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::PassiveEpOps;
use oxifabric::prov_log;
use oxifabric::service::addr_format::decode as sockaddr;
use oxifabric::service::connreq::{self, PepCore};
use oxifabric::service::eq::EventQueue;
use oxifabric::service::progress::Progress;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, Weak};

const PROV: &str = "sockets";

/// A connection request waiting for `fi_accept` or `fi_reject`.
pub struct PendingConn {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    /// What was read after the request (normally the start of a header).
    pub rx: RxState,
}

/// Takes a pending request by its handle; frees the handle.
pub fn take_pending(handle: usize) -> Option<PendingConn> {
    connreq::take(handle)
}

/// An accepted socket whose request frame is still being read.
struct Incoming {
    stream: TcpStream,
    peer: SocketAddr,
    buf: Vec<u8>,
    /// With a key: the challenge we sent and, once it arrived, the
    /// peer's; `proven` once its proof checked (`ep/auth.rs`).
    challenge: [u8; AUTH_LEN],
    peer_challenge: Option<[u8; AUTH_LEN]>,
    proven: bool,
}

struct PepState {
    core: PepCore,
    listener: Option<TcpListener>,
    local: Option<SocketAddr>,
    incoming: Vec<Option<Incoming>>,
    backlog: i32,
    /// Accepting pauses after running out of descriptors.
    accept_backoff: crate::sock::AcceptBackoff,
}

/// A sockets passive endpoint.
pub struct SockPep {
    me: Weak<SockPep>,
    info: Info,
    /// The key connecting peers must prove they hold before their
    /// request is reported (`ep/auth.rs`).
    auth_key: Option<Vec<u8>>,
    epoll: Epoll,
    st: Mutex<PepState>,
}

impl SockPep {
    pub fn new(info: &Info) -> Result<Arc<SockPep>> {
        if info.ep.ep_type != FI_EP_MSG && info.ep.ep_type != FI_EP_UNSPEC {
            return Err(Error::Inval);
        }
        let auth_key = info
            .ep
            .auth_key
            .clone()
            .or_else(|| info.domain.auth_key.clone())
            .filter(|k| !k.is_empty());
        let local = info.src_addr.as_ref().and_then(|b| sockaddr(b));
        let epoll = Epoll::new().map_err(|e| Error::os(FI_EMFILE, &e))?;
        Ok(Arc::new_cyclic(|me| SockPep {
            me: me.clone(),
            info: info.clone(),
            auth_key,
            epoll,
            st: Mutex::new(PepState {
                core: PepCore::default(),
                listener: None,
                local,
                incoming: Vec::new(),
                backlog: 128,
                accept_backoff: Default::default(),
            }),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PepState> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn accept_all(&self, st: &mut PepState) {
        loop {
            let Some(l) = &st.listener else { return };
            match l.accept() {
                Ok((s, peer)) => {
                    let _ = s.set_nonblocking(true);
                    let _ = s.set_nodelay(true);
                    let slot = st
                        .incoming
                        .iter()
                        .position(Option::is_none)
                        .unwrap_or_else(|| {
                            st.incoming.push(None);
                            st.incoming.len() - 1
                        });
                    let challenge = auth::challenge();
                    if self.auth_key.is_some() && !write_frame(&s, Op::AuthChallenge, &challenge) {
                        continue;
                    }
                    let _ = self.epoll.add(s.as_raw_fd(), 1 + slot as u64, false);
                    st.incoming[slot] = Some(Incoming {
                        stream: s,
                        peer,
                        buf: Vec::new(),
                        challenge,
                        peer_challenge: None,
                        proven: self.auth_key.is_none(),
                    });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    let fd = l.as_raw_fd();
                    if st.accept_backoff.failed(&self.epoll, fd, 0, &e) {
                        prov_log!(
                            "sockets",
                            FI_LOG_WARN,
                            FI_LOG_EP_CTRL,
                            "accept failed: {e}; accepting pauses"
                        );
                    }
                    return;
                }
            }
        }
    }

    /// Reads the request frame of one incoming socket (header and data).
    fn read_incoming(&self, st: &mut PepState, slot: usize) {
        let Some(inc) = st.incoming.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let mut chunk = [0u8; 512];
        loop {
            let need = if inc.buf.len() < HEADER_LEN {
                HEADER_LEN - inc.buf.len()
            } else {
                // Before the connection request, a keyed endpoint takes
                // only the peer's challenge and proof (`ep/auth.rs`).
                let want = |op: Op| {
                    if inc.proven {
                        op == Op::ConnReq
                    } else {
                        matches!(op, Op::AuthChallenge | Op::AuthProof)
                    }
                };
                match Header::decode(&inc.buf[..HEADER_LEN], crate::attrs::CM_DATA_SIZE as u64) {
                    Ok(h) if want(h.op) && (h.op == Op::ConnReq || h.len == AUTH_LEN as u64) => {
                        HEADER_LEN + h.len as usize - inc.buf.len()
                    }
                    Ok(_) if !inc.proven => {
                        prov_log!(
                            PROV,
                            FI_LOG_WARN,
                            FI_LOG_EP_CTRL,
                            "connection request from {} refused: peer did not prove the authorization key",
                            inc.peer
                        );
                        self.drop_incoming(st, slot);
                        return;
                    }
                    _ => {
                        prov_log!(
                            PROV,
                            FI_LOG_WARN,
                            FI_LOG_EP_CTRL,
                            "dropping a malformed connection request from {}",
                            inc.peer
                        );
                        self.drop_incoming(st, slot);
                        return;
                    }
                }
            };
            if need == 0 {
                if inc.proven {
                    break;
                }
                if !self.on_auth_frame(inc) {
                    prov_log!(
                        PROV,
                        FI_LOG_WARN,
                        FI_LOG_EP_CTRL,
                        "connection request from {} refused: wrong authorization key proof",
                        inc.peer
                    );
                    self.drop_incoming(st, slot);
                    return;
                }
                inc.buf.clear();
                continue;
            }
            match sock::read(inc.stream.as_raw_fd(), &mut chunk[..need.min(512)]) {
                Ok(0) => {
                    self.drop_incoming(st, slot);
                    return;
                }
                Ok(n) => inc.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.drop_incoming(st, slot);
                    return;
                }
            }
        }
        let Some(inc) = st.incoming[slot].take() else {
            return;
        };
        self.epoll.remove(inc.stream.as_raw_fd());
        let data = inc.buf[HEADER_LEN..].to_vec();
        let req = PendingConn {
            stream: inc.stream,
            peer: inc.peer,
            rx: RxState::Header {
                buf: [0; HEADER_LEN],
                got: 0,
            },
        };
        let mut info = self.info.clone();
        info.dest_addr = Some(addr::to_sockaddr(&inc.peer));
        info.addr_format = if inc.peer.is_ipv4() {
            FI_SOCKADDR_IN as u32
        } else {
            FI_SOCKADDR_IN6 as u32
        };
        info.src_addr = st.local.map(|l| addr::to_sockaddr(&l));
        st.core.request(info, req, data);
    }

    /// A whole `AuthChallenge` (answered with our proof) or `AuthProof`
    /// (checked) in `inc.buf`; false when the peer failed.
    fn on_auth_frame(&self, inc: &mut Incoming) -> bool {
        let Some(key) = self.auth_key.as_deref() else {
            return false;
        };
        let (op, body) = (inc.buf[1], &inc.buf[HEADER_LEN..]);
        let Ok(body) = <[u8; AUTH_LEN]>::try_from(body) else {
            return false;
        };
        if op == Op::AuthChallenge as u8 {
            inc.peer_challenge = Some(body);
            return auth::proof(key, &inc.stream, false, false, &body, &inc.challenge)
                .is_some_and(|p| write_frame(&inc.stream, Op::AuthProof, &p));
        }
        inc.proven = inc
            .peer_challenge
            .is_some_and(|pc| auth::proof_ok(key, &inc.stream, false, &inc.challenge, &pc, &body));
        inc.proven
    }

    fn drop_incoming(&self, st: &mut PepState, slot: usize) {
        if let Some(inc) = st.incoming[slot].take() {
            self.epoll.remove(inc.stream.as_raw_fd());
        }
    }
}

/// Writes one small frame on a fresh socket at once (its send buffer
/// always takes a few dozen bytes); false when it did not go out whole.
fn write_frame(s: &TcpStream, op: Op, payload: &[u8]) -> bool {
    let mut h = Header::control(op, 0);
    h.len = payload.len() as u64;
    let mut frame = h.encode().to_vec();
    frame.extend_from_slice(payload);
    matches!(std::io::Write::write(&mut &*s, &frame), Ok(n) if n == frame.len())
}

impl Progress for SockPep {
    fn progress(&self) {
        let Ok(mut st) = self.st.try_lock() else {
            return;
        };
        if let Some(l) = &st.listener {
            let fd = l.as_raw_fd();
            st.accept_backoff.resume_due(&self.epoll, fd, 0);
        }
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 16];
        let n = self.epoll.wait(&mut evs, 0);
        for ev in &evs[..n] {
            match ev.u64 {
                0 => self.accept_all(&mut st),
                t => self.read_incoming(&mut st, (t - 1) as usize),
            }
        }
    }

    fn wait_fd(&self) -> Option<RawFd> {
        Some(self.epoll.raw())
    }
}

impl PassiveEpOps for SockPep {
    fn bind_eq(&self, eq: Arc<EventQueue>) -> Result<()> {
        self.lock().core.bind_eq(eq, self.me.clone());
        Ok(())
    }

    fn listen(&self) -> Result<()> {
        let mut st = self.lock();
        st.core.check_listen()?;
        let want = st.local.unwrap_or_else(|| "127.0.0.1:0".parse().unwrap());
        let (l, at) = sock::serve::<TcpListener>(want, &self.epoll, 0, "fi_listen")?;
        st.local = Some(at);
        st.listener = Some(l);
        st.core.listening = true;
        Ok(())
    }

    fn getname(&self) -> Result<Vec<u8>> {
        let st = self.lock();
        let a = st.local.unwrap_or_else(|| "127.0.0.1:0".parse().unwrap());
        Ok(addr::to_sockaddr(&a))
    }

    fn setname(&self, a: &[u8]) -> Result<()> {
        let mut st = self.lock();
        if st.listener.is_some() {
            return Err(Error::OpBadState);
        }
        st.local = Some(sockaddr(a).ok_or(Error::Inval)?);
        Ok(())
    }

    fn reject(&self, handle: usize, data: &[u8]) -> Result<()> {
        if data.len() > crate::attrs::CM_DATA_SIZE {
            return Err(Error::Inval);
        }
        let Some(p) = take_pending(handle) else {
            return Err(Error::Inval);
        };
        let mut h = Header::control(Op::ConnReject, 0);
        h.len = data.len() as u64;
        let mut frame = h.encode().to_vec();
        frame.extend_from_slice(data);
        let _ = p.stream.set_nonblocking(false);
        let _ = p
            .stream
            .set_write_timeout(Some(std::time::Duration::from_secs(1)));
        let _ = std::io::Write::write_all(&mut &p.stream, &frame);
        Ok(())
    }

    fn set_backlog(&self, n: i32) -> Result<()> {
        self.lock().backlog = n.max(1);
        Ok(())
    }

    fn close(&self) {
        let mut st = self.lock();
        st.listener = None;
        for s in 0..st.incoming.len() {
            self.drop_incoming(&mut st, s);
        }
        st.core.close::<PendingConn>(self.me.clone());
    }

    fn cm_data_size(&self) -> usize {
        crate::attrs::CM_DATA_SIZE
    }

    fn set_fid(&self, fid: usize) {
        self.lock().core.fid = fid;
    }
}
