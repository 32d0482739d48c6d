//! `fid_eq`: thunks onto the engine's event queue.

use crate::boundary::{catch, with_handle};
use crate::handles::*;
use core::ffi::{c_char, c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::error::Error;
use oxifabric::object::{BindRef, Handle};
use oxifabric::service::eq::{Event, EventData, EventQueue};
use std::sync::{Arc, Mutex};

/// The Rust side of an event queue.
pub struct EqObj {
    pub eq: Arc<EventQueue>,
    api_version: u32,
    err_data: Mutex<Vec<u8>>,
    _wait: Option<BindRef>,
    _fabric: BindRef,
}

pub type EqHandle = Handle<fid_eq, EqObj>;

static EQ_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(eq_close),
    bind: Some(crate::nosys::bind),
    control: Some(eq_control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static EQ_OPS: fi_ops_eq = fi_ops_eq {
    size: core::mem::size_of::<fi_ops_eq>(),
    read: Some(eq_read),
    readerr: Some(eq_readerr),
    write: Some(eq_write),
    sread: Some(eq_sread),
    strerror: Some(eq_strerror),
};

/// Wraps an engine event queue in a C handle.
pub fn new_eq(
    eq: Arc<EventQueue>,
    api_version: u32,
    fabric: BindRef,
    wait: Option<BindRef>,
    context: *mut c_void,
) -> *mut fid_eq {
    let c = fid_eq {
        fid: fid {
            fclass: FI_CLASS_EQ as usize,
            context,
            ops: &EQ_FI_OPS as *const _ as *mut _,
        },
        ops: &EQ_OPS as *const _ as *mut _,
    };
    EqHandle::boxed(
        c,
        FI_CLASS_EQ,
        EqObj {
            eq,
            api_version,
            err_data: Mutex::new(Vec::new()),
            _wait: wait,
            _fabric: fabric,
        },
    )
}

/// Recovers an EQ handle.
///
/// # Safety
/// Rule 1 of the pointer contract (crate docs): `f` is NULL or a fid.
pub unsafe fn eq_handle<'a>(f: *const fid) -> Option<&'a EqHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { EqHandle::from_fid(f, FI_CLASS_EQ) }
}

extern "C" fn eq_close(f: *mut fid) -> c_int {
    with_handle!(eq_handle, f, "fi_close(eq)", |h| {
        if h.busy() {
            core_warn!(
                FI_LOG_EQ,
                "fi_close: EQ is still bound to an endpoint or AV"
            );
            return -FI_EBUSY;
        }
        // SAFETY: h is ours (class and magic checked), nothing is bound to
        // it, and by rule 1 the application does not use it after close.
        unsafe { EqHandle::free(h) };
        0
    })
}

extern "C" fn eq_control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    with_handle!(eq_handle, f, "fi_control(eq)", |h| {
        let q = &h.inner.eq;
        // SAFETY: rules 2 and 3, arg is what the command documents.
        unsafe { wait_control(command, arg, q.wait_obj, || q.getwait_fd()) }
    })
}

/// The bytes an event needs in the application's buffer: a buffer smaller
/// than that gets `-FI_ETOOSMALL` and the event stays queued. A connection
/// event needs its fixed entry only: connection data beyond the buffer is
/// dropped, as Debian's libfabric does, since programs commonly read
/// `FI_CONNREQ` into a bare `struct fi_eq_cm_entry` and would otherwise
/// never get past it.
fn event_size(ev: &Event) -> usize {
    match &ev.data {
        EventData::Entry { .. } => core::mem::size_of::<fi_eq_entry>(),
        EventData::Cm { .. } => core::mem::size_of::<fi_eq_cm_entry>(),
        EventData::Raw(bytes) => bytes.len(),
    }
}

