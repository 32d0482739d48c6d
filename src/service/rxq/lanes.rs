//! Posted tagged receives, kept in lanes by the tags they accept.
//!
//! One list searched from its head made every arriving message compare
//! itself with every receive posted before its own, and taking a receive
//! out of the middle moved every one after it (a posted receive is some
//! 200 bytes). A hub with 64 control receives posted ahead of its data
//! receives paid both on every data message: a fifth of its time at 512
//! senders. Here receives that accept the same tags (same `tag | ignore`
//! and `ignore`) share a lane, a FIFO in posting order, so an arrival
//! looks at one small key per lane and at the head of the lanes its tag
//! fits, and takes its receive from (usually) the front of one.
//!
//! Order is kept exactly: every receive carries the number it was posted
//! under, and of the receives that match, the one posted first wins,
//! whichever lane holds it (fi_tagged(3): receives match in the order
//! they were posted).

use super::Posted;
use crate::abi::fi_addr_t;
use std::collections::VecDeque;

/// Where a receive sits: its lane and its place in that lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    lane: usize,
    at: usize,
}

/// What a lane's receives accept (`tag | ignore` and `ignore`), and how
/// many it holds (so a look at the keys skips empty lanes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    want: u64,
    ignore: u64,
    held: usize,
}

impl Key {
    fn of(p: &Posted) -> Key {
        let (want, ignore) = p.tag.unwrap_or((0, 0));
        Key {
            want: want | ignore,
            ignore,
            held: 0,
        }
    }

    fn same(&self, other: &Key) -> bool {
        self.want == other.want && self.ignore == other.ignore
    }

    fn fits(&self, tag: u64) -> bool {
        self.held > 0 && tag | self.ignore == self.want
    }
}

/// Empty lanes are dropped once there are this many more than there are
/// lanes in use (they are otherwise kept, and taken by the next new key,
/// so a ping-pong that posts and takes one receive at a time moves and
/// allocates nothing).
const SPARE_LANES: usize = 16;

/// The posted tagged receives of one endpoint (or shared receive context).
#[derive(Debug, Default)]
pub struct TaggedLanes {
    /// One per lane, in step with `lanes`: the keys are what an arrival
    /// scans, so they sit together.
    keys: Vec<Key>,
    lanes: Vec<VecDeque<(u64, Posted)>>,
    /// Lanes holding receives.
    used: usize,
    /// The number the next receive is posted under.
    next: u64,
    len: usize,
}

impl TaggedLanes {
    /// Number of receives posted.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is posted.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queues a receive behind every one posted before it.
    pub fn push_back(&mut self, p: Posted) {
        let key = Key::of(&p);
        let seq = self.next;
        self.next += 1;
        self.len += 1;
        // Its key's lane (even empty), else an empty one, else a new one.
        let lane = match self.keys.iter().position(|k| k.same(&key)) {
            Some(i) => i,
            None => match self.keys.iter().position(|k| k.held == 0) {
                Some(i) => {
                    self.keys[i] = key;
                    i
                }
                None => {
                    self.keys.push(key);
                    self.lanes.push(VecDeque::new());
                    self.keys.len() - 1
                }
            },
        };
        if self.keys[lane].held == 0 {
            self.used += 1;
        }
        self.keys[lane].held += 1;
        self.lanes[lane].push_back((seq, p));
    }

    /// The receive a message from `src` with `tag` goes to: of those that
    /// match, the one posted first.
    pub fn find(&self, src: fi_addr_t, tag: u64) -> Option<Pos> {
        let mut best: Option<(u64, Pos)> = None;
        for (lane, key) in self.keys.iter().enumerate() {
            if !key.fits(tag) {
                continue;
            }
            let q = &self.lanes[lane];
            // A lane's receives all accept `tag`; only a directed receive
            // for another source is passed over.
            let Some(at) = q.iter().position(|(_, p)| p.matches(src, Some(tag))) else {
                continue;
            };
            let seq = q[at].0;
            if best.is_none_or(|(s, _)| seq < s) {
                best = Some((seq, Pos { lane, at }));
            }
        }
        best.map(|(_, pos)| pos)
    }

    /// The receive at `pos` (from [`Self::find`], with no change since).
    pub fn get(&self, pos: Pos) -> &Posted {
        &self.lanes[pos.lane][pos.at].1
    }

    /// The receive at `pos`, to change in place (a multi-receive buffer's
    /// use).
    pub fn get_mut(&mut self, pos: Pos) -> &mut Posted {
        &mut self.lanes[pos.lane][pos.at].1
    }

    /// Takes the receive at `pos` out (from [`Self::find`], with no change
    /// since).
    pub fn remove(&mut self, pos: Pos) -> Posted {
        let (_, p) = self.lanes[pos.lane]
            .remove(pos.at)
            .expect("position from find");
        self.len -= 1;
        let key = &mut self.keys[pos.lane];
        key.held -= 1;
        if key.held == 0 {
            self.used -= 1;
            if self.keys.len() > self.used + SPARE_LANES {
                self.drop_empty();
            }
        }
        p
    }

