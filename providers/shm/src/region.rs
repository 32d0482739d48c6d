//! A shared-memory region: an anonymous `memfd` sealed at its size,
//! mapped shared, handed to peers as a file descriptor. This module is
//! the crate's one unsafe boundary for shared memory; everything above it
//! (the ring, the attach handshake) uses only the safe accessors below.
//!
//! # Contract
//!
//! - **Anyone holding the descriptor may write any byte at any time.** A
//!   region is mapped by its creator and by every peer it was sent to;
//!   every such process can store anything anywhere in it, concurrently
//!   with us, including a hostile or crashed one. No value read from a
//!   region is trusted: callers copy each field out once, validate the
//!   copy, and use only the copy (never re-read after the check).
//! - **No reference to plain data in the region is ever formed.** There is
//!   no `&T`, `&[u8]` or `&mut [u8]` into the mapping; the compiler may
//!   assume such memory does not change, and here it does. Words are
//!   accessed through `AtomicU32`/`AtomicU64` (interior-mutable types whose
//!   every access is atomic, which is what concurrent writers from other
//!   processes require); byte ranges are moved with volatile loads and
//!   stores, word by word (the stance `rust-vmm`'s `vm-memory` takes for
//!   guest memory a VM can change under it), or, from 1 KiB on x86-64,
//!   by one string-move instruction inside an `asm!` block (opaque to the
//!   compiler in the same way), so the result is some mixture of old and
//!   new bytes, never undefined behaviour in this process.
//! - **Every access is bounds-checked against the mapped length**, which
//!   this process learned itself (its own `ftruncate`, or `fstat` of a
//!   received descriptor after checking its seals), never from the
//!   region's contents. A bad offset is an `Error::Inval`, never a panic
//!   and never an access outside the mapping. Atomic accesses must also be
//!   naturally aligned (the mapping is page-aligned, so offsets decide).
//! - **The size cannot change under us.** A region is sealed against
//!   shrinking and growing (`F_SEAL_SHRINK | F_SEAL_GROW`, then
//!   `F_SEAL_SEAL` so no one can add a write seal later). A descriptor
//!   from a peer is mapped only if it carries the shrink seal: a peer that
//!   could truncate the file under our mapping would turn our next access
//!   into `SIGBUS`.
//!
//! # Lifecycle
//!
//! A `memfd` has no name in any file system (its link count is zero; it
//! shows as `/memfd:oxifabric-shm (deleted)` in `/proc/PID/fd`). It lives
//! while a descriptor or a mapping of it exists, so it dies with the last
//! process using it, `SIGKILL` included: nothing is left in `/dev/shm`.

use oxifabric::abi::{FI_EINVAL, FI_ENOMEM};
use oxifabric::error::{Error, Result};
use oxifabric::service::shm_av::map_shared;
use std::marker::PhantomData;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

mod life;
mod shared;
pub use life::{LifePage, LIFE_LEN};
pub use shared::Shared;

/// The largest region this crate creates or maps from a peer (bounds what
/// a peer can make us map).
pub const MAX_LEN: usize = 1 << 30;

/// The seals every region carries: its size is fixed, and no other seal
/// (such as a write seal) can be added afterwards.
const SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// A mapped shared-memory region (see the module's contract).
pub struct Region {
    base: NonNull<u8>,
    len: usize,
    fd: OwnedFd,
}

// SAFETY: the mapping is process-wide memory that this type only touches
// through atomics and volatile copies at checked offsets; it holds no
// thread-affine state.
unsafe impl Send for Region {}
// SAFETY: as for Send: every access from a shared reference is atomic or a
// volatile copy, which concurrent threads (and processes) may do.
unsafe impl Sync for Region {}

