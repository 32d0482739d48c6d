//! Operations copied to be posted later: the descriptors an application
//! passed (iovec arrays, `fi_rma_iov` lists, the message structs) are its
//! to reuse once the call returns, so an operation queued for later (a
//! triggered one, `service::trigger`; one waiting for its peer's
//! transport, the sockets provider's `ep/parked.rs`) keeps copies of them
//! and is posted from those. Data buffers stay the application's until
//! the operation completes, except where the application may reuse them
//! at once (`FI_INJECT`, an atomic's operands): the `keeping_data`
//! constructors copy those bytes too.

use crate::abi::*;
use crate::ops::{AtomicReq, CopiedIov, IoBuf, IoVec, MemDesc, RecvOp, RmaIov, RmaOp, SendOp};
use crate::service::atomic::AtomicKind;
use crate::service::rma::injected;

fn iov(v: &[IoBuf]) -> IoVec {
    // The boundary has checked the count against the endpoint's limit,
    // which is at most `IoVec::CAP`.
    IoVec::from_slice(&v[..v.len().min(IoVec::CAP)]).unwrap_or_default()
}

/// A send, copied.
pub struct SendCopy {
    iov: IoVec,
    /// The bytes `iov` points at, when they were copied.
    held: Option<CopiedIov>,
    desc: Vec<MemDesc>,
    dest: fi_addr_t,
    context: usize,
    flags: u64,
    internal: u64,
    data: Option<u64>,
    tag: Option<u64>,
}

impl SendCopy {
    /// Copies `op`.
    pub fn of(op: &SendOp<'_>) -> SendCopy {
        SendCopy {
            iov: iov(op.iov),
            held: None,
            desc: op.desc.to_vec(),
            dest: op.dest,
            context: op.context,
            flags: op.flags,
            internal: op.internal,
            data: op.data,
            tag: op.tag,
        }
    }

    /// Copies `op`, and its data when the application may reuse it on
    /// return (`FI_INJECT`).
    pub fn keeping_data(op: &SendOp<'_>) -> SendCopy {
        let mut c = SendCopy::of(op);
        if injected(op.flags, op.internal) {
            let mut held = CopiedIov::of(op.iov);
            c.iov = held.bufs();
            c.held = Some(held);
        }
        c
    }

    pub(crate) fn slots(&mut self) -> (&mut usize, &mut u64) {
        (&mut self.context, &mut self.internal)
    }

    /// The operation, to post.
    pub fn op(&self) -> SendOp<'_> {
        SendOp {
            iov: &self.iov,
            desc: &self.desc,
            dest: self.dest,
            context: self.context,
            flags: self.flags,
            internal: self.internal,
            data: self.data,
            tag: self.tag,
        }
    }
}

/// A receive, copied.
pub struct RecvCopy {
    iov: IoVec,
    desc: Vec<MemDesc>,
    src: fi_addr_t,
    context: usize,
    flags: u64,
    internal: u64,
    tag: Option<(u64, u64)>,
}

impl RecvCopy {
    /// Copies `op`.
    pub fn of(op: &RecvOp<'_>) -> RecvCopy {
        RecvCopy {
            iov: iov(op.iov),
            desc: op.desc.to_vec(),
            src: op.src,
            context: op.context,
            flags: op.flags,
            internal: op.internal,
            tag: op.tag,
        }
    }

    pub(crate) fn slots(&mut self) -> (&mut usize, &mut u64) {
        (&mut self.context, &mut self.internal)
    }

    /// The operation, to post.
    pub fn op(&self) -> RecvOp<'_> {
        RecvOp {
            iov: &self.iov,
            desc: &self.desc,
            src: self.src,
            context: self.context,
            flags: self.flags,
            internal: self.internal,
            tag: self.tag,
        }
    }
}

/// An RMA read or write, copied.
pub struct RmaCopy {
    write: bool,
    iov: IoVec,
    /// The bytes `iov` points at, when they were copied.
    held: Option<CopiedIov>,
    desc: Vec<MemDesc>,
    dest: fi_addr_t,
    rma: Vec<RmaIov>,
    context: usize,
    flags: u64,
    internal: u64,
    data: Option<u64>,
}

