//! Profiling interface (`rdma/fi_profile.h`, libfabric 1.20): variables and
//! events an object may expose, read through `fi_profile_ops`, opened by
//! `fi_profile_open` as the `"fi_profile_ops"` ops of a fid. No object of
//! this library offers them: `fi_open_ops` answers `-FI_ENOSYS`.

use super::*;

c_anon_enum! {
    /// Profiling variable ids.
    pub enum anon_fi_var : c_int {
        /// Unexpected messages queued (`FI_UINT64`).
        FI_VAR_UNEXP_MSG_CNT = 0,
        /// The unexpected-message queue (`FI_TYPE_CQ_ERR_ENTRY`).
        FI_VAR_UNEXP_MSG_QUEUE = 1,
        /// Messages queued (`FI_UINT64`).
        FI_VAR_MSG_QUEUE_CNT = 2,
        /// Connections (`FI_UINT64`).
        FI_VAR_CONNECTION_CNT = 3,
        /// Connection requests (`FI_UINT64`).
        FI_VAR_CONN_REQUEST = 4,
        /// Connections accepted (`FI_UINT64`).
        FI_VAR_CONN_ACCEPT = 5,
        /// Connections rejected (`FI_UINT64`).
        FI_VAR_CONN_REJECT = 6,
        /// Memory used by the library (`FI_UINT64`).
        FI_VAR_OFI_MEM = 7,
    }
}

c_anon_enum! {
    /// Profiling event ids.
    pub enum anon_fi_event : c_int {
        /// An unexpected message arrived.
        FI_EVENT_UNEXP_MSG_RECVD = 0,
        /// An unexpected message was matched.
        FI_EVENT_UNEXP_MSG_MATCHED = 1,
    }
}

c_enum! {
    /// `enum fi_profile_type`: which member of `fi_profile_desc.datatype`.
    pub enum fi_profile_type : c_uint {
        /// `datatype.primitive` (an `enum fi_datatype`).
        fi_primitive_type = 0,
        /// `datatype.defined` (an `enum fi_type`).
        fi_defined_type = 1,
    }
}

/// Member `datatype` of `fi_profile_desc`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_profile_desc_datatype {
    /// `primitive`.
    pub primitive: fi_datatype,
    /// `defined`.
    pub defined: fi_type,
}

/// `struct fi_profile_desc`: one variable or event.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_profile_desc {
    /// `id`.
    pub id: u32,
    /// `datatype_sel`.
    pub datatype_sel: fi_profile_type,
    /// `datatype`.
    pub datatype: __anon_fi_profile_desc_datatype,
    /// `flags`.
    pub flags: u64,
    /// `size`.
    pub size: usize,
    /// `name`.
    pub name: *const c_char,
    /// `desc`.
    pub desc: *const c_char,
}

/// `struct fi_profile_ops`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_profile_ops {
    /// `size`.
    pub size: usize,
    /// `reset`.
    pub reset: Option<unsafe extern "C" fn(prof_fid: *mut fid_profile, flags: u64)>,
    /// `query_vars`.
    pub query_vars: Option<
        unsafe extern "C" fn(
            prof_fid: *mut fid_profile,
            varlist: *mut fi_profile_desc,
            count: *mut usize,
        ) -> isize,
    >,
    /// `query_events`.
    pub query_events: Option<
        unsafe extern "C" fn(
            prof_fid: *mut fid_profile,
            eventlist: *mut fi_profile_desc,
            count: *mut usize,
        ) -> isize,
    >,
    /// `read_var`.
    pub read_var: Option<
        unsafe extern "C" fn(
            prof_fid: *mut fid_profile,
            var_id: u32,
            data: *mut c_void,
            size: *mut usize,
        ) -> isize,
    >,
    /// `reg_callback`.
    pub reg_callback: Option<
        unsafe extern "C" fn(
            prof_fid: *mut fid_profile,
            event_id: u32,
            callback: Option<
                unsafe extern "C" fn(
                    prof_fid: *mut fid_profile,
                    event: *mut fi_profile_desc,
                    param: *mut c_void,
                    size: usize,
                    context: *mut c_void,
                ) -> c_int,
            >,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `start_reads`.
    pub start_reads: Option<unsafe extern "C" fn(prof_fid: *mut fid_profile, flags: u64)>,
    /// `end_reads`.
    pub end_reads: Option<unsafe extern "C" fn(prof_fid: *mut fid_profile, flags: u64)>,
}

/// `struct fid_profile`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_profile {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_profile_ops,
}