impl Region {
    /// Creates a zero-filled region of `len` bytes, sealed at that size.
    pub fn create(len: usize) -> Result<Region> {
        if len == 0 || len > MAX_LEN {
            return Err(Error::Inval);
        }
        let fd = sealable_memfd(c"oxifabric-shm", len)?;
        // SAFETY: F_ADD_SEALS on our own sealable memfd.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, SEALS) } != 0 {
            return Err(last_os(FI_EINVAL));
        }
        Self::map(fd, len)
    }

    /// Maps a region a peer sent: refused (`Inval`) unless it is a memfd
    /// sealed against shrinking, writable, and at most `max_len` bytes.
    pub fn from_fd(fd: OwnedFd, max_len: usize) -> Result<Region> {
        // SAFETY: F_GET_SEALS only reads the descriptor's seals; it fails
        // on anything that is not a sealable shmem file.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(Error::Inval);
        }
        if seals & (libc::F_SEAL_WRITE | libc::F_SEAL_FUTURE_WRITE) != 0 {
            return Err(Error::Inval);
        }
        // Read after the seal check: from now on the size cannot shrink.
        let len = file_size(fd.as_fd())?;
        if len == 0 || len > max_len.min(MAX_LEN) {
            return Err(Error::Inval);
        }
        Self::map(fd, len)
    }

    fn map(fd: OwnedFd, len: usize) -> Result<Region> {
        let base = map_shared(fd.as_fd(), len)?;
        let base = NonNull::new(base).ok_or(Error::NoMem)?;
        Ok(Region { base, len, fd })
    }

    /// The mapped length in bytes (learned by this process, not read from
    /// the region).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty (never true: regions have a size).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The descriptor, to hand to a peer (`attach` sends it with
    /// `SCM_RIGHTS`).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// A pointer to `n` bytes at `off`, after checking they lie inside the
    /// mapping and that `off` is a multiple of `align` (a power of two).
    fn at(&self, off: usize, n: usize, align: usize) -> Result<*mut u8> {
        let end = off.checked_add(n).ok_or(Error::Inval)?;
        if end > self.len || off & (align - 1) != 0 {
            return Err(Error::Inval);
        }
        // SAFETY: off + n <= len: the result points inside the mapping.
        Ok(unsafe { self.base.as_ptr().add(off) })
    }

    fn u32_at(&self, off: usize) -> Result<&AtomicU32> {
        let p = self.at(off, 4, 4)?;
        // SAFETY: p is 4-byte aligned and inside the mapping, which lives
        // as long as &self; the word is only ever accessed atomically by
        // this crate (other processes' stores are what atomics are for).
        Ok(unsafe { AtomicU32::from_ptr(p.cast::<u32>()) })
    }

    fn u64_at(&self, off: usize) -> Result<&AtomicU64> {
        let p = self.at(off, 8, 8)?;
        // SAFETY: as in u32_at, 8-byte aligned.
        Ok(unsafe { AtomicU64::from_ptr(p.cast::<u64>()) })
    }

    /// Atomically loads the u32 at `off`.
    pub fn load_u32(&self, off: usize, order: Ordering) -> Result<u32> {
        Ok(self.u32_at(off)?.load(order))
    }

    /// Atomically stores `v` at `off`.
    pub fn store_u32(&self, off: usize, v: u32, order: Ordering) -> Result<()> {
        self.u32_at(off)?.store(v, order);
        Ok(())
    }

    /// Atomically loads the u64 at `off`.
    pub fn load_u64(&self, off: usize, order: Ordering) -> Result<u64> {
        Ok(self.u64_at(off)?.load(order))
    }

    /// Atomically stores `v` at `off`.
    pub fn store_u64(&self, off: usize, v: u64, order: Ordering) -> Result<()> {
        self.u64_at(off)?.store(v, order);
        Ok(())
    }

    /// Compare-and-swap of the u32 at `off`, as
    /// [`Region::compare_exchange_u64`].
    pub fn compare_exchange_u32(
        &self,
        off: usize,
        current: u32,
        new: u32,
        success: Ordering,
        failure: Ordering,
    ) -> Result<core::result::Result<u32, u32>> {
        Ok(self
            .u32_at(off)?
            .compare_exchange(current, new, success, failure))
    }

    /// Compare-and-swap of the u64 at `off`: the inner result is `Ok` with
    /// the old value when it was `current` and is now `new`, else `Err`
    /// with the value found.
    pub fn compare_exchange_u64(
        &self,
        off: usize,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<core::result::Result<u64, u64>> {
        Ok(self
            .u64_at(off)?
            .compare_exchange(current, new, success, failure))
    }

    /// Atomically ORs `bits` into the u64 at `off`; the old value.
    pub fn fetch_or_u64(&self, off: usize, bits: u64, order: Ordering) -> Result<u64> {
        Ok(self.u64_at(off)?.fetch_or(bits, order))
    }

    /// Atomically adds `v` (wrapping) to the u64 at `off`; the old value.
    pub fn fetch_add_u64(&self, off: usize, v: u64, order: Ordering) -> Result<u64> {
        Ok(self.u64_at(off)?.fetch_add(v, order))
    }

    /// Atomically replaces the u64 at `off` with `v`; the old value.
    pub fn swap_u64(&self, off: usize, v: u64, order: Ordering) -> Result<u64> {
        Ok(self.u64_at(off)?.swap(v, order))
    }

    /// The `N` bytes at `off` (a multiple of 8) as one checked window,
    /// whose words are then reached at offsets fixed at compile time with
    /// no further check (a ring cell's header: one check a cell, not one
    /// a word).
    #[inline]
    pub fn fixed<const N: usize>(&self, off: usize) -> Result<Fixed<'_, N>> {
        let p = self.at(off, N, 8)?;
        Ok(Fixed {
            // SAFETY: `at` returned a pointer into the mapping, never NULL.
            p: unsafe { NonNull::new_unchecked(p) },
            _region: PhantomData,
        })
    }

    /// Copies `src` into the region at `off`.
    pub fn copy_in(&self, off: usize, src: &[u8]) -> Result<()> {
        let dst = self.at(off, src.len(), 1)?;
        // SAFETY: dst..dst+len is inside the mapping (checked by `at`);
        // src is a distinct local slice.
        unsafe { volatile_copy(src.as_ptr(), dst, src.len(), Side::Dst) };
        Ok(())
    }

    /// Copies `dst.len()` bytes at `off` out of the region into `dst`.
    /// Bytes a peer changes meanwhile arrive as some mixture of old and
    /// new: callers treat them as data, never as sizes or offsets to trust
    /// without a check.
    pub fn copy_out(&self, off: usize, dst: &mut [u8]) -> Result<()> {
        let src = self.at(off, dst.len(), 1)?;
        // SAFETY: src..src+len is inside the mapping (checked by `at`);
        // dst is a distinct local slice we may write.
        unsafe { volatile_copy(src, dst.as_mut_ptr(), dst.len(), Side::Src) };
        Ok(())
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: base/len are the mapping made in `map`, unmapped once;
        // no reference into it outlives &self.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// `N` bytes of a [`Region`] at an offset checked once ([`Region::fixed`]):
/// inside the mapping and 8-byte aligned (the mapping itself is page
/// aligned). Each access names its offset `O` as a constant, which the
/// compiler checks against `N` and the word's alignment, so the accesses
/// themselves cost no check; like every access to the region, they are
/// atomic.
#[derive(Clone, Copy)]
pub struct Fixed<'a, const N: usize> {
    p: NonNull<u8>,
    _region: PhantomData<&'a Region>,
}

