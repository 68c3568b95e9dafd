//! A single-producer, single-consumer ring of variable-length records in shared memory:
//! the queued transport's channel from one origin to one target (requests) and back
//! (replies).
//!
//! Layout: a control block ([`RingCtl`]: producer position, consumer position, wake-up
//! words) and `cap` data bytes (a power of two; [`ring_cap`] for the queued transport). A record is an 8-byte header (`len: u32`, `tag: u32`)
//! followed by `len` payload bytes, padded to 8. Records never wrap: when one does not
//! fit before the end, the producer writes a pad header there and starts at offset 0.
//! Positions are free-running `u64` byte counts; `tail - head` is the bytes in use.
//!
//! Protocol (release/acquire): the producer writes the record bytes, then stores `tail`
//! with `Release`; the consumer loads `tail` with `Acquire`, copies the record out, then
//! stores `head` with `Release`; the producer loads `head` with `Acquire` before reusing
//! space. Every value read from the control block or a header is validated, so a corrupt
//! ring yields [`RingError::Corrupt`], never an access outside the data area. An end that
//! keeps its own record of its position ([`Ring::try_push_from`], [`Ring::try_pop_from`])
//! also notices when someone else moved it (records lost, skipped or invented). The
//! protocol is model-checked with loom on heap memory (`tests/loom_ring.rs`).

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// Data bytes of the rings of the queued transport (a power of two) in worlds of up
/// to 32 ranks; larger worlds get smaller rings ([`ring_cap`]).
pub const CAP: usize = 64 * 1024;

/// The smallest ring: a record of a quarter of it still holds a request header and
/// hundreds of elements or runs, so a large call is split into more records, never
/// refused.
pub const MIN_CAP: usize = 16 * 1024;

/// Data bytes of each ring of a queued window over `ranks` ranks: every rank holds two
/// rings per peer, so their size shrinks as the world grows (64 KiB up to 32 ranks,
/// 32 KiB up to 64, then [`MIN_CAP`]), keeping a rank's queue area at most 4 MiB up to
/// 64 ranks and linear in the ranks after.
pub const fn ring_cap(ranks: usize) -> usize {
    let mut cap = CAP;
    let mut r = 32;
    while r < ranks && cap > MIN_CAP {
        cap /= 2;
        r *= 2;
    }
    cap
}

/// Largest record payload a ring of `cap` bytes accepts (a quarter of it, so a
/// producer always makes progress once the consumer drains).
pub const fn max_record(cap: usize) -> usize {
    cap / 4 - 8
}
const PAD_TAG: u32 = u32::MAX;

const fn round8(n: usize) -> usize {
    (n + 7) & !7
}

/// The control block of a ring. `#[repr(C)]`, cache-line separated, offsets only.
#[repr(C)]
#[derive(Debug)]
pub struct RingCtl {
    pub(crate) tail: AtomicU64,
    _p0: [u64; 7],
    pub(crate) head: AtomicU64,
    _p1: [u64; 7],
    /// Bumped by the producer after each push (the consumer's futex word).
    pub(crate) pushed: AtomicU32,
    /// Set by a consumer about to sleep on `pushed`.
    pub(crate) consumer_waiting: AtomicU32,
    /// Bumped by the consumer after each pop (the producer's futex word).
    pub(crate) popped: AtomicU32,
    /// Set by a producer about to sleep on `popped`.
    pub(crate) producer_waiting: AtomicU32,
    _p2: [u64; 6],
}

/// Bytes of a control block.
pub const CTL_LEN: usize = 192;
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<RingCtl>() == CTL_LEN);

impl RingCtl {
    /// A fresh, empty control block (for heap rings).
    pub fn new() -> RingCtl {
        RingCtl {
            tail: AtomicU64::new(0),
            _p0: [0; 7],
            head: AtomicU64::new(0),
            _p1: [0; 7],
            pushed: AtomicU32::new(0),
            consumer_waiting: AtomicU32::new(0),
            popped: AtomicU32::new(0),
            producer_waiting: AtomicU32::new(0),
            _p2: [0; 6],
        }
    }
}

impl Default for RingCtl {
    fn default() -> Self {
        Self::new()
    }
}

/// The data area of a ring: `cap()` bytes (a power of two, at least 64) written and
/// read by copy only.
pub trait RingMem {
    /// The data bytes.
    fn cap(&self) -> usize;
    /// Copies `src` to `off..off + src.len()`, which lies within `0..cap()`.
    fn write(&self, off: usize, src: &[u8]);
    /// Copies `off..off + dst.len()`, which lies within `0..cap()`, into `dst`.
    fn read(&self, off: usize, dst: &mut [u8]);
}

