//! rdma-core objects the provider keeps in its domains and endpoints: the
//! same calls as the borrowed owners of the parent module, but each object
//! holds an `Arc` of what it must not outlive (instead of a borrow), so
//! they can live in `'static` provider state. The parent module's
//! contract holds here; in particular the teardown order rdma-core needs
//! is encoded by those `Arc`s: a memory region keeps its protection
//! domain, a protection domain and a completion queue keep their device
//! context, an id keeps its event channel and, once it has a queue pair,
//! that queue pair's protection domain and completion queue (the queue
//! pair is destroyed in the id's `Drop`, before any of them can go). A
//! shared receive queue keeps its protection domain, and a queue pair made
//! on one keeps it through its id, so the queue goes only after the last
//! queue pair using it.
//!
//! The data path takes application memory as [`IoBuf`]s, whose own
//! contract (the application keeps the bytes valid until the operation
//! completes) is what makes handing their addresses to the device sound;
//! the device itself refuses (with an error completion) any access
//! outside the memory registered under the keys given.

use super::*;
use oxifabric::ops::IoBuf;
use std::net::SocketAddr;
use std::sync::Arc;

/// Most scatter/gather entries one work request carries here.
pub const MAX_SGE: usize = 8;

/// Sets `O_NONBLOCK` on a descriptor rdma-core created.
fn set_nonblocking(fd: c_int) -> Result<(), VerbsError> {
    // SAFETY: fcntl on a descriptor; a bad one is EBADF, not UB.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if fl < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) } < 0 {
        return Err(VerbsError::Call {
            call: "fcntl",
            errno: last_errno(),
        });
    }
    Ok(())
}