impl<'a, const N: usize> Fixed<'a, N> {
    #[inline(always)]
    fn u32_at<const O: usize>(self) -> &'a AtomicU32 {
        const { assert!(O.is_multiple_of(4) && O + 4 <= N) };
        // SAFETY: O + 4 <= N (checked above at compile time) and the
        // window's N bytes lie inside the mapping, which outlives 'a; the
        // window starts 8-byte aligned and O is a multiple of 4. The word
        // is only ever accessed atomically (as in `Region::u32_at`).
        unsafe { AtomicU32::from_ptr(self.p.as_ptr().add(O).cast::<u32>()) }
    }

    #[inline(always)]
    fn u64_at<const O: usize>(self) -> &'a AtomicU64 {
        const { assert!(O.is_multiple_of(8) && O + 8 <= N) };
        // SAFETY: as in `u32_at`, with O + 8 <= N and O a multiple of 8.
        unsafe { AtomicU64::from_ptr(self.p.as_ptr().add(O).cast::<u64>()) }
    }

    /// Atomically loads the u32 at `O`.
    #[inline(always)]
    pub fn load_u32<const O: usize>(self, order: Ordering) -> u32 {
        self.u32_at::<O>().load(order)
    }

    /// Atomically stores `v` at `O`.
    #[inline(always)]
    pub fn store_u32<const O: usize>(self, v: u32, order: Ordering) {
        self.u32_at::<O>().store(v, order)
    }

    /// Atomically loads the u64 at `O`.
    #[inline(always)]
    pub fn load_u64<const O: usize>(self, order: Ordering) -> u64 {
        self.u64_at::<O>().load(order)
    }

    /// Atomically stores `v` at `O`.
    #[inline(always)]
    pub fn store_u64<const O: usize>(self, v: u64, order: Ordering) {
        self.u64_at::<O>().store(v, order)
    }

    /// Asks the processor to bring the window's first cache line in for
    /// writing (x86's `prefetchw`; nothing elsewhere): a cell a sender is
    /// about to read and then claim with a compare-and-swap then arrives
    /// owned in one transfer instead of shared, then upgraded in a second.
    #[inline(always)]
    pub fn prefetch_for_write(self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint that never faults or changes
        // memory; the address is inside the mapping anyway.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_ET0 }>(
                self.p.as_ptr().cast::<i8>(),
            )
        };
    }

    /// Compare-and-swap of the u32 at `O` (as `Region::compare_exchange_u32`).
    #[inline(always)]
    pub fn compare_exchange_u32<const O: usize>(
        self,
        current: u32,
        new: u32,
        success: Ordering,
        failure: Ordering,
    ) -> core::result::Result<u32, u32> {
        self.u32_at::<O>()
            .compare_exchange(current, new, success, failure)
    }

    /// Compare-and-swap of the u64 at `O` (as `Region::compare_exchange_u64`).
    #[inline(always)]
    pub fn compare_exchange_u64<const O: usize>(
        self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> core::result::Result<u64, u64> {
        self.u64_at::<O>()
            .compare_exchange(current, new, success, failure)
    }
}

