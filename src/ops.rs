//! The safe interface a provider implements for its objects. The C boundary
//! owns the handles and vtables and calls these traits; the engine services
//! (CQ, EQ, AV, counters) are shared and handed to providers at bind time.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::info::Info;
use crate::service::av::AddressVector;
use crate::service::cntr::Counter;
use crate::service::cq::CompletionQueue;
use crate::service::eq::EventQueue;
use crate::service::progress::Progress;
use std::sync::Arc;

/// A piece of application memory named by an iovec. The application owns
/// it and promises (libfabric's contract) to keep it valid and untouched
/// until the operation completes; the provider reads or writes it only
/// through [`IoBuf::copy_from`] and [`IoBuf::copy_to`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: IoBuf is an address range; the provider moves it between its own
// threads, and libfabric makes the application keep the memory valid until
// the completion is reported.
unsafe impl Send for IoBuf {}
unsafe impl Sync for IoBuf {}

impl IoBuf {
    /// Names application memory.
    ///
    /// # Safety
    /// `ptr` is valid for `len` bytes until the operation using it completes
    /// (or `len` is 0).
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

    /// The bytes, for receives (valid per the `new` contract).
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: guaranteed by the contract of `new`; the provider owns the
        // buffer exclusively until it completes the operation.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// A sub-range `[off, off + len)`, clamped to this buffer.
    pub fn slice(&self, off: usize, len: usize) -> IoBuf {
        let off = off.min(self.len);
        IoBuf {
            // SAFETY: off is within the buffer.
            ptr: unsafe { self.ptr.add(off) },
            len: len.min(self.len - off),
        }
    }
}

/// Total length of an iovec list.
pub fn iov_len(iov: &[IoBuf]) -> usize {
    iov.iter().map(IoBuf::len).sum()
}

/// Internal flag on [`SendOp::flags`]: the operation never generates a
/// completion (`fi_inject`, `fi_injectdata`, `fi_tinject`...). Bit 63 is
/// reserved for providers; the C boundary clears it from application flags,
/// so it cannot collide.
pub const OP_NO_COMPLETION: u64 = 1 << 63;

/// A send as posted by the application.
#[derive(Debug, Clone, Copy)]
pub struct SendOp<'a> {
    pub iov: &'a [IoBuf],
    pub dest: fi_addr_t,
    pub context: usize,
    /// Operation flags, already merged with the endpoint's defaults.
    pub flags: u64,
    /// Remote CQ data (`fi_senddata`, `FI_REMOTE_CQ_DATA`).
    pub data: Option<u64>,
    /// Tag for tagged sends.
    pub tag: Option<u64>,
}

/// A receive as posted by the application.
#[derive(Debug, Clone, Copy)]
pub struct RecvOp<'a> {
    pub iov: &'a [IoBuf],
    /// Source filter (`FI_ADDR_UNSPEC` for any).
    pub src: fi_addr_t,
    pub context: usize,
    pub flags: u64,
    /// Tag and ignore mask for tagged receives.
    pub tag: Option<(u64, u64)>,
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
    /// The domain-wide progress engine (drives every endpoint), if any.
    fn progress(&self) -> Option<Arc<dyn Progress>> {
        None
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

/// An active endpoint.
pub trait EndpointOps: Send + Sync {
    /// Binds a CQ, counter, EQ or AV.
    fn bind(&self, b: Binding) -> Result<()>;
    /// `fi_enable`.
    fn enable(&self) -> Result<()>;
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
        Err(Error::Other(FI_ENOPROTOOPT))
    }
    /// `fi_setopt`.
    fn setopt(&self, level: c_int, name: c_int, v: OptValue) -> Result<()> {
        let _ = (level, name, v);
        Err(Error::Other(FI_ENOPROTOOPT))
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
    /// Free receive slots.
    fn rx_size_left(&self) -> Result<usize> {
        Err(Error::NoSys)
    }
    /// Free transmit slots.
    fn tx_size_left(&self) -> Result<usize> {
        Err(Error::NoSys)
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
}
