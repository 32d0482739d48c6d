//! One TCP connection: its receive state machine and its queue of sends.
//! The endpoint drives it; this file only moves bytes and validates frames.

use crate::wire::{Header, HEADER_LEN, RMA_PREFIX};
use oxifabric::abi::*;
use oxifabric::ops::IoVec;
use oxifabric::service::ep_core::TxCtx;
use oxifabric::service::mr::{Denied, MemRegion};
use oxifabric::service::rxq::{Posted, Region};
use std::collections::VecDeque;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;

/// Lifecycle of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// Non-blocking connect in progress.
    Connecting,
    /// Usable.
    Open,
}

/// Where the payload of the frame being read goes.
#[allow(clippy::large_enum_variant)] // one per connection, never moved in bulk
pub enum Dest {
    /// Straight into a posted receive.
    Posted {
        recv: Posted,
        region: Region,
        keep: bool,
    },
    /// Into a buffer (unexpected message or control payload).
    Buffer(Vec<u8>),
    /// The target prefix of an RMA frame (address, key); `rest` payload
    /// bytes follow it.
    Prefix { b: [u8; RMA_PREFIX], rest: u64 },
    /// RMA data straight into memory: a registered region at the target
    /// of a write (`mr` held while the bytes land), or an initiator's read
    /// buffers. An empty `region` drops the bytes (a refused write).
    Rma {
        region: IoVec,
        mr: Option<Arc<MemRegion>>,
        /// Why the target refused the write whose bytes are dropped.
        refused: Option<Denied>,
    },
}

impl Dest {
    /// Where payload bytes go in memory, when they go to application
    /// memory rather than to one of our buffers.
    pub fn region(&self) -> Option<&IoVec> {
        match self {
            Dest::Posted { region, .. } | Dest::Rma { region, .. } => Some(region),
            _ => None,
        }
    }

    /// Our own buffer the payload fills, when it does not go to
    /// application memory.
    pub fn buffer(&mut self) -> Option<&mut [u8]> {
        match self {
            Dest::Buffer(v) => Some(v),
            Dest::Prefix { b, .. } => Some(b),
            _ => None,
        }
    }
}

/// Receive progress of a connection.
#[allow(clippy::large_enum_variant)] // one per connection
pub enum RxState {
    /// Reading the fixed header.
    Header { buf: [u8; HEADER_LEN], got: usize },
    /// Reading a payload of `hdr.len` bytes, `got` so far.
    Payload { hdr: Header, dest: Dest, got: u64 },
    /// A message header is waiting for room (unexpected memory is full).
    Paused { hdr: Header },
}

/// The bytes of one send.
#[allow(clippy::large_enum_variant)] // the user variant is the fast path
pub enum TxData {
    /// The application's buffers (kept valid by it until completion).
    User(IoVec),
    /// Our own copy (inject, control frames).
    Owned(Vec<u8>),
    /// RMA: a target prefix (`pre_len` bytes of `pre`) followed by memory
    /// the operation names: the initiator's buffers of a write, or the
    /// target's registered memory a read returns. Never copied when
    /// queued (injected writes are built as `Owned`).
    Rma {
        pre: [u8; RMA_PREFIX],
        pre_len: usize,
        iov: IoVec,
    },
}

/// What to report when a send has left.
#[derive(Debug, Clone, Copy)]
pub struct TxDone {
    /// The send as posted.
    pub tx: TxCtx,
    /// Wait for the peer's acknowledgement (`FI_DELIVERY_COMPLETE`).
    pub ack: Option<u64>,
}

/// One queued send.
pub struct TxItem {
    pub hdr: [u8; HEADER_LEN],
    pub data: TxData,
    pub total: usize,
    /// Bytes of header and payload already written.
    pub off: usize,
    pub done: Option<TxDone>,
}

impl TxItem {
    /// The not-yet-written pieces, header first.
    fn pieces(&self) -> ([&[u8]; 2 + IoVec::CAP], usize) {
        let mut out: [&[u8]; 2 + IoVec::CAP] = [&[]; 2 + IoVec::CAP];
        let mut k = 0;
        let mut skip = self.off;
        if skip < HEADER_LEN {
            out[k] = &self.hdr[skip..];
            k += 1;
            skip = 0;
        } else {
            skip -= HEADER_LEN;
        }
        let (pre, iov): (&[u8], Option<&IoVec>) = match &self.data {
            TxData::User(iov) => (&[], Some(iov)),
            TxData::Rma { pre, pre_len, iov } => (&pre[..*pre_len], Some(iov)),
            TxData::Owned(v) => (v, None),
        };
        if skip < pre.len() {
            out[k] = &pre[skip..];
            k += 1;
            skip = 0;
        } else {
            skip -= pre.len();
        }
        if let Some(iov) = iov {
            for b in iov.iter() {
                let s = b.as_slice();
                if skip >= s.len() {
                    skip -= s.len();
                    continue;
                }
                out[k] = &s[skip..];
                k += 1;
                skip = 0;
            }
        }
        (out, k)
    }

