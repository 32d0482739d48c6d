//! The safe interface a provider implements for its objects. The C boundary
//! owns the handles and vtables and calls these traits; the engine services
//! (CQ, EQ, AV, counters) are shared and handed to providers at bind time.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::info::Info;
use crate::service::atomic::AtomicKind;
use crate::service::av::AddressVector;
use crate::service::cntr::Counter;
use crate::service::cq::CompletionQueue;
use crate::service::eq::EventQueue;
use crate::service::mr::MrTable;
use crate::service::progress::Progress;
use std::sync::Arc;

/// A piece of application memory named by an iovec. The application owns
/// it and promises (libfabric's contract) to keep it valid and untouched
/// until the operation completes. Providers read it with
/// [`IoBuf::as_slice`] and fill it with [`IoBuf::write_at`]; the only way to
/// borrow it mutably is the `unsafe` [`IoBuf::as_mut_slice`], because an
/// `IoBuf` is `Copy` and two copies must never hand out aliasing `&mut`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: IoBuf is an address range; the provider moves it between its own
// threads, and libfabric makes the application keep the memory valid until
// the completion is reported.
unsafe impl Send for IoBuf {}
// SAFETY: as for Send: sharing the range gives no access beyond what the
// methods below allow.
unsafe impl Sync for IoBuf {}

impl IoBuf {
    /// An empty buffer (fills unused iovec slots).
    pub const EMPTY: IoBuf = IoBuf {
        ptr: core::ptr::null_mut(),
        len: 0,
    };

    /// Names application memory.
    ///
    /// # Safety
    /// `ptr` is valid for reads and writes of `len` bytes until the
    /// operation using it completes (or `len` is 0), and nothing else writes
    /// those bytes meanwhile.
    pub unsafe fn new(ptr: *mut u8, len: usize) -> IoBuf {
        IoBuf { ptr, len }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address, for completions that report `buf`.
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// The bytes, for sends (valid per the `new` contract).
    pub fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: guaranteed by the contract of `new`.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Copies `data` into the buffer from byte `off` on, clamped to the
    /// buffer's end; returns the bytes copied. No reference to the
    /// application's memory is created, so copies of one `IoBuf` may write
    /// through this freely.
    pub fn write_at(&self, off: usize, data: &[u8]) -> usize {
        if off >= self.len {
            return 0;
        }
        let n = data.len().min(self.len - off);
        // SAFETY: `off + n <= len` and the range is valid for writes per the
        // contract of `new`; `data` is ours, so the ranges do not overlap.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(off), n) };
        n
    }

    /// The bytes as a mutable slice, for reading from a socket straight
    /// into the application's buffer.
    ///
    /// # Safety
    /// No other reference to these bytes (through another copy of this
    /// `IoBuf` or otherwise) may be alive while the returned slice is.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice(&self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: valid per the contract of `new`; exclusive per the caller's.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// A sub-range `[off, off + len)`, clamped to this buffer.
    pub fn slice(&self, off: usize, len: usize) -> IoBuf {
        let off = off.min(self.len);
        IoBuf {
            // SAFETY: off is within the buffer (or 0 on an empty one).
            ptr: unsafe { self.ptr.add(off) },
            len: len.min(self.len - off),
        }
    }
}

/// The bytes an operation's buffers held when it was posted, for a
/// provider that posts the operation later although the application may
/// reuse its buffers at once (`FI_INJECT`, an atomic's operands): one copy
/// per piece, so the pieces keep their lengths.
#[derive(Debug, Default)]
pub struct CopiedIov(Vec<Vec<u8>>);

impl CopiedIov {
    /// Copies `iov`.
    pub fn of(iov: &[IoBuf]) -> CopiedIov {
        CopiedIov(iov.iter().map(|b| b.as_slice().to_vec()).collect())
    }

