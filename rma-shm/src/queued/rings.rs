//! The queued transport's rings in a window's shared memory, and their wake-ups.

use crate::ring::{ring_cap, Ring, RingCtl, RingMem};
use crate::sys;
use crate::winmem::WindowMemory;
use std::sync::atomic::Ordering;

/// A ring's data area in a mapped segment: its first byte and length.
pub(super) struct ShmRingMem(pub(super) *mut u8, pub(super) usize);

impl RingMem for ShmRingMem {
    fn cap(&self) -> usize {
        self.1
    }
    fn write(&self, off: usize, src: &[u8]) {
        assert!(
            off.checked_add(src.len()).is_some_and(|e| e <= self.1),
            "rma-shm: ring write out of bounds"
        );
        // SAFETY: the data area is `self.1` bytes inside a live mapping (validated at window
        // creation), the range is inside it (asserted), and the ring protocol gives the
        // producer exclusive use of the bytes it writes.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.0.add(off), src.len()) }
    }
    fn read(&self, off: usize, dst: &mut [u8]) {
        assert!(
            off.checked_add(dst.len()).is_some_and(|e| e <= self.1),
            "rma-shm: ring read out of bounds"
        );
        // SAFETY: as in `write`; the consumer reads bytes the producer published.
        unsafe { std::ptr::copy_nonoverlapping(self.0.add(off), dst.as_mut_ptr(), dst.len()) }
    }
}

pub(super) fn ring(mem: &WindowMemory, owner: usize, index: usize) -> Ring<'_, ShmRingMem> {
    let (ctl, data) = mem.ring(owner, index);
    Ring::new(ctl, ShmRingMem(data, ring_cap(mem.ranks())))
}

pub(super) fn wake_consumer(ctl: &RingCtl) {
    if ctl.consumer_waiting.load(Ordering::SeqCst) != 0 {
        sys::futex_wake_all(&ctl.pushed);
    }
}

pub(super) fn wake_producer(ctl: &RingCtl) {
    if ctl.producer_waiting.load(Ordering::SeqCst) != 0 {
        sys::futex_wake_all(&ctl.popped);
    }
}
