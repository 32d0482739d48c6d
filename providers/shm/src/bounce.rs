//! The bounce area: a few large chunks at the end of an endpoint's ring
//! region, through which that endpoint sends the bytes of large messages
//! to peers whose memory it may not reach by cross-memory attach (Yama's
//! `ptrace_scope`, a peer in another user namespace, seccomp,
//! `FI_SHM_DISABLE_CMA=1`).
//!
//! Without it those bytes travel as a run of ring cells: a 1 MiB message
//! took 256 cells of the receiver's ring (all of it, so small messages
//! from every other peer waited behind it) and a cell's worth of
//! bookkeeping per 4 KiB. With it, the sender copies up to a chunk
//! (64 KiB) into a chunk of its own area and sends one small cell naming
//! the chunk; the receiver copies the chunk out into the receive and gives
//! the chunk back (one cell carrying a mask of every chunk it is done
//! with, per pass). Both copies run at once on different chunks: the
//! pipeline.
//!
//! Why in the sender's region: the sender alone picks and fills chunks,
//! so lending needs no shared allocator and nothing a peer writes is ever
//! trusted by the sender; the receiver already maps that region (it
//! sends its answers into that ring). What the receiver reads is bytes
//! only: a chunk index and a length come in a cell and are checked
//! against the geometry the receiver validated once when it attached
//! ([`BounceArea::new`]), never read from the region again.
//!
//! Layout: chunk `k` of `chunks` lies at `off + k * size` of the region;
//! `off` is where the ring's cells end. The ring header carries `chunks`
//! and `size` (see `ring`), 0 chunks meaning no area.

use crate::region::Region;
use oxifabric::error::{Error, Result};

/// The most chunks an area has (a mask of them fits a `u64`).
pub const MAX_CHUNKS: usize = 64;
/// The smallest chunk.
pub const MIN_CHUNK: usize = 4 << 10;
/// The largest chunk (bounds what a peer can make us copy at once).
pub const MAX_CHUNK: usize = 1 << 20;

/// Where a region's bounce area lies, validated once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BounceArea {
    off: usize,
    chunks: usize,
    size: usize,
}

impl BounceArea {
    /// No area.
    pub const NONE: BounceArea = BounceArea {
        off: 0,
        chunks: 0,
        size: 0,
    };

    /// `chunks` chunks of `size` bytes from `off` on: `Inval` unless
    /// there are at most [`MAX_CHUNKS`] and (when any) each is a multiple
    /// of 64 bytes between [`MIN_CHUNK`] and [`MAX_CHUNK`], starting at a
    /// multiple of 64. The caller checks that [`BounceArea::end`] lies
    /// inside its region.
    pub fn new(off: usize, chunks: usize, size: usize) -> Result<BounceArea> {
        if chunks == 0 {
            return Ok(BounceArea::NONE);
        }
        let ok = chunks <= MAX_CHUNKS
            && (MIN_CHUNK..=MAX_CHUNK).contains(&size)
            && size.is_multiple_of(64)
            && off.is_multiple_of(64);
        if !ok {
            return Err(Error::Inval);
        }
        Ok(BounceArea { off, chunks, size })
    }

    /// Chunks in the area (0: none).
    pub fn chunks(&self) -> usize {
        self.chunks
    }

    /// Bytes per chunk.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Where the area ends in its region.
    pub fn end(&self) -> usize {
        self.off + self.chunks * self.size
    }

    /// The region offset of `n` bytes at the start of chunk `k`: `Inval`
    /// for a chunk that does not exist or a length beyond a chunk.
    fn at(&self, k: usize, n: usize) -> Result<usize> {
        if k >= self.chunks || n > self.size {
            return Err(Error::Inval);
        }
        Ok(self.off + k * self.size)
    }

    /// Copies `parts`, one after the other, to the start of chunk `k`;
    /// the bytes written. `Inval` when they do not fit a chunk.
    pub fn write(&self, region: &Region, k: usize, parts: &[&[u8]]) -> Result<usize> {
        let n: usize = parts.iter().map(|p| p.len()).sum();
        let mut off = self.at(k, n)?;
        for p in parts {
            region.copy_in(off, p)?;
            off += p.len();
        }
        Ok(n)
    }

    /// Copies the first `dst.len()` bytes of chunk `k` into `dst`.
    /// `Inval` for a chunk that does not exist or more bytes than a
    /// chunk holds.
    pub fn read(&self, region: &Region, k: usize, dst: &mut [u8]) -> Result<()> {
        self.read_at(region, k, 0, dst)
    }

    /// Copies `dst.len()` bytes of chunk `k` from byte `off` of it on into
    /// `dst` (`Inval` past the chunk's end or for no such chunk).
    pub fn read_at(&self, region: &Region, k: usize, off: usize, dst: &mut [u8]) -> Result<()> {
        let end = off.checked_add(dst.len()).ok_or(Error::Inval)?;
        let at = self.at(k, end)?;
        region.copy_out(at + off, dst)
    }

    /// Whether chunk `k` exists and holds `n` bytes.
    pub fn holds(&self, k: usize, n: usize) -> bool {
        self.at(k, n).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip_and_bad_indices_or_lengths_are_refused() {
        let a = BounceArea::new(256, 2, MIN_CHUNK).unwrap();
        assert_eq!(a.end(), 256 + 2 * MIN_CHUNK);
        let r = Region::create(a.end()).unwrap();
        let src: Vec<u8> = (0..MIN_CHUNK).map(|i| (i % 253) as u8).collect();
        assert_eq!(a.write(&r, 1, &[&src[..10], &src[10..]]), Ok(MIN_CHUNK));
        let mut out = vec![0u8; MIN_CHUNK];
        a.read(&r, 1, &mut out).unwrap();
        assert_eq!(out, src);
        assert_eq!(
            a.read(&r, 2, &mut out[..1]),
            Err(Error::Inval),
            "no chunk 2"
        );
        let mut tail = [0u8; 4];
        a.read_at(&r, 1, MIN_CHUNK - 4, &mut tail).unwrap();
        assert_eq!(tail, src[MIN_CHUNK - 4..]);
        assert!(
            a.read_at(&r, 1, MIN_CHUNK - 3, &mut tail).is_err(),
            "past the chunk"
        );
        assert!(a.holds(1, MIN_CHUNK) && !a.holds(1, MIN_CHUNK + 1) && !a.holds(2, 1));
        let mut big = vec![0u8; MIN_CHUNK + 1];
        assert_eq!(a.read(&r, 0, &mut big), Err(Error::Inval), "past a chunk");
        assert_eq!(a.write(&r, 0, &[&big]), Err(Error::Inval));
        assert_eq!(BounceArea::new(0, 0, 1), Ok(BounceArea::NONE));
        assert!(BounceArea::new(0, MAX_CHUNKS + 1, MIN_CHUNK).is_err());
        assert!(BounceArea::new(0, 1, MAX_CHUNK + 64).is_err());
        assert!(BounceArea::new(0, 1, MIN_CHUNK + 1).is_err());
        assert!(BounceArea::new(32, 1, MIN_CHUNK).is_err());
        assert_eq!(BounceArea::NONE.read(&r, 0, &mut []), Err(Error::Inval));
    }
}