    /// The copies as buffers, for an operation posted from a struct that
    /// owns this copy too (`service::op_copy`). They stay valid while this
    /// lives and is not changed (a `Vec`'s bytes do not move with it); the
    /// operation posted from them must be done with them when that call
    /// returns (it copies its data at once, as `FI_INJECT` makes every
    /// provider do), as the owner may drop them then.
    pub fn bufs(&mut self) -> IoVec {
        let mut v = IoVec::default();
        for b in self.0.iter_mut().take(IoVec::CAP) {
            // SAFETY: as the comment above says: the bytes live as long as
            // `self` does, untouched, and the owner keeps them for as long
            // as the operation uses them.
            let _ = v.push(unsafe { IoBuf::new(b.as_mut_ptr(), b.len()) });
        }
        v
    }
}

/// Total length of an iovec list.
#[inline]
pub fn iov_len(iov: &[IoBuf]) -> usize {
    iov.iter().map(IoBuf::len).sum()
}

/// An iovec list held by value, so posting or placing a message allocates
/// nothing. [`IoVec::CAP`] is only its storage: the limit an application
/// may use is the endpoint's `iov_limit` from its `fi_info`, which the C
/// boundary checks (a provider may advertise up to `CAP`).
#[derive(Debug, Clone, Copy)]
pub struct IoVec {
    bufs: [IoBuf; IoVec::CAP],
    n: usize,
}

impl Default for IoVec {
    fn default() -> IoVec {
        IoVec {
            bufs: [IoBuf::EMPTY; IoVec::CAP],
            n: 0,
        }
    }
}

impl IoVec {
    /// Most entries any provider may advertise as `iov_limit`.
    pub const CAP: usize = 8;

    /// A copy of `iov`, or None when it has more than `CAP` entries.
    #[inline]
    pub fn from_slice(iov: &[IoBuf]) -> Option<IoVec> {
        let mut v = IoVec::default();
        for b in iov {
            v.push(*b)?;
        }
        Some(v)
    }

    /// Appends one buffer; None when full.
    pub fn push(&mut self, b: IoBuf) -> Option<()> {
        *self.bufs.get_mut(self.n)? = b;
        self.n += 1;
        Some(())
    }

    /// Total capacity in bytes.
    pub fn total_len(&self) -> usize {
        iov_len(self)
    }

    /// What is left after skipping the first `skip` bytes.
    pub fn skip(&self, mut skip: usize) -> IoVec {
        let mut out = IoVec::default();
        for b in self.iter() {
            if skip >= b.len() {
                skip -= b.len();
                continue;
            }
            let _ = out.push(b.slice(skip, b.len() - skip));
            skip = 0;
        }
        out
    }

    /// The `len` bytes from byte `off` on (clamped to what there is): one
    /// remote piece's share of an RMA operation's local buffers.
    pub fn window(&self, off: usize, mut len: usize) -> IoVec {
        let mut out = IoVec::default();
        for b in self.skip(off).iter() {
            if len == 0 {
                break;
            }
            let n = b.len().min(len);
            let _ = out.push(b.slice(0, n));
            len -= n;
        }
        out
    }

    /// Copies `data` into the list starting at byte `off`; returns bytes
    /// copied (what does not fit is dropped: truncation).
    pub fn scatter(&self, mut off: usize, data: &[u8]) -> usize {
        let mut done = 0;
        for b in self.iter() {
            if done == data.len() {
                break;
            }
            if off >= b.len() {
                off -= b.len();
                continue;
            }
            done += b.write_at(off, &data[done..]);
            off = 0;
        }
        done
    }

    /// Hands the `len` bytes from byte `off` on (clamped to the list) to
    /// `fill`, one buffer's piece at a time and in order, for a producer
    /// that writes them straight into the application's memory (a copy
    /// out of shared memory, which must not first go through a buffer of
    /// ours); returns the bytes handed over.
    pub fn fill_at(&self, off: usize, len: usize, mut fill: impl FnMut(&mut [u8])) -> usize {
        let mut done = 0;
        for b in self.window(off, len).iter() {
            // SAFETY: the operation owns its buffers until it completes
            // (fi_msg(3)), and each piece is a distinct range of them; the
            // slice lives only for this call of `fill`, during which
            // nothing else here touches those bytes.
            fill(unsafe { b.as_mut_slice() });
            done += b.len();
        }
        done
    }