/// Copies an event's payload into the application's buffer; the number of
/// bytes, or `-FI_ETOOSMALL`.
///
/// # Safety
/// `buf` is NULL or valid for writes of `len` bytes (rule 3); it need not
/// be aligned.
unsafe fn copy_event(ev: &Event, buf: *mut c_void, len: usize) -> isize {
    match &ev.data {
        EventData::Entry { fid, context, data } => {
            let n = core::mem::size_of::<fi_eq_entry>();
            if buf.is_null() || len < n {
                return -FI_ETOOSMALL as isize;
            }
            let entry = fi_eq_entry {
                fid: *fid as *mut fid,
                context: *context as *mut c_void,
                data: *data,
            };
            // SAFETY: buf has room for the entry (checked above).
            unsafe { (buf as *mut fi_eq_entry).write_unaligned(entry) };
            n as isize
        }
        EventData::Cm { fid, info, data } => {
            let head = core::mem::size_of::<fi_eq_cm_entry>();
            let n = head + data.len();
            if buf.is_null() || len < head {
                return -FI_ETOOSMALL as isize;
            }
            let info_ptr = match info {
                Some(i) => {
                    let p = i.to_c();
                    if p.is_null() {
                        return -FI_ENOMEM as isize;
                    }
                    p
                }
                None => core::ptr::null_mut(),
            };
            let e = buf as *mut fi_eq_cm_entry;
            let room = (len - head).min(data.len());
            // SAFETY: buf has room for the entry's head (checked above)
            // and then for `room` <= len - head bytes of connection data.
            unsafe {
                core::ptr::addr_of_mut!((*e).fid).write_unaligned(*fid as *mut fid);
                core::ptr::addr_of_mut!((*e).info).write_unaligned(info_ptr);
                core::ptr::copy_nonoverlapping(data.as_ptr(), (buf as *mut u8).add(head), room);
            }
            (head + room).min(n) as isize
        }
        EventData::Raw(bytes) => {
            if buf.is_null() && !bytes.is_empty() {
                return -FI_ETOOSMALL as isize;
            }
            let n = bytes.len().min(len);
            if n > 0 {
                // SAFETY: buf is not NULL here and has len >= n bytes.
                unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, n) };
            }
            n as isize
        }
    }
}

/// `fi_eq_read`, and `fi_eq_sread` with a timeout.
///
/// # Safety
/// `event` is NULL or a writable `uint32_t`, `buf` NULL or writable for
/// `len` bytes (rule 3).
unsafe fn read_common(
    h: &EqHandle,
    event: *mut u32,
    buf: *mut c_void,
    len: usize,
    timeout: Option<c_int>,
    flags: u64,
) -> isize {
    if event.is_null() {
        core_warn!(FI_LOG_EQ, "fi_eq_read: event is NULL");
        return -FI_EINVAL as isize;
    }
    if flags & !FI_PEEK != 0 {
        core_warn!(FI_LOG_EQ, "fi_eq_read: unsupported flags {flags:#x}");
        return -FI_EBADFLAGS as isize;
    }
    let peek = flags & FI_PEEK != 0;
    // A NULL buffer takes just the event's type (the entry is consumed and
    // 0 returned), as upstream's utility EQ does; fabtests' collective
    // test waits for FI_JOIN_COMPLETE that way.
    let fits = |ev: &Event| buf.is_null() || len >= event_size(ev);
    let r = match timeout {
        None => h.inner.eq.read_fitting(peek, fits),
        Some(t) => {
            if h.inner.eq.wait_obj == FI_WAIT_NONE {
                core_warn!(
                    FI_LOG_EQ,
                    "fi_eq_sread: the EQ was opened with FI_WAIT_NONE"
                );
                return -FI_EINVAL as isize;
            }
            h.inner.eq.sread_fitting(peek, t, fits)
        }
    };
    match r {
        // SAFETY: event is not NULL (checked above).
        Ok(ev) if buf.is_null() => unsafe {
            *event = ev.event;
            0
        },
        // SAFETY: event is not NULL (checked above); buf by the caller's
        // promise.
        Ok(ev) => unsafe {
            *event = ev.event;
            copy_event(&ev, buf, len)
        },
        Err(e) => e.code() as isize,
    }
}

extern "C" fn eq_read(
    eq: *mut fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: usize,
    flags: u64,
) -> isize {
    with_handle!(eq_handle, eq, "fi_eq_read", |h| {
        // SAFETY: rule 3 for event and buf.
        unsafe { read_common(h, event, buf, len, None, flags) }
    })
}