/// What can go wrong reading a ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RingError {
    /// The control block or a header holds impossible values.
    Corrupt(String),
}

/// One end's view of a ring: its control block and data.
#[derive(Debug)]
pub struct Ring<'a, M: RingMem> {
    ctl: &'a RingCtl,
    mem: M,
}

impl<'a, M: RingMem> Ring<'a, M> {
    /// A view over a control block and its data area.
    pub fn new(ctl: &'a RingCtl, mem: M) -> Ring<'a, M> {
        Ring { ctl, mem }
    }

    /// The control block.
    pub fn ctl(&self) -> &'a RingCtl {
        self.ctl
    }

    /// The largest record payload this ring takes.
    pub fn max_record(&self) -> usize {
        max_record(self.mem.cap())
    }

    /// Producer: appends a record made of `parts` (concatenated, at most
    /// [`Ring::max_record`] bytes in all) with `tag`. `Ok(false)` if the ring lacks
    /// space now.
    pub fn try_push(&self, tag: u32, parts: &[&[u8]]) -> Result<bool, RingError> {
        let mut tail = self.ctl.tail.load(Ordering::Relaxed);
        self.try_push_from(&mut tail, tag, parts)
    }

    /// [`Ring::try_push`] from the producer's own record of the tail, `tail` (advanced
    /// on success): the producer is the only writer of the tail, so a shared tail that
    /// differs from it was written by someone else (a record lost or invented) and is
    /// [`RingError::Corrupt`].
    pub fn try_push_from(
        &self,
        tail_out: &mut u64,
        tag: u32,
        parts: &[&[u8]],
    ) -> Result<bool, RingError> {
        let cap = self.mem.cap();
        let len: usize = parts.iter().map(|p| p.len()).sum();
        assert!(
            len <= max_record(cap) && tag != PAD_TAG,
            "rma-shm ring: record too large or reserved tag"
        );
        let need = 8 + round8(len);
        let tail = *tail_out;
        let shared = self.ctl.tail.load(Ordering::Relaxed);
        if shared != tail {
            return Err(RingError::Corrupt(format!(
                "tail {shared} where the producer left {tail}"
            )));
        }
        let head = self.ctl.head.load(Ordering::Acquire);
        let used = tail.wrapping_sub(head);
        if used > cap as u64 || head % 8 != 0 || tail % 8 != 0 {
            return Err(RingError::Corrupt(format!(
                "ring positions head {head} tail {tail}"
            )));
        }
        let free = cap - used as usize;
        let pos = (tail % cap as u64) as usize;
        let to_end = cap - pos;
        let (start, total) = if need > to_end {
            (0, to_end + need)
        } else {
            (pos, need)
        };
        if total > free {
            return Ok(false);
        }
        if start == 0 && pos != 0 {
            let mut pad = [0u8; 8];
            pad[4..].copy_from_slice(&PAD_TAG.to_ne_bytes());
            self.mem.write(pos, &pad);
        }
        let mut header = [0u8; 8];
        header[..4].copy_from_slice(&(len as u32).to_ne_bytes());
        header[4..].copy_from_slice(&tag.to_ne_bytes());
        self.mem.write(start, &header);
        let mut off = start + 8;
        for p in parts {
            self.mem.write(off, p);
            off += p.len();
        }
        let new_tail = tail.wrapping_add(total as u64);
        self.ctl.tail.store(new_tail, Ordering::Release);
        *tail_out = new_tail;
        self.ctl.pushed.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }

    /// Consumer: removes the oldest record, copying its payload into `out` (cleared
    /// first); `Ok(None)` if the ring is empty, else `Ok(Some(tag))`.
    pub fn try_pop(&self, out: &mut Vec<u8>) -> Result<Option<u32>, RingError> {
        let mut head = self.ctl.head.load(Ordering::Relaxed);
        self.try_pop_from(&mut head, out)
    }

