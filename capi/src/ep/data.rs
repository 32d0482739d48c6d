//! The data path shared by `fi_ops_msg` and `fi_ops_tagged`: turning C
//! buffers, descriptors and flags into a [`SendOp`]/[`RecvOp`] without
//! allocating, and the macro that writes both thunk families from one
//! definition (they differ only in the tag arguments and the message
//! struct).

use super::ep_handle;
use super::trigger::{dispatch, Post};
use crate::handles::*;
use core::ffi::{c_int, c_void};
use oxifabric::abi::*;
use oxifabric::core_warn;
use oxifabric::ops::{internal, IoBuf, IoVec, MemDesc, RecvOp, SendOp};
use std::sync::atomic::Ordering;

/// Where an operation's buffers come from in C.
pub(super) enum CBufs {
    /// One buffer (`fi_send`, `fi_recv`, ...), with its descriptor.
    One(*const c_void, usize, *mut c_void),
    /// An iovec and its descriptor array (`fi_sendv`, `fi_sendmsg`, ...).
    Many(*const iovec, *mut *mut c_void, usize),
}

/// What a NULL buffer with a length means.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum NullBuf {
    /// An error (`-FI_EINVAL`): the operation would read or write there.
    Refuse,
    /// An empty buffer: a receive the application expects only empty
    /// messages into (upstream accepts such posts). Nothing is ever
    /// written through it; a message with data truncates (`FI_ETRUNC`).
    Empty,
}

/// Buffers and descriptors converted at the boundary.
pub(super) struct Bufs {
    pub(super) iov: IoVec,
    desc: [MemDesc; IoVec::CAP],
    ndesc: usize,
}

impl Bufs {
    pub(super) fn desc(&self) -> &[MemDesc] {
        &self.desc[..self.ndesc]
    }
}

/// Runs `f` on `src` converted to engine buffers and descriptors and
/// returns its C code, or the conversion's error: more than `limit`
/// entries (the endpoint's `iov_limit`), a NULL buffer with a length
/// (unless `null` says it is an empty buffer). One
/// buffer (every `fi_send`/`fi_recv`-style call) is converted in place on
/// the stack: the per-message path builds no iovec copy.
///
/// # Safety
/// For `One`, the pointer is NULL or valid for `len` bytes until the
/// operation completes. For `Many`, `iov` is NULL or points to `count`
/// iovecs, and `desc` is NULL or points to `count` descriptors.
#[inline(always)]
pub(super) unsafe fn with_bufs(
    src: CBufs,
    limit: usize,
    null: NullBuf,
    f: impl FnOnce(&[IoBuf], &[MemDesc]) -> isize,
) -> isize {
    match src {
        CBufs::One(buf, len, desc) => {
            let Some(len) = buf_len(buf, len, null) else {
                return null_buffer(len) as isize;
            };
            // SAFETY: the caller's contract: valid for `len` bytes until the
            // operation completes (NULL only with a length of 0).
            let b = [unsafe { IoBuf::new(buf as *mut u8, len) }];
            let d = [desc as MemDesc];
            f(&b, &d[..usize::from(!desc.is_null())])
        }
        // SAFETY: forwarded under the same contract.
        many => match unsafe { convert(many, limit, null) } {
            Ok(b) => f(&b.iov, b.desc()),
            Err(e) => e as isize,
        },
    }
}

/// The length a buffer is taken with: `len`, 0 for a NULL buffer that
/// `null` calls empty, None for a NULL buffer with a length it refuses.
#[inline(always)]
fn buf_len(base: *const c_void, len: usize, null: NullBuf) -> Option<usize> {
    match (base.is_null() && len > 0, null) {
        (false, _) => Some(len),
        (true, NullBuf::Empty) => Some(0),
        (true, NullBuf::Refuse) => None,
    }
}

#[cold]
fn null_buffer(len: usize) -> c_int {
    core_warn!(FI_LOG_EP_DATA, "NULL buffer with length {len}");
    -FI_EINVAL
}

