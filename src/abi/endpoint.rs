//! Endpoints and untagged messaging (`rdma/fi_endpoint.h`).
//!
//! Declares the active, passive and shared-transmit endpoint objects, the
//! endpoint control vtable (cancel, options, scalable contexts) and the
//! message vtable behind `fi_send`/`fi_recv` and their vector, msg, inject
//! and remote-data variants, plus the `fi_setopt` level and option names.

use super::*;

/// Describes one untagged send or receive for `fi_sendmsg`/`fi_recvmsg`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg {
    /// Scatter-gather list of local buffers.
    pub msg_iov: *const iovec,
    /// Memory descriptors, one per `msg_iov` entry (or NULL).
    pub desc: *mut *mut c_void,
    /// Number of entries in `msg_iov` and `desc`.
    pub iov_count: usize,
    /// Peer address: destination for sends, source filter for receives.
    pub addr: fi_addr_t,
    /// Caller's context, returned in the completion.
    pub context: *mut c_void,
    /// Remote CQ data sent with `FI_REMOTE_CQ_DATA`.
    pub data: u64,
}

c_anon_enum! {
    /// Option levels understood by `fi_setopt`/`fi_getopt`.
    pub enum fi_opt_level : c_int {
        /// Generic endpoint options (the `FI_OPT_*` names below).
        FI_OPT_ENDPOINT = 0,
    }
}

c_anon_enum! {
    /// Option names at level `FI_OPT_ENDPOINT`.
    pub enum fi_opt_name : c_int {
        /// `size_t`: space left in a multi-receive buffer below which it is released.
        FI_OPT_MIN_MULTI_RECV = 0,
        /// `size_t`: largest connection-manager private data size.
        FI_OPT_CM_DATA_SIZE = 1,
        /// `size_t`: bytes of an unexpected message buffered before a receive is matched.
        FI_OPT_BUFFERED_MIN = 2,
        /// `size_t`: largest message the provider buffers when unexpected.
        FI_OPT_BUFFERED_LIMIT = 3,
        /// `size_t`: size of the provider's send-side socket/queue buffer.
        FI_OPT_SEND_BUF_SIZE = 4,
        /// `size_t`: size of the provider's receive-side socket/queue buffer.
        FI_OPT_RECV_BUF_SIZE = 5,
        /// `size_t`: transmit context depth, settable before enabling.
        FI_OPT_TX_SIZE = 6,
        /// `size_t`: receive context depth, settable before enabling.
        FI_OPT_RX_SIZE = 7,
        /// `int`: one of the `FI_HMEM_P2P_*` policies.
        FI_OPT_FI_HMEM_P2P = 8,
        /// `struct fi_trigger_xpu`: query the variables an XPU trigger needs.
        FI_OPT_XPU_TRIGGER = 9,
        /// `FI_OPT_CUDA_API_PERMITTED` (bool).
        FI_OPT_CUDA_API_PERMITTED = 10,
        /// `FI_OPT_SHARED_MEMORY_PERMITTED` (bool).
        FI_OPT_SHARED_MEMORY_PERMITTED = 11,
        /// `FI_OPT_MAX_MSG_SIZE` (size_t).
        FI_OPT_MAX_MSG_SIZE = 12,
        /// `FI_OPT_MAX_TAGGED_SIZE` (size_t).
        FI_OPT_MAX_TAGGED_SIZE = 13,
        /// `FI_OPT_MAX_RMA_SIZE` (size_t).
        FI_OPT_MAX_RMA_SIZE = 14,
        /// `FI_OPT_MAX_ATOMIC_SIZE` (size_t).
        FI_OPT_MAX_ATOMIC_SIZE = 15,
        /// `FI_OPT_INJECT_MSG_SIZE` (size_t).
        FI_OPT_INJECT_MSG_SIZE = 16,
        /// `FI_OPT_INJECT_TAGGED_SIZE` (size_t).
        FI_OPT_INJECT_TAGGED_SIZE = 17,
        /// `FI_OPT_INJECT_RMA_SIZE` (size_t).
        FI_OPT_INJECT_RMA_SIZE = 18,
        /// `FI_OPT_INJECT_ATOMIC_SIZE` (size_t).
        FI_OPT_INJECT_ATOMIC_SIZE = 19,
        /// `FI_OPT_FIREWALL_ADDR` (2.2; bool as `int`): whether this endpoint
        /// sits behind a firewall, so peers must not connect to it.
        FI_OPT_FIREWALL_ADDR = 20,
    }
}

c_anon_enum! {
    /// Values for `FI_OPT_FI_HMEM_P2P`: peer-to-peer device memory policy.
    pub enum fi_hmem_p2p_policy : c_int {
        /// The provider chooses when to use peer-to-peer (the default).
        FI_HMEM_P2P_ENABLED = 0,
        /// Every device-memory transfer must go peer-to-peer.
        FI_HMEM_P2P_REQUIRED = 1,
        /// Use peer-to-peer whenever it is available.
        FI_HMEM_P2P_PREFERRED = 2,
        /// Never use peer-to-peer.
        FI_HMEM_P2P_DISABLED = 3,
    }
}

