//! Mirror of `rdma/fi_eq.h`.

use super::*;

c_enum! {
    /// `enum fi_wait_obj`.
    pub enum fi_wait_obj : c_uint {
        /// `FI_WAIT_NONE`.
        FI_WAIT_NONE = 0,
        /// `FI_WAIT_UNSPEC`.
        FI_WAIT_UNSPEC = 1,
        /// `FI_WAIT_SET`.
        FI_WAIT_SET = 2,
        /// `FI_WAIT_FD`.
        FI_WAIT_FD = 3,
        /// `FI_WAIT_MUTEX_COND`.
        FI_WAIT_MUTEX_COND = 4,
        /// `FI_WAIT_YIELD`.
        FI_WAIT_YIELD = 5,
        /// `FI_WAIT_POLLFD`.
        FI_WAIT_POLLFD = 6,
    }
}

/// `struct fi_wait_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_wait_attr {
    /// `wait_obj`.
    pub wait_obj: fi_wait_obj,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_ops_wait`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_wait {
    /// `size`.
    pub size: usize,
    /// `wait`.
    pub wait: Option<unsafe extern "C" fn(waitset: *mut fid_wait, timeout: c_int) -> c_int>,
}

/// `struct fid_wait`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_wait {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_wait,
}

/// `struct fi_mutex_cond`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mutex_cond {
    /// `mutex`.
    pub mutex: *mut pthread_mutex_t,
    /// `cond`.
    pub cond: *mut pthread_cond_t,
}

/// `struct fi_wait_pollfd`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_wait_pollfd {
    /// `change_index`.
    pub change_index: u64,
    /// `nfds`.
    pub nfds: usize,
    /// `fd`.
    pub fd: *mut pollfd,
}

/// `struct fi_poll_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_poll_attr {
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_ops_poll`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_poll {
    /// `size`.
    pub size: usize,
    /// `poll`.
    pub poll: Option<
        unsafe extern "C" fn(
            pollset: *mut fid_poll,
            context: *mut *mut c_void,
            count: c_int,
        ) -> c_int,
    >,
    /// `poll_add`.
    pub poll_add: Option<
        unsafe extern "C" fn(pollset: *mut fid_poll, event_fid: *mut fid, flags: u64) -> c_int,
    >,
    /// `poll_del`.
    pub poll_del: Option<
        unsafe extern "C" fn(pollset: *mut fid_poll, event_fid: *mut fid, flags: u64) -> c_int,
    >,
}

/// `struct fid_poll`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_poll {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_poll,
}

/// `struct fi_eq_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_eq_attr {
    /// `size`.
    pub size: usize,
    /// `flags`.
    pub flags: u64,
    /// `wait_obj`.
    pub wait_obj: fi_wait_obj,
    /// `signaling_vector`.
    pub signaling_vector: c_int,
    /// `wait_set`.
    pub wait_set: *mut fid_wait,
}

c_anon_enum! {
    /// Anonymous enum starting at `FI_NOTIFY`.
    pub enum anon_fi_notify : c_int {
        /// `FI_NOTIFY`.
        FI_NOTIFY = 0,
        /// `FI_CONNREQ`.
        FI_CONNREQ = 1,
        /// `FI_CONNECTED`.
        FI_CONNECTED = 2,
        /// `FI_SHUTDOWN`.
        FI_SHUTDOWN = 3,
        /// `FI_MR_COMPLETE`.
        FI_MR_COMPLETE = 4,
        /// `FI_AV_COMPLETE`.
        FI_AV_COMPLETE = 5,
        /// `FI_JOIN_COMPLETE`.
        FI_JOIN_COMPLETE = 6,
    }
}

/// `struct fi_eq_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_eq_entry {
    /// `fid`.
    pub fid: fid_t,
    /// `context`.
    pub context: *mut c_void,
    /// `data`.
    pub data: u64,
}

/// `struct fi_eq_err_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_eq_err_entry {
    /// `fid`.
    pub fid: fid_t,
    /// `context`.
    pub context: *mut c_void,
    /// `data`.
    pub data: u64,
    /// `err`.
    pub err: c_int,
    /// `prov_errno`.
    pub prov_errno: c_int,
    /// `err_data`.
    pub err_data: *mut c_void,
    /// `err_data_size`.
    pub err_data_size: usize,
}

