//! Split slots: a few words after a ring's bounce area through which the
//! ring's owner and one peer share out the copy of one large rendezvous
//! (`path/split.rs`).
//!
//! A slot holds two words. `claim` is `generation (40 bits) | front (12
//! bits) | back (12 bits)`: chunks `front..back` of the message are not
//! claimed yet; the owner (the receiver) takes chunks from the front, the
//! helper (the sender) from the back, each with a compare-and-swap, so
//! every chunk is copied by exactly one of them and, when the helper does
//! not come, the owner copies them all without waiting for it. `done`
//! counts the chunks the helper has finished; the owner completes the
//! receive once it equals the number it left the helper.
//!
//! The owner arms a slot for each split with a new generation; a helper
//! acts only while the generation is the one its request named, so a
//! slot used again for another message is never touched by an old
//! request. The generation is wide because an old request can come late:
//! a sender that does not call libfabric for a while sees its `PUSH` only
//! later, by when the receiver may have used that slot for many other
//! messages; a 16-bit one could come round to the same value within a
//! few gigabytes of other traffic and let the late sender write into a
//! receive that completed long ago. 2^40 uses of one slot do not happen
//! while one sender sleeps. Words are read once per step and checked: a scribbled slot
//! makes a claim fail (or the owner wait for a helper that will not
//! come), never an access outside the region or a chunk index beyond the
//! message (the helper bounds the indices it claims by the length it
//! validated).

use crate::region::Region;
use oxifabric::error::{Error, Result};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// The most slots a region has.
pub const MAX_SLOTS: usize = 64;
/// The most chunks one split has (24-bit indices).
pub const MAX_CHUNKS: u64 = (1 << 12) - 1;
/// Generations wrap at this (40 bits).
pub const GEN_MASK: u64 = (1 << 40) - 1;
const SLOT: usize = 64;
const CLAIM: usize = 0;
const DONE: usize = 8;
/// Added to `done` with a chunk whose copy failed.
const FAILED: u64 = 1 << 40;
/// How many times a claim retries a compare-and-swap the other side won
/// (bounds the loop against a scribbled word).
const TRIES: usize = 1024;

/// Where a region's slots lie, validated once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotArea {
    off: usize,
    count: usize,
}

fn word(gen: u64, front: u64, back: u64) -> u64 {
    (gen & GEN_MASK) << 24 | front << 12 | back
}

fn parts(w: u64) -> (u64, u64, u64) {
    (w >> 24, (w >> 12) & MAX_CHUNKS, w & MAX_CHUNKS)
}

impl SlotArea {
    /// `count` slots from `off` on (`Inval` for more than [`MAX_SLOTS`] or
    /// an offset not a multiple of 64); the caller checks
    /// [`SlotArea::end`] against its region.
    pub fn new(off: usize, count: usize) -> Result<SlotArea> {
        if count > MAX_SLOTS || !off.is_multiple_of(64) {
            return Err(Error::Inval);
        }
        Ok(SlotArea { off, count })
    }

    /// Slots in the area.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Where the area ends in its region.
    pub fn end(&self) -> usize {
        self.off + self.count * SLOT
    }

    fn at(&self, k: usize) -> Result<usize> {
        if k >= self.count {
            return Err(Error::Inval);
        }
        Ok(self.off + k * SLOT)
    }

    /// Owner: slot `k` now shares out `chunks` chunks under `gen`.
    pub fn arm(&self, r: &Region, k: usize, gen: u64, chunks: u64) -> Result<()> {
        if chunks > MAX_CHUNKS {
            return Err(Error::Inval);
        }
        let at = self.at(k)?;
        r.store_u64(at + DONE, 0, Relaxed)?;
        // Release: a helper that sees the new claim word sees `done` reset.
        r.store_u64(at + CLAIM, word(gen, 0, chunks), Release)
    }

    /// Claims the next chunk from the front (owner) or the back (helper)
    /// of slot `k` under `gen`: `None` when none is left, the generation
    /// is another, or the word keeps changing under us.
    pub fn claim(&self, r: &Region, k: usize, gen: u64, from_back: bool) -> Result<Option<u64>> {
        let at = self.at(k)? + CLAIM;
        let mut w = r.load_u64(at, Acquire)?;
        for _ in 0..TRIES {
            let (g, front, back) = parts(w);
            if g != gen & GEN_MASK || front >= back {
                return Ok(None);
            }
            let (next, got) = if from_back {
                (word(g, front, back - 1), back - 1)
            } else {
                (word(g, front + 1, back), front)
            };
            match r.compare_exchange_u64(at, w, next, Acquire, Acquire)? {
                Ok(_) => return Ok(Some(got)),
                Err(now) => w = now,
            }
        }
        Ok(None)
    }

    /// Helper: one more chunk of slot `k` is copied, or `failed` (release:
    /// the owner that sees the count sees the copy finished before it).
    pub fn add_done(&self, r: &Region, k: usize, failed: bool) -> Result<()> {
        let v = if failed { 1 | FAILED } else { 1 };
        r.fetch_add_u64(self.at(k)? + DONE, v, Release).map(|_| ())
    }

    /// Owner: chunks of slot `k` the helper has finished, and whether a
    /// copy of its failed.
    pub fn done(&self, r: &Region, k: usize) -> Result<(u64, bool)> {
        let d = r.load_u64(self.at(k)? + DONE, Acquire)?;
        Ok((d & (FAILED - 1), d >= FAILED))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_and_helper_share_out_every_chunk_once() {
        let a = SlotArea::new(64, 2).unwrap();
        let r = Region::create(a.end()).unwrap();
        a.arm(&r, 1, 7, 5).unwrap();
        assert_eq!(a.claim(&r, 1, 7, false), Ok(Some(0)));
        assert_eq!(a.claim(&r, 1, 7, true), Ok(Some(4)));
        assert_eq!(a.claim(&r, 1, 6, true), Ok(None), "another generation");
        assert_eq!(
            a.claim(&r, 1, 7 + (1 << 16), true),
            Ok(None),
            "16 bits are not enough"
        );
        assert_eq!(a.claim(&r, 1, 7, true), Ok(Some(3)));
        assert_eq!(a.claim(&r, 1, 7, false), Ok(Some(1)));
        assert_eq!(a.claim(&r, 1, 7, false), Ok(Some(2)));
        assert_eq!(a.claim(&r, 1, 7, true), Ok(None), "all taken");
        a.add_done(&r, 1, false).unwrap();
        a.add_done(&r, 1, false).unwrap();
        assert_eq!(a.done(&r, 1), Ok((2, false)));
        a.add_done(&r, 1, true).unwrap();
        assert_eq!(a.done(&r, 1), Ok((3, true)));
        assert_eq!(a.claim(&r, 2, 7, true), Err(Error::Inval), "no slot 2");
        assert!(a.arm(&r, 0, 1, MAX_CHUNKS + 1).is_err());
        assert!(SlotArea::new(0, MAX_SLOTS + 1).is_err());
    }
}
