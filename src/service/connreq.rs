//! Connection-request handles: what a passive endpoint puts in the
//! `info->handle` of an `FI_CONNREQ` event, and what `fi_accept` or
//! `fi_reject` hand back. The handle is a real `struct fid` of class
//! `FI_CLASS_CONNREQ` (applications may look at its class); behind it the
//! provider keeps whatever it needs to finish the connection (a socket, a
//! queue pair), of any type. A handle is valid until it is taken once.

use crate::abi::*;
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The object a handle points to.
#[repr(C)]
struct ConnReqFid {
    fid: fid,
}

type Pending = HashMap<usize, Box<dyn Any + Send>>;

fn pending() -> std::sync::MutexGuard<'static, Pending> {
    static P: OnceLock<Mutex<Pending>> = OnceLock::new();
    P.get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Keeps `req` under a new handle and returns the handle (the address of
/// its `fid`).
pub fn register<T: Send + 'static>(req: T) -> usize {
    let f = Box::new(ConnReqFid {
        fid: fid {
            fclass: FI_CLASS_CONNREQ as usize,
            context: core::ptr::null_mut(),
            ops: core::ptr::null_mut(),
        },
    });
    let handle = Box::into_raw(f) as usize;
    pending().insert(handle, Box::new(req));
    handle
}

/// Takes the request behind `handle` and frees the handle; None when the
/// handle is unknown (never issued, already taken) or holds another
/// provider's type (then it stays).
pub fn take<T: Send + 'static>(handle: usize) -> Option<T> {
    let mut p = pending();
    if !p.get(&handle)?.is::<T>() {
        return None;
    }
    let req = p.remove(&handle)?.downcast::<T>().ok()?;
    // SAFETY: every key was produced by `register` from `Box::into_raw` and
    // is removed (so freed) exactly once, here.
    drop(unsafe { Box::from_raw(handle as *mut ConnReqFid) });
    Some(*req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_is_taken_once_and_only_as_its_type() {
        let h = register(41u32);
        // SAFETY: a live handle points to its fid.
        let class = unsafe { (*(h as *const fid)).fclass };
        assert_eq!(class, FI_CLASS_CONNREQ as usize);
        assert_eq!(take::<String>(h), None);
        assert_eq!(take::<u32>(h), Some(41));
        assert_eq!(take::<u32>(h), None);
    }
}