/// The name of the device behind a context.
fn ctx_name(lib: &Lib, ctx: *mut ibv_context) -> String {
    // SAFETY: ctx is a live context (callers); device is its first field.
    let dev = unsafe { (*ctx).device };
    // SAFETY: dev is the context's device, live while the context is.
    let p = unsafe { (lib.get_device_name)(dev) };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated name living with the device.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// One device context of librdmacm's (`rdma_get_devices`): the context
/// its ids use, so that protection domains, queues and queue pairs made
/// here work with them. The list is freed (the devices released) on drop.
pub struct DevCtx {
    lib: &'static Lib,
    list: *mut *mut ibv_context,
    ctx: *mut ibv_context,
}

// SAFETY: librdmacm's contexts are process-wide and the calls made through
// them are thread-safe in libibverbs (module contract, "Threads").
unsafe impl Send for DevCtx {}
// SAFETY: as above.
unsafe impl Sync for DevCtx {}

impl DevCtx {
    /// The context of the device called `name`.
    pub fn open(name: &str) -> Result<Arc<DevCtx>, VerbsError> {
        let lib = lib()?;
        let mut n: c_int = 0;
        // SAFETY: n is a valid out-parameter; the list is NULL-terminated
        // and ours to free.
        let list = unsafe { (lib.cm.get_devices)(&mut n) };
        let list = made("rdma_get_devices", list)?;
        for i in 0..usize::try_from(n).unwrap_or(0) {
            // SAFETY: the list has n entries.
            let ctx = unsafe { *list.add(i) };
            if !ctx.is_null() && ctx_name(lib, ctx) == name {
                return Ok(Arc::new(DevCtx { lib, list, ctx }));
            }
        }
        // SAFETY: list came from rdma_get_devices and is freed once.
        unsafe { (lib.cm.free_devices)(list) };
        Err(VerbsError::Call {
            call: "rdma_get_devices",
            errno: libc::ENODEV,
        })
    }

    /// The device's name.
    pub fn name(&self) -> String {
        ctx_name(self.lib, self.ctx)
    }

    /// `ibv_alloc_pd`.
    pub fn alloc_pd(self: &Arc<Self>) -> Result<Arc<Pd>, VerbsError> {
        // SAFETY: ctx is live while self is.
        let pd = made("ibv_alloc_pd", unsafe { (self.lib.alloc_pd)(self.ctx) })?;
        Ok(Arc::new(Pd {
            lib: self.lib,
            pd,
            _dev: self.clone(),
        }))
    }

    /// A completion queue of `cqe` entries with its own completion
    /// channel (non-blocking descriptor), armed once.
    pub fn create_cq(self: &Arc<Self>, cqe: usize) -> Result<Arc<Cq>, VerbsError> {
        // SAFETY: ctx is live.
        let chan = unsafe { (self.lib.create_comp_channel)(self.ctx) };
        let chan = made("ibv_create_comp_channel", chan)?;
        let cqe = c_int::try_from(cqe).unwrap_or(c_int::MAX);
        // SAFETY: ctx and chan are live; no cq_context.
        let cq =
            unsafe { (self.lib.create_cq)(self.ctx, cqe, std::ptr::null_mut(), chan.cast(), 0) };
        let cq = match made("ibv_create_cq", cq) {
            Ok(cq) => cq,
            Err(e) => {
                // SAFETY: chan was just made and has no CQ.
                unsafe { (self.lib.destroy_comp_channel)(chan) };
                return Err(e);
            }
        };
        let cq = Cq {
            lib: self.lib,
            cq,
            chan,
            _dev: self.clone(),
            armed: false.into(),
        };
        set_nonblocking(cq.fd())?;
        Ok(Arc::new(cq))
    }

    /// `ibv_query_device`: the device's limits (shared receive queues'
    /// among them).
    pub fn query_device(&self) -> Result<ibv_device_attr, VerbsError> {
        // SAFETY: all-zero is a valid ibv_device_attr (integers and bytes).
        let mut a: ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: ctx is live; a is a full-size out-parameter.
        check("ibv_query_device", unsafe {
            (self.lib.query_device)(self.ctx, &mut a)
        })?;
        Ok(a)
    }

    fn is(&self, ctx: *mut ibv_context) -> bool {
        std::ptr::eq(self.ctx, ctx)
    }
}

impl Drop for DevCtx {
    fn drop(&mut self) {
        // SAFETY: list came from rdma_get_devices and is freed once; every
        // object made on ctx holds an Arc of self and is gone.
        unsafe { (self.lib.cm.free_devices)(self.list) };
    }
}

/// A protection domain; deallocated on drop (after its regions and queue
/// pairs, which hold it).
pub struct Pd {
    lib: &'static Lib,
    pd: *mut ibv_pd,
    _dev: Arc<DevCtx>,
}

// SAFETY: a PD is used through thread-safe libibverbs calls only.
unsafe impl Send for Pd {}
// SAFETY: as above.
unsafe impl Sync for Pd {}

impl Pd {
    /// `ibv_reg_mr` over application memory; `access` is `IBV_ACCESS_*`.
    /// The registration pins the pages; the application keeps the memory
    /// until it closes the region (fi_mr(3)), which drops the [`Mr`].
    pub fn register(self: &Arc<Self>, buf: IoBuf, access: c_int) -> Result<Mr, VerbsError> {
        // SAFETY: pd is live; the range is the application's registered
        // memory (IoBuf contract); the device accesses it only under the
        // keys returned, and only until ibv_dereg_mr (Mr's drop).
        let mr =
            unsafe { (self.lib.reg_mr)(self.pd, buf.addr() as *mut c_void, buf.len(), access) };
        let mr = made("ibv_reg_mr", mr)?;
        Ok(Mr {
            lib: self.lib,
            mr,
            _pd: self.clone(),
        })
    }

    /// Registers the whole pages (of `page` bytes, a power of two) that
    /// hold `buf`, for a registration cache: later buffers within those
    /// pages can use the same local key. Returns the registration and the
    /// page-aligned range `(start, len)` it covers.
    pub fn register_pages(
        self: &Arc<Self>,
        buf: IoBuf,
        page: usize,
        access: c_int,
    ) -> Result<(Mr, usize, usize), VerbsError> {
        let start = buf.addr() & !(page - 1);
        let end = buf
            .addr()
            .saturating_add(buf.len())
            .saturating_add(page - 1)
            & !(page - 1);
        // SAFETY: pd is live; every page of the range holds part of the
        // application's buffer (IoBuf contract), so it is mapped with the
        // buffer's permissions; the device touches only the bytes work
        // requests name, which are application buffers under the same
        // contract, and only until ibv_dereg_mr (Mr's drop).
        let mr = unsafe { (self.lib.reg_mr)(self.pd, start as *mut c_void, end - start, access) };
        let mr = made("ibv_reg_mr", mr)?;
        let mr = Mr {
            lib: self.lib,
            mr,
            _pd: self.clone(),
        };
        Ok((mr, start, end - start))
    }
}

impl Pd {
    /// `ibv_create_srq`: a shared receive queue of at least `max_wr`
    /// receives of up to `max_sge` pieces each (the device may grant more;
    /// [`Srq::granted`] says what it did).
    pub fn create_srq(self: &Arc<Self>, max_wr: u32, max_sge: u32) -> Result<Arc<Srq>, VerbsError> {
        let mut attr = ibv_srq_init_attr {
            srq_context: std::ptr::null_mut(),
            attr: ibv_srq_attr {
                max_wr,
                max_sge,
                srq_limit: 0,
            },
        };
        // SAFETY: pd is live; attr is read and updated during the call.
        let srq = made("ibv_create_srq", unsafe {
            (self.lib.create_srq)(self.pd, &mut attr)
        })?;
        Ok(Arc::new(Srq {
            lib: self.lib,
            srq,
            granted: attr.attr,
            pd: self.clone(),
        }))
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: deallocated once, after everything holding it.
        unsafe { (self.lib.dealloc_pd)(self.pd) };
    }
}

/// Memory of the provider's own, registered with one protection domain:
/// the bounce buffers an RDM endpoint sends from and receives into. The
/// registration goes before the memory (drop), and the memory never moves.
///
/// The device writes into it only where the owner posted a receive, and
/// reads from it only where the owner posted a send; the owner touches
/// (through [`RegBuf::buf`]) only slots it has no work request posted on.
pub struct RegBuf {
    // Field order is drop order: the registration goes first.
    mr: Mr,
    mem: Mem,
}

/// Heap bytes at a fixed address, freed on drop.
struct Mem {
    ptr: *mut u8,
    len: usize,
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY: allocated by Box::into_raw of len bytes in RegBuf::new,
        // freed once.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
    }
}

// SAFETY: the memory is the owner's alone (contract above); the pointer
// moves with it.
unsafe impl Send for RegBuf {}
// SAFETY: as above; shared access hands out only IoBufs.
unsafe impl Sync for RegBuf {}