extern "C" fn eq_sread(
    eq: *mut fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: usize,
    timeout: c_int,
    flags: u64,
) -> isize {
    with_handle!(eq_handle, eq, "fi_eq_sread", |h| {
        // SAFETY: rule 3 for event and buf.
        unsafe { read_common(h, event, buf, len, Some(timeout), flags) }
    })
}

extern "C" fn eq_readerr(eq: *mut fid_eq, buf: *mut fi_eq_err_entry, flags: u64) -> isize {
    with_handle!(eq_handle, eq, "fi_eq_readerr", |h| {
        if buf.is_null() {
            return -FI_EINVAL as isize;
        }
        if flags & !FI_PEEK != 0 {
            return -FI_EBADFLAGS as isize;
        }
        let e = match h.inner.eq.readerr(flags & FI_PEEK != 0) {
            Ok(e) => e,
            Err(e) => return e.code() as isize,
        };
        // The application's struct is as large as its API version says.
        let n = oxifabric::compat::eq_err_entry_size(h.inner.api_version);
        let new_layout = n > core::mem::offset_of!(fi_eq_err_entry, err_data_size);
        let user = if new_layout {
            // SAFETY: rule 2, a 1.5+ caller's buf is a readable
            // fi_eq_err_entry whose err_data fields say where data goes.
            unsafe { ((*buf).err_data, (*buf).err_data_size) }
        } else {
            (core::ptr::null_mut(), 0)
        };
        // SAFETY: rule 3, err_data is NULL or writable for err_data_size.
        let (err_data, err_data_size) =
            unsafe { place_err_data(&e.err_data, user, &h.inner.err_data) };
        let entry = fi_eq_err_entry {
            fid: e.fid as *mut fid,
            context: e.context as *mut c_void,
            data: e.data,
            err: e.err,
            prov_errno: e.prov_errno,
            err_data,
            err_data_size,
        };
        // SAFETY: rule 3, buf is the caller's entry of its API's size.
        unsafe { write_err_entry(&entry, buf, n) };
        n as isize
    })
}

extern "C" fn eq_write(
    eq: *mut fid_eq,
    event: u32,
    buf: *const c_void,
    len: usize,
    flags: u64,
) -> isize {
    with_handle!(eq_handle, eq, "fi_eq_write", |h| {
        if buf.is_null() && len > 0 {
            return -FI_EINVAL as isize;
        }
        let bytes = if len == 0 {
            Vec::new()
        } else {
            // SAFETY: rule 2, buf holds len readable bytes.
            unsafe { core::slice::from_raw_parts(buf as *const u8, len) }.to_vec()
        };
        if flags != 0 {
            core_warn!(FI_LOG_EQ, "fi_eq_write: unsupported flags {flags:#x}");
            return -FI_EBADFLAGS as isize;
        }
        match h.inner.eq.push(Event {
            event,
            data: EventData::Raw(bytes),
        }) {
            Ok(()) => len as isize,
            Err(Error::Again) => -FI_EAGAIN as isize,
            Err(e) => e.code() as isize,
        }
    })
}

extern "C" fn eq_strerror(
    eq: *mut fid_eq,
    prov_errno: c_int,
    err_data: *const c_void,
    buf: *mut c_char,
    len: usize,
) -> *const c_char {
    catch(|| {
        // SAFETY: rule 1, eq is NULL or a fid; rule 3, buf is NULL or
        // writable for len bytes.
        unsafe {
            let h = eq_handle(eq as *const fid);
            crate::err_text::error_text(
                h.map(|h| &h.inner.err_data),
                prov_errno,
                err_data,
                buf,
                len,
            )
        }
    })
}

/// `fi_trywait` for one fid, if it is an EQ.
///
/// # Safety
/// Rule 1: `f` is NULL or a fid.
pub unsafe fn trywait_one(f: *mut fid) -> Option<c_int> {
    // SAFETY: the caller's promise.
    let h = unsafe { eq_handle(f) }?;
    Some(rc(h.inner.eq.trywait()))
}
