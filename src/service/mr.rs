//! The memory-registration table every provider reuses (libfabric's
//! `util_mr_map`): one per domain, holding each registered region under its
//! key, and the one check every remote access goes through on the target
//! side ([`MrTable::access`]: key, overflow-safe range, access flags).
//!
//! Lookups take the read lock of one of [`SHARDS`] shards (the key picks
//! it), so concurrent remote accesses never wait for each other and a
//! registration locks only its own shard: there is no domain-wide lock on
//! the data path. A lookup is a hash-map probe, O(1).
//!
//! How an address names a byte follows the domain's `mr_mode`
//! (fi_mr(3)): with `FI_MR_VIRT_ADDR` it is the virtual address of the
//! byte; without, a 0-based offset into the registration (its `offset`
//! argument moves that base), the iovec pieces of `fi_mr_regv` counted one
//! after the other. With `FI_MR_PROV_KEY` the table picks keys; otherwise
//! the application's requested key is used and one already in use is
//! `FI_ENOKEY`.

use super::keyhash::KeyedU64;
use crate::abi::*;
use crate::error::{Error, Result};
use crate::ops::{IoBuf, IoVec};
use crate::service::cntr::Counter;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Number of independently locked parts of a table.
pub const SHARDS: usize = 16;

/// Access bits a registration may carry.
pub const ACCESS_BITS: u64 =
    FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
/// Registration flags the table understands.
pub const REG_FLAGS: u64 = FI_RMA_EVENT;

/// The `mr_mode` bits an application must follow on a domain opened with
/// this `mr_mode` value: the pre-1.5 `FI_MR_BASIC` stands for virtual
/// addresses, allocated memory and provider keys, `FI_MR_SCALABLE` for
/// none of them.
pub fn effective_mr_mode(mr_mode: c_int) -> c_int {
    const BASIC: c_int = FI_MR_BASIC as c_int;
    const SCALABLE: c_int = FI_MR_SCALABLE as c_int;
    match mr_mode {
        BASIC => FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
        SCALABLE => 0,
        m => m & !(BASIC | SCALABLE),
    }
}

/// What a registration asks for (the arguments of `fi_mr_reg`, `fi_mr_regv`
/// and `fi_mr_regattr`, converted at the boundary).
#[derive(Debug, Clone, Copy)]
pub struct MrRequest<'a> {
    /// The memory, one entry per iovec piece.
    pub iov: &'a [IoBuf],
    /// `FI_SEND`, `FI_RECV`, `FI_READ`, `FI_WRITE`, `FI_REMOTE_READ`,
    /// `FI_REMOTE_WRITE`.
    pub access: u64,
    /// The address of the first byte when addresses are offsets.
    pub offset: u64,
    /// The key the application wants (ignored with `FI_MR_PROV_KEY`).
    pub requested_key: u64,
    /// Registration flags (`FI_RMA_EVENT`).
    pub flags: u64,
}

/// One piece of a registration: where it starts in the region's address
/// space, and the memory.
#[derive(Debug, Clone, Copy)]
struct Piece {
    addr: u64,
    buf: IoBuf,
}

/// A registration with a device, made by a provider whose transport
/// needs one (verbs: `ibv_reg_mr`).
pub struct DeviceReg {
    /// The key peers name the memory by (the device's remote key).
    pub key: u64,
    /// What `fi_mr_desc` hands the application (the device's local key).
    pub desc: usize,
    /// The registration itself; dropping it deregisters the memory.
    pub handle: Box<dyn std::any::Any + Send + Sync>,
}

/// A provider's device registration, called by [`MrTable::register`]
/// before the region enters the table (domains built with
/// [`MrTable::with_device`]).
pub trait DeviceMr: Send + Sync {
    /// Registers `buf` (one piece) for `access` (`FI_*` bits, every one
    /// when the application gave none).
    fn register(&self, buf: IoBuf, access: u64) -> Result<DeviceReg>;
}