/// Converts `src`, refusing more than `limit` entries (the endpoint's
/// `iov_limit`) and NULL buffers with a length (as `null` says).
///
/// # Safety
/// As for [`with_bufs`].
pub(super) unsafe fn convert(src: CBufs, limit: usize, null: NullBuf) -> Result<Bufs, c_int> {
    let mut out = Bufs {
        iov: IoVec::default(),
        desc: [0; IoVec::CAP],
        ndesc: 0,
    };
    let mut add = |base: *const c_void, len: usize, desc: *mut c_void| {
        let Some(len) = buf_len(base, len, null) else {
            return Err(null_buffer(len));
        };
        // SAFETY: the caller's contract: valid for `len` bytes until the
        // operation completes (NULL only with a length of 0).
        let b = unsafe { IoBuf::new(base as *mut u8, len) };
        out.iov.push(b).ok_or(-FI_EINVAL)?;
        out.desc[out.ndesc] = desc as MemDesc;
        out.ndesc += 1;
        Ok(())
    };
    match src {
        CBufs::One(buf, len, desc) => add(buf, len, desc)?,
        CBufs::Many(iov, desc, count) => {
            if count > limit {
                core_warn!(
                    FI_LOG_EP_DATA,
                    "iov count {count} exceeds the endpoint's iov_limit {limit}"
                );
                return Err(-FI_EINVAL);
            }
            if iov.is_null() && count > 0 {
                core_warn!(FI_LOG_EP_DATA, "NULL iov with count {count}");
                return Err(-FI_EINVAL);
            }
            for i in 0..count {
                // SAFETY: `iov` points to `count` entries (caller's contract).
                let e = unsafe { &*iov.add(i) };
                let d = if desc.is_null() {
                    core::ptr::null_mut()
                } else {
                    // SAFETY: a non-NULL `desc` has `count` entries.
                    unsafe { *desc.add(i) }
                };
                add(e.iov_base, e.iov_len, d)?;
            }
            if desc.is_null() {
                out.ndesc = 0;
            }
        }
    }
    if let CBufs::One(_, _, d) = src {
        if d.is_null() {
            out.ndesc = 0;
        }
    }
    Ok(out)
}

const SEND_FLAGS: u64 = FI_COMPLETION
    | FI_INJECT
    | FI_INJECT_COMPLETE
    | FI_TRANSMIT_COMPLETE
    | FI_DELIVERY_COMPLETE
    | FI_REMOTE_CQ_DATA
    | FI_MORE
    | FI_FENCE
    | FI_MULTICAST
    | FI_MATCH_COMPLETE
    | FI_TRIGGER;
const RECV_FLAGS: u64 =
    FI_COMPLETION | FI_MULTI_RECV | FI_MORE | FI_PEEK | FI_CLAIM | FI_DISCARD | FI_TRIGGER;

/// The flags an operation runs with: the application's (checked against
/// `allowed`), or the endpoint's defaults for calls without a flags
/// argument. Inlined: every data call passes through it, and its
/// refusal is out of line.
#[inline]
pub(super) fn op_flags(
    given: Option<u64>,
    defaults: u64,
    allowed: u64,
    what: &str,
) -> Result<u64, c_int> {
    match given {
        Some(f) if f & !allowed != 0 => Err(bad_flags(what, f & !allowed)),
        Some(f) => Ok(f),
        None => Ok(defaults),
    }
}

/// [`op_flags`]' refusal of flags outside `allowed`, logged.
#[cold]
fn bad_flags(what: &str, extra: u64) -> c_int {
    core_warn!(FI_LOG_EP_DATA, "{what}: unsupported flags {extra:#x}");
    -FI_EBADFLAGS
}

/// How a send call chooses its flags.
#[derive(Clone, Copy)]
pub(super) enum SendFlags {
    /// The endpoint's transmit defaults (`fi_send`, `fi_sendv`).
    Default,
    /// The defaults plus these (`fi_senddata`: `FI_REMOTE_CQ_DATA`).
    DefaultPlus(u64),
    /// The application's flags (`fi_sendmsg`).
    Given(u64),
    /// An inject: these flags and no completion.
    Inject(u64),
}

impl SendFlags {
    /// The operation's flags (checked against `allowed`, or the endpoint's
    /// `defaults` plus what the call adds) and the engine's own flags.
    pub(super) fn resolve(
        self,
        defaults: u64,
        allowed: u64,
        what: &str,
    ) -> Result<(u64, u64), c_int> {
        let (given, extra, internal) = match self {
            SendFlags::Default => (None, 0, 0),
            SendFlags::DefaultPlus(f) => (None, f, 0),
            SendFlags::Given(f) => (Some(f), 0, 0),
            SendFlags::Inject(f) => (Some(f), 0, internal::NO_COMPLETION),
        };
        Ok((op_flags(given, defaults, allowed, what)? | extra, internal))
    }
}