    /// The buffer holding byte `off` and the offset within it, or None
    /// past the end.
    pub fn segment_at(&self, mut off: usize) -> Option<(IoBuf, usize)> {
        for b in self.iter() {
            if off < b.len() {
                return Some((*b, off));
            }
            off -= b.len();
        }
        None
    }
}

impl core::ops::Deref for IoVec {
    type Target = [IoBuf];
    fn deref(&self) -> &[IoBuf] {
        &self.bufs[..self.n]
    }
}

/// A memory descriptor as the application passed it (`desc`, from
/// `fi_mr_desc`): opaque to the engine, meaningful to the provider that
/// registered the memory. Providers that need no registration ignore it.
pub type MemDesc = usize;

/// Flags the engine itself sets on an operation, kept out of the
/// application's `flags` (which carry `FI_*` bits only).
pub mod internal {
    /// The operation never generates a completion (`fi_inject`,
    /// `fi_injectdata`, `fi_tinject`...); errors are still reported.
    pub const NO_COMPLETION: u64 = 1;
    /// The operation is deferred work (`fi_control(FI_QUEUE_WORK)`) being
    /// issued: its `context` is the key of a
    /// [`crate::service::trigger::Hook`] holding the application's context
    /// and completion counter, and it reports at the endpoint only with
    /// `FI_COMPLETION` (fi_trigger(3)); [`crate::service::ep_core::Sinks`]
    /// routes it.
    pub const DEFERRED_WORK: u64 = 2;
    /// The operation is a message of a collective
    /// ([`crate::service::coll`]): its `context` is the collective's key,
    /// and [`crate::service::ep_core::Sinks`] hands its completion to the
    /// collective instead of the application's CQ and counters.
    pub const COLLECTIVE: u64 = 4;
}

/// A send as posted by the application.
#[derive(Debug, Clone, Copy)]
pub struct SendOp<'a> {
    pub iov: &'a [IoBuf],
    /// One descriptor per `iov` entry, or empty when none was given.
    pub desc: &'a [MemDesc],
    pub dest: fi_addr_t,
    pub context: usize,
    /// Operation flags, already merged with the endpoint's defaults.
    pub flags: u64,
    /// The engine's own flags ([`internal`]).
    pub internal: u64,
    /// Remote CQ data (`fi_senddata`, `FI_REMOTE_CQ_DATA`).
    pub data: Option<u64>,
    /// Tag for tagged sends.
    pub tag: Option<u64>,
}

/// A receive as posted by the application.
#[derive(Debug, Clone, Copy)]
pub struct RecvOp<'a> {
    pub iov: &'a [IoBuf],
    /// One descriptor per `iov` entry, or empty when none was given.
    pub desc: &'a [MemDesc],
    /// Source filter (`FI_ADDR_UNSPEC` for any).
    pub src: fi_addr_t,
    pub context: usize,
    pub flags: u64,
    /// The engine's own flags ([`internal`]).
    pub internal: u64,
    /// Tag and ignore mask for tagged receives.
    pub tag: Option<(u64, u64)>,
}

/// One entry of an RMA operation's remote side (`struct fi_rma_iov`):
/// where in the peer's registered memory, and under which key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RmaIov {
    /// Target address (virtual address or offset, per the peer's mr_mode).
    pub addr: u64,
    /// Bytes.
    pub len: usize,
    /// The peer's memory key.
    pub key: u64,
}

/// An RMA read or write as posted by the application (`fi_read*`,
/// `fi_write*`, `fi_inject_write*`, `fi_writedata`). The local `iov` and the
/// remote `rma` list describe the same bytes in order; the boundary checks
/// that their lengths agree.
#[derive(Debug, Clone, Copy)]
pub struct RmaOp<'a> {
    /// A write (local to remote) or a read (remote to local).
    pub write: bool,
    pub iov: &'a [IoBuf],
    /// One descriptor per `iov` entry, or empty when none was given.
    pub desc: &'a [MemDesc],
    pub dest: fi_addr_t,
    pub rma: &'a [RmaIov],
    pub context: usize,
    /// Operation flags, already merged with the endpoint's defaults.
    pub flags: u64,
    /// The engine's own flags ([`internal`]).
    pub internal: u64,
    /// Remote CQ data (writes with `FI_REMOTE_CQ_DATA`).
    pub data: Option<u64>,
}