impl RegBuf {
    /// `len` zeroed bytes registered on `pd` for local writes (receives)
    /// and sends.
    pub fn new(pd: &Arc<Pd>, len: usize) -> Result<RegBuf, VerbsError> {
        let len = len.max(1);
        let mem = Mem {
            ptr: Box::into_raw(vec![0u8; len].into_boxed_slice()).cast::<u8>(),
            len,
        };
        // SAFETY: the len bytes are ours until drop, after deregistration.
        let whole = unsafe { IoBuf::new(mem.ptr, len) };
        let mr = pd.register(whole, IBV_ACCESS_LOCAL_WRITE)?;
        Ok(RegBuf { mr, mem })
    }

    /// The local key work requests name the memory by.
    pub fn lkey(&self) -> u32 {
        self.mr.lkey()
    }

    /// Bytes `[off, off + len)` (clamped to the memory).
    pub fn buf(&self, off: usize, len: usize) -> IoBuf {
        // SAFETY: the memory is valid until drop; what else may write it
        // is the device under the owner's posts (contract above).
        unsafe { IoBuf::new(self.mem.ptr, self.mem.len) }.slice(off, len)
    }
}

/// A registration of application memory; deregistered on drop.
pub struct Mr {
    lib: &'static Lib,
    mr: *mut ibv_mr,
    _pd: Arc<Pd>,
}

// SAFETY: the keys are read-only after registration; dereg is one call.
unsafe impl Send for Mr {}
// SAFETY: as above.
unsafe impl Sync for Mr {}

impl Mr {
    /// The local key (what work requests name the memory by).
    pub fn lkey(&self) -> u32 {
        // SAFETY: mr is live until drop.
        unsafe { (*self.mr).lkey }
    }

    /// The remote key (what peers' RDMA names it by).
    pub fn rkey(&self) -> u32 {
        // SAFETY: mr is live until drop.
        unsafe { (*self.mr).rkey }
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: deregistered once; the memory is the application's, not
        // freed here.
        unsafe { (self.lib.dereg_mr)(self.mr) };
    }
}

/// A shared receive queue: receives posted to it are consumed by whichever
/// queue pair made on it ([`Id::create_qp_on_srq`]) a message arrives at,
/// and complete on that queue pair's completion queue. Destroyed on drop,
/// which comes after every such queue pair (their ids hold an `Arc` of
/// it) and before its protection domain (held here).
pub struct Srq {
    lib: &'static Lib,
    srq: *mut ibv_srq,
    granted: ibv_srq_attr,
    pd: Arc<Pd>,
}

// SAFETY: posting to a shared receive queue is thread-safe in rdma-core's
// providers (they lock it); destroy is one call.
unsafe impl Send for Srq {}
// SAFETY: as above.
unsafe impl Sync for Srq {}

impl Srq {
    /// The sizes the device granted (at least those asked for).
    pub fn granted(&self) -> ibv_srq_attr {
        self.granted
    }

    /// Posts one receive into `iov` (`lkeys`, one per buffer, of
    /// registrations on this queue's protection domain's device).
    pub fn post_recv(&self, wr_id: u64, iov: &[IoBuf], lkeys: &[u32]) -> Result<(), VerbsError> {
        // SAFETY: srq is live until drop; one well-formed request whose
        // buffers stay the application's until the receive completes
        // (IoBuf contract), under the caller's keys (the device refuses
        // any other access with an error completion).
        recv_request(wr_id, iov, lkeys, |wr| unsafe {
            post_srq_recv(self.srq, wr)
        })
    }
}

impl Drop for Srq {
    fn drop(&mut self) {
        // SAFETY: destroyed once; every queue pair made on it held an Arc
        // of it and is gone, so nothing is attached (otherwise rdma-core
        // answers EBUSY and the queue is leaked, never freed in use).
        unsafe { (self.lib.destroy_srq)(self.srq) };
    }
}

/// A completion queue with its completion channel.
pub struct Cq {
    lib: &'static Lib,
    cq: *mut ibv_cq,
    chan: *mut ibv_comp_channel,
    _dev: Arc<DevCtx>,
    /// Whether the next completion raises an event: an armed CQ costs the
    /// device an event (an interrupt on hardware; on soft-RoCE kernel work)
    /// for its next completion, so it is armed only for a sleeper.
    armed: std::sync::atomic::AtomicBool,
}

// SAFETY: polling and arming a CQ are thread-safe in rdma-core's providers.
unsafe impl Send for Cq {}
// SAFETY: as above.
unsafe impl Sync for Cq {}

impl Cq {
    /// The completion channel's descriptor: readable once a completion
    /// arrives after [`Cq::arm`].
    pub fn fd(&self) -> c_int {
        // SAFETY: chan is live until drop.
        unsafe { (*self.chan).fd }
    }

    /// `ibv_req_notify_cq` unless armed already: the next completion makes
    /// [`Cq::fd`] readable. Callers serialize this with
    /// [`Cq::settle_events`] (their endpoint's lock), which disarms.
    pub fn arm(&self) -> Result<(), VerbsError> {
        use std::sync::atomic::Ordering::{AcqRel, Release};
        if self.armed.swap(true, AcqRel) {
            return Ok(());
        }
        let r = self.arm_now();
        if r.is_err() {
            self.armed.store(false, Release);
        }
        r
    }

