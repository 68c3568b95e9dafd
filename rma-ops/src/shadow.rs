//! [`Shadow`]: the aligned copy a window created over a caller's buffer exposes instead
//! of the buffer itself, shared by every backend whose peers write into window memory.

/// The memory a window created over a caller's buffer really exposes when other ranks
/// could otherwise write into the buffer itself: a 64-byte aligned heap copy, copied
/// back into the buffer once every rank is done with the window (a collective free).
///
/// - Under MPI: MPICH 4.0 does not reach windows created at addresses that are not
///   16-byte aligned (calls land elsewhere, fetches return other memory, the process
///   gets corrupted; reproduced in C with a heap buffer at offset 8).
/// - On rma's shared memory, in every launch mode: other ranks write into the window's
///   memory (threads directly, the queued transport's progress thread for processes).
///   Were that the caller's buffer, a window dropped or forgotten without its
///   collective free (an early `?` return, `mem::forget`) would end the borrow while
///   they still write: a use after free or a data race in safe code. A copy that is
///   never copied back is leaked instead, so late writes land in memory nobody else
///   uses.
///
/// The buffer is reachable only through the window while it lives, so the copy is not
/// observable — except that the window's alignment is the copy's, which rma's
/// alignment checks use, and that a window dropped without being freed leaves the
/// buffer as it was.
pub struct Shadow<'w> {
    heap: Vec<u8>,
    pad: usize,
    buf: &'w mut [u8],
    returned: bool,
}

impl<'w> Shadow<'w> {
    /// A copy of `buf`, and the address of its first byte.
    pub fn new(buf: &'w mut [u8]) -> (Shadow<'w>, *mut u8) {
        // 64-byte aligned, and whole 8-byte words past the end: window memory is
        // accessed in aligned words (rma_ops::shared)
        let mut heap = vec![0u8; buf.len() + 128];
        let pad = (64 - heap.as_ptr() as usize % 64) % 64;
        heap[pad..pad + buf.len()].copy_from_slice(buf);
        let base = heap[pad..].as_mut_ptr();
        let returned = false;
        (
            Shadow {
                heap,
                pad,
                buf,
                returned,
            },
            base,
        )
    }

    /// Copies the window's memory back into the buffer. Only once no rank can reach
    /// the copy any more (after the collective free); afterwards the copy is freed
    /// with the shadow instead of leaked.
    pub fn copy_back(&mut self) {
        let n = self.buf.len();
        let src = self.heap[self.pad..self.pad + n].as_ptr();
        // SAFETY: `src` is `n` bytes of the heap copy, which holds whole aligned words
        // around them (64-byte aligned start, 128 bytes of slack); the window's other
        // accesses to it were word atomics, and so is this copy (crate::shared).
        unsafe { crate::shared::copy_out(src, self.buf) };
        self.returned = true;
    }
}

impl Drop for Shadow<'_> {
    fn drop(&mut self) {
        if !self.returned {
            // other ranks may still write into it: keep it for the process's life
            std::mem::forget(std::mem::take(&mut self.heap));
        }
    }
}

impl std::fmt::Debug for Shadow<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shadow")
            .field("len", &self.buf.len())
            .field("returned", &self.returned)
            .finish()
    }
}
