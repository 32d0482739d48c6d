//! Connection-request handles: what a passive endpoint puts in the
//! `info->handle` of an `FI_CONNREQ` event, and what `fi_accept` or
//! `fi_reject` hand back. The handle is a real `struct fid` of class
//! `FI_CLASS_CONNREQ` (applications may look at its class); behind it the
//! provider keeps whatever it needs to finish the connection (a socket, a
//! queue pair), of any type. A handle is valid until it is taken once.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::info::Info;
use crate::service::eq::{Event, EventData, EventQueue};
use crate::service::progress::Progress;
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

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

/// What every passive endpoint keeps besides its transport: the bound EQ,
/// its C handle, the requests it reported and nobody took yet, and the
/// rules of `fi_pep_bind` and `fi_listen`. A provider keeps one in its
/// passive endpoint's state.
#[derive(Default)]
pub struct PepCore {
    /// The EQ that receives `FI_CONNREQ`.
    pub eq: Option<Arc<EventQueue>>,
    /// The C handle events carry.
    pub fid: usize,
    /// `fi_listen` succeeded.
    pub listening: bool,
    /// Handles reported and not yet taken, released on close.
    issued: Vec<usize>,
}

impl PepCore {
    /// `fi_pep_bind` to an EQ: `me` becomes a progress source of it.
    pub fn bind_eq(&mut self, eq: Arc<EventQueue>, me: Weak<dyn Progress>) {
        eq.add_source(me);
        self.eq = Some(eq);
    }

    /// The checks of `fi_listen`: not twice (`FI_EOPBADSTATE`), and only
    /// with an EQ for the requests (`FI_ENOEQ`).
    pub fn check_listen(&self) -> Result<()> {
        if self.listening {
            return Err(Error::OpBadState);
        }
        if self.eq.is_none() {
            return Err(Error::NoEq);
        }
        Ok(())
    }

    /// Reports a connection request: `req` is kept under a new handle set
    /// in `info.handle`, and an `FI_CONNREQ` event with the peer's private
    /// `data` goes to the EQ. When the EQ is full the request is dropped
    /// (false), as a peer whose request went unanswered sees it.
    pub fn request<T: Send + 'static>(&mut self, mut info: Info, req: T, data: Vec<u8>) -> bool {
        let handle = register(req);
        info.handle = handle;
        info.ep.ep_type = FI_EP_MSG;
        let ev = Event {
            event: FI_CONNREQ as u32,
            data: EventData::Cm {
                fid: self.fid,
                info: Some(Box::new(info)),
                data,
            },
        };
        if self.eq.as_ref().is_some_and(|eq| eq.push(ev).is_ok()) {
            self.issued.retain(|h| pending().contains_key(h));
            self.issued.push(handle);
            true
        } else {
            crate::core_warn!(
                FI_LOG_EP_CTRL,
                "event queue full or unbound: connection request dropped"
            );
            drop(take::<T>(handle));
            false
        }
    }

    /// `fi_close`: releases the requests nobody took and the EQ binding.
    pub fn close<T: Send + 'static>(&mut self, me: Weak<dyn Progress>) {
        for h in std::mem::take(&mut self.issued) {
            drop(take::<T>(h));
        }
        if let Some(eq) = self.eq.take() {
            eq.remove_source(&me);
        }
        self.listening = false;
    }
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
