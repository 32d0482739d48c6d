//! Mirror of `rdma/fi_endpoint.h`.

use super::*;

/// `struct fi_msg`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg {
    /// `msg_iov`.
    pub msg_iov: *const iovec,
    /// `desc`.
    pub desc: *mut *mut c_void,
    /// `iov_count`.
    pub iov_count: usize,
    /// `addr`.
    pub addr: fi_addr_t,
    /// `context`.
    pub context: *mut c_void,
    /// `data`.
    pub data: u64,
}

c_anon_enum! {
    /// Anonymous enum starting at `FI_OPT_ENDPOINT`.
    pub enum anon_fi_opt_endpoint : c_int {
        /// `FI_OPT_ENDPOINT`.
        FI_OPT_ENDPOINT = 0,
    }
}

c_anon_enum! {
    /// Anonymous enum starting at `FI_OPT_MIN_MULTI_RECV`.
    pub enum anon_fi_opt_min_multi_recv : c_int {
        /// `FI_OPT_MIN_MULTI_RECV`.
        FI_OPT_MIN_MULTI_RECV = 0,
        /// `FI_OPT_CM_DATA_SIZE`.
        FI_OPT_CM_DATA_SIZE = 1,
        /// `FI_OPT_BUFFERED_MIN`.
        FI_OPT_BUFFERED_MIN = 2,
        /// `FI_OPT_BUFFERED_LIMIT`.
        FI_OPT_BUFFERED_LIMIT = 3,
        /// `FI_OPT_SEND_BUF_SIZE`.
        FI_OPT_SEND_BUF_SIZE = 4,
        /// `FI_OPT_RECV_BUF_SIZE`.
        FI_OPT_RECV_BUF_SIZE = 5,
        /// `FI_OPT_TX_SIZE`.
        FI_OPT_TX_SIZE = 6,
        /// `FI_OPT_RX_SIZE`.
        FI_OPT_RX_SIZE = 7,
        /// `FI_OPT_FI_HMEM_P2P`.
        FI_OPT_FI_HMEM_P2P = 8,
        /// `FI_OPT_XPU_TRIGGER`.
        FI_OPT_XPU_TRIGGER = 9,
    }
}

c_anon_enum! {
    /// Anonymous enum starting at `FI_HMEM_P2P_ENABLED`.
    pub enum anon_fi_hmem_p2p_enabled : c_int {
        /// `FI_HMEM_P2P_ENABLED`.
        FI_HMEM_P2P_ENABLED = 0,
        /// `FI_HMEM_P2P_REQUIRED`.
        FI_HMEM_P2P_REQUIRED = 1,
        /// `FI_HMEM_P2P_PREFERRED`.
        FI_HMEM_P2P_PREFERRED = 2,
        /// `FI_HMEM_P2P_DISABLED`.
        FI_HMEM_P2P_DISABLED = 3,
    }
}

/// `struct fi_ops_ep`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_ep {
    /// `size`.
    pub size: usize,
    /// `cancel`.
    pub cancel: Option<unsafe extern "C" fn(fid: fid_t, context: *mut c_void) -> isize>,
    /// `getopt`.
    pub getopt: Option<
        unsafe extern "C" fn(
            fid: fid_t,
            level: c_int,
            optname: c_int,
            optval: *mut c_void,
            optlen: *mut usize,
        ) -> c_int,
    >,
    /// `setopt`.
    pub setopt: Option<
        unsafe extern "C" fn(
            fid: fid_t,
            level: c_int,
            optname: c_int,
            optval: *const c_void,
            optlen: usize,
        ) -> c_int,
    >,
    /// `tx_ctx`.
    pub tx_ctx: Option<
        unsafe extern "C" fn(
            sep: *mut fid_ep,
            index: c_int,
            attr: *mut fi_tx_attr,
            tx_ep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `rx_ctx`.
    pub rx_ctx: Option<
        unsafe extern "C" fn(
            sep: *mut fid_ep,
            index: c_int,
            attr: *mut fi_rx_attr,
            rx_ep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// `rx_size_left`.
    pub rx_size_left: Option<unsafe extern "C" fn(ep: *mut fid_ep) -> isize>,
    /// `tx_size_left`.
    pub tx_size_left: Option<unsafe extern "C" fn(ep: *mut fid_ep) -> isize>,
}

/// `struct fi_ops_msg`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_msg {
    /// `size`.
    pub size: usize,
    /// `recv`.
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
    /// `recvv`.
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
    /// `recvmsg`.
    pub recvmsg:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg, flags: u64) -> isize>,
    /// `send`.
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
    /// `sendv`.
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
    /// `sendmsg`.
    pub sendmsg:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg, flags: u64) -> isize>,
    /// `inject`.
    pub inject: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: usize,
            dest_addr: fi_addr_t,
        ) -> isize,
    >,
    /// `senddata`.
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
    /// `injectdata`.
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

/// `struct fid_ep`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_ep {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_ep,
    /// `cm`.
    pub cm: *mut fi_ops_cm,
    /// `msg`.
    pub msg: *mut fi_ops_msg,
    /// `rma`.
    pub rma: *mut fi_ops_rma,
    /// `tagged`.
    pub tagged: *mut fi_ops_tagged,
    /// `atomic`.
    pub atomic: *mut fi_ops_atomic,
    /// `collective`.
    pub collective: *mut fi_ops_collective,
}

/// `struct fid_pep`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_pep {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_ep,
    /// `cm`.
    pub cm: *mut fi_ops_cm,
}

/// `struct fid_stx`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fid_stx {
    /// `fid`.
    pub fid: fid,
    /// `ops`.
    pub ops: *mut fi_ops_ep,
}