/// Posts a send as `post` says.
///
/// # Safety
/// `ep` is NULL or a pointer the application got from `fi_endpoint`;
/// `bufs` as for [`convert`]; with `FI_TRIGGER`, `context` as for
/// `trigger::deferral`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn send(
    ep: *mut fid_ep,
    bufs: CBufs,
    dest: fi_addr_t,
    context: *mut c_void,
    how: SendFlags,
    data: Option<u64>,
    tag: Option<u64>,
    post: Post,
) -> isize {
    // SAFETY: the caller's contract on `ep`.
    let Some(h) = (unsafe { ep_handle(ep as *const fid) }) else {
        return bad_fid("send") as isize;
    };
    let defaults = h.inner.tx_flags.load(Ordering::Relaxed);
    let (flags, internal) = match how.resolve(defaults, SEND_FLAGS, "send") {
        Ok(x) => x,
        Err(e) => return e as isize,
    };
    let build = |iov: &[IoBuf], desc: &[MemDesc]| {
        let op = SendOp {
            iov,
            desc,
            dest,
            context: context as usize,
            flags: flags & !FI_TRIGGER,
            internal,
            data,
            tag,
        };
        // SAFETY: the caller's contract on `context`.
        unsafe { dispatch(h, post, flags, context as usize, "send", &op) }
    };
    // SAFETY: the caller's contract on `bufs`.
    unsafe { with_bufs(bufs, h.inner.tx_iov_limit, NullBuf::Refuse, build) }
}

/// Posts a receive as `post` says.
///
/// # Safety
/// As for [`send`].
#[inline(always)]
pub(super) unsafe fn recv(
    ep: *mut fid_ep,
    bufs: CBufs,
    src: fi_addr_t,
    context: *mut c_void,
    flags: Option<u64>,
    tag: Option<(u64, u64)>,
    post: Post,
) -> isize {
    // SAFETY: the caller's contract on `ep`.
    let Some(h) = (unsafe { ep_handle(ep as *const fid) }) else {
        return bad_fid("recv") as isize;
    };
    let mut defaults = h.inner.rx_flags.load(Ordering::Relaxed);
    if tag.is_some() {
        // A default FI_MULTI_RECV (rx_attr.op_flags) is for the untagged
        // receives it applies to (fi_msg(3)); tagged receives without a
        // flags argument post ordinary buffers, as upstream's do.
        defaults &= !FI_MULTI_RECV;
    }
    let flags = match op_flags(flags, defaults, RECV_FLAGS, "recv") {
        Ok(f) => f,
        Err(e) => return e as isize,
    };
    if matches!(post, Post::Work(_)) && flags & FI_MULTI_RECV != 0 {
        core_warn!(
            FI_LOG_EP_DATA,
            "deferred work: a multi-receive buffer (FI_MULTI_RECV) cannot be queued"
        );
        return -FI_ENOSYS as isize;
    }
    let build = |iov: &[IoBuf], desc: &[MemDesc]| {
        let op = RecvOp {
            iov,
            desc,
            src,
            context: context as usize,
            flags: flags & !FI_TRIGGER,
            internal: 0,
            tag,
        };
        // SAFETY: the caller's contract on `context`.
        unsafe { dispatch(h, post, flags, context as usize, "recv", &op) }
    };
    // A NULL receive buffer with a length is an empty one (upstream
    // accepts it: the application expects empty messages there), except
    // for a multi-receive buffer, which the endpoint carves up.
    let null = if flags & FI_MULTI_RECV != 0 {
        NullBuf::Refuse
    } else {
        NullBuf::Empty
    };
    // SAFETY: the caller's contract on `bufs`.
    unsafe { with_bufs(bufs, h.inner.rx_iov_limit, null, build) }
}

/// The fields of `fi_msg` and `fi_msg_tagged` the data path reads.
pub(super) trait CMsg {
    fn bufs(&self) -> CBufs;
    fn addr(&self) -> fi_addr_t;
    fn context(&self) -> *mut c_void;
    fn data(&self) -> u64;
    /// Tag and ignore mask (None for untagged messages).
    fn tag(&self) -> Option<(u64, u64)>;
}