/// `struct fi_eq_cm_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_eq_cm_entry {
    /// `fid`.
    pub fid: fid_t,
    /// `info`.
    pub info: *mut fi_info,
    /// `data`.
    pub data: [u8; 0],
}

/// `struct fi_ops_eq`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_eq {
    /// `size`.
    pub size: usize,
    /// `read`.
    pub read: Option<
        unsafe extern "C" fn(
            eq: *mut fid_eq,
            event: *mut u32,
            buf: *mut c_void,
            len: usize,
            flags: u64,
        ) -> isize,
    >,
    /// `readerr`.
    pub readerr: Option<
        unsafe extern "C" fn(eq: *mut fid_eq, buf: *mut fi_eq_err_entry, flags: u64) -> isize,
    >,
    /// `write`.
    pub write: Option<
        unsafe extern "C" fn(
            eq: *mut fid_eq,
            event: u32,
            buf: *const c_void,
            len: usize,
            flags: u64,
        ) -> isize,
    >,
    /// `sread`.
    pub sread: Option<
        unsafe extern "C" fn(
            eq: *mut fid_eq,
            event: *mut u32,
            buf: *mut c_void,
            len: usize,
            timeout: c_int,
            flags: u64,
        ) -> isize,
    >,
    /// `strerror`.
    pub strerror: Option<
        unsafe extern "C" fn(
            eq: *mut fid_eq,
            prov_errno: c_int,
            err_data: *const c_void,
            buf: *mut c_char,
            len: usize,
        ) -> *const c_char,
    >,
}

/// `struct fid_eq`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_eq {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_eq,
}

c_enum! {
    /// `enum fi_cq_format`.
    pub enum fi_cq_format : c_uint {
        /// `FI_CQ_FORMAT_UNSPEC`.
        FI_CQ_FORMAT_UNSPEC = 0,
        /// `FI_CQ_FORMAT_CONTEXT`.
        FI_CQ_FORMAT_CONTEXT = 1,
        /// `FI_CQ_FORMAT_MSG`.
        FI_CQ_FORMAT_MSG = 2,
        /// `FI_CQ_FORMAT_DATA`.
        FI_CQ_FORMAT_DATA = 3,
        /// `FI_CQ_FORMAT_TAGGED`.
        FI_CQ_FORMAT_TAGGED = 4,
    }
}

/// `struct fi_cq_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_entry {
    /// `op_context`.
    pub op_context: *mut c_void,
}

/// `struct fi_cq_msg_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_msg_entry {
    /// `op_context`.
    pub op_context: *mut c_void,
    /// `flags`.
    pub flags: u64,
    /// `len`.
    pub len: usize,
}

/// `struct fi_cq_data_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_data_entry {
    /// `op_context`.
    pub op_context: *mut c_void,
    /// `flags`.
    pub flags: u64,
    /// `len`.
    pub len: usize,
    /// `buf`.
    pub buf: *mut c_void,
    /// `data`.
    pub data: u64,
}

/// `struct fi_cq_tagged_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_tagged_entry {
    /// `op_context`.
    pub op_context: *mut c_void,
    /// `flags`.
    pub flags: u64,
    /// `len`.
    pub len: usize,
    /// `buf`.
    pub buf: *mut c_void,
    /// `data`.
    pub data: u64,
    /// `tag`.
    pub tag: u64,
}

/// `struct fi_cq_err_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_err_entry {
    /// `op_context`.
    pub op_context: *mut c_void,
    /// `flags`.
    pub flags: u64,
    /// `len`.
    pub len: usize,
    /// `buf`.
    pub buf: *mut c_void,
    /// `data`.
    pub data: u64,
    /// `tag`.
    pub tag: u64,
    /// `olen`.
    pub olen: usize,
    /// `err`.
    pub err: c_int,
    /// `prov_errno`.
    pub prov_errno: c_int,
    /// `err_data`.
    pub err_data: *mut c_void,
    /// `err_data_size`.
    pub err_data_size: usize,
    /// `src_addr` (API 1.20): the source of a failed receive, or
    /// `FI_ADDR_NOTAVAIL`; written only for applications of API 1.20 on.
    pub src_addr: fi_addr_t,
}

