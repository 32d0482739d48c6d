//! `fi_ops_rma`: `fi_read*`, `fi_write*`, `fi_inject_write*`,
//! `fi_writedata` onto `EndpointOps::rma`. The local buffers go through
//! the same conversion as sends (`data::with_bufs`); the remote side
//! (`fi_rma_iov` list, or one address and key) becomes [`RmaIov`]s, at
//! most the endpoint's `rma_iov_limit`, whose total length must equal the
//! local one.

use super::data::{with_bufs, CBufs, NullBuf, SendFlags};
use super::ep_handle;
use super::trigger::{dispatch, Post};
use crate::boundary::catch;
use crate::handles::*;
use core::ffi::c_void;
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::ops::{iov_len, IoBuf, IoVec, MemDesc, RmaIov, RmaOp};
use std::sync::atomic::Ordering;

/// Where the remote side of an operation comes from in C.
enum CRma {
    /// One address and key for the whole local length (`fi_read`, ...).
    One(u64, u64),
    /// An `fi_rma_iov` array and its count (`fi_readmsg`, `fi_writemsg`).
    Many(*const fi_rma_iov, usize),
}

/// Flags an RMA (or atomic) operation may carry.
pub(super) const RMA_FLAGS: u64 = FI_COMPLETION
    | FI_INJECT
    | FI_INJECT_COMPLETE
    | FI_TRANSMIT_COMPLETE
    | FI_DELIVERY_COMPLETE
    | FI_COMMIT_COMPLETE
    | FI_REMOTE_CQ_DATA
    | FI_MORE
    | FI_FENCE
    | FI_TRIGGER;

/// Posts an RMA operation as `post` says.
///
/// # Safety
/// `ep` is NULL or from `fi_endpoint`; `bufs` as for `data::convert`; for
/// `CRma::Many`, the pointer is NULL or holds `count` entries; with
/// `FI_TRIGGER`, `context` as for `trigger::deferral`.
#[allow(clippy::too_many_arguments)]
unsafe fn rma(
    ep: *mut fid_ep,
    write: bool,
    bufs: CBufs,
    dest: fi_addr_t,
    remote: CRma,
    context: *mut c_void,
    how: SendFlags,
    data: Option<u64>,
    post: Post,
) -> isize {
    let what = if write { "fi_write" } else { "fi_read" };
    // SAFETY: the caller's contract on `ep`.
    let Some(h) = (unsafe { ep_handle(ep as *const fid) }) else {
        return bad_fid(what) as isize;
    };
    let defaults = h.inner.tx_flags.load(Ordering::Relaxed);
    let (flags, internal) = match how.resolve(defaults, RMA_FLAGS, what) {
        Ok(x) => x,
        Err(e) => return e as isize,
    };
    let body = |iov: &[IoBuf], desc: &[MemDesc]| -> isize {
        let local = iov_len(iov);
        let issue = |rma: &[RmaIov]| -> isize {
            let remote_len = rma.iter().try_fold(0usize, |a, r| a.checked_add(r.len));
            if remote_len != Some(local) {
                core_warn!(
                    FI_LOG_EP_DATA,
                    "{what}: {local} local bytes but {remote_len:?} remote bytes"
                );
                return -FI_EINVAL as isize;
            }
            let op = RmaOp {
                write,
                iov,
                desc,
                dest,
                rma,
                context: context as usize,
                flags: flags & !FI_TRIGGER,
                internal,
                data: data.filter(|_| write && flags & FI_REMOTE_CQ_DATA != 0),
            };
            // SAFETY: the caller's contract on `context`.
            unsafe { dispatch(h, post, flags, context as usize, what, &op) }
        };
        match remote {
            CRma::One(addr, key) => issue(&[RmaIov {
                addr,
                len: local,
                key,
            }]),
            CRma::Many(p, count) => {
                if p.is_null() || count == 0 || count > h.inner.rma_iov_limit {
                    core_warn!(
                        FI_LOG_EP_DATA,
                        "{what}: rma_iov count {count} (NULL, 0 or above rma_iov_limit {})",
                        h.inner.rma_iov_limit
                    );
                    return -FI_EINVAL as isize;
                }
                let mut rma = [RmaIov::default(); IoVec::CAP];
                for (i, slot) in rma.iter_mut().enumerate().take(count) {
                    // SAFETY: `p` holds `count` entries (the caller's contract).
                    let e = unsafe { &*p.add(i) };
                    *slot = RmaIov {
                        addr: e.addr,
                        len: e.len,
                        key: e.key,
                    };
                }
                issue(&rma[..count])
            }
        }
    };
    // SAFETY: the caller's contract on `bufs`.
    unsafe { with_bufs(bufs, h.inner.tx_iov_limit, NullBuf::Refuse, body) }
}

/// `fi_readmsg` and `fi_writemsg`.
///
/// # Safety
/// `msg` is NULL or a valid `fi_msg_rma` whose arrays hold their counts;
/// `ep` as for [`rma`].
unsafe fn rma_msg(ep: *mut fid_ep, write: bool, msg: *const fi_msg_rma, flags: u64) -> isize {
    // SAFETY: the caller's contract.
    unsafe { rma_msg_as(ep, write, msg, flags, Post::Now) }
}