impl CMsg for fi_msg {
    fn bufs(&self) -> CBufs {
        CBufs::Many(self.msg_iov, self.desc, self.iov_count)
    }
    fn addr(&self) -> fi_addr_t {
        self.addr
    }
    fn context(&self) -> *mut c_void {
        self.context
    }
    fn data(&self) -> u64 {
        self.data
    }
    fn tag(&self) -> Option<(u64, u64)> {
        None
    }
}

impl CMsg for fi_msg_tagged {
    fn bufs(&self) -> CBufs {
        CBufs::Many(self.msg_iov, self.desc, self.iov_count)
    }
    fn addr(&self) -> fi_addr_t {
        self.addr
    }
    fn context(&self) -> *mut c_void {
        self.context
    }
    fn data(&self) -> u64 {
        self.data
    }
    fn tag(&self) -> Option<(u64, u64)> {
        Some((self.tag, self.ignore))
    }
}

/// `fi_sendmsg` and `fi_tsendmsg`.
///
/// # Safety
/// `msg` is NULL or points to a valid message whose buffers follow
/// [`convert`]'s contract; `ep` as for [`send`].
pub(super) unsafe fn sendmsg<M: CMsg>(ep: *mut fid_ep, msg: *const M, flags: u64) -> isize {
    // SAFETY: the caller's contract.
    unsafe { sendmsg_as(ep, msg, flags, super::trigger::Post::Now) }
}

/// [`sendmsg`], posted as `post` says (deferred work: `deferred.rs`).
///
/// # Safety
/// As for [`sendmsg`].
pub(super) unsafe fn sendmsg_as<M: CMsg>(
    ep: *mut fid_ep,
    msg: *const M,
    flags: u64,
    post: Post,
) -> isize {
    // SAFETY: the caller's contract on `msg`.
    let Some(m) = (unsafe { msg.as_ref() }) else {
        return -FI_EINVAL as isize;
    };
    let data = (flags & FI_REMOTE_CQ_DATA != 0).then_some(m.data());
    // SAFETY: the caller's contract.
    unsafe {
        send(
            ep,
            m.bufs(),
            m.addr(),
            m.context(),
            SendFlags::Given(flags),
            data,
            m.tag().map(|t| t.0),
            post,
        )
    }
}

/// `fi_recvmsg` and `fi_trecvmsg` (`FI_PEEK` may come without buffers;
/// `FI_CLAIM` reuses the peeked context).
///
/// # Safety
/// As for [`sendmsg`].
pub(super) unsafe fn recvmsg<M: CMsg>(ep: *mut fid_ep, msg: *const M, flags: u64) -> isize {
    // SAFETY: the caller's contract.
    unsafe { recvmsg_as(ep, msg, flags, super::trigger::Post::Now) }
}

/// [`recvmsg`], posted as `post` says (deferred work: `deferred.rs`).
///
/// # Safety
/// As for [`sendmsg`].
pub(super) unsafe fn recvmsg_as<M: CMsg>(
    ep: *mut fid_ep,
    msg: *const M,
    flags: u64,
    post: Post,
) -> isize {
    // SAFETY: the caller's contract on `msg`.
    let Some(m) = (unsafe { msg.as_ref() }) else {
        return -FI_EINVAL as isize;
    };
    // SAFETY: the caller's contract.
    unsafe {
        recv(
            ep,
            m.bufs(),
            m.addr(),
            m.context(),
            Some(flags),
            m.tag(),
            post,
        )
    }
}

/// `None`, or `Some` of the given expression (for the optional tag
/// arguments of the thunk families).
macro_rules! opt {
    () => {
        None
    };
    ($($e:expr),+) => {
        Some(($($e),+))
    };
}
pub(super) use opt;