    /// `ibv_req_notify_cq`.
    fn arm_now(&self) -> Result<(), VerbsError> {
        // SAFETY: cq is live; its context's ops table is rdma-core's.
        let f = unsafe { (*(*self.cq).context).ops.req_notify_cq }.ok_or(VerbsError::Call {
            call: "ibv_req_notify_cq",
            errno: libc::ENOSYS,
        })?;
        // SAFETY: what verbs.h's inline ibv_req_notify_cq does.
        check("ibv_req_notify_cq", unsafe { f(self.cq.cast(), 0) })
    }

    /// Reads and acknowledges the channel's pending notifications without
    /// blocking, then arms the queue again when `arm` (someone may sleep
    /// on [`Cq::fd`] after the caller's next poll); a failed arming is
    /// left to the sleeper's periodic wake-up. Callers serialize this
    /// (their endpoint's lock).
    pub fn settle_events(&self, arm: bool) {
        self.take_events();
        if arm {
            let _ = self.arm();
        }
    }

    /// The notifications part of [`Cq::settle_events`].
    fn take_events(&self) {
        if !self.armed.load(std::sync::atomic::Ordering::Acquire) {
            // No event comes from a queue that was not armed: the read
            // (a system call) is saved.
            return;
        }
        loop {
            let mut cq = std::ptr::null_mut();
            let mut ctx = std::ptr::null_mut();
            // SAFETY: chan is live and non-blocking; out-parameters valid.
            let rc = unsafe { (self.lib.get_cq_event)(self.chan, &mut cq, &mut ctx) };
            if rc != 0 {
                return;
            }
            // SAFETY: cq is the CQ the event was for (ours); acked at once,
            // so destroy_cq never waits for unacknowledged events.
            unsafe { (self.lib.ack_cq_events)(cq, 1) };
            // One event per arming.
            self.armed
                .store(false, std::sync::atomic::Ordering::Release);
        }
    }

    /// `ibv_poll_cq`: fills the front of `wc`, returns how many.
    pub fn poll(&self, wc: &mut [ibv_wc]) -> Result<usize, VerbsError> {
        // SAFETY: cq is live until drop.
        unsafe { poll_cq(self.cq, wc) }
    }
}

/// Room for the completions of one `ibv_poll_cq`, left uninitialised:
/// rdma-core writes the entries it reports and only those are read, so a
/// poll that finds nothing (a busy-polling reader's usual case) does not
/// first clear the whole array.
pub struct WcBuf<const N: usize> {
    wc: [std::mem::MaybeUninit<ibv_wc>; N],
}

impl<const N: usize> Default for WcBuf<N> {
    fn default() -> Self {
        WcBuf {
            wc: [std::mem::MaybeUninit::uninit(); N],
        }
    }
}

impl<const N: usize> WcBuf<N> {
    /// How many completions one poll may return.
    pub const ROOM: usize = N;

    /// Polls `cq` for up to `N` completions, returning those found.
    pub fn poll(&mut self, cq: &Cq) -> Result<&[ibv_wc], VerbsError> {
        // SAFETY: cq is live while borrowed; the array is room for N
        // entries.
        let n = unsafe { poll_cq_into(cq.cq, self.wc.as_mut_ptr().cast(), N) }?;
        // SAFETY: rdma-core wrote the first n entries (n <= N, checked by
        // poll_cq_into); MaybeUninit<ibv_wc> has ibv_wc's layout.
        Ok(unsafe { std::slice::from_raw_parts(self.wc.as_ptr().cast::<ibv_wc>(), n) })
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: the queue pairs using it hold an Arc of it and are gone;
        // every event was acked (take_events); then the channel, empty.
        unsafe {
            (self.lib.destroy_cq)(self.cq);
            (self.lib.destroy_comp_channel)(self.chan);
        }
    }
}

/// An rdma-cm event channel with a non-blocking descriptor.
pub struct Channel {
    lib: &'static Lib,
    ch: *mut rdma_event_channel,
}

// SAFETY: librdmacm's channel calls are thread-safe.
unsafe impl Send for Channel {}
// SAFETY: as above.
unsafe impl Sync for Channel {}

/// A CM event, copied out and acknowledged.
pub struct Event {
    /// What happened (`RDMA_CM_EVENT_*`).
    pub kind: u32,
    /// Its status (0, a negative errno, or a reject reason).
    pub status: c_int,
    /// The address of the id it is about (to tell ids apart).
    pub id: usize,
    /// The connection's private data as it arrived (CONNECT_REQUEST,
    /// ESTABLISHED on the active side, REJECTED).
    pub data: Vec<u8>,
    /// A `CONNECT_REQUEST`'s new id, now the caller's.
    pub request: Option<Id>,
}

impl Event {
    /// The event's name, for messages.
    pub fn name(&self) -> String {
        CmEventKind(self.kind).to_string()
    }
}

impl Channel {
    /// `rdma_create_event_channel`, non-blocking.
    pub fn new() -> Result<Arc<Channel>, VerbsError> {
        let lib = lib()?;
        // SAFETY: no arguments.
        let ch = made("rdma_create_event_channel", unsafe {
            (lib.cm.create_event_channel)()
        })?;
        let ch = Channel { lib, ch };
        set_nonblocking(ch.fd())?;
        Ok(Arc::new(ch))
    }