/// A registered memory region.
pub struct MemRegion {
    /// The device's descriptor of it ([`DeviceReg::desc`]), for
    /// `fi_mr_desc`; None where the provider registers nothing.
    pub desc: Option<usize>,
    /// The device registration, released with the region.
    _device: Option<Box<dyn std::any::Any + Send + Sync>>,
    /// The key peers name it by.
    pub key: u64,
    /// Its access bits.
    pub access: u64,
    /// Its registration flags.
    pub flags: u64,
    /// Pieces sorted by address.
    pieces: Vec<Piece>,
    /// Usable by peers: false from `fi_close` on (a peer's access then
    /// fails as for an unknown key), and before `fi_mr_enable` where the
    /// mode asks for it.
    enabled: AtomicBool,
    /// Counters bound with `fi_mr_bind` for remote writes and reads
    /// (`FI_RMA_EVENT`).
    remote_write: Mutex<Option<Arc<Counter>>>,
    remote_read: Mutex<Option<Arc<Counter>>>,
}

impl MemRegion {
    /// Whether peers may use it now.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// `fi_mr_enable`.
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Release);
    }

    /// `fi_mr_bind` to a counter: remote writes (`FI_REMOTE_WRITE`) and/or
    /// reads (`FI_REMOTE_READ`) into this region count there.
    pub fn bind_cntr(&self, c: Arc<Counter>, flags: u64) -> Result<()> {
        if flags & !(FI_REMOTE_WRITE | FI_REMOTE_READ) != 0 || flags == 0 {
            return Err(Error::BadFlags);
        }
        if flags & FI_REMOTE_WRITE != 0 {
            *self.remote_write.lock().unwrap_or_else(|p| p.into_inner()) = Some(c.clone());
        }
        if flags & FI_REMOTE_READ != 0 {
            *self.remote_read.lock().unwrap_or_else(|p| p.into_inner()) = Some(c);
        }
        Ok(())
    }

    /// Counts a remote access that completed into this region on the
    /// counter bound for it, if any.
    pub fn count_remote(&self, write: bool) {
        let slot = if write {
            &self.remote_write
        } else {
            &self.remote_read
        };
        if let Some(c) = slot.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            c.inc();
        }
    }

    /// Total bytes registered.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(|p| p.buf.len()).sum()
    }

    /// Whether nothing is registered (a zero-length registration).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The memory behind `[addr, addr + len)`, or None when any byte of it
    /// lies outside the registration (or the range wraps around).
    fn range(&self, addr: u64, len: usize) -> Option<IoVec> {
        let mut out = IoVec::default();
        if len == 0 {
            return Some(out);
        }
        let end = addr.checked_add(len as u64)?;
        let mut at = addr;
        while at < end {
            // The piece holding `at` (pieces do not overlap in the offset
            // space; with virtual addresses the first one holding it).
            let p = self
                .pieces
                .iter()
                .find(|p| at >= p.addr && at - p.addr < p.buf.len() as u64)?;
            let off = (at - p.addr) as usize;
            let n = (p.buf.len() - off).min((end - at) as usize);
            out.push(p.buf.slice(off, n))?;
            at += n as u64;
        }
        Some(out)
    }
}

/// Why a remote access was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// No enabled region has this key.
    Key,
    /// The range is not inside the region (or wraps around).
    Range,
    /// The region does not allow this kind of access.
    Access,
}

impl Denied {
    /// The error an initiator reports (`FI_EACCES` for every cause, as
    /// libfabric's providers do; the cause is in the words).
    pub fn code(self) -> c_int {
        FI_EACCES
    }

    /// The cause in words, for the initiator's error entry and the
    /// target's log.
    pub fn cause(self) -> &'static str {
        match self {
            Denied::Key => "remote access with an unknown or closed memory key",
            Denied::Range => "remote access outside the registered memory",
            Denied::Access => "remote access the registration does not permit",
        }
    }

    /// Its number on a wire (1, 2, 3; never 0, which means "accepted").
    pub fn to_u64(self) -> u64 {
        match self {
            Denied::Key => 1,
            Denied::Range => 2,
            Denied::Access => 3,
        }
    }

    /// The cause a peer sent ([`Denied::to_u64`]); None for an unknown
    /// number.
    pub fn from_u64(v: u64) -> Option<Denied> {
        Some(match v {
            1 => Denied::Key,
            2 => Denied::Range,
            3 => Denied::Access,
            _ => return None,
        })
    }
}

