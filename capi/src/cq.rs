//! `fid_cq`: thunks onto the engine's completion queue, writing entries in
//! the application's `fi_cq_format` and error entries in the layout its API
//! version knows.

use crate::boundary::{catch, with_handle};
use crate::domain::domain_handle;
use crate::handles::*;
use core::ffi::{c_char, c_int, c_void};
use core::mem::offset_of;
use oxifabric::abi::*;
use oxifabric::compat;
use oxifabric::core_warn;
use oxifabric::object::{BindRef, Handle};
use oxifabric::service::cq::{Completion, CompletionQueue, CqAttr};
use std::sync::{Arc, Mutex};

/// The Rust side of a completion queue.
pub struct CqObj {
    pub cq: Arc<CompletionQueue>,
    api_version: u32,
    /// Keeps the last error's data alive for callers that let the provider
    /// own it (API < 1.5 or `err_data_size == 0`).
    err_data: Mutex<Vec<u8>>,
    _wait: Option<BindRef>,
    _domain: BindRef,
}

impl CqObj {
    /// The bind on the domain it was opened on (endpoints check that
    /// what they bind comes from their own domain).
    pub(crate) fn domain_ref(&self) -> &BindRef {
        &self._domain
    }
}

pub type CqHandle = Handle<fid_cq, CqObj>;

static CQ_FI_OPS: fi_ops = fi_ops {
    size: core::mem::size_of::<fi_ops>(),
    close: Some(cq_close),
    bind: Some(crate::nosys::bind),
    control: Some(cq_control),
    ops_open: Some(crate::nosys::ops_open),
    tostr: Some(crate::nosys::tostr),
    ops_set: Some(crate::nosys::ops_set),
};

static CQ_OPS: fi_ops_cq = fi_ops_cq {
    size: core::mem::size_of::<fi_ops_cq>(),
    read: Some(cq_read),
    readfrom: Some(cq_readfrom),
    readerr: Some(cq_readerr),
    sread: Some(cq_sread),
    sreadfrom: Some(cq_sreadfrom),
    signal: Some(cq_signal),
    strerror: Some(cq_strerror),
};

/// `fi_cq_open`.
pub(crate) extern "C" fn domain_cq_open(
    domain: *mut fid_domain,
    attr: *mut fi_cq_attr,
    cq: *mut *mut fid_cq,
    context: *mut c_void,
) -> c_int {
    with_handle!(domain_handle, domain, "fi_cq_open", |d| {
        // SAFETY: rule 2, attr is NULL or a readable fi_cq_attr.
        let (Some(a), false) = (unsafe { attr.as_ref() }, cq.is_null()) else {
            core_warn!(FI_LOG_CQ, "fi_cq_open: attr or cq is NULL");
            return -FI_EINVAL;
        };
        if a.flags & !FI_AFFINITY != 0 {
            core_warn!(FI_LOG_CQ, "fi_cq_open: unsupported flags {:#x}", a.flags);
            return -FI_EBADFLAGS;
        }
        let q = match CompletionQueue::new(CqAttr {
            size: a.size,
            format: a.format,
            wait_obj: a.wait_obj,
            wait_cond: a.wait_cond,
        }) {
            Ok(q) => Arc::new(q),
            Err(e) => {
                core_warn!(
                    FI_LOG_CQ,
                    "fi_cq_open: unsupported attributes (size {}, format {}, wait_obj {}, wait_cond {})",
                    a.size,
                    a.format,
                    a.wait_obj,
                    a.wait_cond
                );
                return e.code();
            }
        };
        if let Some(p) = d.inner.ops.progress() {
            q.add_source(Arc::downgrade(&p));
        }
        let member: std::sync::Weak<dyn oxifabric::service::waitset::Waitable> =
            Arc::downgrade(&q) as _;
        // SAFETY: rule 1, wait_set is NULL or a fid.
        let wait_bind = match unsafe { crate::wait::join(a.wait_obj, a.wait_set, member) } {
            Ok(b) => b,
            Err(e) => return e,
        };
        let c = fid_cq {
            fid: fid {
                fclass: FI_CLASS_CQ as usize,
                context,
                ops: &CQ_FI_OPS as *const _ as *mut _,
            },
            ops: &CQ_OPS as *const _ as *mut _,
        };
        let obj = CqObj {
            cq: q,
            api_version: d.inner.api_version,
            err_data: Mutex::new(Vec::new()),
            _wait: wait_bind,
            _domain: BindRef::new(&d.binds),
        };
        // SAFETY: rule 3, cq is not NULL (checked above).
        unsafe { *cq = CqHandle::boxed(c, FI_CLASS_CQ, obj) };
        0
    })
}