    /// The descriptor, readable when an event waits.
    pub fn fd(&self) -> c_int {
        // SAFETY: ch is live; fd is its first field.
        unsafe { (*self.ch).fd }
    }

    /// The next event, if one is waiting (never blocks).
    pub fn next(self: &Arc<Self>) -> Option<Event> {
        let mut ev = std::ptr::null_mut();
        // SAFETY: ch is live and non-blocking; ev is an out-parameter.
        if unsafe { (self.lib.cm.get_cm_event)(self.ch, &mut ev) } != 0 {
            return None;
        }
        // SAFETY: ev is live until acked below; private_data is NULL or
        // private_data_len bytes owned by the event.
        let (kind, status, id, data) = unsafe {
            let e = &*ev;
            let p = &e.param;
            let data = if p.private_data.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(
                    p.private_data.cast::<u8>(),
                    usize::from(p.private_data_len),
                )
                .to_vec()
            };
            (e.event, e.status, e.id, data)
        };
        // SAFETY: acked once, after everything was copied out.
        unsafe { (self.lib.cm.ack_cm_event)(ev) };
        // A request's id belongs to the application from its event on.
        let request = (kind == RDMA_CM_EVENT_CONNECT_REQUEST).then(|| Id {
            lib: self.lib,
            id,
            chan: self.clone(),
            qp: None,
        });
        Some(Event {
            kind,
            status,
            id: id as usize,
            data,
            request,
        })
    }

    /// Waits up to `timeout` for the next event (for the short
    /// synchronous steps of address and route resolution).
    pub fn wait(self: &Arc<Self>, timeout: std::time::Duration) -> Result<Event, VerbsError> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(e) = self.next() {
                return Ok(e);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(VerbsError::Timeout("rdma_get_cm_event"));
            }
            let mut pfd = libc::pollfd {
                fd: self.fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, millis(left)) };
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: every id on it holds an Arc of it and is gone.
        unsafe { (self.lib.cm.destroy_event_channel)(self.ch) };
    }
}

/// What a send-queue work request does.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// A send consuming a receive at the peer; with immediate data.
    Send(Option<u32>),
    /// An RDMA WRITE (with immediate data: a receive is consumed too).
    Write {
        addr: u64,
        rkey: u32,
        imm: Option<u32>,
    },
    /// An RDMA READ.
    Read { addr: u64, rkey: u32 },
    /// A 64-bit fetch-and-add at `addr` (8-byte aligned); the old value
    /// lands in the one local buffer.
    FetchAdd { addr: u64, rkey: u32, add: u64 },
    /// A 64-bit compare-and-swap at `addr` (8-byte aligned): `swap` is
    /// written where the target equals `compare`; the old value lands in
    /// the one local buffer.
    CmpSwap {
        addr: u64,
        rkey: u32,
        compare: u64,
        swap: u64,
    },
}

/// Queue-pair sizes asked for and granted.
pub type QpCap = ibv_qp_cap;

/// An `rdma_cm_id` with, once created, its RC queue pair. Destroyed on
/// drop (queue pair first).
pub struct Id {
    lib: &'static Lib,
    id: *mut rdma_cm_id,
    chan: Arc<Channel>,
    /// What the queue pair was made on, kept until it is destroyed.
    qp: Option<QpParts>,
}

/// A queue pair's protection domain, completion queue and shared receive
/// queue (if any).
type QpParts = (Arc<Pd>, Arc<Cq>, Option<Arc<Srq>>);

// SAFETY: an id is used under its owner's lock; librdmacm's calls on it
// are thread-safe.
unsafe impl Send for Id {}
// SAFETY: as above.
unsafe impl Sync for Id {}

fn sockaddr_of(a: &SocketAddr) -> libc::sockaddr_storage {
    let bytes = oxifabric::addr::to_sockaddr(a);
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let n = bytes.len().min(size_of::<libc::sockaddr_storage>());
    // SAFETY: n bytes fit both.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), std::ptr::from_mut(&mut ss).cast(), n) };
    ss
}

fn addr_of(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    let n = match c_int::from(ss.ss_family) {
        libc::AF_INET => size_of::<libc::sockaddr_in>(),
        libc::AF_INET6 => size_of::<libc::sockaddr_in6>(),
        _ => return None,
    };
    // SAFETY: ss holds n bytes of a sockaddr of its family.
    unsafe { oxifabric::addr::from_sockaddr(std::ptr::from_ref(ss).cast(), n) }
}

impl Id {
    /// `rdma_create_id` (`RDMA_PS_TCP`) with its events on `chan`.
    pub fn new(chan: &Arc<Channel>) -> Result<Id, VerbsError> {
        let mut id = std::ptr::null_mut();
        // SAFETY: ch is live; id is an out-parameter.
        let rc =
            unsafe { (chan.lib.cm.create_id)(chan.ch, &mut id, std::ptr::null_mut(), RDMA_PS_TCP) };
        check("rdma_create_id", rc)?;
        Ok(Id {
            lib: chan.lib,
            id,
            chan: chan.clone(),
            qp: None,
        })
    }

    /// The id's address, as [`Event::id`] names it.
    pub fn addr(&self) -> usize {
        self.id as usize
    }

