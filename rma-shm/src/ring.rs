//! A single-producer, single-consumer ring of variable-length records in shared memory:
//! the queued transport's channel from one origin to one target (requests) and back
//! (replies).
//!
//! Layout: a control block ([`RingCtl`]: producer position, consumer position, wake-up
//! words) and `CAP` data bytes. A record is an 8-byte header (`len: u32`, `tag: u32`)
//! followed by `len` payload bytes, padded to 8. Records never wrap: when one does not
//! fit before the end, the producer writes a pad header there and starts at offset 0.
//! Positions are free-running `u64` byte counts; `tail - head` is the bytes in use.
//!
//! Protocol (release/acquire): the producer writes the record bytes, then stores `tail`
//! with `Release`; the consumer loads `tail` with `Acquire`, copies the record out, then
//! stores `head` with `Release`; the producer loads `head` with `Acquire` before reusing
//! space. Every value read from the control block or a header is validated, so a corrupt
//! ring yields [`RingError::Corrupt`], never an access outside the data area. The
//! protocol is model-checked with loom on heap memory (`tests/loom_ring.rs`).

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// Data bytes of the rings of the queued transport (a power of two).
pub const CAP: usize = 64 * 1024;

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
    head: AtomicU64,
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
        let cap = self.mem.cap();
        let len: usize = parts.iter().map(|p| p.len()).sum();
        assert!(
            len <= max_record(cap) && tag != PAD_TAG,
            "rma-shm ring: record too large or reserved tag"
        );
        let need = 8 + round8(len);
        let tail = self.ctl.tail.load(Ordering::Relaxed);
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
        self.ctl
            .tail
            .store(tail.wrapping_add(total as u64), Ordering::Release);
        self.ctl.pushed.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }

    /// Consumer: removes the oldest record, copying its payload into `out` (cleared
    /// first); `Ok(None)` if the ring is empty, else `Ok(Some(tag))`.
    pub fn try_pop(&self, out: &mut Vec<u8>) -> Result<Option<u32>, RingError> {
        let cap = self.mem.cap();
        loop {
            let head = self.ctl.head.load(Ordering::Relaxed);
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
                self.ctl
                    .head
                    .store(head.wrapping_add(skip as u64), Ordering::Release);
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
            self.ctl
                .head
                .store(head.wrapping_add(need as u64), Ordering::Release);
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

    /// Whether the ring holds a record (or a pad) now.
    pub fn is_empty(&self) -> bool {
        self.ctl.tail.load(Ordering::Acquire) == self.ctl.head.load(Ordering::Relaxed)
    }
}
