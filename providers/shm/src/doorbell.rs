//! A receiver's doorbell: a non-blocking eventfd the receiver creates and
//! hands to each sender at attach, which a sender rings only when the
//! receiver said (in its ring's header) that it is about to sleep. This
//! module is the crate's small second unsafe boundary: the eventfd's
//! creation, reads and writes, and the check of one a peer sent.
//!
//! A peer can ring it as often as it likes (the receiver wakes for
//! nothing and looks at its ring again) or never (the receiver sleeps
//! until its own timeout): every sleep is bounded by the caller.

use crate::region::last_os;
use oxifabric::abi::{FI_EIO, FI_EMFILE};
use oxifabric::error::{Error, Result};
use oxifabric::service::signal::poll_readable;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Instant;

/// An eventfd in non-blocking mode (so ringing never blocks a sender,
/// even when a peer filled its counter).
pub struct Doorbell {
    fd: OwnedFd,
}

impl Doorbell {
    /// A new, silent doorbell.
    pub fn new() -> Result<Doorbell> {
        // SAFETY: eventfd takes no pointers; the result is owned below.
        let raw = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if raw < 0 {
            return Err(last_os(FI_EMFILE));
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Doorbell { fd })
    }

    /// A doorbell a peer sent: refused (`Inval`) unless it is an eventfd
    /// in non-blocking mode (anything else could block or misdirect our
    /// writes).
    pub fn from_fd(fd: OwnedFd) -> Result<Doorbell> {
        let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        if !link.is_ok_and(|l| l.as_os_str() == "anon_inode:[eventfd]") {
            return Err(Error::Inval);
        }
        // SAFETY: F_GETFL only reads the descriptor's status flags.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        if flags < 0 || flags & libc::O_NONBLOCK == 0 {
            return Err(Error::Inval);
        }
        Ok(Doorbell { fd })
    }

    /// The descriptor, to hand to a sender or a poll loop (readable once
    /// rung).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// A second descriptor for the same doorbell.
    pub fn try_clone(&self) -> Result<Doorbell> {
        let fd = self.fd.try_clone().map_err(|e| Error::os(FI_EMFILE, &e))?;
        Ok(Doorbell { fd })
    }

    /// Rings: the receiver's descriptor becomes readable. A full counter
    /// (`EAGAIN`, only if someone rang it 2^64 - 2 times unread) is
    /// readable already and ignored.
    pub fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: writes the 8 bytes of a live u64 to our descriptor.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// How many times it was rung since the last call (0 if not), which
    /// also makes it silent again.
    pub fn take(&self) -> Result<u64> {
        let mut n: u64 = 0;
        // SAFETY: reads at most 8 bytes into a live u64.
        let got = unsafe { libc::read(self.fd.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
        if got == 8 {
            return Ok(n);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) => Ok(0),
            _ => Err(Error::os(FI_EIO, &e)),
        }
    }

    /// Waits until rung or until `deadline`; whether it was rung (it stays
    /// so until [`Doorbell::take`]).
    pub fn wait(&self, deadline: Instant) -> bool {
        poll_readable(&[self.fd.as_raw_fd()], Some(deadline))
    }
}
