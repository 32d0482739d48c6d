//! When a verbs endpoint reads its descriptors (the CM channel's and the
//! completion channel's): polling the completion queue is served from
//! user space, reading the channels costs system calls, so they are read
//! every [`FD_CHECK_EVERY`] progress calls, before a blocking wait, in
//! `fi_trywait`, on every call while something is being connected, and on
//! every call once an application's epoll set holds the descriptor.

use oxifabric::error::Result;
use oxifabric::service::epoll::Epoll;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// Progress calls between two reads of the channels when nobody waits.
pub const FD_CHECK_EVERY: u32 = 64;

/// An endpoint's wait descriptor (an epoll set of its channels) and when
/// to read them.
pub struct Watch {
    /// The set blocking waits sleep on.
    pub fds: Epoll,
    /// A blocking wait asked for `fds`: the next progress reads them.
    want: AtomicBool,
    /// `fds` is watched for good ([`Watch::pin`]).
    pinned: AtomicBool,
}

impl Watch {
    /// An empty set; the first progress reads the channels.
    pub fn new() -> Result<Watch> {
        Ok(Watch {
            fds: Epoll::new()?,
            want: AtomicBool::new(true),
            pinned: AtomicBool::new(false),
        })
    }

    /// Whether this progress call (the `polls`th since the last read)
    /// reads the channels; `busy`: something is being connected.
    pub fn due(&self, polls: &mut u32, busy: bool) -> bool {
        *polls += 1;
        let due = busy
            || *polls >= FD_CHECK_EVERY
            || self.pinned.load(Ordering::Relaxed)
            || self.want.swap(false, Ordering::Relaxed);
        if due {
            *polls = 0;
        }
        due
    }

    /// A waiter is about to sleep on the descriptor: the next progress
    /// reads the channels (`Progress::wait_fd`, `progress_settled`).
    pub fn wanted(&self) -> RawFd {
        self.want.store(true, Ordering::Relaxed);
        self.fds.raw()
    }

    /// Someone (an application's epoll set, `FI_GETWAIT`) may sleep on the
    /// descriptor at any time: every progress reads the channels, so it is
    /// readable only while there is something to do.
    pub fn pin(&self) {
        self.pinned.store(true, Ordering::Relaxed);
    }
}
