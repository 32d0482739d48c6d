//! When a verbs endpoint reads its descriptors (the CM channel's and the
//! completion channel's): polling the completion queue is served from
//! user space, reading the channels costs system calls (two: rdma-cm's
//! event read is a write to its device), so while nobody waits they are
//! read at most once a millisecond (the clock looked at every
//! [`FD_CHECK_EVERY`] progress calls; counting calls alone made a read per
//! round trip of a ping-pong whose round trip spans 64 polls), and always
//! before a blocking wait, in `fi_trywait`, on every call while something
//! is being connected, and on every call once an application's epoll set
//! holds the descriptor.

use oxifabric::error::Result;
use oxifabric::service::epoll::Epoll;
use oxifabric::service::progress::clock_ms;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Progress calls between two looks at the clock when nobody waits.
pub const FD_CHECK_EVERY: u32 = 64;

/// Milliseconds between two reads of the channels when nobody waits.
pub const FD_READ_EVERY_MS: u64 = 1;

/// An endpoint's wait descriptor (an epoll set of its channels) and when
/// to read them.
pub struct Watch {
    /// The set blocking waits sleep on.
    pub fds: Epoll,
    /// A blocking wait asked for `fds`: the next progress reads them.
    want: AtomicBool,
    /// `fds` is watched for good ([`Watch::pin`]).
    pinned: AtomicBool,
    /// When the channels were last read on the count ([`clock_ms`]).
    read_ms: AtomicU64,
}

/// What a progress call does with an endpoint's channels ([`Watch::due`]).
pub struct Due {
    /// Read them (CM events, completion notifications).
    pub read: bool,
    /// Arm the completion queue, before polling it: someone may sleep on
    /// the descriptor after this pass. Only then: an armed queue costs
    /// the device an event for its next completion, and a polling
    /// application would pay for one per round trip.
    pub arm: bool,
}

impl Watch {
    /// An empty set; the first progress reads the channels.
    pub fn new() -> Result<Watch> {
        Ok(Watch {
            fds: Epoll::new()?,
            want: AtomicBool::new(true),
            pinned: AtomicBool::new(false),
            read_ms: AtomicU64::new(0),
        })
    }

    /// What this progress call (the `polls`th since the last read) does
    /// with the channels; `busy`: something is being connected.
    pub fn due(&self, polls: &mut u32, busy: bool) -> Due {
        *polls += 1;
        // A plain load first: the swap is a locked instruction, and a
        // busy-polling reader makes this look on every call.
        let sleeper = self.pinned.load(Ordering::Relaxed)
            || (self.want.load(Ordering::Relaxed) && self.want.swap(false, Ordering::Relaxed));
        let mut read = sleeper || busy;
        if !read && *polls >= FD_CHECK_EVERY {
            *polls = 0;
            let now = clock_ms();
            if now >= self.read_ms.load(Ordering::Relaxed) + FD_READ_EVERY_MS {
                self.read_ms.store(now, Ordering::Relaxed);
                read = true;
            }
        }
        if read {
            *polls = 0;
        }
        Due { read, arm: sleeper }
    }

    /// A waiter is about to sleep on the descriptor: the next progress
    /// reads the channels (`Progress::wait_fd`, `progress_settled`).
    pub fn wanted(&self) {
        self.want.store(true, Ordering::Relaxed);
    }

    /// Someone (an application's epoll set, `FI_GETWAIT`) may sleep on the
    /// descriptor at any time: every progress reads the channels, so it is
    /// readable only while there is something to do.
    pub fn pin(&self) {
        self.pinned.store(true, Ordering::Relaxed);
    }
}
