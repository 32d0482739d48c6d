//! A `shm` endpoint (`FI_EP_RDM`): the engine's endpoint core and receive
//! queue over one same-host [`Path`] (`path.rs`), which reaches every
//! peer; the AV names peers by our `fi_shm://` strings.

use crate::path::{self, Host, Key, Limits, Naming, Path, Quick};
use crate::provider::ShmDomain;
use crate::transport::Addr;
use oxifabric::abi::*;
use oxifabric::error::{Error, Result};
use oxifabric::info::Info;
use oxifabric::ops::{AtomicReq, Binding, EndpointOps, OptValue, RecvOp, RmaOp, SendOp};
use oxifabric::service::ep_core::{self, EpCore};
use oxifabric::service::epoll::Epoll;
use oxifabric::service::mr::MrTable;
use oxifabric::service::progress::{Progress, Ready};
use oxifabric::service::quicklock::{QuickGuard, QuickLock};
use oxifabric::service::rxq::{self, RxQueues};
use std::os::fd::RawFd;
use std::sync::{Arc, Weak};

pub(crate) use crate::path::addr_for_name;
pub(crate) use crate::path::ATOMIC_LIMIT;

struct State {
    core: EpCore,
    rxq: RxQueues<Key>,
    /// Made at `fi_enable`.
    path: Option<Path<Key>>,
    /// Our address: fixed at creation (or `fi_setname`), so `fi_getname`
    /// answers before `fi_enable`.
    addr: Addr,
    /// A waiter asked for our descriptor (before `fi_enable`, too).
    armed: bool,
    /// What waiters sleep on: the path's descriptors (none before
    /// `fi_enable`), so it exists, unchanged, for the endpoint's life.
    poll: Epoll,
}

impl State {
    /// The path and what it borrows, once enabled.
    fn parts(&mut self) -> Option<(&mut Path<Key>, Host<'_, Key>)> {
        let State {
            core, rxq, path, ..
        } = self;
        Some((path.as_mut()?, Host { core, rxq }))
    }
}

/// A `shm` endpoint.
pub struct ShmEp {
    me: Weak<ShmEp>,
    info: Info,
    mr: Arc<MrTable>,
    _domain: Arc<ShmDomain>,
    st: QuickLock<State>,
    /// Idle progress calls return before the lock.
    quick: Arc<Quick>,
}

impl ShmEp {
    pub(crate) fn new(info: &Info, domain: Arc<ShmDomain>) -> Result<Arc<ShmEp>> {
        // An address of ours (a service name resolved by fi_getinfo) is
        // taken as it is; any other source ("this host") gets a fresh one.
        let addr = match info.src_addr.as_deref().and_then(path::parse_addr) {
            Some(a) => a,
            None => Addr(crate::attach::EndpointId::random()?),
        };
        let poll = Epoll::new().map_err(|e| Error::os(FI_EMFILE, &e))?;
        let mr = domain.mr.clone();
        Ok(Arc::new_cyclic(|me| ShmEp {
            me: me.clone(),
            info: info.clone(),
            mr,
            _domain: domain,
            st: QuickLock::new(State {
                core: EpCore::new(info, crate::provider::NAME),
                rxq: RxQueues::default(),
                path: None,
                addr,
                armed: false,
                poll,
            }),
            quick: Arc::default(),
        }))
    }

    fn lock(&self) -> QuickGuard<'_, State> {
        self.st.lock()
    }

    fn progress_locked(&self, st: &mut State) {
        if let Some((path, mut h)) = st.parts() {
            path.progress(&mut h);
            self.quick.busy(!path.quiet());
        }
    }

    /// Our poll set watches the path's descriptors and the path is armed
    /// for a sleeper.
    fn arm(&self, st: &mut State) {
        st.armed = true;
        // The next pass disarms us.
        self.quick.busy(true);
        let State { path, poll, .. } = st;
        if let Some(path) = path.as_mut() {
            path.watch_in(poll, 0);
            path.arm();
        }
    }

    /// The operation's peer, and the enabled path.
    fn route<R>(
        &self,
        dest: fi_addr_t,
        f: impl FnOnce(&mut Path<Key>, &mut Host<'_, Key>, Addr) -> Result<R>,
    ) -> Result<R> {
        let mut g = self.lock();
        if !g.core.enabled {
            return Err(Error::OpBadState);
        }
        let (path, mut h) = g.parts().ok_or(Error::OpBadState)?;
        let to = path.peer_of(&mut h, dest)?;
        let r = f(path, &mut h, to);
        self.quick.busy(true);
        r
    }

    fn limits(&self) -> Limits {
        Limits {
            queue_size: crate::provider::QUEUE_SIZE,
            inject_size: self.info.tx.inject_size,
            rma_iov_limit: self.info.tx.rma_iov_limit,
            handshake: crate::transport::Config::default().handshake_timeout,
            fallback: false,
        }
    }
}

impl Progress for ShmEp {
    fn progress(&self) {
        if self.quick.skip() {
            return;
        }
        if let Some(mut st) = self.st.try_lock() {
            self.progress_locked(&mut st);
        }
    }