    /// `rdma_migrate_id`: its events arrive on `chan` from now on.
    pub fn migrate(&mut self, chan: &Arc<Channel>) -> Result<(), VerbsError> {
        // SAFETY: id and chan are live; the old channel's events for this
        // id were acked (Channel::next acks at once).
        check("rdma_migrate_id", unsafe {
            (self.lib.cm.migrate_id)(self.id, chan.ch)
        })?;
        self.chan = chan.clone();
        Ok(())
    }

    /// `rdma_bind_addr`.
    pub fn bind(&self, a: &SocketAddr) -> Result<(), VerbsError> {
        let ss = sockaddr_of(a);
        // SAFETY: id live; ss read during the call.
        check("rdma_bind_addr", unsafe {
            (self.lib.cm.bind_addr)(self.id, std::ptr::from_ref(&ss).cast())
        })
    }

    /// `rdma_listen`.
    pub fn listen(&self, backlog: c_int) -> Result<(), VerbsError> {
        // SAFETY: id live.
        check("rdma_listen", unsafe {
            (self.lib.cm.listen)(self.id, backlog)
        })
    }

    /// `rdma_resolve_addr` (ADDR_RESOLVED or ADDR_ERROR follows).
    pub fn resolve_addr(&self, dst: &SocketAddr, ms: c_int) -> Result<(), VerbsError> {
        let ss = sockaddr_of(dst);
        // SAFETY: id live; ss read during the call; NULL source.
        check("rdma_resolve_addr", unsafe {
            (self.lib.cm.resolve_addr)(
                self.id,
                std::ptr::null(),
                std::ptr::from_ref(&ss).cast(),
                ms,
            )
        })
    }

    /// `rdma_resolve_route` (ROUTE_RESOLVED or ROUTE_ERROR follows).
    pub fn resolve_route(&self, ms: c_int) -> Result<(), VerbsError> {
        // SAFETY: id live with a resolved address.
        check("rdma_resolve_route", unsafe {
            (self.lib.cm.resolve_route)(self.id, ms)
        })
    }

    /// The connection parameters of `rdma_connect` and `rdma_accept`. Each
    /// side's `rnr_retry_count` travels in the request or the reply and
    /// becomes the *peer's* queue pair's RNR retry count (the IB CM's
    /// rule), so the test knob [`RNR_RETRY_ENV`] acts when set on the side
    /// whose peer should give up.
    fn param(data: &[u8]) -> rdma_conn_param {
        rdma_conn_param {
            private_data: if data.is_empty() {
                std::ptr::null()
            } else {
                data.as_ptr().cast()
            },
            private_data_len: u8::try_from(data.len()).unwrap_or(u8::MAX),
            // rdma-cm's "as many as the device allows" (RDMA_MAX_RESP_RES,
            // RDMA_MAX_INIT_DEPTH): RDMA READs in flight at once.
            responder_resources: 0xff,
            initiator_depth: 0xff,
            flow_control: 1,
            retry_count: 7,
            rnr_retry_count: rnr_retry(),
            srq: 0,
            qp_num: 0,
        }
    }

    /// `rdma_connect` with private data (at most 255 bytes; rdma-cm may
    /// allow fewer).
    pub fn connect(&self, data: &[u8]) -> Result<(), VerbsError> {
        let p = Self::param(data);
        // SAFETY: id live with a route; p and data read during the call.
        check("rdma_connect", unsafe {
            (self.lib.cm.connect)(self.id, &p)
        })
    }

    /// `rdma_accept` with private data.
    pub fn accept(&self, data: &[u8]) -> Result<(), VerbsError> {
        let p = Self::param(data);
        // SAFETY: as in connect; id came from a CONNECT_REQUEST.
        check("rdma_accept", unsafe { (self.lib.cm.accept)(self.id, &p) })
    }

    /// `rdma_reject` with private data.
    pub fn reject(&self, data: &[u8]) -> Result<(), VerbsError> {
        let len = u8::try_from(data.len()).unwrap_or(u8::MAX);
        // SAFETY: id live (a request's); data read during the call.
        check("rdma_reject", unsafe {
            (self.lib.cm.reject)(self.id, data.as_ptr().cast(), len)
        })
    }

    /// Sets the queue pair's RNR NAK timer (`ibv_modify_qp` of
    /// `min_rnr_timer`, IB's 5-bit code): how long a peer whose send found
    /// no posted receive here waits before it sends again. rdma-cm leaves
    /// 0, which codes the longest wait, 655 ms.
    pub fn set_min_rnr_timer(&self, code: u8) -> Result<(), VerbsError> {
        let qp = self.qp()?;
        let mut attr = ibv_qp_attr::min_rnr_timer(code);
        // SAFETY: qp is live (self.qp); attr is a whole ibv_qp_attr
        // (size checked against C) of which the mask names one field.
        check("ibv_modify_qp", unsafe {
            (self.lib.modify_qp)(qp, &mut attr, IBV_QP_MIN_RNR_TIMER)
        })
    }

    /// `rdma_disconnect`.
    pub fn disconnect(&self) -> Result<(), VerbsError> {
        // SAFETY: id live.
        check("rdma_disconnect", unsafe {
            (self.lib.cm.disconnect)(self.id)
        })
    }

    /// The device rdma-cm bound the id to, if any yet.
    pub fn device_name(&self) -> Option<String> {
        // SAFETY: id live; verbs is NULL or a context librdmacm keeps.
        let ctx = unsafe { (*self.id).verbs };
        (!ctx.is_null()).then(|| ctx_name(self.lib, ctx))
    }

