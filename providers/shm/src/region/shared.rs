//! One mapping per peer file per process.
//!
//! Every endpoint of a process that attaches to the same peer endpoint
//! receives its own descriptor for the peer's ring and life page. Mapping
//! each one again put the same memory at a new address per endpoint: 512
//! endpoints of one process sending to one hub touched 512 copies of the
//! hub's ring pages, each needing its own page-table entries and TLB
//! slots, and the translation misses cost more than the copies (and each
//! mapping counted again in the resident size). Here a descriptor whose
//! file (device and inode) is already mapped by this process gets that
//! mapping back, and the descriptor is closed.
//!
//! The file of a live mapping cannot go away, so its inode number cannot
//! name another file meanwhile; an entry whose mapping has been dropped
//! is mapped afresh. What a mapping's holder checked on its first
//! descriptor (seals, size) holds for every later one of the same file:
//! seals are only ever added, and the length of the mapping is ours.

use super::file_id;
use oxifabric::error::Result;
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, Weak};

/// Mappings of peers' files by `(device, inode)`.
pub struct Shared<T> {
    map: Mutex<Option<Entries<T>>>,
}

struct Entries<T> {
    live: HashMap<(u64, u64), Weak<T>>,
    /// Dropped mappings are forgotten when the table reaches this size.
    prune_at: usize,
}

impl<T> Default for Shared<T> {
    fn default() -> Shared<T> {
        Shared::new()
    }
}

impl<T> Shared<T> {
    /// An empty table (for a `static`).
    pub const fn new() -> Shared<T> {
        Shared {
            map: Mutex::new(None),
        }
    }

    /// The mapping of `fd`'s file: this process's existing one (`fd` is
    /// then closed), else `map(fd)`'s, remembered for the next caller.
    /// One table serves one kind of file mapped one way (its callers all
    /// pass the same `map`).
    pub fn get_or_map(
        &self,
        fd: OwnedFd,
        map: impl FnOnce(OwnedFd) -> Result<T>,
    ) -> Result<Arc<T>> {
        let id = file_id(fd.as_fd())?;
        let mut g = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let e = g.get_or_insert_with(|| Entries {
            live: HashMap::new(),
            prune_at: 64,
        });
        if let Some(m) = e.live.get(&id).and_then(Weak::upgrade) {
            return Ok(m);
        }
        let m = Arc::new(map(fd)?);
        if e.live.len() >= e.prune_at {
            e.live.retain(|_, w| w.strong_count() > 0);
            e.prune_at = (2 * e.live.len()).max(64);
        }
        e.live.insert(id, Arc::downgrade(&m));
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::Region;

    fn dup(fd: std::os::fd::BorrowedFd<'_>) -> OwnedFd {
        fd.try_clone_to_owned().unwrap()
    }

    #[test]
    fn two_descriptors_of_one_file_share_a_mapping_until_it_is_dropped() {
        static MAPS: Shared<Region> = Shared::new();
        let own = Region::create(8192).unwrap();
        let map = |fd| Region::from_fd(fd, 1 << 20);
        let a = MAPS.get_or_map(dup(own.fd()), map).unwrap();
        let b = MAPS.get_or_map(dup(own.fd()), map).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let other = Region::create(8192).unwrap();
        let c = MAPS.get_or_map(dup(other.fd()), map).unwrap();
        assert!(!Arc::ptr_eq(&a, &c), "another file, another mapping");
        drop((a, b));
        let d = MAPS.get_or_map(dup(own.fd()), map).unwrap();
        d.store_u64(0, 7, std::sync::atomic::Ordering::Relaxed)
            .unwrap();
        assert_eq!(
            own.load_u64(0, std::sync::atomic::Ordering::Relaxed)
                .unwrap(),
            7
        );
    }
}