/// Which side of a copy is shared memory (accessed with volatile
/// operations); the other is a local buffer.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Src,
    Dst,
}

/// Copies `n` bytes, the shared side with volatile accesses: bytes up to
/// the shared side's 8-byte alignment, then whole words, then the tail.
///
/// # Safety
///
/// `src..src+n` must be readable and `dst..dst+n` writable, not
/// overlapping; the local side must not be accessed by anyone else
/// meanwhile.
unsafe fn volatile_copy(src: *const u8, dst: *mut u8, n: usize, shared: Side) {
    #[cfg(target_arch = "x86_64")]
    if n >= BULK_MIN {
        // SAFETY: the caller's guarantee, which is bulk_copy's.
        unsafe { bulk_copy(src, dst, n) };
        return;
    }
    let shared_addr = if shared == Side::Src {
        src as usize
    } else {
        dst as usize
    };
    let head = shared_addr.wrapping_neg() % 8;
    let head = head.min(n);
    let words = (n - head) / 8;
    let mut i = 0;
    while i < head {
        // SAFETY: i < n: both addresses are in the ranges the caller gave.
        unsafe { copy_byte(src.add(i), dst.add(i), shared) };
        i += 1;
    }
    for _ in 0..words {
        // SAFETY: i + 8 <= n; the shared side is 8-byte aligned here (its
        // address plus `head` is a multiple of 8); the local side is
        // accessed unaligned.
        unsafe {
            if shared == Side::Src {
                let w = core::ptr::read_volatile(src.add(i).cast::<u64>());
                core::ptr::write_unaligned(dst.add(i).cast::<u64>(), w);
            } else {
                let w = core::ptr::read_unaligned(src.add(i).cast::<u64>());
                core::ptr::write_volatile(dst.add(i).cast::<u64>(), w);
            }
        }
        i += 8;
    }
    while i < n {
        // SAFETY: i < n, as above.
        unsafe { copy_byte(src.add(i), dst.add(i), shared) };
        i += 1;
    }
}

/// From this many bytes on, a copy goes through [`bulk_copy`]: below it
/// the string instruction's start-up costs more than the word loop
/// (measured here, one thread, in cache: at 512 B the string move copies
/// 0.7 times as fast as the loop, at 1 KiB 1.2 times, from 2 KiB on about
/// twice as fast).
#[cfg(target_arch = "x86_64")]
const BULK_MIN: usize = 1024;