    /// The local address (`rdma_get_local_addr`).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        // SAFETY: id live; route.addr is librdmacm's copy.
        addr_of(unsafe { &(*self.id).route.addr.src_addr })
    }

    /// The peer's address (`rdma_get_peer_addr`).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        // SAFETY: as in local_addr.
        addr_of(unsafe { &(*self.id).route.addr.dst_addr })
    }

    /// `rdma_create_qp`: an RC queue pair on `pd` with both queues on
    /// `cq`; `cap` is updated to what was granted. Both must be of the
    /// id's device.
    pub fn create_qp(
        &mut self,
        pd: &Arc<Pd>,
        cq: &Arc<Cq>,
        cap: &mut QpCap,
    ) -> Result<(), VerbsError> {
        self.make_qp(pd, cq, None, cap)
    }

    /// [`Id::create_qp`] with the queue pair's receives taken from `srq`
    /// (it has no receive queue of its own: nothing is posted to it).
    pub fn create_qp_on_srq(
        &mut self,
        pd: &Arc<Pd>,
        cq: &Arc<Cq>,
        srq: &Arc<Srq>,
        cap: &mut QpCap,
    ) -> Result<(), VerbsError> {
        self.make_qp(pd, cq, Some(srq), cap)
    }

    fn make_qp(
        &mut self,
        pd: &Arc<Pd>,
        cq: &Arc<Cq>,
        srq: Option<&Arc<Srq>>,
        cap: &mut QpCap,
    ) -> Result<(), VerbsError> {
        // SAFETY: id live.
        let ctx = unsafe { (*self.id).verbs };
        if self.qp.is_some()
            || ctx.is_null()
            || !pd._dev.is(ctx)
            || !cq._dev.is(ctx)
            || srq.is_some_and(|s| !s.pd._dev.is(ctx))
        {
            return Err(VerbsError::Call {
                call: "rdma_create_qp",
                errno: libc::EINVAL,
            });
        }
        let mut attr = ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: cq.cq,
            recv_cq: cq.cq,
            srq: srq.map_or(std::ptr::null_mut(), |s| s.srq.cast()),
            cap: *cap,
            qp_type: IBV_QPT_RC,
            sq_sig_all: 0,
        };
        // SAFETY: id, pd, cq and srq are live and of one device; self
        // keeps them until the queue pair is destroyed (drop).
        check("rdma_create_qp", unsafe {
            (self.lib.cm.create_qp)(self.id, pd.pd, &mut attr)
        })?;
        *cap = attr.cap;
        self.qp = Some((pd.clone(), cq.clone(), srq.cloned()));
        Ok(())
    }

    fn qp(&self) -> Result<*mut ibv_qp, VerbsError> {
        // SAFETY: id live; qp is NULL or the queue pair create_qp made.
        let qp = unsafe { (*self.id).qp };
        if self.qp.is_none() || qp.is_null() {
            return Err(VerbsError::Call {
                call: "ibv_post",
                errno: libc::ENOTCONN,
            });
        }
        Ok(qp)
    }

    /// Fills the front of `sg` with one scatter/gather entry per buffer
    /// (its local key from `lkeys`, 0 past its end) and returns how many;
    /// written in place, as the request that points at them is.
    fn sges(
        sg: &mut [ibv_sge; MAX_SGE],
        iov: &[IoBuf],
        lkeys: &[u32],
    ) -> Result<usize, VerbsError> {
        if iov.len() > MAX_SGE {
            return Err(VerbsError::Call {
                call: "ibv_post",
                errno: libc::EINVAL,
            });
        }
        for (i, (s, b)) in sg.iter_mut().zip(iov).enumerate() {
            *s = ibv_sge {
                addr: b.addr() as u64,
                length: u32::try_from(b.len()).map_err(|_| VerbsError::Call {
                    call: "ibv_post",
                    errno: libc::EMSGSIZE,
                })?,
                lkey: lkeys.get(i).copied().unwrap_or(0),
            };
        }
        Ok(iov.len())
    }

    /// Posts one signaled send-queue work request over `iov` (`lkeys`, one
    /// per buffer, ignored for an inline send), completing with `wr_id`;
    /// `how` is inline or not (a `bool`), or a [`SendFlags`] (fenced).
    /// Immediate data goes on the wire in network order, as verbs wants.
    pub fn post_send(
        &self,
        wr_id: u64,
        op: Op,
        iov: &[IoBuf],
        lkeys: &[u32],
        how: impl Into<SendFlags>,
    ) -> Result<(), VerbsError> {
        let how = how.into();
        let qp = self.qp()?;
        let mut sg = [ibv_sge::default(); MAX_SGE];
        let n = Self::sges(&mut sg, iov, lkeys)?;
        let (opcode, imm, remote) = match op {
            Op::Send(None) => (IBV_WR_SEND, 0, None),
            Op::Send(Some(d)) => (IBV_WR_SEND_WITH_IMM, d, None),
            Op::Write {
                addr,
                rkey,
                imm: None,
            } => (IBV_WR_RDMA_WRITE, 0, Some((addr, rkey))),
            Op::Write {
                addr,
                rkey,
                imm: Some(d),
            } => (IBV_WR_RDMA_WRITE_WITH_IMM, d, Some((addr, rkey))),
            Op::Read { addr, rkey } => (IBV_WR_RDMA_READ, 0, Some((addr, rkey))),
            Op::FetchAdd { .. } => (IBV_WR_ATOMIC_FETCH_AND_ADD, 0, None),
            Op::CmpSwap { .. } => (IBV_WR_ATOMIC_CMP_AND_SWP, 0, None),
        };
        let mut wr = ibv_send_wr {
            wr_id,
            next: std::ptr::null_mut(),
            sg_list: sg.as_mut_ptr(),
            num_sge: n as c_int,
            opcode,
            send_flags: IBV_SEND_SIGNALED
                | if how.inline { IBV_SEND_INLINE } else { 0 }
                | if how.fence { IBV_SEND_FENCE } else { 0 },
            imm_data: imm.to_be(),
            wr: ibv_send_wr_wr {
                atomic: ibv_send_wr_atomic::default(),
            },
            qp_type: 0,
            bind_mw: [0; 6],
        };
        if let Some((remote_addr, rkey)) = remote {
            wr.wr.rdma = ibv_send_wr_rdma { remote_addr, rkey };
        }
        let atomic = |remote_addr, rkey, compare_add, swap| ibv_send_wr_atomic {
            remote_addr,
            compare_add,
            swap,
            rkey,
        };
        match op {
            Op::FetchAdd { addr, rkey, add } => wr.wr.atomic = atomic(addr, rkey, add, 0),
            Op::CmpSwap {
                addr,
                rkey,
                compare,
                swap,
            } => wr.wr.atomic = atomic(addr, rkey, compare, swap),
            _ => {}
        }
        // SAFETY: qp is live; one well-formed request whose buffers are the
        // application's (IoBuf contract: valid until completion; an inline
        // send is copied during the call), under keys of the caller's.
        unsafe { post_send(qp, &mut wr) }
    }

    /// Posts one receive into `iov` (`lkeys`, one per buffer).
    pub fn post_recv(&self, wr_id: u64, iov: &[IoBuf], lkeys: &[u32]) -> Result<(), VerbsError> {
        let qp = self.qp()?;
        // SAFETY: as in post_send; the buffers stay the application's
        // until the receive completes (IoBuf contract).
        recv_request(wr_id, iov, lkeys, |wr| unsafe { post_recv(qp, wr) })
    }
}