/// Writes one family of data-transfer thunks and its static table: the
/// untagged family (`fi_ops_msg`) when no tag names are given, the tagged
/// one (`fi_ops_tagged`) with `tag: t, ignore: i`. The tag arguments sit
/// right after the address in every tagged call, so one definition serves
/// both.
macro_rules! data_ops {
    ($table:ident: $ops:ident, $msg:ty $(, tag: $tag:ident, ignore: $ign:ident)?) => {
        // The thunks below are installed in the static table only; each is
        // called by C with the arguments of its `fi_*` inline wrapper.
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn recv(
            ep: *mut fid_ep,
            buf: *mut c_void,
            len: usize,
            desc: *mut c_void,
            src: fi_addr_t,
            $($tag: u64, $ign: u64,)?
            context: *mut c_void,
        ) -> isize {
            catch(|| {
                // SAFETY: C's contract for this call: `ep` from fi_endpoint,
                // `buf` valid for `len` bytes until completion.
                unsafe {
                    data::recv(ep, CBufs::One(buf, len, desc), src, context, None, opt!($($tag, $ign)?), super::trigger::Post::Now)
                }
            })
        }

        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn recvv(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: usize,
            src: fi_addr_t,
            $($tag: u64, $ign: u64,)?
            context: *mut c_void,
        ) -> isize {
            catch(|| {
                // SAFETY: C's contract: `iov` and `desc` hold `count` entries.
                unsafe {
                    data::recv(ep, CBufs::Many(iov, desc, count), src, context, None, opt!($($tag, $ign)?), super::trigger::Post::Now)
                }
            })
        }

        unsafe extern "C" fn recvmsg(ep: *mut fid_ep, msg: *const $msg, flags: u64) -> isize {
            // SAFETY: C's contract: `msg` NULL or a valid message.
            catch(|| unsafe { data::recvmsg(ep, msg, flags) })
        }

        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn send(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            desc: *mut c_void,
            dest: fi_addr_t,
            $($tag: u64,)?
            context: *mut c_void,
        ) -> isize {
            catch(|| {
                // SAFETY: C's contract: `buf` valid for `len` bytes.
                unsafe {
                    data::send(ep, CBufs::One(buf, len, desc), dest, context, SendFlags::Default, None, opt!($($tag)?), super::trigger::Post::Now)
                }
            })
        }

        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn sendv(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: usize,
            dest: fi_addr_t,
            $($tag: u64,)?
            context: *mut c_void,
        ) -> isize {
            catch(|| {
                // SAFETY: C's contract: `iov` and `desc` hold `count` entries.
                unsafe {
                    data::send(ep, CBufs::Many(iov, desc, count), dest, context, SendFlags::Default, None, opt!($($tag)?), super::trigger::Post::Now)
                }
            })
        }

        unsafe extern "C" fn sendmsg(ep: *mut fid_ep, msg: *const $msg, flags: u64) -> isize {
            // SAFETY: C's contract: `msg` NULL or a valid message.
            catch(|| unsafe { data::sendmsg(ep, msg, flags) })
        }

        unsafe extern "C" fn inject(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            dest: fi_addr_t,
            $($tag: u64,)?
        ) -> isize {
            catch(|| {
                // SAFETY: C's contract: `buf` valid for `len` bytes (during
                // the call only: inject copies or sends at once).
                unsafe {
                    data::send(
                        ep,
                        CBufs::One(buf, len, core::ptr::null_mut()),
                        dest,
                        core::ptr::null_mut(),
                        SendFlags::Inject(FI_INJECT),
                        None,
                        opt!($($tag)?),
                        super::trigger::Post::Now,
                    )
                }
            })
        }

        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn senddata(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            desc: *mut c_void,
            data: u64,
            dest: fi_addr_t,
            $($tag: u64,)?
            context: *mut c_void,
        ) -> isize {
            catch(|| {
                // SAFETY: C's contract: `buf` valid for `len` bytes.
                unsafe {
                    data::send(
                        ep,
                        CBufs::One(buf, len, desc),
                        dest,
                        context,
                        SendFlags::DefaultPlus(FI_REMOTE_CQ_DATA),
                        Some(data),
                        opt!($($tag)?),
                        super::trigger::Post::Now,
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
            $($tag: u64,)?
        ) -> isize {
            catch(|| {
                // SAFETY: as for `inject`.
                unsafe {
                    data::send(
                        ep,
                        CBufs::One(buf, len, core::ptr::null_mut()),
                        dest,
                        core::ptr::null_mut(),
                        SendFlags::Inject(FI_INJECT | FI_REMOTE_CQ_DATA),
                        Some(data),
                        opt!($($tag)?),
                        super::trigger::Post::Now,
                    )
                }
            })
        }

        pub(super) static $table: $ops = $ops {
            size: core::mem::size_of::<$ops>(),
            recv: Some(recv),
            recvv: Some(recvv),
            recvmsg: Some(recvmsg),
            send: Some(send),
            sendv: Some(sendv),
            sendmsg: Some(sendmsg),
            inject: Some(inject),
            senddata: Some(senddata),
            injectdata: Some(injectdata),
        };
    };
}
pub(super) use data_ops;