/// Copies `n` bytes with the CPU's string move (`rep movsb`), which
/// x86-64 processors with fast string moves run at `memcpy` speed. Why it keeps the
/// contract: the copy happens inside an `asm!` block, which the compiler
/// must treat as an opaque access to the memory it is given, as it does
/// a volatile access; it neither assumes the shared bytes are stable nor
/// reads them twice. Bytes a peer changes during the copy arrive as some
/// mixture of old and new, as with the word loop.
///
/// # Safety
///
/// `src..src+n` readable and `dst..dst+n` writable, not overlapping.
#[cfg(target_arch = "x86_64")]
unsafe fn bulk_copy(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: the caller's guarantee; rdi/rsi/rcx are clobbered (marked
    // inout and discarded) and the direction flag is clear on entry to
    // any Rust function (the System V ABI requires it).
    unsafe {
        core::arch::asm!(
            "rep movsb",
            inout("rcx") n => _,
            inout("rsi") src => _,
            inout("rdi") dst => _,
            options(nostack, preserves_flags)
        );
    }
}

/// # Safety
///
/// `src` readable and `dst` writable for one byte.
unsafe fn copy_byte(src: *const u8, dst: *mut u8, shared: Side) {
    // SAFETY: the caller's guarantee.
    unsafe {
        if shared == Side::Src {
            *dst = core::ptr::read_volatile(src);
        } else {
            core::ptr::write_volatile(dst, *src);
        }
    }
}

/// A new memfd named `name` (only ever shown in `/proc/PID/fd`) of `len`
/// zero bytes, which may be sealed.
fn sealable_memfd(name: &core::ffi::CStr, len: usize) -> Result<OwnedFd> {
    // SAFETY: the name is NUL-terminated; the flags are valid.
    let raw =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if raw < 0 {
        return Err(last_os(FI_ENOMEM));
    }
    // SAFETY: memfd_create returned a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: fd is an open memfd; ftruncate only sizes it.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(last_os(FI_ENOMEM));
    }
    Ok(fd)
}

/// The size of the file behind `fd`.
pub(crate) fn file_size(fd: BorrowedFd<'_>) -> Result<usize> {
    usize::try_from(fstat(fd)?.st_size).map_err(|_| Error::Inval)
}

/// The file `fd` opens, as `(device, inode)`.
pub(crate) fn file_id(fd: BorrowedFd<'_>) -> Result<(u64, u64)> {
    let st = fstat(fd)?;
    Ok((st.st_dev, st.st_ino))
}

fn fstat(fd: BorrowedFd<'_>) -> Result<libc::stat> {
    // SAFETY: all-zero is a valid `stat`; fstat fills it.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fd is open and st is writable.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(last_os(FI_EINVAL));
    }
    Ok(st)
}

