//! Operations to a same-host peer posted while our shared-memory handshake
//! with it is under way (issue 26).
//!
//! Until the handshake ends we do not know which transport the peer takes:
//! shared memory when it finishes, TCP when it fails while the peer lives
//! (it could not take us on, or did not answer in time). So those
//! operations wait here, in the order they were posted, and then go the
//! way the handshake decided, as if posted then. Each is the engine's copy
//! of the operation (`service::op_copy`), with its data where the
//! application may reuse it on return (`FI_INJECT`, an atomic's operands).

use super::local::Route;
use super::*;
use oxifabric::ops::{AtomicReq, RmaOp};
use oxifabric::service::op_copy::{AtomicCopy, RmaCopy, SendCopy};

/// The operation.
enum Op {
    /// A send of this many bytes.
    Send(SendCopy, usize),
    /// An RMA operation of this many bytes.
    Rma(RmaCopy, usize),
    Atomic(Box<AtomicCopy>),
}

/// One waiting operation.
pub(super) struct Parked {
    op: Op,
    /// Its completion's context, for an error completion.
    tx: TxCtx,
}

impl Parked {
    /// A send of `len` bytes.
    pub(super) fn send(op: &SendOp<'_>, len: usize) -> Parked {
        Parked {
            op: Op::Send(SendCopy::keeping_data(op), len),
            tx: TxCtx::of(op),
        }
    }

    /// An RMA read or write of `len` bytes.
    pub(super) fn rma(op: &RmaOp<'_>, len: usize) -> Parked {
        Parked {
            op: Op::Rma(RmaCopy::keeping_data(op), len),
            tx: TxCtx::of_rma(op),
        }
    }

    /// An atomic operation (checked by the caller).
    pub(super) fn atomic(op: &AtomicReq<'_>) -> Parked {
        Parked {
            op: Op::Atomic(Box::new(AtomicCopy::keeping_data(op))),
            tx: TxCtx::of_atomic(op),
        }
    }

    /// Posts it the way its peer is reached now (`Route::Shm` or
    /// `Route::Tcp`). `Again` leaves it to be posted later; any other
    /// error is reported as its error completion.
    pub(super) fn post(&self, ep: &SockEp, st: &mut EpState, route: Route) -> Result<()> {
        let r = match &self.op {
            Op::Send(c, len) => ep.send_routed(st, &c.op(), *len, route),
            Op::Rma(c, len) => ep.rma_routed(st, &c.op(), *len, route),
            Op::Atomic(c) => ep.atomic_routed(st, &c.req(), route),
        };
        match r {
            Err(Error::Again) => Err(Error::Again),
            Err(e) => {
                st.core.sinks.tx_err(&self.tx, Failure::code(e.errno()));
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    }

    /// Fails it: the endpoint closes before its peer's way was known.
    pub(super) fn cancel(&self, st: &mut EpState) {
        st.core.sinks.tx_err(&self.tx, Failure::code(FI_ECANCELED));
    }
}