/// Recovers a CQ handle.
///
/// # Safety
/// Rule 1 of the pointer contract (crate docs): `f` is NULL or a fid.
pub unsafe fn cq_handle<'a>(f: *const fid) -> Option<&'a CqHandle> {
    // SAFETY: the caller's promise is what from_fid needs.
    unsafe { CqHandle::from_fid(f, FI_CLASS_CQ) }
}

extern "C" fn cq_close(f: *mut fid) -> c_int {
    with_handle!(cq_handle, f, "fi_close(cq)", |h| {
        if h.busy() {
            core_warn!(FI_LOG_CQ, "fi_close: CQ is still bound to an endpoint");
            return -FI_EBUSY;
        }
        // SAFETY: h is ours (class and magic checked), nothing is bound to
        // it, and by rule 1 the application does not use it after close.
        unsafe { CqHandle::free(h) };
        0
    })
}

extern "C" fn cq_control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    with_handle!(cq_handle, f, "fi_control(cq)", |h| {
        let q = &h.inner.cq;
        // SAFETY: rules 2 and 3, arg is what the command documents.
        unsafe { wait_control(command, arg, q.wait_obj, || q.getwait_fd()) }
    })
}

/// Size of one entry of a format.
fn entry_size(format: fi_cq_format) -> usize {
    match format {
        FI_CQ_FORMAT_MSG => core::mem::size_of::<fi_cq_msg_entry>(),
        FI_CQ_FORMAT_DATA => core::mem::size_of::<fi_cq_data_entry>(),
        FI_CQ_FORMAT_TAGGED => core::mem::size_of::<fi_cq_tagged_entry>(),
        _ => core::mem::size_of::<fi_cq_entry>(),
    }
}

/// Writes completion `c` as entry `i` of the application's array.
///
/// # Safety
/// `buf` is valid for writes of `i + 1` entries of `format` (rule 3); it
/// need not be aligned.
unsafe fn write_entry(buf: *mut c_void, format: fi_cq_format, i: usize, c: &Completion) {
    let op_context = c.op_context as *mut c_void;
    let buf_ptr = c.buf as *mut c_void;
    // SAFETY: entry i of this format lies inside the caller's buffer, and
    // each arm writes exactly one entry of that format, unaligned.
    unsafe {
        let p = (buf as *mut u8).add(i * entry_size(format));
        match format {
            FI_CQ_FORMAT_MSG => (p as *mut fi_cq_msg_entry).write_unaligned(fi_cq_msg_entry {
                op_context,
                flags: c.flags,
                len: c.len,
            }),
            FI_CQ_FORMAT_DATA => (p as *mut fi_cq_data_entry).write_unaligned(fi_cq_data_entry {
                op_context,
                flags: c.flags,
                len: c.len,
                buf: buf_ptr,
                data: c.data,
            }),
            FI_CQ_FORMAT_TAGGED => {
                (p as *mut fi_cq_tagged_entry).write_unaligned(fi_cq_tagged_entry {
                    op_context,
                    flags: c.flags,
                    len: c.len,
                    buf: buf_ptr,
                    data: c.data,
                    tag: c.tag,
                })
            }
            _ => (p as *mut fi_cq_entry).write_unaligned(fi_cq_entry { op_context }),
        }
    }
}

/// `fi_cq_read` and its variants: `src` (may be NULL) receives source
/// addresses, `block` is the condition and timeout of a blocking read.
///
/// # Safety
/// `buf` holds `count` entries of the CQ's format and `src` is NULL or
/// holds `count` addresses (rule 3); `cond` is NULL or a `size_t` (rule 2).
unsafe fn read_common(
    h: &CqHandle,
    buf: *mut c_void,
    count: usize,
    src: *mut fi_addr_t,
    block: Option<(*const c_void, c_int)>,
) -> isize {
    if buf.is_null() && count > 0 {
        core_warn!(FI_LOG_CQ, "fi_cq_read: buf is NULL");
        return -FI_EINVAL as isize;
    }
    let q = &h.inner.cq;
    let format = q.format;
    // The queue hands out at most `count` entries, so i < count.
    let out = |i: usize, c: &Completion| {
        // SAFETY: entry i < count of the caller's buffer.
        unsafe { write_entry(buf, format, i, c) };
        if !src.is_null() {
            // SAFETY: address i < count of the caller's array.
            unsafe { *src.add(i) = c.src };
        }
    };
    let r = match block {
        None => q.read(count, out),
        // fi_cq(3) forbids fi_cq_sread on an FI_WAIT_NONE CQ; upstream's
        // providers wait all the same (driving progress, with the
        // timeout), and so does this one: every CQ has a signal.
        Some((cond, timeout)) => {
            let threshold = if cond.is_null() {
                1
            } else {
                // SAFETY: a non-NULL cond is the threshold, a size_t.
                unsafe { (cond as *const usize).read_unaligned() }
            };
            q.sread(count, threshold, timeout, out)
        }
    };
    rcs(r)
}

