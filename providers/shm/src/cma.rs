//! Cross-memory attach: copying another process's memory with one system
//! call (`process_vm_readv`, `process_vm_writev`), for messages too large
//! for a ring cell and for RMA. The sender announces where its data is (a
//! rendezvous cell), the receiver pulls it straight into the
//! application's buffer: one copy; an RMA write pushes local bytes into
//! the target's registered memory the same way.
//!
//! The kernel allows it only when we may `ptrace` the peer
//! (`PTRACE_MODE_ATTACH_REALCREDS`): Yama's `ptrace_scope`, a peer in
//! another user namespace, a non-dumpable peer (for a reader without
//! `CAP_SYS_PTRACE`) or a seccomp filter can refuse it even between
//! processes of one user. So a transport probes it per peer at connect
//! time ([`probe`]) and every transfer reports failure as an error, never
//! a crash, so the caller can fall back.
//!
//! Errors are the same for both directions: `FI_EACCES` (with the errno)
//! when the kernel refuses, `FI_EIO` when a remote range is not (or no
//! longer) mapped or the peer is gone, `Inval` when the local side does
//! not cover the remote ranges. A transfer the kernel cuts short (it
//! stops at the first remote range it cannot access, or at its own
//! limits) is resumed where it stopped until it is done or fails.
//!
//! The only `unsafe` is the system call in `transfer`: the remote
//! addresses are the peer's, checked by the kernel and never dereferenced
//! here; the local ones come from Rust slices borrowed for the call.
//!
//! The fallback, a pipelined bounce area in the shared region (the sender
//! copies chunks in, the receiver copies them out, both in flight at
//! once), is not written yet.

use oxifabric::abi::{FI_EACCES, FI_EIO};
use oxifabric::error::{Error, Result};
use oxifabric::ops::IoBuf;
use std::io::{IoSlice, IoSliceMut};

/// A range of another process's address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteIov {
    /// Its start, in the peer's address space.
    pub addr: usize,
    /// Its length in bytes.
    pub len: usize,
}

/// The most ranges one system call takes on either side (the kernel's
/// UIO_MAXIOV).
const MAX_IOV: usize = 1024;

/// Whether cross-memory reads from `pid` work: reads `expected.len()`
/// bytes at `addr` (a probe value the peer published) and compares.
/// `FI_EACCES` (with the errno) when the kernel refuses, `Inval` when the
/// bytes differ (not the process or address we think).
pub fn probe(pid: libc::pid_t, addr: usize, expected: &[u8]) -> Result<()> {
    let mut got = vec![0u8; expected.len()];
    read(
        pid,
        &mut got,
        &[RemoteIov {
            addr,
            len: expected.len(),
        }],
    )?;
    if got != expected {
        return Err(Error::Inval);
    }
    Ok(())
}

/// Copies the peer's ranges `remote`, in order, into the start of
/// `local`; returns the bytes copied (their total). `Inval` when they do
/// not fit `local`; `FI_EACCES` when the kernel refuses; `FI_EIO` when a
/// range is not (or no longer) mapped in the peer, or the peer is gone.
pub fn read(pid: libc::pid_t, local: &mut [u8], remote: &[RemoteIov]) -> Result<usize> {
    readv(pid, &mut [IoSliceMut::new(local)], remote)
}

