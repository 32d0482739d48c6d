//! Posted tagged receives: one list in posting order, searched through
//! compact match keys.
//!
//! A posted receive is some 200 bytes (its iov list is inline). Kept in
//! the list itself, every arrival that did not match the first receive
//! read 200 bytes per receive it passed, and taking one from the middle
//! moved every receive on the shorter side: a hub with 64 control
//! receives posted ahead of its data receives paid both on every data
//! message, a fifth of its time at 512 senders. Here the list holds
//! 32-byte keys (what matching reads, and where the receive is) and the
//! receives sit still in a slab: passing a receive reads 32 bytes, and
//! taking one moves 32 bytes per key on the shorter side.
//!
//! The list stays one list in posting order, so a stream of receives
//! with a new tag each (fabtests' pattern), or the same tag, still finds
//! its receive at the head in one comparison; hashing tags into lanes
//! was tried and cost that stream a third of its message rate.

use super::{source_fits, Posted};
use crate::abi::fi_addr_t;
use std::collections::VecDeque;

/// What matching needs of a receive, and where the receive is.
#[derive(Debug, Clone, Copy)]
struct Key {
    /// `tag | ignore`: a message's `tag | ignore` must equal it.
    want: u64,
    ignore: u64,
    /// The source it is for ([`source_fits`]).
    src: fi_addr_t,
    /// Its place in the slab.
    slot: usize,
}

impl Key {
    /// [`Posted::matches`] for a tagged message, on the key.
    fn fits(&self, src: fi_addr_t, tag: u64) -> bool {
        tag | self.ignore == self.want && source_fits(self.src, src)
    }
}

/// The posted tagged receives of one endpoint (or shared receive context).
#[derive(Debug, Default)]
pub struct TaggedList {
    keys: VecDeque<Key>,
    slab: Vec<Posted>,
    /// Free places in `slab`.
    free: Vec<usize>,
}

impl TaggedList {
    /// Number of receives posted.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether none is posted.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Queues a receive behind every one posted before it.
    pub fn push_back(&mut self, p: Posted) {
        let (want, ignore) = p.tag.unwrap_or((0, 0));
        let src = p.src;
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i] = p;
                i
            }
            None => {
                self.slab.push(p);
                self.slab.len() - 1
            }
        };
        self.keys.push_back(Key {
            want: want | ignore,
            ignore,
            src,
            slot,
        });
    }

    /// Whether a receive is posted that a message from `src` with `tag`
    /// would go to (nothing changes).
    pub fn fits_any(&self, src: fi_addr_t, tag: u64) -> bool {
        self.keys.iter().any(|k| k.fits(src, tag))
    }

    /// The first receive (in posting order) a message from `src` with
    /// `tag` goes to, given to `f` where it sits; taken out when `f` says
    /// so (its first result). `None`, with nothing done, when none
    /// matches.
    pub fn with_match<R>(
        &mut self,
        src: fi_addr_t,
        tag: u64,
        f: impl FnOnce(&mut Posted) -> (bool, R),
    ) -> Option<R> {
        // The head first: streams in order match there.
        let at = match self.keys.front() {
            Some(k) if k.fits(src, tag) => 0,
            _ => self.keys.iter().position(|k| k.fits(src, tag))?,
        };
        let slot = self.keys[at].slot;
        let (take, r) = f(&mut self.slab[slot]);
        if take {
            if at == 0 {
                self.keys.pop_front();
            } else {
                self.keys.remove(at);
            }
            self.free.push(slot);
        }
        Some(r)
    }

    /// Takes out the first receive (in posting order) that `pick` chooses.
    pub fn remove_where(&mut self, mut pick: impl FnMut(&Posted) -> bool) -> Option<Posted> {
        let slab = &self.slab;
        let at = self.keys.iter().position(|k| pick(&slab[k.slot]))?;
        let key = self.keys.remove(at)?;
        self.free.push(key.slot);
        Some(self.slab[key.slot])
    }

    /// Takes every receive out, in posting order.
    pub fn drain(&mut self) -> Vec<Posted> {
        let all = self.keys.drain(..).map(|k| self.slab[k.slot]).collect();
        self.slab.clear();
        self.free.clear();
        all
    }

    /// Forgets every receive without reporting it.
    pub fn clear(&mut self) {
        self.keys.clear();
        self.slab.clear();
        self.free.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{FI_ADDR_NOTAVAIL, FI_ADDR_UNSPEC};
    use crate::ops::IoVec;

    fn recv(ctx: usize, src: fi_addr_t, want: u64, ignore: u64) -> Posted {
        Posted {
            iov: IoVec::default(),
            src,
            ctx,
            flags: 0,
            internal: 0,
            tag: Some((want, ignore)),
            used: 0,
        }
    }

    fn take(l: &mut TaggedList, src: fi_addr_t, tag: u64) -> Option<usize> {
        l.with_match(src, tag, |p| (true, p.ctx))
    }

    #[test]
    fn keys_match_as_the_receives_do_in_posting_order() {
        let mut l = TaggedList::default();
        let posted = [
            recv(1, FI_ADDR_UNSPEC, 7, 0),
            recv(2, FI_ADDR_UNSPEC, 0, u64::MAX),
            recv(3, 5, 7, 0),
            recv(4, FI_ADDR_NOTAVAIL, 0x70, 0x0f),
        ];
        for p in posted {
            l.push_back(p);
        }
        for (src, tag) in [(5, 7), (6, 7), (5, 0x7f), (6, 0x80)] {
            let want = posted
                .iter()
                .find(|p| p.matches(src, Some(tag)))
                .map(|p| p.ctx);
            let got = l.with_match(src, tag, |p| (false, p.ctx));
            assert_eq!(got, want, "src {src} tag {tag:#x}");
        }
        assert_eq!(take(&mut l, 6, 7), Some(1));
        assert_eq!(
            take(&mut l, 6, 7),
            Some(2),
            "the wildcard was posted before 3"
        );
        assert_eq!(take(&mut l, 6, 7), None, "3 is for source 5 only");
        assert_eq!(take(&mut l, 6, 0x7f), Some(4));
        assert_eq!(take(&mut l, 5, 7), Some(3));
        assert!(l.is_empty());
    }

    #[test]
    fn slots_are_reused_and_removal_by_choice_and_drain_keep_order() {
        let mut l = TaggedList::default();
        for i in 0..1000 {
            l.push_back(recv(i, FI_ADDR_UNSPEC, i as u64, 0));
            assert_eq!(take(&mut l, 0, i as u64), Some(i));
        }
        assert_eq!(l.slab.len(), 1, "one slot, over and over");
        for (ctx, tag) in [(1, 1), (2, 2), (3, 1), (4, 3), (5, 2)] {
            l.push_back(recv(ctx, FI_ADDR_UNSPEC, tag, 0));
        }
        assert_eq!(take(&mut l, 0, 2), Some(2), "from the middle");
        assert_eq!(l.remove_where(|p| p.ctx % 2 == 1).map(|p| p.ctx), Some(1));
        l.push_back(recv(6, FI_ADDR_UNSPEC, 9, 0));
        let order: Vec<usize> = l.drain().iter().map(|p| p.ctx).collect();
        assert_eq!(order, [3, 4, 5, 6]);
        assert!(l.is_empty() && take(&mut l, 0, 1).is_none());
    }
}