/// A domain's registrations.
pub struct MrTable {
    /// Keyed by registration key with a keyed fast hash (`keyhash.rs`).
    shards: [RwLock<HashMap<u64, Arc<MemRegion>, KeyedU64>>; SHARDS],
    /// The `mr_mode` bits in force ([`effective_mr_mode`]).
    mode: c_int,
    /// Most iovec pieces per registration.
    iov_limit: usize,
    /// Next provider key (`FI_MR_PROV_KEY`).
    next_key: AtomicU64,
    /// The provider's device registration, when it has one.
    device: Option<Arc<dyn DeviceMr>>,
}

fn shard_of(key: u64) -> usize {
    // Keys are often small and sequential; mix the bits so neighbours
    // spread over the shards.
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 60) as usize % SHARDS
}

impl MrTable {
    /// A table for a domain opened with `mr_mode` (the value in its
    /// `fi_info`, either meaning) that accepts up to `iov_limit` pieces per
    /// registration.
    pub fn new(mr_mode: c_int, iov_limit: usize) -> MrTable {
        MrTable {
            shards: Default::default(),
            mode: effective_mr_mode(mr_mode),
            iov_limit: iov_limit.max(1),
            next_key: AtomicU64::new(1),
            device: None,
        }
    }

    /// A table whose regions are also registered with a device: the
    /// device's keys are the keys (the mode must have `FI_MR_PROV_KEY`)
    /// and its descriptor is `fi_mr_desc`'s.
    pub fn with_device(mr_mode: c_int, iov_limit: usize, device: Arc<dyn DeviceMr>) -> MrTable {
        MrTable {
            device: Some(device),
            ..MrTable::new(mr_mode, iov_limit)
        }
    }

    /// The `mr_mode` bits in force.
    pub fn mode(&self) -> c_int {
        self.mode
    }

    /// Registers memory (`fi_mr_reg`, `fi_mr_regv`, `fi_mr_regattr`).
    /// Errors: no piece, or more than the limit, `FI_EINVAL`; unknown
    /// access bits `FI_EINVAL`; unknown flags `FI_EBADFLAGS`; a requested
    /// key already in use `FI_ENOKEY`.
    pub fn register(&self, r: &MrRequest<'_>) -> Result<Arc<MemRegion>> {
        if r.iov.is_empty() || r.iov.len() > self.iov_limit {
            return Err(Error::Inval);
        }
        if r.access & !ACCESS_BITS != 0 {
            return Err(Error::Inval);
        }
        if r.flags & !REG_FLAGS != 0 {
            return Err(Error::BadFlags);
        }
        let virt = self.mode & FI_MR_VIRT_ADDR != 0;
        let mut pieces = Vec::with_capacity(r.iov.len());
        let mut at = r.offset;
        for b in r.iov {
            let addr = if virt { b.addr() as u64 } else { at };
            at = at.checked_add(b.len() as u64).ok_or(Error::Inval)?;
            pieces.push(Piece { addr, buf: *b });
        }
        pieces.sort_by_key(|p| p.addr);
        // Without an access list every access is allowed (fi_mr(3): the
        // provider may ignore access it does not enforce; we enforce all).
        let access = if r.access == 0 { ACCESS_BITS } else { r.access };
        // A device registers contiguous memory: one piece.
        let reg = match (&self.device, r.iov) {
            (Some(dev), [b]) => Some(dev.register(*b, access)?),
            (Some(_), _) => return Err(Error::Inval),
            (None, _) => None,
        };
        let device_key = reg.as_ref().map(|g| g.key);
        let desc = reg.as_ref().map(|g| g.desc);
        let handle = Mutex::new(reg.map(|g| g.handle));
        let make = |key| {
            Arc::new(MemRegion {
                desc,
                _device: handle.lock().unwrap_or_else(|p| p.into_inner()).take(),
                key,
                access,
                flags: r.flags,
                pieces: pieces.clone(),
                enabled: AtomicBool::new(true),
                remote_write: Mutex::new(None),
                remote_read: Mutex::new(None),
            })
        };
        if let Some(key) = device_key {
            return self.insert(key, &make).ok_or(Error::Other(FI_ENOKEY));
        }
        if self.mode & FI_MR_PROV_KEY != 0 {
            loop {
                let key = self.next_key.fetch_add(1, Ordering::Relaxed);
                if key == FI_KEY_NOTAVAIL {
                    continue;
                }
                if let Some(m) = self.insert(key, &make) {
                    return Ok(m);
                }
            }
        }
        if r.requested_key == FI_KEY_NOTAVAIL {
            return Err(Error::Other(FI_EKEYREJECTED));
        }
        self.insert(r.requested_key, &make)
            .ok_or(Error::Other(FI_ENOKEY))
    }

