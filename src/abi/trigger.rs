//! Mirror of `rdma/fi_trigger.h`.

use super::*;

c_enum! {
    /// `enum fi_trigger_event`.
    pub enum fi_trigger_event : c_uint {
        /// `FI_TRIGGER_THRESHOLD`.
        FI_TRIGGER_THRESHOLD = 0,
        /// `FI_TRIGGER_XPU`.
        FI_TRIGGER_XPU = 1,
    }
}

c_enum! {
    /// `enum fi_op_type`.
    pub enum fi_op_type : c_uint {
        /// `FI_OP_RECV`.
        FI_OP_RECV = 0,
        /// `FI_OP_SEND`.
        FI_OP_SEND = 1,
        /// `FI_OP_TRECV`.
        FI_OP_TRECV = 2,
        /// `FI_OP_TSEND`.
        FI_OP_TSEND = 3,
        /// `FI_OP_READ`.
        FI_OP_READ = 4,
        /// `FI_OP_WRITE`.
        FI_OP_WRITE = 5,
        /// `FI_OP_ATOMIC`.
        FI_OP_ATOMIC = 6,
        /// `FI_OP_FETCH_ATOMIC`.
        FI_OP_FETCH_ATOMIC = 7,
        /// `FI_OP_COMPARE_ATOMIC`.
        FI_OP_COMPARE_ATOMIC = 8,
        /// `FI_OP_CNTR_SET`.
        FI_OP_CNTR_SET = 9,
        /// `FI_OP_CNTR_ADD`.
        FI_OP_CNTR_ADD = 10,
    }
}

/// `struct fi_trigger_threshold`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_trigger_threshold {
    /// `cntr`.
    pub cntr: *mut fid_cntr,
    /// `threshold`.
    pub threshold: usize,
}

/// Anonymous member `value` of `fi_trigger_var`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_trigger_var_value {
    /// `val8`.
    pub val8: u8,
    /// `val16`.
    pub val16: u16,
    /// `val32`.
    pub val32: u32,
    /// `val64`.
    pub val64: u64,
    /// `data`.
    pub data: *mut u8,
}

/// `struct fi_trigger_var`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_trigger_var {
    /// `datatype`.
    pub datatype: fi_datatype,
    /// `count`.
    pub count: c_int,
    /// `addr`.
    pub addr: *mut c_void,
    /// `value`.
    pub value: __anon_fi_trigger_var_value,
}

/// Anonymous member `device` of `fi_trigger_xpu`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_trigger_xpu_device {
    /// `reserved`.
    pub reserved: u64,
    /// `cuda`.
    pub cuda: c_int,
    /// `ze`.
    pub ze: c_int,
}

/// `struct fi_trigger_xpu`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_trigger_xpu {
    /// `count`.
    pub count: c_int,
    /// `iface`.
    pub iface: fi_hmem_iface,
    /// `device`.
    pub device: __anon_fi_trigger_xpu_device,
    /// `var`.
    pub var: *mut fi_trigger_var,
}

/// `struct fi_op_msg`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_msg {
    /// `ep`.
    pub ep: *mut fid_ep,
    /// `msg`.
    pub msg: fi_msg,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_op_tagged`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_tagged {
    /// `ep`.
    pub ep: *mut fid_ep,
    /// `msg`.
    pub msg: fi_msg_tagged,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_op_rma`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_rma {
    /// `ep`.
    pub ep: *mut fid_ep,
    /// `msg`.
    pub msg: fi_msg_rma,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_op_atomic`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_atomic {
    /// `ep`.
    pub ep: *mut fid_ep,
    /// `msg`.
    pub msg: fi_msg_atomic,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_op_fetch_atomic`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_fetch_atomic {
    /// `ep`.
    pub ep: *mut fid_ep,
    /// `msg`.
    pub msg: fi_msg_atomic,
    /// `fetch`.
    pub fetch: fi_msg_fetch,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_op_compare_atomic`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_compare_atomic {
    /// `ep`.
    pub ep: *mut fid_ep,
    /// `msg`.
    pub msg: fi_msg_atomic,
    /// `fetch`.
    pub fetch: fi_msg_fetch,
    /// `compare`.
    pub compare: fi_msg_compare,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_op_cntr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_cntr {
    /// `cntr`.
    pub cntr: *mut fid_cntr,
    /// `value`.
    pub value: u64,
}

/// Anonymous member `trigger` of `fi_triggered_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_triggered_context_trigger {
    /// `threshold`.
    pub threshold: fi_trigger_threshold,
    /// `xpu`.
    pub xpu: fi_trigger_xpu,
    /// `internal`.
    pub internal: [*mut c_void; 3],
}

/// `struct fi_triggered_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_triggered_context {
    /// `event_type`.
    pub event_type: fi_trigger_event,
    /// `trigger`.
    pub trigger: __anon_fi_triggered_context_trigger,
}

/// Anonymous member `trigger` of `fi_triggered_context2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_triggered_context2_trigger {
    /// `threshold`.
    pub threshold: fi_trigger_threshold,
    /// `xpu`.
    pub xpu: fi_trigger_xpu,
    /// `internal`.
    pub internal: [*mut c_void; 7],
}

/// `struct fi_triggered_context2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_triggered_context2 {
    /// `event_type`.
    pub event_type: fi_trigger_event,
    /// `trigger`.
    pub trigger: __anon_fi_triggered_context2_trigger,
}

/// Anonymous member `op` of `fi_deferred_work`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_deferred_work_op {
    /// `msg`.
    pub msg: *mut fi_op_msg,
    /// `tagged`.
    pub tagged: *mut fi_op_tagged,
    /// `rma`.
    pub rma: *mut fi_op_rma,
    /// `atomic`.
    pub atomic: *mut fi_op_atomic,
    /// `fetch_atomic`.
    pub fetch_atomic: *mut fi_op_fetch_atomic,
    /// `compare_atomic`.
    pub compare_atomic: *mut fi_op_compare_atomic,
    /// `cntr`.
    pub cntr: *mut fi_op_cntr,
}

/// `struct fi_deferred_work`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_deferred_work {
    /// `context`.
    pub context: fi_context2,
    /// `threshold`.
    pub threshold: u64,
    /// `triggering_cntr`.
    pub triggering_cntr: *mut fid_cntr,
    /// `completion_cntr`.
    pub completion_cntr: *mut fid_cntr,
    /// `op_type`.
    pub op_type: fi_op_type,
    /// `op`.
    pub op: __anon_fi_deferred_work_op,
}
