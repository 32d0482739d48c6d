//! Cross-memory attach: copying another process's memory with one system
//! call (`process_vm_readv`), for messages too large for a ring cell. The
//! sender announces where its data is (a rendezvous cell), the receiver
//! pulls it straight into the application's buffer: one copy.
//!
//! The kernel allows it only when we may `ptrace` the peer
//! (`PTRACE_MODE_ATTACH_REALCREDS`): Yama's `ptrace_scope`, a peer in
//! another user namespace, a non-dumpable peer or a seccomp filter can
//! refuse it even between processes of one user. So a transport probes it
//! per peer at connect time ([`probe`]) and every read reports failure as
//! an error ([`read`]), never a crash, so the caller can fall back.
//!
//! The fallback, a pipelined bounce area in the shared region (the sender
//! copies chunks in, the receiver copies them out, both in flight at
//! once), is not written yet.

use oxifabric::abi::{FI_EACCES, FI_EIO};
use oxifabric::error::{Error, Result};

/// A range of another process's address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteIov {
    /// Its start, in the peer's address space.
    pub addr: usize,
    /// Its length in bytes.
    pub len: usize,
}

/// The most remote ranges one system call takes (the kernel's UIO_MAXIOV).
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
    let total = remote
        .iter()
        .try_fold(0usize, |n, r| n.checked_add(r.len))
        .ok_or(Error::Inval)?;
    if total > local.len() {
        return Err(Error::Inval);
    }
    let mut done = 0;
    for batch in remote.chunks(MAX_IOV) {
        let want: usize = batch.iter().map(|r| r.len).sum();
        let riov: Vec<libc::iovec> = batch
            .iter()
            .map(|r| libc::iovec {
                iov_base: r.addr as *mut libc::c_void,
                iov_len: r.len,
            })
            .collect();
        let liov = libc::iovec {
            iov_base: local[done..].as_mut_ptr().cast(),
            iov_len: want,
        };
        // SAFETY: the local iovec covers `want` bytes of `local` after
        // `done` (done + want <= total <= local.len()), which we may
        // write; the remote iovecs are addresses in the other process,
        // checked by the kernel, never dereferenced here.
        let n = unsafe {
            libc::process_vm_readv(pid, &liov, 1, riov.as_ptr(), riov.len() as libc::c_ulong, 0)
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => Error::os(FI_EACCES, &e),
                _ => Error::os(FI_EIO, &e),
            });
        }
        if n as usize != want {
            // A partial read: some range ended in unmapped memory.
            return Err(Error::Other(FI_EIO));
        }
        done += want;
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
}