    fn insert(&self, key: u64, make: &dyn Fn(u64) -> Arc<MemRegion>) -> Option<Arc<MemRegion>> {
        let mut s = self.shards[shard_of(key)]
            .write()
            .unwrap_or_else(|p| p.into_inner());
        if s.contains_key(&key) {
            return None;
        }
        let m = make(key);
        s.insert(key, m.clone());
        Some(m)
    }

    /// Removes a region (`fi_close`): from now on its key is unknown to
    /// peers and free for a new registration.
    pub fn remove(&self, m: &MemRegion) {
        m.enabled.store(false, Ordering::Release);
        let mut s = self.shards[shard_of(m.key)]
            .write()
            .unwrap_or_else(|p| p.into_inner());
        if s.get(&m.key).is_some_and(|x| core::ptr::eq(&**x, m)) {
            s.remove(&m.key);
        }
    }

    /// The target-side check of a remote access: the region with `key`
    /// (enabled), `[addr, addr + len)` inside it without wrapping, and
    /// `access` (`FI_REMOTE_READ` or `FI_REMOTE_WRITE`) allowed. On
    /// success, the region (the caller holds it while it moves the data)
    /// and the memory the range covers.
    pub fn access(
        &self,
        key: u64,
        addr: u64,
        len: usize,
        access: u64,
    ) -> core::result::Result<(Arc<MemRegion>, IoVec), Denied> {
        let m = self.shards[shard_of(key)]
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned()
            .ok_or(Denied::Key)?;
        if !m.enabled() {
            return Err(Denied::Key);
        }
        if m.access & access != access {
            return Err(Denied::Access);
        }
        let iov = m.range(addr, len).ok_or(Denied::Range)?;
        Ok((m, iov))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(v: &mut [u8]) -> IoBuf {
        // SAFETY: the tests keep `v` alive and unaliased while the IoBuf is used.
        unsafe { IoBuf::new(v.as_mut_ptr(), v.len()) }
    }

    fn req(iov: &[IoBuf], access: u64, key: u64) -> MrRequest<'_> {
        MrRequest {
            iov,
            access,
            offset: 0,
            requested_key: key,
            flags: 0,
        }
    }

    /// A device that hands out keys 0x100, 0x101, ... and descriptors
    /// 0x1000 + key, and counts live registrations.
    struct FakeDevice {
        next: AtomicU64,
        live: Arc<std::sync::atomic::AtomicUsize>,
    }

    struct FakeReg(Arc<std::sync::atomic::AtomicUsize>);

    impl Drop for FakeReg {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl DeviceMr for FakeDevice {
        fn register(&self, _buf: IoBuf, _access: u64) -> Result<DeviceReg> {
            let key = self.next.fetch_add(1, Ordering::SeqCst);
            self.live.fetch_add(1, Ordering::SeqCst);
            Ok(DeviceReg {
                key,
                desc: 0x1000 + key as usize,
                handle: Box::new(FakeReg(self.live.clone())),
            })
        }
    }

    #[test]
    fn device_keys_and_descriptors_and_release_with_the_region() {
        let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let dev = FakeDevice {
            next: AtomicU64::new(0x100),
            live: live.clone(),
        };
        let t = MrTable::with_device(FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 1, Arc::new(dev));
        let mut a = [0u8; 64];
        let mut b = [0u8; 64];
        let iov = [buf(&mut a)];
        let m = t.register(&req(&iov, 0, 0)).unwrap();
        assert_eq!((m.key, m.desc), (0x100, Some(0x1100)));
        assert!(t
            .access(0x100, iov[0].addr() as u64, 64, FI_REMOTE_WRITE)
            .is_ok());
        assert_eq!(live.load(Ordering::SeqCst), 1);
        // A device registers one contiguous piece.
        let two = [buf(&mut a), buf(&mut b)];
        let t2 = MrTable::with_device(
            FI_MR_PROV_KEY,
            4,
            Arc::new(FakeDevice {
                next: AtomicU64::new(1),
                live: live.clone(),
            }),
        );
        assert_eq!(t2.register(&req(&two, 0, 0)).err(), Some(Error::Inval));
        t.remove(&m);
        drop(m);
        assert_eq!(
            live.load(Ordering::SeqCst),
            0,
            "dropping the region deregisters it"
        );
    }