/// One receive work request over `iov` (`lkeys`, one per buffer), handed
/// to `post` while its scatter list lives.
fn recv_request(
    wr_id: u64,
    iov: &[IoBuf],
    lkeys: &[u32],
    post: impl FnOnce(&mut ibv_recv_wr) -> Result<(), VerbsError>,
) -> Result<(), VerbsError> {
    let mut sg = [ibv_sge::default(); MAX_SGE];
    let n = Id::sges(&mut sg, iov, lkeys)?;
    let mut wr = ibv_recv_wr {
        wr_id,
        next: std::ptr::null_mut(),
        sg_list: sg.as_mut_ptr(),
        num_sge: n as c_int,
    };
    post(&mut wr)
}

impl Drop for Id {
    fn drop(&mut self) {
        // SAFETY: the queue pair (if any) goes first, then the id; its
        // PD and CQ are released after (fields drop after this body).
        unsafe {
            if self.qp.is_some() {
                (self.lib.cm.destroy_qp)(self.id);
            }
            (self.lib.cm.destroy_id)(self.id);
        }
    }
}

/// The text of a work completion's status (`ibv_wc_status_str`'s meaning,
/// our words), for error messages.
pub fn wc_status_text(status: u32) -> &'static str {
    match status {
        0 => "success",
        1 => "local length error",
        2 => "local QP operation error",
        4 => "local protection error",
        5 => "work request flushed (queue pair in error state)",
        7 => "bad response",
        8 => "local access error",
        9 => "remote invalid request",
        10 => "remote access error",
        11 => "remote operation error",
        12 => "transport retry counter exceeded",
        13 => "RNR retry counter exceeded",
        16 => "remote aborted",
        19 => "fatal error",
        20 => "response timeout",
        _ => "general error",
    }
}

/// How a send-queue work request goes: its data copied into the request
/// (`IBV_SEND_INLINE`), and after the queue pair's earlier RDMA READs and
/// atomics only (`IBV_SEND_FENCE`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SendFlags {
    pub inline: bool,
    pub fence: bool,
}

impl From<bool> for SendFlags {
    /// Inline or not, unfenced.
    fn from(inline: bool) -> SendFlags {
        SendFlags {
            inline,
            fence: false,
        }
    }
}

/// Test knob: `OXI_VERBS_RNR_RETRY=N` (0-6) gives connections a finite
/// RNR retry count instead of 7 ("retry forever", upstream's value), so
/// that a send to a peer without a posted receive ends in
/// `IBV_WC_RNR_RETRY_EXC_ERR`. Anything else keeps 7.
pub const RNR_RETRY_ENV: &str = "OXI_VERBS_RNR_RETRY";

/// The RNR retry count connections ask for ([`RNR_RETRY_ENV`]).
fn rnr_retry() -> u8 {
    static N: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::env::var(RNR_RETRY_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u8>().ok())
            .filter(|n| *n < 7)
            .unwrap_or(7)
    })
}
