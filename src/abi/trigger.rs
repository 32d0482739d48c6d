//! Triggered operations and deferred work (`rdma/fi_trigger.h`).
//!
//! A data transfer posted with `FI_TRIGGER` takes a `fi_triggered_context`
//! (or `fi_triggered_context2`) as its context: the operation is held back
//! until a counter reaches a threshold or an XPU writes a trigger variable.
//! Deferred work requests (`fi_deferred_work`, queued on a domain with
//! `fi_control(FI_QUEUE_WORK)`) pair such a condition with a described
//! operation and an optional completion counter.

use super::*;

c_enum! {
    /// What releases a triggered operation.
    pub enum fi_trigger_event : c_uint {
        /// A counter reaching a threshold (`fi_trigger_threshold`).
        FI_TRIGGER_THRESHOLD = 0,
        /// A device writing provider-chosen values (`fi_trigger_xpu`).
        FI_TRIGGER_XPU = 1,
    }
}

c_enum! {
    /// Kind of operation a deferred work request performs.
    pub enum fi_op_type : c_uint {
        /// Untagged receive (`fi_op_msg`).
        FI_OP_RECV = 0,
        /// Untagged send (`fi_op_msg`).
        FI_OP_SEND = 1,
        /// Tagged receive (`fi_op_tagged`).
        FI_OP_TRECV = 2,
        /// Tagged send (`fi_op_tagged`).
        FI_OP_TSEND = 3,
        /// RMA read (`fi_op_rma`).
        FI_OP_READ = 4,
        /// RMA write (`fi_op_rma`).
        FI_OP_WRITE = 5,
        /// Plain atomic (`fi_op_atomic`).
        FI_OP_ATOMIC = 6,
        /// Fetching atomic (`fi_op_fetch_atomic`).
        FI_OP_FETCH_ATOMIC = 7,
        /// Compare atomic (`fi_op_compare_atomic`).
        FI_OP_COMPARE_ATOMIC = 8,
        /// Set a counter's value (`fi_op_cntr`).
        FI_OP_CNTR_SET = 9,
        /// Add to a counter's value (`fi_op_cntr`).
        FI_OP_CNTR_ADD = 10,
    }
}

/// Counter-threshold trigger condition.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_trigger_threshold {
    /// Counter watched.
    pub cntr: *mut fid_cntr,
    /// Value the counter must reach before the operation starts.
    pub threshold: usize,
}

/// The value to write into a trigger variable (one of, per `count`).
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_trigger_var_value {
    /// One 8-bit value.
    pub val8: u8,
    /// One 16-bit value.
    pub val16: u16,
    /// One 32-bit value.
    pub val32: u32,
    /// One 64-bit value.
    pub val64: u64,
    /// Buffer of `count` bytes, for values wider than 64 bits.
    pub data: *mut u8,
}

/// One variable a device must write to fire an XPU trigger.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_trigger_var {
    /// Width of each element to write.
    pub datatype: fi_datatype,
    /// Number of elements to write.
    pub count: c_int,
    /// Device-visible address to write to.
    pub addr: *mut c_void,
    /// The value (or values) to write.
    pub value: __anon_fi_trigger_var_value,
}

/// Device identifier of the triggering XPU, by interface.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_trigger_xpu_device {
    /// Pads the union to 64 bits.
    pub reserved: u64,
    /// CUDA device ordinal.
    pub cuda: c_int,
    /// Level Zero device index.
    pub ze: c_int,
}

/// XPU trigger condition: input names the device, output lists variables.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_trigger_xpu {
    /// In: entries available in `var`; out: entries the provider filled.
    pub count: c_int,
    /// Software interface of the triggering device.
    pub iface: fi_hmem_iface,
    /// Which device of that interface.
    pub device: __anon_fi_trigger_xpu_device,
    /// Array of trigger variables.
    pub var: *mut fi_trigger_var,
}

/// Deferred untagged send or receive.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_msg {
    /// Endpoint the operation is posted on.
    pub ep: *mut fid_ep,
    /// The message, as for `fi_sendmsg`/`fi_recvmsg`.
    pub msg: fi_msg,
    /// Operation flags.
    pub flags: u64,
}

/// Deferred tagged send or receive.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_tagged {
    /// Endpoint the operation is posted on.
    pub ep: *mut fid_ep,
    /// The message, as for `fi_tsendmsg`/`fi_trecvmsg`.
    pub msg: fi_msg_tagged,
    /// Operation flags.
    pub flags: u64,
}