    fn progress_settled(&self) {
        // `fi_trywait`: the caller sleeps on our descriptor next if
        // nothing is left, so senders must ring from now on.
        let mut g = self.lock();
        self.progress_locked(&mut g);
        self.arm(&mut g);
    }

    fn wait_fd(&self) -> Option<RawFd> {
        let mut g = self.lock();
        self.arm(&mut g);
        Some(g.poll.raw())
    }

    /// Looking at the ring costs a few loads; arming it for sleepers
    /// costs every sender a system call per message. A queue looks at us
    /// on every read and arms us (wait_fd) only before it sleeps.
    fn probe(&self) -> Option<Arc<dyn Ready>> {
        Some(self.quick.clone())
    }
}

impl EndpointOps for ShmEp {
    fn bind(&self, b: Binding) -> Result<()> {
        self.lock().core.bind(b, self.me.clone())
    }

    fn enable(&self) -> Result<()> {
        let mut st = self.lock();
        if !st.core.start_enable(ep_core::BOTH)? {
            return Ok(());
        }
        let mut path = Path::new(
            st.addr.0,
            self.mr.clone(),
            Naming::ShmStr,
            &[],
            self.limits(),
        )?;
        path.set_owner(oxifabric::service::coll::key_of(self));
        self.quick.watch(path.peek());
        st.path = Some(path);
        st.core.finish_enable(ep_core::BOTH);
        if st.armed {
            // Someone already sleeps on our poll set.
            self.arm(&mut st);
        }
        Ok(())
    }

    fn close(&self) {
        let mut st = self.lock();
        // Our listener and rings go with the path; peers see the
        // connections hang up.
        if let Some(mut p) = st.path.take() {
            p.unwatch(&st.poll);
        }
        st.core.unbind_all(self.me.clone());
    }

    fn cancel(&self, context: usize) -> Result<()> {
        let mut g = self.lock();
        let st = &mut *g;
        st.rxq.cancel(context, &st.core.sinks)
    }

    fn getopt(&self, level: c_int, name: c_int) -> Result<OptValue> {
        self.lock().rxq.getopt(level, name)
    }

    fn setopt(&self, level: c_int, name: c_int, v: OptValue) -> Result<()> {
        self.lock().rxq.setopt(level, name, v)
    }

    fn getname(&self) -> Result<Vec<u8>> {
        Ok(crate::provider::str_addr(&self.lock().addr.to_string()))
    }

    fn setname(&self, a: &[u8]) -> Result<()> {
        let mut st = self.lock();
        if st.core.enabled {
            return Err(Error::OpBadState);
        }
        if a.is_empty() {
            return Err(Error::Inval);
        }
        st.addr = addr_for_name(a);
        Ok(())
    }

    fn recv(&self, op: &RecvOp<'_>) -> Result<()> {
        rxq::check_recv(op, self.info.caps)?;
        let mut g = self.lock();
        let st = &mut *g;
        if !st.core.enabled {
            return Err(Error::OpBadState);
        }
        if !st
            .rxq
            .recv_room(op, crate::provider::QUEUE_SIZE, &st.core.sinks)
        {
            return Err(Error::Again);
        }
        if op.flags & FI_PEEK != 0 {
            self.progress_locked(st);
        }
        let op = &rxq::as_posted(op, self.info.caps);
        let Some((path, mut h)) = st.parts() else {
            return Err(Error::OpBadState);
        };
        path.before_post(&mut h);
        for m in h.rxq.post(op, &h.core.sinks) {
            path.matched(&mut h, m);
        }
        path.after_post(&mut h);
        self.quick.busy(true);
        Ok(())
    }

    fn send(&self, op: &SendOp<'_>) -> Result<()> {
        let len = path::check_send(op, self.info.tx.inject_size, self.info.caps)?;
        self.route(op.dest, |path, h, to| path.send(h, op, len, to))
    }

    fn rma(&self, op: &RmaOp<'_>) -> Result<()> {
        self.route(op.dest, |path, h, to| path.rma(h, op, to))
    }

    fn atomic(&self, op: &AtomicReq<'_>) -> Result<()> {
        self.route(op.dest, |path, h, to| path.atomic(h, op, to))
    }

    fn atomic_limit(&self) -> usize {
        ATOMIC_LIMIT
    }

    fn rx_size_left(&self) -> Result<usize> {
        Ok(crate::provider::QUEUE_SIZE.saturating_sub(self.lock().rxq.posted_count()))
    }

    fn tx_size_left(&self) -> Result<usize> {
        let used = self.lock().path.as_ref().map_or(0, Path::tx_used);
        Ok(crate::provider::QUEUE_SIZE.saturating_sub(used))
    }

    fn as_progress(&self) -> Option<Weak<dyn Progress>> {
        Some(self.me.clone())
    }

    fn completion_sinks(&self) -> Option<ep_core::Sinks> {
        Some(self.lock().core.sinks.clone())
    }

    fn set_fid(&self, fid: usize) {
        self.lock().core.fid = fid;
    }
}