/// Endpoint control operations (`ep->ops`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_ep {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Cancels the pending operation posted with `context` (`fi_cancel`).
    pub cancel: Option<unsafe extern "C" fn(fid: fid_t, context: *mut c_void) -> isize>,
    /// Reads an endpoint option (`fi_getopt`).
    pub getopt: Option<
        unsafe extern "C" fn(
            fid: fid_t,
            level: c_int,
            optname: c_int,
            optval: *mut c_void,
            optlen: *mut usize,
        ) -> c_int,
    >,
    /// Sets an endpoint option (`fi_setopt`).
    pub setopt: Option<
        unsafe extern "C" fn(
            fid: fid_t,
            level: c_int,
            optname: c_int,
            optval: *const c_void,
            optlen: usize,
        ) -> c_int,
    >,
    /// Opens transmit context `index` of a scalable endpoint (`fi_tx_context`).
    pub tx_ctx: Option<
        unsafe extern "C" fn(
            sep: *mut fid_ep,
            index: c_int,
            attr: *mut fi_tx_attr,
            tx_ep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// Opens receive context `index` of a scalable endpoint (`fi_rx_context`).
    pub rx_ctx: Option<
        unsafe extern "C" fn(
            sep: *mut fid_ep,
            index: c_int,
            attr: *mut fi_rx_attr,
            rx_ep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// Deprecated: receive operations that can still be posted.
    pub rx_size_left: Option<unsafe extern "C" fn(ep: *mut fid_ep) -> isize>,
    /// Deprecated: transmit operations that can still be posted.
    pub tx_size_left: Option<unsafe extern "C" fn(ep: *mut fid_ep) -> isize>,
}

/// Untagged message operations (`ep->msg`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_msg {
    /// Size of this table in bytes, for versioning.
    pub size: usize,
    /// Posts a receive into one buffer (`fi_recv`).
    pub recv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut c_void,
            len: usize,
            desc: *mut c_void,
            src_addr: fi_addr_t,
            context: *mut c_void,
        ) -> isize,
    >,
    /// Posts a receive into an iovec (`fi_recvv`).
    pub recvv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: usize,
            src_addr: fi_addr_t,
            context: *mut c_void,
        ) -> isize,
    >,
    /// Posts a receive described by an `fi_msg`, with flags (`fi_recvmsg`).
    pub recvmsg:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg, flags: u64) -> isize>,
    /// Sends one buffer (`fi_send`).
    pub send: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            desc: *mut c_void,
            dest_addr: fi_addr_t,
            context: *mut c_void,
        ) -> isize,
    >,
    /// Sends an iovec (`fi_sendv`).
    pub sendv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: usize,
            dest_addr: fi_addr_t,
            context: *mut c_void,
        ) -> isize,
    >,
    /// Sends a message described by an `fi_msg`, with flags (`fi_sendmsg`).
    pub sendmsg:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg, flags: u64) -> isize>,
    /// Sends a small buffer that is reusable on return, no completion (`fi_inject`).
    pub inject: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            dest_addr: fi_addr_t,
        ) -> isize,
    >,
    /// Sends one buffer with remote CQ data (`fi_senddata`).
    pub senddata: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            desc: *mut c_void,
            data: u64,
            dest_addr: fi_addr_t,
            context: *mut c_void,
        ) -> isize,
    >,
    /// Injects a small buffer with remote CQ data (`fi_injectdata`).
    pub injectdata: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            data: u64,
            dest_addr: fi_addr_t,
        ) -> isize,
    >,
}

/// An active endpoint (also a scalable endpoint, a shared receive context
/// or a tx/rx context of a scalable endpoint). Unused op tables may be NULL.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_ep {
    /// Common object header; `fid.fclass` is `FI_CLASS_EP` or similar.
    pub fid: fid,
    /// Control operations.
    pub ops: *mut fi_ops_ep,
    /// Connection management operations.
    pub cm: *mut fi_ops_cm,
    /// Untagged message operations.
    pub msg: *mut fi_ops_msg,
    /// RMA read/write operations.
    pub rma: *mut fi_ops_rma,
    /// Tagged message operations.
    pub tagged: *mut fi_ops_tagged,
    /// Atomic operations.
    pub atomic: *mut fi_ops_atomic,
    /// Collective operations.
    pub collective: *mut fi_ops_collective,
}

/// A passive endpoint: listens for connection requests.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_pep {
    /// Common object header (`FI_CLASS_PEP`).
    pub fid: fid,
    /// Control operations (options).
    pub ops: *mut fi_ops_ep,
    /// Connection management operations (listen, reject, names).
    pub cm: *mut fi_ops_cm,
}

/// A shared transmit context, usable by several endpoints.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_stx {
    /// Common object header (`FI_CLASS_STX_CTX`).
    pub fid: fid,
    /// Control operations.
    pub ops: *mut fi_ops_ep,
}
