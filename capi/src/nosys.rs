//! Every `-FI_ENOSYS` slot in one place: operations an object does not
//! support. Each stub logs the call at trace level (`FI_LOG_LEVEL=trace`
//! shows what an application asked for and did not get) and returns
//! `-FI_ENOSYS` in its slot's return type. The capabilities behind them are
//! never advertised in `fi_info`.
//!
//! The stubs ignore their arguments, so they are safe functions: nothing
//! the caller passes is read.

use core::ffi::{c_char, c_int, c_void};
use oxifabric::abi::*;

/// Defines `-FI_ENOSYS` stubs:
/// `nosys! { pub fn name(arg types) -> ret = "fi_call", FI_LOG_SUBSYS; }`.
/// The string names the libfabric call in the trace line.
macro_rules! nosys {
    ($($(#[$m:meta])* $vis:vis fn $name:ident($($t:ty),* $(,)?) -> $ret:ty = $what:literal, $subsys:ident;)*) => {
        $(
            $(#[$m])*
            $vis extern "C" fn $name($(_: $t),*) -> $ret {
                oxifabric::core_trace!(oxifabric::abi::$subsys, "{}: not supported", $what);
                $crate::boundary::CReturn::from_code(-oxifabric::abi::FI_ENOSYS)
            }
        )*
    };
}
pub(crate) use nosys;

type Ep = *mut fid_ep;
type Buf = *mut c_void;
type CBuf = *const c_void;

crate::nosys::nosys! {
    // `fi_ops`, shared by every class.
    /// `fi_bind` on an object nothing can be bound to.
    pub fn bind(*mut fid, *mut fid, u64) -> c_int = "fi_bind", FI_LOG_CORE;
    /// `fi_control` on an object with no commands.
    pub fn control(*mut fid, c_int, Buf) -> c_int = "fi_control", FI_LOG_CORE;
    /// `fi_open_ops`: no provider-specific interfaces.
    pub fn ops_open(*mut fid, *const c_char, u64, *mut Buf, Buf) -> c_int = "fi_open_ops", FI_LOG_CORE;
    /// `fi_tostr` through the object.
    pub fn tostr(*const fid, *mut c_char, usize) -> c_int = "fi_tostr(fid)", FI_LOG_CORE;
    /// `fi_set_ops`: no provider-specific interfaces.
    pub fn ops_set(*mut fid, *const c_char, u64, Buf, Buf) -> c_int = "fi_set_ops", FI_LOG_CORE;

    // `fi_ops_domain`.
    /// Scalable endpoints.
    pub fn scalable_ep(*mut fid_domain, *mut fi_info, *mut Ep, Buf) -> c_int = "fi_scalable_ep", FI_LOG_DOMAIN;
    /// Shared transmit contexts.
    pub fn stx_ctx(*mut fid_domain, *mut fi_tx_attr, *mut *mut fid_stx, Buf) -> c_int = "fi_stx_context", FI_LOG_DOMAIN;
    /// Shared receive contexts.
    pub fn srx_ctx(*mut fid_domain, *mut fi_rx_attr, *mut Ep, Buf) -> c_int = "fi_srx_context", FI_LOG_DOMAIN;
    /// Collectives are not offered.
    pub fn query_collective(*mut fid_domain, fi_collective_op, *mut fi_collective_attr, u64) -> c_int = "fi_query_collective", FI_LOG_DOMAIN;

    // `fi_ops_av`.
    /// AV sets (collectives).
    pub fn av_set(*mut fid_av, *mut fi_av_set_attr, *mut *mut fid_av_set, Buf) -> c_int = "fi_av_set", FI_LOG_AV;

    // `fi_ops_ep` and `fi_ops_cm` slots endpoints of some kind do not have.
    /// `fi_cancel` where nothing can be cancelled.
    pub fn cancel(fid_t, Buf) -> isize = "fi_cancel", FI_LOG_EP_CTRL;
    /// Transmit contexts of scalable endpoints.
    pub fn tx_ctx(Ep, c_int, *mut fi_tx_attr, *mut Ep, Buf) -> c_int = "fi_tx_context", FI_LOG_EP_CTRL;
    /// Receive contexts of scalable endpoints.
    pub fn rx_ctx(Ep, c_int, *mut fi_rx_attr, *mut Ep, Buf) -> c_int = "fi_rx_context", FI_LOG_EP_CTRL;
    /// `fi_rx_size_left`/`fi_tx_size_left` where there is no queue.
    pub fn size_left(Ep) -> isize = "fi_rx_size_left/fi_tx_size_left", FI_LOG_EP_CTRL;
    /// `fi_getpeer` where there is no peer.
    pub fn getpeer(Ep, Buf, *mut usize) -> c_int = "fi_getpeer", FI_LOG_EP_CTRL;
    /// `fi_connect` on what cannot connect.
    pub fn connect(Ep, CBuf, CBuf, usize) -> c_int = "fi_connect", FI_LOG_EP_CTRL;
    /// `fi_listen` on what cannot listen.
    pub fn listen(*mut fid_pep) -> c_int = "fi_listen", FI_LOG_EP_CTRL;
    /// `fi_accept` on what cannot accept.
    pub fn accept(Ep, CBuf, usize) -> c_int = "fi_accept", FI_LOG_EP_CTRL;
    /// `fi_reject` on what has no connection requests.
    pub fn reject(*mut fid_pep, fid_t, CBuf, usize) -> c_int = "fi_reject", FI_LOG_EP_CTRL;
    /// `fi_shutdown` on what has no connection.
    pub fn shutdown(Ep, u64) -> c_int = "fi_shutdown", FI_LOG_EP_CTRL;
    /// Multicast groups.
    pub fn join(Ep, CBuf, u64, *mut *mut fid_mc, Buf) -> c_int = "fi_join", FI_LOG_EP_CTRL;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stubs_return_enosys_in_their_slot_type() {
        let null = core::ptr::null_mut();
        assert_eq!(control(null, 0, null as Buf), -FI_ENOSYS);
        assert_eq!(
            stx_ctx(
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                null as Buf
            ),
            -FI_ENOSYS
        );
        assert_eq!(cancel(null, null as Buf), -(FI_ENOSYS as isize));
        assert_eq!(size_left(core::ptr::null_mut()), -(FI_ENOSYS as isize));
    }
}