/// [`read`] scattering into several local buffers: the peer's ranges, in
/// order, fill `local` in order (the first bytes of the first buffer
/// first). `Inval` when the local buffers hold fewer bytes than the
/// ranges; errors otherwise as [`read`]'s (bytes before a failure may
/// have been copied).
pub fn readv(
    pid: libc::pid_t,
    local: &mut [IoSliceMut<'_>],
    remote: &[RemoteIov],
) -> Result<usize> {
    let iov = iovecs(local.iter_mut().map(|b| (b.as_mut_ptr(), b.len())));
    // SAFETY: each iovec covers one of `local`'s buffers, exclusively
    // borrowed (so writable, and touched by nobody else) until we return.
    unsafe { transfer(pid, Dir::Read, &iov, remote) }
}

/// [`readv`] into application memory named by the engine's `IoBuf`s
/// (the posted receive of a rendezvous), which no Rust reference covers.
pub fn read_into(pid: libc::pid_t, local: &[IoBuf], remote: &[RemoteIov]) -> Result<usize> {
    let iov = iovecs(local.iter().map(|b| (b.addr() as *mut u8, b.len())));
    // SAFETY: an `IoBuf` names application memory that libfabric's
    // contract keeps valid for writes, and untouched by anyone else, until
    // the operation it belongs to completes, which is after we return.
    unsafe { transfer(pid, Dir::Read, &iov, remote) }
}

/// Copies the start of `local` into the peer's ranges `remote`, in
/// order; returns the bytes copied (the ranges' total). `Inval` when
/// `local` is shorter than the ranges; `FI_EACCES` when the kernel
/// refuses; `FI_EIO` when a range is not (or no longer) mapped writable
/// in the peer, or the peer is gone.
pub fn write(pid: libc::pid_t, local: &[u8], remote: &[RemoteIov]) -> Result<usize> {
    writev(pid, &[IoSlice::new(local)], remote)
}

/// [`write()`] gathering from several local buffers, in order. `Inval`
/// when they hold fewer bytes than the ranges; errors otherwise as
/// [`write()`]'s (bytes before a failure may have been copied).
pub fn writev(pid: libc::pid_t, local: &[IoSlice<'_>], remote: &[RemoteIov]) -> Result<usize> {
    let iov = iovecs(local.iter().map(|b| (b.as_ptr().cast_mut(), b.len())));
    // SAFETY: each iovec covers one of `local`'s buffers, borrowed until
    // we return; process_vm_writev only reads local memory.
    unsafe { transfer(pid, Dir::Write, &iov, remote) }
}

/// The kernel's form of a list of local buffers (building it touches no
/// memory).
fn iovecs(pieces: impl Iterator<Item = (*mut u8, usize)>) -> Vec<libc::iovec> {
    pieces
        .map(|(p, len)| libc::iovec {
            iov_base: p.cast(),
            iov_len: len,
        })
        .collect()
}

/// Which way bytes go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// Peer to us (`process_vm_readv`).
    Read,
    /// Us to peer (`process_vm_writev`).
    Write,
}

/// A position in a list of iovecs: entry, and bytes into it.
#[derive(Clone, Copy, Default)]
struct Cursor {
    at: usize,
    off: usize,
}

impl Cursor {
    /// Up to MAX_IOV iovecs for what is left from here (`(base, len)` of
    /// each, with base + off for the first) and their byte total.
    fn batch(self, list: &[(usize, usize)]) -> (Vec<libc::iovec>, usize) {
        let mut out = Vec::new();
        let mut total = 0usize;
        let mut off = self.off;
        for &(base, len) in list.iter().skip(self.at).take(MAX_IOV) {
            let len = len - off;
            out.push(libc::iovec {
                iov_base: base.wrapping_add(off) as *mut libc::c_void,
                iov_len: len,
            });
            total += len;
            off = 0;
        }
        (out, total)
    }

    /// Moves `n` bytes on (at most what is left).
    fn advance(&mut self, list: &[(usize, usize)], mut n: usize) {
        while n > 0 && self.at < list.len() {
            let left = list[self.at].1 - self.off;
            if n < left {
                self.off += n;
                return;
            }
            n -= left;
            self.at += 1;
            self.off = 0;
        }
        // Skip empty entries, so a batch never starts with nothing to do.
        while self.at < list.len() && list[self.at].1 == self.off {
            self.at += 1;
            self.off = 0;
        }
    }
}

/// The total of some lengths; `Inval` when it overflows.
fn sum(lens: impl Iterator<Item = usize>) -> Result<usize> {
    lens.into_iter()
        .try_fold(0usize, |n, l| n.checked_add(l))
        .ok_or(Error::Inval)
}

/// Moves the bytes of `remote` (its total) between the peer `pid` and
/// `local` in direction `dir`, resuming after short transfers; the bytes
/// moved. `Inval` when `local` holds fewer bytes than `remote` or a total
/// overflows.
///
/// # Safety
///
/// Every iovec of `local` must describe memory of this process that stays
/// valid for the whole call: writable and not accessed by anyone else for
/// [`Dir::Read`], readable for [`Dir::Write`].
unsafe fn transfer(
    pid: libc::pid_t,
    dir: Dir,
    local: &[libc::iovec],
    remote: &[RemoteIov],
) -> Result<usize> {
    let total = sum(remote.iter().map(|r| r.len))?;
    if total > sum(local.iter().map(|l| l.iov_len))? {
        return Err(Error::Inval);
    }
    let loc: Vec<(usize, usize)> = local
        .iter()
        .map(|l| (l.iov_base as usize, l.iov_len))
        .collect();
    let rem: Vec<(usize, usize)> = remote.iter().map(|r| (r.addr, r.len)).collect();
    let (mut lc, mut rc) = (Cursor::default(), Cursor::default());
    lc.advance(&loc, 0);
    rc.advance(&rem, 0);
    let mut done = 0;
    while done < total {
        let (riov, rlen) = rc.batch(&rem);
        let (liov, llen) = lc.batch(&loc);
        // The kernel moves min(rlen, llen) bytes; the remote side decides
        // the total, so the local batch never runs past it.
        let want = rlen.min(llen).min(total - done);
        // SAFETY: the local iovecs lie inside the caller's buffers (its
        // contract), from the cursor on; the remote ones are the peer's
        // addresses, which the kernel checks and we never dereference.
        let n = unsafe {
            let (l, r) = (liov.as_ptr(), riov.as_ptr());
            let (nl, nr) = (liov.len() as libc::c_ulong, riov.len() as libc::c_ulong);
            match dir {
                Dir::Read => libc::process_vm_readv(pid, l, nl, r, nr, 0),
                Dir::Write => libc::process_vm_writev(pid, l, nl, r, nr, 0),
            }
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EPERM | libc::EACCES) => return Err(Error::os(FI_EACCES, &e)),
                _ => return Err(Error::os(FI_EIO, &e)),
            }
        }
        let n = (n as usize).min(want);
        if n == 0 {
            // No progress on a non-empty batch: nothing more will come.
            return Err(Error::Other(FI_EIO));
        }
        done += n;
        lc.advance(&loc, n);
        rc.advance(&rem, n);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gathered_ranges_and_reports_faults_as_errors() {
        // Our own process is a valid target (same credentials).
        let me = std::process::id() as libc::pid_t;
        let a: Vec<u8> = (0..100).collect();
        let b = vec![7u8; 3000];
        let remote = [
            RemoteIov {
                addr: a.as_ptr() as usize + 10,
                len: 50,
            },
            RemoteIov {
                addr: b.as_ptr() as usize,
                len: 3000,
            },
        ];
        let mut out = vec![0u8; 4000];
        assert_eq!(read(me, &mut out, &remote).unwrap(), 3050);
        assert_eq!(&out[..50], &a[10..60]);
        assert!(out[50..3050].iter().all(|&x| x == 7));
        probe(me, a.as_ptr() as usize, &a[..16]).unwrap();
        assert_eq!(probe(me, a.as_ptr() as usize, &[1, 2]), Err(Error::Inval));
        // Not enough room, an unmapped address, a partial range, no
        // such process: errors, not crashes.
        assert_eq!(read(me, &mut out[..10], &remote), Err(Error::Inval));
        let bad = [RemoteIov { addr: 8, len: 8 }];
        assert!(read(me, &mut out, &bad).is_err());
        let half = [RemoteIov {
            addr: usize::MAX - 4,
            len: 8,
        }];
        assert!(read(me, &mut out, &half).is_err());
        assert!(read(-1, &mut out, &remote[..1]).is_err());
    }

    #[test]
    fn writes_scatter_and_gather_across_more_ranges_than_one_call_takes() {
        let me = std::process::id() as libc::pid_t;
        // 3000 remote ranges of 1-3 bytes, 2000 local buffers of 1-5
        // bytes: more than MAX_IOV on both sides, batches of different
        // byte counts, so the transfer resumes mid-range on both sides.
        // Written behind the compiler's back: a mutable buffer whose
        // address is exposed, looked at only after the call.
        let mut target = vec![0u8; 8000];
        let base = target.as_mut_ptr() as usize;
        let mut remote = Vec::new();
        let mut at = 0;
        for i in 0..3000 {
            let len = 1 + i % 3;
            remote.push(RemoteIov {
                addr: base + at,
                len,
            });
            // Leave a gap byte now and then, so ranges are not contiguous.
            at += len + usize::from(i % 7 == 0);
        }
        let total: usize = remote.iter().map(|r| r.len).sum();
        let src: Vec<u8> = (0..total).map(|i| (i * 13 % 256) as u8).collect();
        let sizes = |k: usize| 1 + k % 5;
        let mut pieces = Vec::new();
        let mut off = 0;
        let mut k = 0;
        while off < total {
            let n = sizes(k).min(total - off);
            pieces.push(&src[off..off + n]);
            off += n;
            k += 1;
        }
        assert!(pieces.len() > MAX_IOV && remote.len() > MAX_IOV * 2);
        let local: Vec<IoSlice<'_>> = pieces.iter().map(|p| IoSlice::new(p)).collect();
        assert_eq!(writev(me, &local, &remote).unwrap(), total);
        // What landed where: the ranges, in order, hold src.
        let mut expect = vec![0u8; target.len()];
        let mut s = 0;
        for r in &remote {
            let o = r.addr - base;
            expect[o..o + r.len].copy_from_slice(&src[s..s + r.len]);
            s += r.len;
        }
        assert_eq!(target, expect);
        // And read them back scattered into buffers of other sizes.
        let mut back = vec![0u8; total];
        let mut bufs: Vec<IoSliceMut<'_>> = back.chunks_mut(3).map(IoSliceMut::new).collect();
        assert_eq!(readv(me, &mut bufs, &remote).unwrap(), total);
        assert_eq!(back, src);
        // Local side too short; a write into an unmapped range after a
        // good one: the good part lands, then FI_EIO.
        assert_eq!(write(me, &src[..2], &remote[..3]), Err(Error::Inval));
        let mut dst = [0u8; 16];
        let half = [
            RemoteIov {
                addr: dst.as_mut_ptr() as usize,
                len: 16,
            },
            RemoteIov { addr: 8, len: 8 },
        ];
        let r = write(me, &[9u8; 24], &half);
        assert!(
            matches!(
                r,
                Err(Error::Os { code: FI_EIO, .. }) | Err(Error::Other(FI_EIO))
            ),
            "{r:?}"
        );
        assert_eq!(dst, [9u8; 16]);
        assert_eq!(write(me, &[], &[]), Ok(0));
    }
}