/// The last OS error as `code` with its errno kept.
pub(crate) fn last_os(code: libc::c_int) -> Error {
    Error::os(code, &std::io::Error::last_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(fd: BorrowedFd<'_>) -> OwnedFd {
        fd.try_clone_to_owned().unwrap()
    }

    /// Links to the file behind `fd` in any directory (0 for a memfd).
    pub(crate) fn links(fd: BorrowedFd<'_>) -> u64 {
        // SAFETY: all-zero is a valid `stat`; fstat fills it.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: fd is open and st is writable.
        assert_eq!(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) }, 0);
        st.st_nlink
    }

    #[test]
    fn two_mappings_of_one_region_see_each_others_writes() {
        let a = Region::create(4096).unwrap();
        let b = Region::from_fd(dup(a.fd()), 4096).unwrap();
        assert_eq!(b.len(), 4096);
        a.store_u64(8, 0x1122_3344_5566_7788, Ordering::Release)
            .unwrap();
        assert_eq!(
            b.load_u64(8, Ordering::Acquire).unwrap(),
            0x1122_3344_5566_7788
        );
        b.store_u32(4092, 7, Ordering::Release).unwrap();
        assert_eq!(a.load_u32(4092, Ordering::Acquire).unwrap(), 7);
        let cas = a.compare_exchange_u64(8, 1, 2, Ordering::AcqRel, Ordering::Acquire);
        assert_eq!(cas.unwrap(), Err(0x1122_3344_5566_7788));
        assert_eq!(b.fetch_or_u64(16, 0b101, Ordering::AcqRel), Ok(0));
        assert_eq!(a.fetch_or_u64(16, 0b110, Ordering::AcqRel), Ok(0b101));
        assert_eq!(a.swap_u64(16, 0, Ordering::AcqRel), Ok(0b111));
        assert_eq!(b.load_u64(16, Ordering::Acquire), Ok(0));
        assert_eq!(a.swap_u64(4, 0, Ordering::AcqRel), Err(Error::Inval));
        // Byte copies at every alignment and length round-trip.
        // Lengths on both sides of the bulk copy's threshold.
        let src: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        for off in 100..109 {
            for n in [0, 1, 7, 8, 9, 31, 100, 255, 256, 257, 1000, 3000] {
                a.copy_in(off, &src[..n]).unwrap();
                let mut out = vec![0u8; n];
                b.copy_out(off, &mut out).unwrap();
                assert_eq!(out, src[..n], "offset {off}, {n} bytes");
            }
        }
        assert_eq!(links(a.fd()), 0, "a memfd has no name anywhere");
    }

    #[test]
    fn bad_offsets_are_errors_not_panics() {
        let r = Region::create(64).unwrap();
        assert_eq!(r.load_u64(64, Ordering::Relaxed), Err(Error::Inval));
        assert_eq!(r.load_u64(60, Ordering::Relaxed), Err(Error::Inval));
        assert_eq!(
            r.load_u64(4, Ordering::Relaxed),
            Err(Error::Inval),
            "misaligned"
        );
        assert_eq!(r.store_u32(2, 0, Ordering::Relaxed), Err(Error::Inval));
        assert_eq!(
            r.load_u32(usize::MAX - 1, Ordering::Relaxed),
            Err(Error::Inval)
        );
        assert_eq!(r.copy_in(60, &[0; 5]), Err(Error::Inval));
        assert_eq!(r.copy_out(usize::MAX, &mut [0; 2]), Err(Error::Inval));
        assert_eq!(r.copy_out(64, &mut []), Ok(()));
        assert!(Region::create(0).is_err());
        assert!(Region::create(MAX_LEN + 1).is_err());
    }

    #[test]
    fn a_fixed_window_is_checked_once_where_it_is_taken() {
        let r = Region::create(128).unwrap();
        assert!(r.fixed::<64>(65).is_err(), "past the end");
        assert!(
            r.fixed::<64>(72).is_err(),
            "not 8-byte aligned and past the end"
        );
        assert!(r.fixed::<64>(4).is_err(), "misaligned");
        assert!(r.fixed::<64>(usize::MAX - 7).is_err());
        let w = r.fixed::<64>(64).unwrap();
        w.store_u64::<56>(7, Ordering::Relaxed);
        w.store_u32::<8>(3, Ordering::Relaxed);
        assert_eq!(r.load_u64(120, Ordering::Relaxed), Ok(7));
        assert_eq!(w.load_u32::<8>(Ordering::Relaxed), 3);
        assert_eq!(
            w.compare_exchange_u64::<56>(7, 9, Ordering::Relaxed, Ordering::Relaxed),
            Ok(7)
        );
        assert_eq!(
            w.compare_exchange_u32::<8>(4, 5, Ordering::Relaxed, Ordering::Relaxed),
            Err(3)
        );
        assert_eq!(w.load_u64::<56>(Ordering::Relaxed), 9);
    }

    #[test]
    fn descriptors_that_could_shrink_or_are_too_large_are_refused() {
        // A memfd without seals: its owner could truncate it under us.
        // SAFETY: a literal name; the new descriptor is owned right away.
        let raw = unsafe { libc::memfd_create(c"unsealed".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(raw >= 0);
        // SAFETY: raw is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sizes our own memfd.
        assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), 4096) }, 0);
        assert!(Region::from_fd(fd, 4096).is_err());
        // Not a memfd at all.
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        assert!(Region::from_fd(file.into(), 4096).is_err());
        // Larger than the caller accepts.
        let r = Region::create(8192).unwrap();
        assert!(Region::from_fd(dup(r.fd()), 4096).is_err());
        // The seals hold: the file can neither shrink nor grow.
        // SAFETY: ftruncate on our own descriptor; it must fail.
        assert_ne!(unsafe { libc::ftruncate(r.fd().as_raw_fd(), 10) }, 0);
        // SAFETY: as above.
        assert_ne!(unsafe { libc::ftruncate(r.fd().as_raw_fd(), 1 << 20) }, 0);
    }
}