/// An atomic operation as posted by the application (`fi_atomic*`,
/// `fi_fetch_atomic*`, `fi_compare_atomic*`, `fi_inject_atomic`): the
/// boundary has checked the combination ([`crate::service::atomic::valid`])
/// and turned element counts into byte lengths. `operand`, `compare` and
/// `result` describe the same elements in order as `rma` (whose `len` is
/// in bytes); `compare` and `result` are empty where the kind has none,
/// `operand` for `FI_ATOMIC_READ`.
#[derive(Debug, Clone, Copy)]
pub struct AtomicReq<'a> {
    pub kind: AtomicKind,
    pub op: fi_op,
    pub datatype: fi_datatype,
    /// Bytes of one element.
    pub size: usize,
    pub operand: &'a [IoBuf],
    pub compare: &'a [IoBuf],
    pub result: &'a [IoBuf],
    /// One descriptor per `operand`, `compare` and `result` entry, or
    /// empty when none was given: a device that writes the fetched value
    /// into the result buffer itself (verbs) needs its local key.
    pub desc: &'a [MemDesc],
    pub compare_desc: &'a [MemDesc],
    pub result_desc: &'a [MemDesc],
    pub dest: fi_addr_t,
    pub rma: &'a [RmaIov],
    pub context: usize,
    /// Operation flags, already merged with the endpoint's defaults.
    pub flags: u64,
    /// The engine's own flags ([`internal`]).
    pub internal: u64,
    /// Remote CQ data (`FI_REMOTE_CQ_DATA`).
    pub data: Option<u64>,
}

/// What an endpoint is bound to.
#[derive(Clone)]
pub enum Binding {
    /// A completion queue, with `FI_TRANSMIT`/`FI_RECV`/`FI_SELECTIVE_COMPLETION`.
    Cq(Arc<CompletionQueue>, u64),
    /// A counter, with `FI_SEND`/`FI_RECV`/`FI_READ`/... flags.
    Cntr(Arc<Counter>, u64),
    /// An event queue.
    Eq(Arc<EventQueue>),
    /// An address vector.
    Av(Arc<AddressVector>),
    /// A shared receive context (`fi_srx_context`) of the same domain.
    Srx(Arc<dyn EndpointOps>),
}

/// A fabric.
pub trait FabricOps: Send + Sync {
    /// Opens a domain for an `fi_info` entry of this fabric.
    fn domain(&self, info: &Info) -> Result<Arc<dyn DomainOps>>;
    /// Opens a passive (listening) endpoint.
    fn passive_ep(&self, info: &Info) -> Result<Arc<dyn PassiveEpOps>> {
        let _ = info;
        Err(Error::NoSys)
    }
}

/// A domain.
pub trait DomainOps: Send + Sync {
    /// Opens an active endpoint.
    fn endpoint(&self, info: &Info) -> Result<Arc<dyn EndpointOps>>;
    /// Opens the endpoints behind a scalable endpoint (`fi_scalable_ep`),
    /// one per context pair (as many as the larger of `info.ep.tx_ctx_cnt`
    /// and `rx_ctx_cnt`): endpoint `k` serves transmit context `k` and
    /// receive context `k`, and a peer reaches receive context `k` through
    /// the fi_addr_t that `fi_rx_addr` makes of the scalable endpoint's
    /// address, endpoint 0's. `NoSys` where unsupported.
    fn scalable_ep(&self, _info: &Info) -> Result<Vec<Arc<dyn EndpointOps>>> {
        Err(Error::NoSys)
    }
    /// Opens a shared receive context (`fi_srx_context`): receives posted
    /// to it (its `recv`) are used by every endpoint bound to it
    /// (`Binding::Srx`), each completing on that endpoint's CQ. `NoSys`
    /// where unsupported.
    fn srx_context(&self, _attr: &crate::info::RxAttr) -> Result<Arc<dyn EndpointOps>> {
        Err(Error::NoSys)
    }
    /// The domain-wide progress engine (drives every endpoint), if any.
    fn progress(&self) -> Option<Arc<dyn Progress>> {
        None
    }
    /// The domain's memory-registration table, for providers that support
    /// registration (`fi_mr_reg` is `-FI_ENOSYS` without one). The
    /// provider's endpoints check remote accesses against the same table.
    fn mr_table(&self) -> Option<Arc<MrTable>> {
        None
    }
    /// The most bytes one atomic operation may carry per remote piece
    /// (`fi_query_atomic`'s count is this over the element size); 0 when
    /// the provider has no atomics.
    fn atomic_limit(&self) -> usize {
        0
    }
    /// Whether the provider carries `op` on `dt` for calls of `kind`, a
    /// combination [`crate::service::atomic::valid`] already offers: a
    /// transport that only has a device's native atomics (verbs: 64-bit
    /// fetch-and-add and compare-and-swap) answers for those alone, so
    /// `fi_query_atomic` and the `*valid` calls say `-FI_EOPNOTSUPP` for
    /// the rest and the boundary refuses them at post.
    fn atomic_offers(&self, kind: AtomicKind, op: fi_op, dt: fi_datatype) -> bool {
        let _ = (kind, op, dt);
        true
    }
}