impl RmaCopy {
    /// Copies `op`.
    pub fn of(op: &RmaOp<'_>) -> RmaCopy {
        RmaCopy {
            write: op.write,
            iov: iov(op.iov),
            held: None,
            desc: op.desc.to_vec(),
            dest: op.dest,
            rma: op.rma.to_vec(),
            context: op.context,
            flags: op.flags,
            internal: op.internal,
            data: op.data,
        }
    }

    /// Copies `op`, and its data when the application may reuse it on
    /// return (an injected write).
    pub fn keeping_data(op: &RmaOp<'_>) -> RmaCopy {
        let mut c = RmaCopy::of(op);
        if op.write && injected(op.flags, op.internal) {
            let mut held = CopiedIov::of(op.iov);
            c.iov = held.bufs();
            c.held = Some(held);
        }
        c
    }

    pub(crate) fn slots(&mut self) -> (&mut usize, &mut u64) {
        (&mut self.context, &mut self.internal)
    }

    /// The operation, to post.
    pub fn op(&self) -> RmaOp<'_> {
        RmaOp {
            write: self.write,
            iov: &self.iov,
            desc: &self.desc,
            dest: self.dest,
            rma: &self.rma,
            context: self.context,
            flags: self.flags,
            internal: self.internal,
            data: self.data,
        }
    }
}

/// An atomic operation, copied.
pub struct AtomicCopy {
    kind: AtomicKind,
    op: fi_op,
    datatype: fi_datatype,
    size: usize,
    operand: IoVec,
    compare: IoVec,
    /// Descriptors of operand, compare and result.
    desc: Vec<MemDesc>,
    compare_desc: Vec<MemDesc>,
    result_desc: Vec<MemDesc>,
    result: IoVec,
    /// The bytes `operand` and `compare` point at, when they were copied.
    held: Option<(CopiedIov, CopiedIov)>,
    dest: fi_addr_t,
    rma: Vec<RmaIov>,
    context: usize,
    flags: u64,
    internal: u64,
    data: Option<u64>,
}

impl AtomicCopy {
    /// Copies `req`.
    pub fn of(req: &AtomicReq<'_>) -> AtomicCopy {
        AtomicCopy {
            kind: req.kind,
            op: req.op,
            datatype: req.datatype,
            size: req.size,
            operand: iov(req.operand),
            compare: iov(req.compare),
            desc: req.desc.to_vec(),
            compare_desc: req.compare_desc.to_vec(),
            result_desc: req.result_desc.to_vec(),
            result: iov(req.result),
            held: None,
            dest: req.dest,
            rma: req.rma.to_vec(),
            context: req.context,
            flags: req.flags,
            internal: req.internal,
            data: req.data,
        }
    }

    /// Copies `req` with its operands and compare values (which the
    /// application may reuse on return).
    pub fn keeping_data(req: &AtomicReq<'_>) -> AtomicCopy {
        let mut c = AtomicCopy::of(req);
        let (mut operand, mut compare) = (CopiedIov::of(req.operand), CopiedIov::of(req.compare));
        c.operand = operand.bufs();
        c.compare = compare.bufs();
        c.held = Some((operand, compare));
        // The copies are no registered memory.
        c.desc.clear();
        c.compare_desc.clear();
        c
    }

    pub(crate) fn slots(&mut self) -> (&mut usize, &mut u64) {
        (&mut self.context, &mut self.internal)
    }

    /// The operation, to post.
    pub fn req(&self) -> AtomicReq<'_> {
        AtomicReq {
            kind: self.kind,
            op: self.op,
            datatype: self.datatype,
            size: self.size,
            operand: &self.operand,
            compare: &self.compare,
            desc: &self.desc,
            compare_desc: &self.compare_desc,
            result_desc: &self.result_desc,
            result: &self.result,
            dest: self.dest,
            rma: &self.rma,
            context: self.context,
            flags: self.flags,
            internal: self.internal,
            data: self.data,
        }
    }
}