/// [`rma_msg`], posted as `post` says (deferred work: `deferred.rs`).
///
/// # Safety
/// As for [`rma_msg`].
pub(super) unsafe fn rma_msg_as(
    ep: *mut fid_ep,
    write: bool,
    msg: *const fi_msg_rma,
    flags: u64,
    post: Post,
) -> isize {
    // SAFETY: the caller's contract on `msg`.
    let Some(m) = (unsafe { msg.as_ref() }) else {
        core_warn!(FI_LOG_EP_DATA, "fi_readmsg/fi_writemsg: msg is NULL");
        return -FI_EINVAL as isize;
    };
    // SAFETY: forwarded under the caller's contract.
    unsafe {
        rma(
            ep,
            write,
            CBufs::Many(m.msg_iov, m.desc, m.iov_count),
            m.addr,
            CRma::Many(m.rma_iov, m.rma_iov_count),
            m.context,
            // FI_INJECT here only lets the buffer be reused at once: the
            // operation still completes.
            SendFlags::Given(flags),
            Some(m.data),
            post,
        )
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn read(
    ep: *mut fid_ep,
    buf: *mut c_void,
    len: usize,
    desc: *mut c_void,
    src: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    catch(|| {
        // SAFETY: C's contract for fi_read: `buf` valid for `len` bytes
        // until completion.
        unsafe {
            rma(
                ep,
                false,
                CBufs::One(buf, len, desc),
                src,
                CRma::One(addr, key),
                context,
                SendFlags::Default,
                None,
                Post::Now,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn readv(
    ep: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: usize,
    src: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    catch(|| {
        // SAFETY: C's contract: `iov` and `desc` hold `count` entries.
        unsafe {
            rma(
                ep,
                false,
                CBufs::Many(iov, desc, count),
                src,
                CRma::One(addr, key),
                context,
                SendFlags::Default,
                None,
                Post::Now,
            )
        }
    })
}

unsafe extern "C" fn readmsg(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize {
    // SAFETY: C's contract: `msg` NULL or a valid message.
    catch(|| unsafe { rma_msg(ep, false, msg, flags) })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn write(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    catch(|| {
        // SAFETY: C's contract for fi_write: `buf` valid for `len` bytes
        // until completion.
        unsafe {
            rma(
                ep,
                true,
                CBufs::One(buf, len, desc),
                dest,
                CRma::One(addr, key),
                context,
                SendFlags::Default,
                None,
                Post::Now,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn writev(
    ep: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: usize,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    catch(|| {
        // SAFETY: C's contract: `iov` and `desc` hold `count` entries.
        unsafe {
            rma(
                ep,
                true,
                CBufs::Many(iov, desc, count),
                dest,
                CRma::One(addr, key),
                context,
                SendFlags::Default,
                None,
                Post::Now,
            )
        }
    })
}

unsafe extern "C" fn writemsg(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize {
    // SAFETY: C's contract: `msg` NULL or a valid message.
    catch(|| unsafe { rma_msg(ep, true, msg, flags) })
}

unsafe extern "C" fn inject(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
) -> isize {
    catch(|| {
        // SAFETY: C's contract: `buf` valid for `len` bytes during the
        // call (the provider copies it at once).
        unsafe {
            rma(
                ep,
                true,
                CBufs::One(buf, len, core::ptr::null_mut()),
                dest,
                CRma::One(addr, key),
                core::ptr::null_mut(),
                SendFlags::Inject(FI_INJECT),
                None,
                Post::Now,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn writedata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    data: u64,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    catch(|| {
        // SAFETY: as for `write`.
        unsafe {
            rma(
                ep,
                true,
                CBufs::One(buf, len, desc),
                dest,
                CRma::One(addr, key),
                context,
                SendFlags::DefaultPlus(FI_REMOTE_CQ_DATA),
                Some(data),
                Post::Now,
            )
        }
    })
}

unsafe extern "C" fn injectdata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    data: u64,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
) -> isize {
    catch(|| {
        // SAFETY: as for `inject`.
        unsafe {
            rma(
                ep,
                true,
                CBufs::One(buf, len, core::ptr::null_mut()),
                dest,
                CRma::One(addr, key),
                core::ptr::null_mut(),
                SendFlags::Inject(FI_INJECT | FI_REMOTE_CQ_DATA),
                Some(data),
                Post::Now,
            )
        }
    })
}

/// The RMA table of every active endpoint; providers without RMA answer
/// `-FI_ENOSYS` from `EndpointOps::rma`.
pub(super) static EP_RMA_OPS: fi_ops_rma = fi_ops_rma {
    size: core::mem::size_of::<fi_ops_rma>(),
    read: Some(read),
    readv: Some(readv),
    readmsg: Some(readmsg),
    write: Some(write),
    writev: Some(writev),
    writemsg: Some(writemsg),
    inject: Some(inject),
    writedata: Some(writedata),
    injectdata: Some(injectdata),
};