/// Deferred RMA read or write.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_rma {
    /// Endpoint the operation is posted on.
    pub ep: *mut fid_ep,
    /// The transfer, as for `fi_readmsg`/`fi_writemsg`.
    pub msg: fi_msg_rma,
    /// Operation flags.
    pub flags: u64,
}

/// Deferred plain atomic.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_atomic {
    /// Endpoint the operation is posted on.
    pub ep: *mut fid_ep,
    /// The atomic, as for `fi_atomicmsg`.
    pub msg: fi_msg_atomic,
    /// Operation flags.
    pub flags: u64,
}

/// Deferred fetching atomic.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_fetch_atomic {
    /// Endpoint the operation is posted on.
    pub ep: *mut fid_ep,
    /// The atomic, as for `fi_fetch_atomicmsg`.
    pub msg: fi_msg_atomic,
    /// Where the previous target values go.
    pub fetch: fi_msg_fetch,
    /// Operation flags.
    pub flags: u64,
}

/// Deferred compare atomic.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_compare_atomic {
    /// Endpoint the operation is posted on.
    pub ep: *mut fid_ep,
    /// The atomic, as for `fi_compare_atomicmsg`.
    pub msg: fi_msg_atomic,
    /// Where the previous target values go.
    pub fetch: fi_msg_fetch,
    /// The values compared against.
    pub compare: fi_msg_compare,
    /// Operation flags.
    pub flags: u64,
}

/// Deferred counter update.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_cntr {
    /// Counter to set or add to.
    pub cntr: *mut fid_cntr,
    /// Value to set or add.
    pub value: u64,
}

/// Trigger condition of an `fi_triggered_context`, selected by `event_type`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_triggered_context_trigger {
    /// Counter-threshold condition.
    pub threshold: fi_trigger_threshold,
    /// XPU condition.
    pub xpu: fi_trigger_xpu,
    /// Space reserved for the provider; keeps the size of `fi_context`.
    pub internal: [*mut c_void; 3],
}

/// Context of a triggered operation; the same size as `fi_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_triggered_context {
    /// Which member of `trigger` is valid.
    pub event_type: fi_trigger_event,
    /// The condition that releases the operation.
    pub trigger: __anon_fi_triggered_context_trigger,
}

/// Trigger condition of an `fi_triggered_context2`, selected by `event_type`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_triggered_context2_trigger {
    /// Counter-threshold condition.
    pub threshold: fi_trigger_threshold,
    /// XPU condition.
    pub xpu: fi_trigger_xpu,
    /// Space reserved for the provider; keeps the size of `fi_context2`.
    pub internal: [*mut c_void; 7],
}

/// Context of a triggered operation under `FI_CONTEXT2`; the same size as
/// `fi_context2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_triggered_context2 {
    /// Which member of `trigger` is valid.
    pub event_type: fi_trigger_event,
    /// The condition that releases the operation.
    pub trigger: __anon_fi_triggered_context2_trigger,
}

/// The operation of a deferred work request, selected by `op_type`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_deferred_work_op {
    /// `FI_OP_RECV`, `FI_OP_SEND`.
    pub msg: *mut fi_op_msg,
    /// `FI_OP_TRECV`, `FI_OP_TSEND`.
    pub tagged: *mut fi_op_tagged,
    /// `FI_OP_READ`, `FI_OP_WRITE`.
    pub rma: *mut fi_op_rma,
    /// `FI_OP_ATOMIC`.
    pub atomic: *mut fi_op_atomic,
    /// `FI_OP_FETCH_ATOMIC`.
    pub fetch_atomic: *mut fi_op_fetch_atomic,
    /// `FI_OP_COMPARE_ATOMIC`.
    pub compare_atomic: *mut fi_op_compare_atomic,
    /// `FI_OP_CNTR_SET`, `FI_OP_CNTR_ADD`.
    pub cntr: *mut fi_op_cntr,
}

/// A deferred work request: run `op` once `triggering_cntr` reaches
/// `threshold`, then bump `completion_cntr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_deferred_work {
    /// Provider scratch space while the request is queued.
    pub context: fi_context2,
    /// Counter value that releases the work.
    pub threshold: u64,
    /// Counter watched.
    pub triggering_cntr: *mut fid_cntr,
    /// Counter incremented when the work completes.
    pub completion_cntr: *mut fid_cntr,
    /// Which member of `op` is valid.
    pub op_type: fi_op_type,
    /// The operation to run.
    pub op: __anon_fi_deferred_work_op,
}
