//! Where an endpoint's completions go: its CQs (honouring
//! `FI_SELECTIVE_COMPLETION`) and counters.

use crate::rx::{rx_flags, Posted};
use oxifabric::abi::*;
use oxifabric::ops::OP_NO_COMPLETION;
use oxifabric::service::cntr::Counter;
use oxifabric::service::cq::{Completion, CompletionQueue, CqError};
use std::sync::Arc;

/// The completion queues and counters an endpoint is bound to.
#[derive(Default, Clone)]
pub struct Sinks {
    pub tx_cq: Option<Arc<CompletionQueue>>,
    pub tx_selective: bool,
    pub rx_cq: Option<Arc<CompletionQueue>>,
    pub rx_selective: bool,
    pub send_cntr: Option<Arc<Counter>>,
    pub recv_cntr: Option<Arc<Counter>>,
}

/// Completion flags of a send.
pub fn tx_flags(tagged: bool) -> u64 {
    FI_SEND | if tagged { FI_TAGGED } else { FI_MSG }
}

impl Sinks {
    fn wants_tx(&self, op_flags: u64) -> bool {
        op_flags & OP_NO_COMPLETION == 0 && (!self.tx_selective || op_flags & FI_COMPLETION != 0)
    }

    fn wants_rx(&self, op_flags: u64) -> bool {
        !self.rx_selective || op_flags & FI_COMPLETION != 0
    }

    /// A send finished.
    /// Whether a send with `op_flags` may be posted: its completion would
    /// have room (see `CompletionQueue::is_full`).
    pub fn tx_room(&self, op_flags: u64) -> bool {
        !self.wants_tx(op_flags) || self.tx_cq.as_ref().is_none_or(|cq| !cq.is_full())
    }

    /// Whether a receive with `op_flags` may be posted (as `tx_room`).
    pub fn rx_room(&self, op_flags: u64) -> bool {
        !self.wants_rx(op_flags) || self.rx_cq.as_ref().is_none_or(|cq| !cq.is_full())
    }

    pub fn tx_done(&self, ctx: usize, op_flags: u64, tagged: bool) {
        if self.wants_tx(op_flags) {
            if let Some(cq) = &self.tx_cq {
                cq.push(Completion {
                    op_context: ctx,
                    flags: tx_flags(tagged),
                    src: FI_ADDR_NOTAVAIL,
                    ..Default::default()
                });
            }
        }
        if let Some(c) = &self.send_cntr {
            c.inc();
        }
    }

    /// A send failed. Errors are always reported, even for operations
    /// that asked for no completion.
    pub fn tx_err(&self, ctx: usize, tagged: bool, err: c_int) {
        if let Some(cq) = &self.tx_cq {
            cq.push_err(CqError {
                comp: Completion {
                    op_context: ctx,
                    flags: tx_flags(tagged),
                    src: FI_ADDR_NOTAVAIL,
                    ..Default::default()
                },
                err,
                ..Default::default()
            });
        }
        if let Some(c) = &self.send_cntr {
            c.inc_err();
        }
    }

    /// A receive finished.
    #[allow(clippy::too_many_arguments)]
    pub fn rx_done(
        &self,
        p: &Posted,
        len: usize,
        buf: usize,
        data: Option<u64>,
        tag: Option<u64>,
        src: fi_addr_t,
        tagged: bool,
        extra_flags: u64,
    ) {
        if self.wants_rx(p.flags) || extra_flags & FI_MULTI_RECV != 0 {
            if let Some(cq) = &self.rx_cq {
                cq.push(Completion {
                    op_context: p.ctx,
                    flags: rx_flags(tagged, data) | extra_flags,
                    len,
                    buf,
                    data: data.unwrap_or(0),
                    tag: tag.unwrap_or(0),
                    src,
                });
            }
        }
        if let Some(c) = &self.recv_cntr {
            c.inc();
        }
    }

    /// A receive failed with `err` (`olen` bytes did not fit).
    pub fn rx_err(&self, p: &Posted, err: c_int, len: usize, olen: usize, tagged: bool) {
        self.rx_err_full(
            p,
            CqError {
                comp: Completion {
                    op_context: p.ctx,
                    flags: rx_flags(tagged, None),
                    len,
                    tag: p.tag.map_or(0, |t| t.0),
                    src: FI_ADDR_NOTAVAIL,
                    ..Default::default()
                },
                olen,
                err,
                ..Default::default()
            },
        );
    }

    /// A receive failed; the caller built the whole error entry.
    pub fn rx_err_full(&self, _p: &Posted, e: CqError) {
        if let Some(cq) = &self.rx_cq {
            cq.push_err(e);
        }
        if let Some(c) = &self.recv_cntr {
            c.inc_err();
        }
    }
}