// The four reads: rules 2 and 3 give read_common what it needs.

extern "C" fn cq_read(cq: *mut fid_cq, buf: *mut c_void, count: usize) -> isize {
    with_handle!(cq_handle, cq, "fi_cq_read", |h| {
        // SAFETY: see above.
        unsafe { read_common(h, buf, count, core::ptr::null_mut(), None) }
    })
}

extern "C" fn cq_readfrom(
    cq: *mut fid_cq,
    buf: *mut c_void,
    count: usize,
    src: *mut fi_addr_t,
) -> isize {
    with_handle!(cq_handle, cq, "fi_cq_readfrom", |h| {
        // SAFETY: see above.
        unsafe { read_common(h, buf, count, src, None) }
    })
}

extern "C" fn cq_sread(
    cq: *mut fid_cq,
    buf: *mut c_void,
    count: usize,
    cond: *const c_void,
    timeout: c_int,
) -> isize {
    with_handle!(cq_handle, cq, "fi_cq_sread", |h| {
        let block = Some((cond, timeout));
        // SAFETY: see above.
        unsafe { read_common(h, buf, count, core::ptr::null_mut(), block) }
    })
}

extern "C" fn cq_sreadfrom(
    cq: *mut fid_cq,
    buf: *mut c_void,
    count: usize,
    src: *mut fi_addr_t,
    cond: *const c_void,
    timeout: c_int,
) -> isize {
    with_handle!(cq_handle, cq, "fi_cq_sreadfrom", |h| {
        // SAFETY: see above.
        unsafe { read_common(h, buf, count, src, Some((cond, timeout))) }
    })
}

extern "C" fn cq_readerr(cq: *mut fid_cq, buf: *mut fi_cq_err_entry, flags: u64) -> isize {
    with_handle!(cq_handle, cq, "fi_cq_readerr", |h| {
        if buf.is_null() {
            core_warn!(FI_LOG_CQ, "fi_cq_readerr: buf is NULL");
            return -FI_EINVAL as isize;
        }
        if flags != 0 {
            core_warn!(FI_LOG_CQ, "fi_cq_readerr: unsupported flags {flags:#x}");
            return -FI_EBADFLAGS as isize;
        }
        let e = match h.inner.cq.readerr() {
            Ok(e) => e,
            Err(e) => return e.code() as isize,
        };
        // The application's struct is as large as its API version says.
        let n = compat::cq_err_entry_size(h.inner.api_version);
        let new_layout = n > offset_of!(fi_cq_err_entry, err_data_size);
        // What the application asked for: its own buffer for err_data.
        let user_data = if new_layout {
            // SAFETY: rule 2, a 1.5+ caller's buf is a readable
            // fi_cq_err_entry whose err_data fields say where data goes.
            unsafe { ((*buf).err_data, (*buf).err_data_size) }
        } else {
            (core::ptr::null_mut(), 0)
        };
        // SAFETY: rule 3, err_data is NULL or writable for err_data_size.
        let (err_data, err_data_size) =
            unsafe { place_err_data(&e.err_data, user_data, &h.inner.err_data) };
        let entry = fi_cq_err_entry {
            op_context: e.comp.op_context as *mut c_void,
            flags: e.comp.flags,
            len: e.comp.len,
            buf: e.comp.buf as *mut c_void,
            data: e.comp.data,
            tag: e.comp.tag,
            olen: e.olen,
            err: e.err,
            prov_errno: e.prov_errno,
            err_data,
            err_data_size,
            src_addr: e.comp.src,
        };
        // SAFETY: rule 3, buf is the caller's entry of its API's size.
        unsafe { write_err_entry(&entry, buf, n) };
        1
    })
}

extern "C" fn cq_signal(cq: *mut fid_cq) -> c_int {
    with_handle!(cq_handle, cq, "fi_cq_signal", |h| {
        h.inner.cq.interrupt();
        0
    })
}

extern "C" fn cq_strerror(
    cq: *mut fid_cq,
    prov_errno: c_int,
    err_data: *const c_void,
    buf: *mut c_char,
    len: usize,
) -> *const c_char {
    catch(|| {
        // SAFETY: rule 1, cq is NULL or a fid; rule 3, buf is NULL or
        // writable for len bytes.
        unsafe {
            let h = cq_handle(cq as *const fid);
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

/// `fi_trywait` for one fid, if it is a CQ: 0 when the caller may block.
///
/// # Safety
/// Rule 1: `f` is NULL or a fid.
pub unsafe fn trywait_one(f: *mut fid) -> Option<c_int> {
    // SAFETY: the caller's promise.
    let h = unsafe { cq_handle(f) }?;
    Some(rc(h.inner.cq.trywait()))
}