    /// Whether everything was written.
    pub fn finished(&self) -> bool {
        self.off >= self.total
    }

    /// Replaces the application's buffers by a copy of what is left to
    /// send, so that the application may reuse them now (inject).
    pub fn own_rest(&mut self) {
        if let TxData::User(iov) = &self.data {
            let mut v = Vec::with_capacity(self.total - HEADER_LEN);
            for b in iov.iter() {
                v.extend_from_slice(b.as_slice());
            }
            // The copy covers the whole payload, so `off` keeps its meaning.
            self.data = TxData::Owned(v);
        }
    }
}

/// A TCP connection of an endpoint.
pub struct Conn {
    pub stream: TcpStream,
    pub state: ConnState,
    /// The peer's address as it names itself (its listening address for
    /// RDM, the connected address for MSG).
    pub peer: Option<SocketAddr>,
    /// The peer's `fi_addr_t` in our AV, looked up lazily.
    pub fi_addr: fi_addr_t,
    /// The AV generation `fi_addr` was looked up in.
    pub fi_addr_gen: u64,
    pub rx: RxState,
    pub txq: VecDeque<TxItem>,
    /// Whether output readiness is being watched.
    pub watching_out: bool,
    /// We opened it (as opposed to accepting it).
    pub outgoing: bool,
    /// Bytes read from the socket and not yet consumed: `stage[lo..hi]`.
    stage: Box<[u8]>,
    lo: usize,
    hi: usize,
}

/// Size of a connection's stage buffer: one read brings any frame up to
/// this size whole, header and payload.
pub const STAGE_LEN: usize = 32 << 10;

impl Conn {
    /// Wraps a stream.
    pub fn new(stream: TcpStream, state: ConnState, peer: Option<SocketAddr>) -> Conn {
        let _ = stream.set_nonblocking(true);
        let _ = stream.set_nodelay(true);
        Conn {
            stream,
            state,
            peer,
            fi_addr: FI_ADDR_NOTAVAIL,
            fi_addr_gen: 0,
            rx: RxState::Header {
                buf: [0; HEADER_LEN],
                got: 0,
            },
            txq: VecDeque::new(),
            watching_out: false,
            outgoing: state == ConnState::Connecting,
            stage: vec![0u8; STAGE_LEN].into_boxed_slice(),
            lo: 0,
            hi: 0,
        }
    }

    /// Bytes staged and not yet consumed.
    pub fn staged(&self) -> &[u8] {
        &self.stage[self.lo..self.hi]
    }

    /// Marks `n` staged bytes consumed.
    pub fn consume_staged(&mut self, n: usize) {
        self.lo += n;
    }

    /// Copies staged bytes into `out`; returns how many.
    pub fn take_staged(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.hi - self.lo);
        out[..n].copy_from_slice(&self.stage[self.lo..self.lo + n]);
        self.lo += n;
        n
    }

    /// Reads from the socket into the (empty) stage.
    pub fn fill_stage(&mut self) -> std::io::Result<usize> {
        debug_assert!(self.lo == self.hi);
        let n = crate::sock::read(self.stream.as_raw_fd(), &mut self.stage)?;
        self.lo = 0;
        self.hi = n;
        Ok(n)
    }

    /// Reads up to `want` bytes (of a truncated payload) and drops them;
    /// the stage, empty here, serves as scratch. Returns the read's result
    /// and how much it asked for.
    pub fn read_discard(&mut self, want: usize) -> (std::io::Result<usize>, usize) {
        debug_assert!(self.lo == self.hi);
        let k = want.min(self.stage.len());
        (
            crate::sock::read(self.stream.as_raw_fd(), &mut self.stage[..k]),
            k,
        )
    }

    /// Writes as much of `item` as the socket takes now.
    pub fn write_item(&self, item: &mut TxItem) -> std::io::Result<()> {
        while !item.finished() {
            let (pieces, k) = item.pieces();
            match crate::sock::writev(self.stream.as_raw_fd(), &pieces[..k]) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => item.off += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