    /// [`Ring::try_pop`] from the consumer's own record of the head, `head` (advanced
    /// as records and pads are consumed): the consumer is the only writer of the head,
    /// so a shared head that differs from it was written by someone else (records
    /// skipped) and is [`RingError::Corrupt`].
    pub fn try_pop_from(
        &self,
        head_out: &mut u64,
        out: &mut Vec<u8>,
    ) -> Result<Option<u32>, RingError> {
        let cap = self.mem.cap();
        loop {
            let head = *head_out;
            let shared = self.ctl.head.load(Ordering::Relaxed);
            if shared != head {
                return Err(RingError::Corrupt(format!(
                    "head {shared} where the consumer left {head}"
                )));
            }
            let tail = self.ctl.tail.load(Ordering::Acquire);
            let used = tail.wrapping_sub(head);
            if used == 0 {
                return Ok(None);
            }
            if used > cap as u64 || used % 8 != 0 || head % 8 != 0 {
                return Err(RingError::Corrupt(format!(
                    "ring positions head {head} tail {tail}"
                )));
            }
            let pos = (head % cap as u64) as usize;
            let mut header = [0u8; 8];
            self.mem.read(pos, &mut header);
            let len = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]) as usize;
            let tag = u32::from_ne_bytes([header[4], header[5], header[6], header[7]]);
            if tag == PAD_TAG {
                let skip = cap - pos;
                if skip as u64 > used {
                    return Err(RingError::Corrupt(format!(
                        "pad of {skip} bytes beyond the {used} in use"
                    )));
                }
                *head_out = head.wrapping_add(skip as u64);
                self.ctl.head.store(*head_out, Ordering::Release);
                continue;
            }
            let need = 8 + round8(len);
            if len > max_record(cap) || need > cap - pos || need as u64 > used {
                return Err(RingError::Corrupt(format!(
                    "record of {len} bytes at {pos} with {used} in use"
                )));
            }
            out.clear();
            out.resize(len, 0);
            self.mem.read(pos + 8, out);
            *head_out = head.wrapping_add(need as u64);
            self.ctl.head.store(*head_out, Ordering::Release);
            self.ctl.popped.fetch_add(1, Ordering::SeqCst);
            return Ok(Some(tag));
        }
    }

    /// Producer's view: bytes free now (a record of `n` bytes fits for certain when
    /// `free() >= 2 * (n + 8)`, whatever padding the wrap needs).
    pub fn free(&self) -> usize {
        let used = self
            .ctl
            .tail
            .load(Ordering::Relaxed)
            .wrapping_sub(self.ctl.head.load(Ordering::Acquire));
        self.mem
            .cap()
            .saturating_sub(used.min(u64::MAX >> 1) as usize)
    }

    /// The consumer's position as the control block says now: every record before it
    /// has been taken (for a producer that wants to know whether its records were).
    pub fn consumed_to(&self) -> u64 {
        self.ctl.head.load(Ordering::Acquire)
    }

    /// Whether the ring holds a record (or a pad) now.
    pub fn is_empty(&self) -> bool {
        self.ctl.tail.load(Ordering::Acquire) == self.ctl.head.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Heap(Mutex<Vec<u8>>);

    impl RingMem for Heap {
        fn cap(&self) -> usize {
            256
        }
        fn write(&self, off: usize, src: &[u8]) {
            let mut m = self.0.lock().unwrap();
            m[off..off + src.len()].copy_from_slice(src);
        }
        fn read(&self, off: usize, dst: &mut [u8]) {
            let m = self.0.lock().unwrap();
            dst.copy_from_slice(&m[off..off + dst.len()]);
        }
    }

    /// A third party that moves the tail (a record vanishes) or the head (records are
    /// skipped) is caught by the end that owns that position, before it acts on it.
    #[test]
    fn positions_moved_by_someone_else_are_corrupt() {
        let ctl = RingCtl::new();
        let r = Ring::new(&ctl, Heap(Mutex::new(vec![0; 256])));
        let (mut tail, mut head, mut out) = (0u64, 0u64, Vec::new());
        for k in 0..40u8 {
            assert!(r.try_push_from(&mut tail, 1, &[&[k; 20]]).unwrap());
            assert_eq!(r.try_pop_from(&mut head, &mut out).unwrap(), Some(1));
            assert_eq!(out, [k; 20]);
        }
        assert!(r.try_push_from(&mut tail, 1, &[&[7; 20]]).unwrap());
        // the record disappears: the consumer sees an empty ring, the producer knows
        ctl.tail.store(head, Ordering::Release);
        assert_eq!(r.try_pop_from(&mut head, &mut out), Ok(None));
        assert!(matches!(
            r.try_push_from(&mut tail, 1, &[&[8; 20]]),
            Err(RingError::Corrupt(_))
        ));
        // the record is skipped: the consumer knows
        ctl.tail.store(tail, Ordering::Release);
        ctl.head.store(tail, Ordering::Release);
        assert!(matches!(
            r.try_pop_from(&mut head, &mut out),
            Err(RingError::Corrupt(_))
        ));
        // the plain forms trust the control block (what the loom model checks)
        assert_eq!(r.try_pop(&mut out), Ok(None));
    }
}
