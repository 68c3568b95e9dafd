//! The bookkeeping of a dynamic window's regions on one rank, shared by the backends:
//! where a new region goes in the rank's part (first fit, 64-byte aligned), which
//! table slot publishes it, and the one-word encoding other ranks read to check that
//! a call's bytes lie inside a region.

use crate::{Error, Result, WinInfo};

/// Region slots of each rank's part of a dynamic window.
pub const REGIONS: usize = 64;

/// A region's table word: the top bit set, its byte offset (below 2^31) in the high
/// half, its length (below 2^32) in the low half, so that one atomic read of the word
/// (an atomic load in shared memory; under MPI a get_accumulate NO_OP, atomic with
/// the owner's REPLACE accumulates) reads a whole region.
pub fn region_word(offset: usize, len: usize) -> u64 {
    1 << 63 | (offset as u64) << 32 | len as u64
}

/// Whether table word `word` is a region that holds bytes `[start, end)`.
pub fn region_covers(word: u64, start: usize, end: usize) -> bool {
    let (off, len) = (
        ((word >> 32) & 0x7fff_ffff) as usize,
        (word & 0xffff_ffff) as usize,
    );
    word >> 63 == 1 && off <= start && start <= end && end <= off + len
}

/// The regions one rank has attached: (table slot, byte offset, length).
#[derive(Debug, Default)]
pub struct Regions {
    live: Vec<(usize, usize, usize)>,
    /// Where the search for a free slot starts: slots are taken round-robin, so a slot
    /// just cleared is the last to be reused.
    next: usize,
}

impl Regions {
    /// Where a region of `len` bytes goes in a part of `capacity` bytes: a free table
    /// slot and the first 64-byte aligned gap that fits. Class RMA_ATTACH when there is
    /// none.
    pub fn place(&self, len: usize, capacity: usize) -> Result<(usize, usize)> {
        let slot = (0..REGIONS)
            .map(|i| (self.next + i) % REGIONS)
            .find(|&i| !self.live.iter().any(|r| r.0 == i))
            .ok_or_else(|| Error::Attach {
                reason: format!(
                    "this rank already has {REGIONS} regions attached to the window, the most \
                     a dynamic window holds at once; detach one first"
                ),
            })?;
        let mut sorted: Vec<(usize, usize)> = self.live.iter().map(|r| (r.1, r.2)).collect();
        sorted.sort_unstable();
        let mut at = 0usize;
        for (off, l) in sorted {
            if at.checked_add(len).is_some_and(|end| end <= off) {
                break;
            }
            at = at.max((off + l).div_ceil(64) * 64);
        }
        if at.checked_add(len).is_none_or(|end| end > capacity) {
            return Err(Error::Attach {
                reason: format!(
                    "no room for {len} more bytes in this rank's part of the dynamic window \
                     ({capacity} bytes, {} attached in {} regions); detach regions, or create \
                     the window with a larger {} info value",
                    self.live.iter().map(|r| r.2).sum::<usize>(),
                    self.live.len(),
                    WinInfo::DYNAMIC_KEY
                ),
            });
        }
        Ok((slot, at))
    }

    /// Forgets every region, returning their byte offsets (a window about to be freed
    /// with regions still attached).
    pub fn drain(&mut self) -> Vec<usize> {
        self.live.drain(..).map(|r| r.1).collect()
    }

    /// Records a region [`Regions::place`] placed.
    pub fn insert(&mut self, slot: usize, offset: usize, len: usize) {
        self.live.push((slot, offset, len));
        self.next = (slot + 1) % REGIONS;
    }

    /// The slot of the region of `len` bytes at `offset`, forgotten. Class RMA_ATTACH
    /// where there is none.
    pub fn remove(&mut self, offset: usize, len: usize) -> Result<usize> {
        let i = self
            .live
            .iter()
            .position(|r| r.1 == offset && r.2 == len)
            .ok_or_else(|| Error::Attach {
                reason: format!(
                    "no region of {len} bytes is attached at offset {offset} of this rank's \
                     part of the window"
                ),
            })?;
        Ok(self.live.swap_remove(i).0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;

    #[test]
    fn first_fit_aligned_and_refusals() {
        let mut r = Regions::default();
        let (s0, a) = r.place(10, 256).unwrap();
        r.insert(s0, a, 10);
        let (s1, b) = r.place(64, 256).unwrap();
        r.insert(s1, b, 64);
        assert_eq!((a, b), (0, 64));
        assert_ne!(s0, s1);
        assert_eq!(
            r.place(200, 256).unwrap_err().class(),
            ErrorClass::RmaAttach
        );
        assert_eq!(r.remove(0, 10).unwrap(), s0);
        // the gap at 0 is reused; the slot just freed is not the next one taken
        let (s2, c) = r.place(20, 256).unwrap();
        assert_eq!(c, 0);
        assert_ne!(s2, s0);
        assert_eq!(r.remove(0, 99).unwrap_err().class(), ErrorClass::RmaAttach);
    }

    #[test]
    fn words_cover_only_their_bytes() {
        let w = region_word(128, 16);
        assert!(region_covers(w, 128, 144) && region_covers(w, 130, 130));
        assert!(!region_covers(w, 127, 130) && !region_covers(w, 140, 145));
        assert!(!region_covers(0, 0, 0));
        // a word with a length of 0 holds no byte
        assert!(!region_covers(region_word(128, 0), 128, 129));
    }

    #[test]
    fn a_full_table_is_refused() {
        let mut r = Regions::default();
        for _ in 0..REGIONS {
            let (s, o) = r.place(1, 1 << 20).unwrap();
            r.insert(s, o, 1);
        }
        assert_eq!(
            r.place(1, 1 << 20).unwrap_err().class(),
            ErrorClass::RmaAttach
        );
    }
}