/// A passive endpoint (listens for MSG connection requests).
pub trait PassiveEpOps: Send + Sync {
    /// Binds the event queue that receives `FI_CONNREQ`.
    fn bind_eq(&self, eq: Arc<EventQueue>) -> Result<()>;
    /// Starts listening.
    fn listen(&self) -> Result<()>;
    /// The local address.
    fn getname(&self) -> Result<Vec<u8>>;
    /// Sets the local address before listening.
    fn setname(&self, addr: &[u8]) -> Result<()> {
        let _ = addr;
        Err(Error::NoSys)
    }
    /// Rejects a connection request (its `info->handle`), with private data.
    fn reject(&self, handle: usize, data: &[u8]) -> Result<()>;
    /// Sets the listen backlog (`FI_BACKLOG`).
    fn set_backlog(&self, n: i32) -> Result<()> {
        let _ = n;
        Ok(())
    }
    /// Stops listening and releases the connection requests not yet taken.
    fn close(&self);
    /// The largest CM private data it carries.
    fn cm_data_size(&self) -> usize {
        0
    }
    /// Tells the passive endpoint the address of its C handle.
    fn set_fid(&self, fid: usize) {
        let _ = fid;
    }
}

/// An option value for `fi_getopt`/`fi_setopt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptValue {
    /// `size_t` options.
    Size(usize),
}

impl OptValue {
    /// Whether `fi_endpoint(3)` gives option `name` of `level` a `size_t`
    /// value, the only kind [`OptValue`] carries. Any other option (the
    /// `int` and `bool` ones such as `FI_OPT_FI_HMEM_P2P`,
    /// `FI_OPT_FIREWALL_ADDR`, and the negative provider-specific ones) is
    /// one no endpoint here implements: `fi_setopt` answers
    /// `-FI_ENOPROTOOPT` whatever its length, as upstream's providers do
    /// for an option they do not know, instead of judging the length first.
    pub fn is_size_option(level: c_int, name: c_int) -> bool {
        level == FI_OPT_ENDPOINT
            && matches!(
                name,
                FI_OPT_MIN_MULTI_RECV
                    | FI_OPT_CM_DATA_SIZE
                    | FI_OPT_BUFFERED_MIN
                    | FI_OPT_BUFFERED_LIMIT
                    | FI_OPT_SEND_BUF_SIZE
                    | FI_OPT_RECV_BUF_SIZE
                    | FI_OPT_TX_SIZE
                    | FI_OPT_RX_SIZE
                    | FI_OPT_MAX_MSG_SIZE
                    | FI_OPT_MAX_TAGGED_SIZE
                    | FI_OPT_MAX_RMA_SIZE
                    | FI_OPT_MAX_ATOMIC_SIZE
                    | FI_OPT_INJECT_MSG_SIZE
                    | FI_OPT_INJECT_TAGGED_SIZE
                    | FI_OPT_INJECT_RMA_SIZE
                    | FI_OPT_INJECT_ATOMIC_SIZE
            )
    }
}