c_enum! {
    /// `enum fi_cq_wait_cond`.
    pub enum fi_cq_wait_cond : c_uint {
        /// `FI_CQ_COND_NONE`.
        FI_CQ_COND_NONE = 0,
        /// `FI_CQ_COND_THRESHOLD`.
        FI_CQ_COND_THRESHOLD = 1,
    }
}

/// `struct fi_cq_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_attr {
    /// `size`.
    pub size: usize,
    /// `flags`.
    pub flags: u64,
    /// `format`.
    pub format: fi_cq_format,
    /// `wait_obj`.
    pub wait_obj: fi_wait_obj,
    /// `signaling_vector`.
    pub signaling_vector: c_int,
    /// `wait_cond`.
    pub wait_cond: fi_cq_wait_cond,
    /// `wait_set`.
    pub wait_set: *mut fid_wait,
}

/// `struct fi_ops_cq`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cq {
    /// `size`.
    pub size: usize,
    /// `read`.
    pub read:
        Option<unsafe extern "C" fn(cq: *mut fid_cq, buf: *mut c_void, count: usize) -> isize>,
    /// `readfrom`.
    pub readfrom: Option<
        unsafe extern "C" fn(
            cq: *mut fid_cq,
            buf: *mut c_void,
            count: usize,
            src_addr: *mut fi_addr_t,
        ) -> isize,
    >,
    /// `readerr`.
    pub readerr: Option<
        unsafe extern "C" fn(cq: *mut fid_cq, buf: *mut fi_cq_err_entry, flags: u64) -> isize,
    >,
    /// `sread`.
    pub sread: Option<
        unsafe extern "C" fn(
            cq: *mut fid_cq,
            buf: *mut c_void,
            count: usize,
            cond: *const c_void,
            timeout: c_int,
        ) -> isize,
    >,
    /// `sreadfrom`.
    pub sreadfrom: Option<
        unsafe extern "C" fn(
            cq: *mut fid_cq,
            buf: *mut c_void,
            count: usize,
            src_addr: *mut fi_addr_t,
            cond: *const c_void,
            timeout: c_int,
        ) -> isize,
    >,
    /// `signal`.
    pub signal: Option<unsafe extern "C" fn(cq: *mut fid_cq) -> c_int>,
    /// `strerror`.
    pub strerror: Option<
        unsafe extern "C" fn(
            cq: *mut fid_cq,
            prov_errno: c_int,
            err_data: *const c_void,
            buf: *mut c_char,
            len: usize,
        ) -> *const c_char,
    >,
}

/// `struct fid_cq`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_cq {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_cq,
}

c_enum! {
    /// `enum fi_cntr_events`.
    pub enum fi_cntr_events : c_uint {
        /// `FI_CNTR_EVENTS_COMP`.
        FI_CNTR_EVENTS_COMP = 0,
        /// `FI_CNTR_EVENTS_BYTES` (2.0): count bytes, not completions.
        FI_CNTR_EVENTS_BYTES = 1,
    }
}

/// `struct fi_cntr_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cntr_attr {
    /// `events`.
    pub events: fi_cntr_events,
    /// `wait_obj`.
    pub wait_obj: fi_wait_obj,
    /// `wait_set`.
    pub wait_set: *mut fid_wait,
    /// `flags`.
    pub flags: u64,
}

/// `struct fi_ops_cntr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cntr {
    /// `size`.
    pub size: usize,
    /// `read`.
    pub read: Option<unsafe extern "C" fn(cntr: *mut fid_cntr) -> u64>,
    /// `readerr`.
    pub readerr: Option<unsafe extern "C" fn(cntr: *mut fid_cntr) -> u64>,
    /// `add`.
    pub add: Option<unsafe extern "C" fn(cntr: *mut fid_cntr, value: u64) -> c_int>,
    /// `set`.
    pub set: Option<unsafe extern "C" fn(cntr: *mut fid_cntr, value: u64) -> c_int>,
    /// `wait`.
    pub wait:
        Option<unsafe extern "C" fn(cntr: *mut fid_cntr, threshold: u64, timeout: c_int) -> c_int>,
    /// `adderr`.
    pub adderr: Option<unsafe extern "C" fn(cntr: *mut fid_cntr, value: u64) -> c_int>,
    /// `seterr`.
    pub seterr: Option<unsafe extern "C" fn(cntr: *mut fid_cntr, value: u64) -> c_int>,
}

/// `struct fid_cntr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_cntr {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_cntr,
}
