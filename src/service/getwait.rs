//! The descriptor `fi_control(FI_GETWAIT)` hands out for a CQ, EQ or
//! counter.
//!
//! An application that sleeps on it (poll, epoll) after `fi_trywait` said
//! it may must be woken when the object may have something. With manual
//! progress nothing moves data while it sleeps, so "something" includes
//! bytes arriving on the bound endpoints' connections, not only entries
//! already queued (the object's own signal): the descriptor is an epoll
//! set holding the signal and the wait descriptors of the object's
//! progress sources, and the application's next read drives them. The
//! set is made on the first `FI_GETWAIT` and kept current as endpoints
//! are bound: a source added later goes in on the next read or
//! `fi_trywait` (fi_poll(3) requires one before every sleep). A closed
//! endpoint's descriptor leaves the set with it (the kernel's rule for a
//! closed file).

use super::epoll::Epoll;
use crate::abi::FI_LOG_CQ;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Token of the object's own signal in the set (sources' tokens do not
/// matter: nobody reads this set's events but the application's poll).
const SIGNAL: u64 = u64::MAX;

/// The `FI_GETWAIT` set of one object, if it was asked for.
#[derive(Default)]
pub struct GetWait {
    set: OnceLock<Epoll>,
    /// A source was added since the set was last brought up to date.
    stale: AtomicBool,
}

impl GetWait {
    /// The descriptor, made on first use with the object's `signal`, with
    /// the sources' descriptors `fds` put in (again) on every call.
    pub fn fd(&self, signal: RawFd, fds: impl FnOnce() -> Vec<RawFd>) -> Option<RawFd> {
        if self.set.get().is_none() {
            let e = Epoll::new().ok()?;
            e.add(signal, SIGNAL, false).ok()?;
            // Another thread's set may have won: it holds the same.
            let _ = self.set.set(e);
        }
        let set = self.set.get()?;
        self.stale.store(false, Ordering::Relaxed);
        add_all(set, fds());
        Some(set.raw())
    }

    /// Notes that a source was added: its descriptor goes in on the next
    /// read, which calls [`Self::refresh`] (asking a source for it now may
    /// take a lock our caller holds).
    pub fn source_added(&self) {
        if self.set.get().is_some() {
            self.stale.store(true, Ordering::Relaxed);
        }
    }

    /// Whether sources were added since the last refresh (one relaxed load:
    /// every read asks).
    #[inline]
    pub fn is_stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }

    /// Puts the descriptors `fds` in the set when sources were added since
    /// (those already in it stay).
    pub fn refresh(&self, fds: impl FnOnce() -> Vec<RawFd>) {
        if let Some(set) = self.set.get() {
            if self.stale.swap(false, Ordering::Relaxed) {
                add_all(set, fds());
            }
        }
    }
}

/// Adds each of `fds` to `set` (one already there is left as it is).
fn add_all(set: &Epoll, fds: Vec<RawFd>) {
    for (i, fd) in fds.into_iter().enumerate() {
        match set.add(fd, i as u64, false) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
            Err(e) => crate::core_warn!(
                FI_LOG_CQ,
                "FI_GETWAIT descriptor: cannot watch an endpoint's descriptor {fd}: {e}"
            ),
        }
    }
}