/// An active endpoint.
pub trait EndpointOps: Send + Sync {
    /// Binds a CQ, counter, EQ or AV.
    fn bind(&self, b: Binding) -> Result<()>;
    /// `fi_enable`.
    fn enable(&self) -> Result<()>;
    /// `fi_enable` of a scalable endpoint's transmit context (`FI_SEND`),
    /// receive context (`FI_RECV`) or both (`fi_enable` of the scalable
    /// endpoint) on the endpoint serving that context pair: only those
    /// halves are enabled, so the other context still binds its CQs and
    /// counters (`EpCore::start_enable`). Providers whose
    /// `DomainOps::scalable_ep` opens endpoints implement it.
    fn enable_halves(&self, dirs: u64) -> Result<()> {
        let _ = dirs;
        Err(Error::NoSys)
    }
    /// The endpoint serves a scalable endpoint's context pair: `fi_enable`
    /// then requires no CQ or counter, as upstream's sockets contexts
    /// (Open MPI's btl ofi enables a receive context it never binds).
    /// Providers built on `EpCore` set its `context_pair`.
    fn serve_context_pair(&self) {}
    /// Releases everything; outstanding operations are dropped.
    fn close(&self);
    /// `fi_cancel`: cancels a posted receive with this context.
    fn cancel(&self, context: usize) -> Result<()> {
        let _ = context;
        Err(Error::NoSys)
    }
    /// `fi_getopt`.
    fn getopt(&self, level: c_int, name: c_int) -> Result<OptValue> {
        let _ = (level, name);
        Err(Error::NoProtoOpt)
    }
    /// `fi_control(FI_GET_FD)` (2.2): the descriptor of the one socket the
    /// endpoint talks over, for socket options libfabric does not expose.
    /// Endpoints without exactly one such socket say `NoSys`.
    fn socket_fd(&self) -> Result<c_int> {
        Err(Error::NoSys)
    }
    /// `fi_setopt`.
    fn setopt(&self, level: c_int, name: c_int, v: OptValue) -> Result<()> {
        let _ = (level, name, v);
        Err(Error::NoProtoOpt)
    }
    /// The local address.
    fn getname(&self) -> Result<Vec<u8>>;
    /// Sets the local address before enabling.
    fn setname(&self, addr: &[u8]) -> Result<()> {
        let _ = addr;
        Err(Error::NoSys)
    }
    /// The peer's address (connected endpoints).
    fn getpeer(&self) -> Result<Vec<u8>> {
        Err(Error::NoSys)
    }
    /// `fi_connect`.
    fn connect(&self, addr: &[u8], data: &[u8]) -> Result<()> {
        let _ = (addr, data);
        Err(Error::NoSys)
    }
    /// `fi_accept`.
    fn accept(&self, data: &[u8]) -> Result<()> {
        let _ = data;
        Err(Error::NoSys)
    }
    /// `fi_shutdown`.
    fn shutdown(&self, flags: u64) -> Result<()> {
        let _ = flags;
        Err(Error::NoSys)
    }
    /// Posts a receive (`fi_recv*`, `fi_trecv*`).
    fn recv(&self, op: &RecvOp<'_>) -> Result<()>;
    /// Posts a send (`fi_send*`, `fi_inject*`, `fi_tsend*`, ...).
    fn send(&self, op: &SendOp<'_>) -> Result<()>;
    /// Posts an RMA read or write (`fi_read*`, `fi_write*`).
    fn rma(&self, op: &RmaOp<'_>) -> Result<()> {
        let _ = op;
        Err(Error::NoSys)
    }
    /// Posts an atomic operation.
    fn atomic(&self, op: &AtomicReq<'_>) -> Result<()> {
        let _ = op;
        Err(Error::NoSys)
    }
    /// As [`DomainOps::atomic_limit`], for the `fi_*atomicvalid` calls.
    fn atomic_limit(&self) -> usize {
        0
    }
    /// As [`DomainOps::atomic_offers`], for the `fi_*atomicvalid` calls
    /// and the atomic calls themselves.
    fn atomic_offers(&self, kind: AtomicKind, op: fi_op, dt: fi_datatype) -> bool {
        let _ = (kind, op, dt);
        true
    }
    /// Free receive slots.
    fn rx_size_left(&self) -> Result<usize> {
        Err(Error::NoSys)
    }
    /// Free transmit slots.
    fn tx_size_left(&self) -> Result<usize> {
        Err(Error::NoSys)
    }
    /// Where the endpoint's completions go (its CQs and counters), so that
    /// the engine can report an operation it issues for the application
    /// and that fails (a triggered operation whose post is refused).
    /// Providers built on `EpCore` return a copy of its `sinks`; None
    /// where there is none (the failure is then only logged).
    fn completion_sinks(&self) -> Option<crate::service::ep_core::Sinks> {
        None
    }
    /// The endpoint's own progress (for binding to CQs and counters).
    fn as_progress(&self) -> Option<std::sync::Weak<dyn Progress>> {
        None
    }
    /// Tells the endpoint the address of its C handle (`struct fid *`), which
    /// events about it must carry.
    fn set_fid(&self, fid: usize) {
        let _ = fid;
    }
    /// The object itself, for a provider that needs its own type back (a
    /// shared receive context bound to one of its endpoints).
    fn into_any(self: Arc<Self>) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        None
    }
}