    /// Forgets the empty lanes (positions change).
    fn drop_empty(&mut self) {
        let mut i = 0;
        while i < self.keys.len() {
            if self.keys[i].held == 0 {
                self.keys.swap_remove(i);
                self.lanes.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Takes out the first receive (in posting order) that `pick` chooses.
    pub fn remove_where(&mut self, mut pick: impl FnMut(&Posted) -> bool) -> Option<Posted> {
        let mut best: Option<(u64, Pos)> = None;
        for (lane, q) in self.lanes.iter().enumerate() {
            if let Some(at) = q.iter().position(|(_, p)| pick(p)) {
                let seq = q[at].0;
                if best.is_none_or(|(s, _)| seq < s) {
                    best = Some((seq, Pos { lane, at }));
                }
            }
        }
        best.map(|(_, pos)| self.remove(pos))
    }

    /// Takes every receive out, in posting order.
    pub fn drain(&mut self) -> Vec<Posted> {
        let mut all: Vec<(u64, Posted)> = self.lanes.drain(..).flatten().collect();
        self.keys.clear();
        self.used = 0;
        self.len = 0;
        all.sort_unstable_by_key(|(seq, _)| *seq);
        all.into_iter().map(|(_, p)| p).collect()
    }

    /// Forgets every receive without reporting it.
    pub fn clear(&mut self) {
        self.drain();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::FI_ADDR_UNSPEC;
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

    fn take(l: &mut TaggedLanes, src: fi_addr_t, tag: u64) -> Option<usize> {
        let pos = l.find(src, tag)?;
        Some(l.remove(pos).ctx)
    }

    #[test]
    fn the_receive_posted_first_wins_across_lanes() {
        let mut l = TaggedLanes::default();
        l.push_back(recv(1, FI_ADDR_UNSPEC, 7, 0));
        l.push_back(recv(2, FI_ADDR_UNSPEC, 0, u64::MAX)); // any tag
        l.push_back(recv(3, FI_ADDR_UNSPEC, 7, 0));
        l.push_back(recv(4, FI_ADDR_UNSPEC, 0x70, 0x0f));
        assert_eq!(take(&mut l, 0, 7), Some(1));
        assert_eq!(
            take(&mut l, 0, 7),
            Some(2),
            "the wildcard was posted before 3"
        );
        assert_eq!(take(&mut l, 0, 0x7f), Some(4));
        assert_eq!(take(&mut l, 0, 0x7f), None);
        assert_eq!(take(&mut l, 0, 7), Some(3));
        assert!(l.is_empty());
        assert_eq!(l.used, 0);
    }

    #[test]
    fn a_directed_receive_for_another_source_is_passed_over_not_lost() {
        let mut l = TaggedLanes::default();
        l.push_back(recv(1, 5, 9, 0));
        l.push_back(recv(2, FI_ADDR_UNSPEC, 9, 0));
        assert_eq!(take(&mut l, 6, 9), Some(2));
        assert_eq!(take(&mut l, 6, 9), None);
        assert_eq!(take(&mut l, 5, 9), Some(1));
    }

    #[test]
    fn removal_by_choice_and_drain_keep_posting_order() {
        let mut l = TaggedLanes::default();
        for (ctx, tag) in [(1, 1), (2, 2), (3, 1), (4, 3), (5, 2)] {
            l.push_back(recv(ctx, FI_ADDR_UNSPEC, tag, 0));
        }
        assert_eq!(l.remove_where(|p| p.ctx % 2 == 1).map(|p| p.ctx), Some(1));
        assert_eq!(l.remove_where(|p| p.ctx == 4).map(|p| p.ctx), Some(4));
        assert_eq!(l.len(), 3);
        let order: Vec<usize> = l.drain().iter().map(|p| p.ctx).collect();
        assert_eq!(order, [2, 3, 5]);
        assert!(l.is_empty() && l.find(FI_ADDR_UNSPEC, 1).is_none());
    }

    #[test]
    fn emptied_lanes_are_reused_and_their_number_bounded() {
        let mut l = TaggedLanes::default();
        for i in 0..100 {
            l.push_back(recv(i, FI_ADDR_UNSPEC, i as u64, 0));
            assert_eq!(take(&mut l, 0, i as u64), Some(i));
        }
        assert_eq!(l.lanes.len(), 1, "one lane, over and over");
        for i in 0..100 {
            l.push_back(recv(i, FI_ADDR_UNSPEC, i as u64, 0));
        }
        assert_eq!(l.lanes.len(), 100);
        for i in 0..100 {
            assert_eq!(take(&mut l, 0, i as u64), Some(i));
        }
        assert!(
            l.lanes.len() <= SPARE_LANES + 1,
            "{} lanes kept",
            l.lanes.len()
        );
        assert!(l.find(0, 5).is_none());
    }
}