    #[test]
    fn requested_keys_are_unique_and_free_again_after_close() {
        let t = MrTable::new(0, 4);
        let mut a = [0u8; 64];
        let iov = [buf(&mut a)];
        let m = t.register(&req(&iov, FI_REMOTE_WRITE, 7)).unwrap();
        assert_eq!(m.key, 7);
        assert_eq!(
            t.register(&req(&iov, FI_REMOTE_WRITE, 7)).err(),
            Some(Error::Other(FI_ENOKEY))
        );
        t.remove(&m);
        assert!(t.access(7, 0, 1, FI_REMOTE_WRITE).is_err());
        assert!(t.register(&req(&iov, FI_REMOTE_WRITE, 7)).is_ok());
    }

    #[test]
    fn provider_keys_ignore_the_request() {
        let t = MrTable::new(FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 1);
        let mut a = [0u8; 8];
        let iov = [buf(&mut a)];
        let k1 = t.register(&req(&iov, 0, 5)).unwrap().key;
        let k2 = t.register(&req(&iov, 0, 5)).unwrap().key;
        assert_ne!(k1, k2);
    }

    #[test]
    fn access_checks_key_range_and_permission() {
        let t = MrTable::new(0, 4);
        let mut a = [0u8; 100];
        let mut b = [0u8; 50];
        let iov = [buf(&mut a), buf(&mut b)];
        t.register(&req(&iov, FI_REMOTE_READ, 1)).unwrap();
        assert_eq!(t.access(2, 0, 1, FI_REMOTE_READ).err(), Some(Denied::Key));
        assert_eq!(
            t.access(1, 0, 1, FI_REMOTE_WRITE).err(),
            Some(Denied::Access)
        );
        assert_eq!(
            t.access(1, 100, 51, FI_REMOTE_READ).err(),
            Some(Denied::Range)
        );
        assert_eq!(
            t.access(1, u64::MAX - 2, 8, FI_REMOTE_READ).err(),
            Some(Denied::Range)
        );
        // 90..110 spans both pieces.
        let (_, v) = t.access(1, 90, 20, FI_REMOTE_READ).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].len(), 10);
        assert_eq!(v[1].addr(), b.as_ptr() as usize);
        assert_eq!(v.total_len(), 20);
        assert!(t.access(1, 149, 1, FI_REMOTE_READ).is_ok());
    }

    #[test]
    fn virtual_addresses_and_offsets() {
        let mut a = [0u8; 32];
        let va = a.as_ptr() as u64;
        let iov = [buf(&mut a)];
        let t = MrTable::new(FI_MR_BASIC as c_int, 1);
        let m = t.register(&req(&iov, 0, 0)).unwrap();
        assert!(t.access(m.key, va + 4, 28, FI_REMOTE_WRITE).is_ok());
        assert!(t.access(m.key, 4, 4, FI_REMOTE_WRITE).is_err());
        let t = MrTable::new(0, 1);
        let r = MrRequest {
            offset: 1000,
            ..req(&iov, 0, 3)
        };
        t.register(&r).unwrap();
        assert!(t.access(3, 1000, 32, FI_REMOTE_WRITE).is_ok());
        assert!(t.access(3, 0, 1, FI_REMOTE_WRITE).is_err());
    }

    #[test]
    fn bad_registrations() {
        let t = MrTable::new(0, 2);
        let mut a = [0u8; 8];
        let one = [buf(&mut a)];
        assert_eq!(t.register(&req(&[], 0, 1)).err(), Some(Error::Inval));
        assert_eq!(
            t.register(&req(&[one[0]; 3], 0, 1)).err(),
            Some(Error::Inval)
        );
        assert_eq!(t.register(&req(&one, 1 << 40, 1)).err(), Some(Error::Inval));
        let r = MrRequest {
            flags: 1 << 61,
            ..req(&one, 0, 1)
        };
        assert_eq!(t.register(&r).err(), Some(Error::BadFlags));
    }
}
