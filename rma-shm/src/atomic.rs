//! The atomic transport: the origin applies every call directly in the target's memory
//! (mapped into the origin), with the element-wise atomic kernels of `rma-ops`.
//!
//! Every call completes at the target before it returns, so flush has nothing to wait
//! for (it is an order fence), and ordering from one origin is program order whatever
//! `accumulate_ordering` says.

use crate::winmem::WindowMemory;
use rma_core::{Access, BasicType, Op, Rank, Result, Run, Strided, Transport};
use rma_ops::atomic;
use rma_ops::Direct;
use std::sync::Arc;

/// The atomic transport over one window.
#[derive(Debug, Clone)]
pub struct AtomicTransport {
    mem: Arc<WindowMemory>,
}

impl AtomicTransport {
    /// The transport over `mem`; an error of class RMA_FLAVOR if this rank cannot reach
    /// every rank's memory directly (a window over private memory across processes).
    pub fn new(mem: Arc<WindowMemory>) -> Result<AtomicTransport> {
        if !mem.direct() {
            return Err(rma_core::Error::Flavor {
                reason: "the atomic transport cannot reach memory other processes own privately; \
                         use the queued transport (or allocate the window in shared memory)"
                    .into(),
            });
        }
        Ok(AtomicTransport { mem })
    }

    /// The window memory it reaches.
    pub fn memory(&self) -> &Arc<WindowMemory> {
        &self.mem
    }

    fn target_index(&self, target: Rank) -> usize {
        match target.index() {
            Some(i) if i < self.mem.ranks() => i,
            _ => broken_contract("target rank"),
        }
    }

    /// Calls `f(pointer, key, packed range)` for each run of `at`, where `key` is the
    /// run's byte offset in the target window and the range indexes the packed buffer.
    fn for_each_run(
        &self,
        at: Access<'_>,
        mut f: impl FnMut(*mut u8, usize, std::ops::Range<usize>) -> Result<()>,
    ) -> Result<()> {
        let t = self.target_index(at.target);
        let (base, len) = (self.mem.data_ptr(t), self.mem.len_of(t));
        let place = |offset: isize, n: usize| {
            let start = at.base as isize + offset;
            if start < 0 || (start as usize).checked_add(n).is_none_or(|end| end > len) {
                broken_contract("run outside the target window");
            }
            // SAFETY: start + n <= window length, checked just above.
            (unsafe { base.add(start as usize) }, start as usize)
        };
        if let Some(n) = at.layout.as_contiguous() {
            let (p, key) = place(0, n);
            return f(p, key, 0..n);
        }
        let mut pos = 0usize;
        let mut failed = Ok(());
        at.layout.for_each_run(&mut |Run { offset, len: n }| {
            if failed.is_ok() {
                let (p, key) = place(offset, n);
                failed = f(p, key, pos..pos + n);
            }
            pos += n;
        });
        failed
    }

    /// A strided layout with positive stride and non-overlapping blocks (and more than
    /// one of them), checked to lie inside the target window: the first block's pointer
    /// and window offset, and the layout.
    fn strided(&self, at: &Access<'_>) -> Option<(*mut u8, usize, Strided)> {
        let st = at
            .layout
            .as_strided()
            .filter(|s| s.count > 1 && s.len > 0 && s.stride > 0 && s.len <= s.stride as usize)?;
        let t = self.target_index(at.target);
        let first = at.base as isize + st.offset;
        let end = (st.count - 1)
            .checked_mul(st.stride as usize)
            .and_then(|e| e.checked_add(st.len))
            .and_then(|e| e.checked_add(first as usize));
        if first < 0 || end.is_none_or(|e| e > self.mem.len_of(t)) {
            broken_contract("strided layout outside the target window");
        }
        // SAFETY: first + (count - 1) * stride + len <= window length, checked above.
        let p = unsafe { self.mem.data_ptr(t).add(first as usize) };
        Some((p, first as usize, st))
    }

    /// `target`'s window memory and its atomicity domain as this rank uses it: what
    /// the single-element calls go through here, and what a target handle of rma-win
    /// keeps for its epoch.
    #[inline]
    pub fn direct(&self, target: Rank) -> Direct<'_> {
        let t = self.target_index(target);
        let dom = self.mem.domain(t, self.mem.rank());
        // SAFETY: the transport exists only where this rank maps every rank's window
        // (`new` checks `direct()`), so `data_ptr(t)` is valid for `len_of(t)` bytes
        // while `self.mem` lives, inside a page-aligned mapping of whole words; every
        // access to window memory goes through rma_ops::shared / rma_ops::atomic, and
        // every accumulate-family access uses this window's domain with window-offset
        // keys (docs/design.md decision 3).
        unsafe { Direct::new(self.mem.data_ptr(t), self.mem.len_of(t), dom) }
    }
}

/// Panics unless `p` is aligned for the atomic kernels on `basic` (the atomic word of
/// an element must never straddle words: a misaligned `AtomicU64` would be undefined
/// behaviour, and these methods are safe to call). rma-win refuses such calls first,
/// with class DISP.
#[inline(always)]
fn aligned(p: *mut u8, basic: BasicType) {
    if (p as usize) % atomic::atomic_align(basic) != 0 {
        broken_contract("element not aligned for its atomic");
    }
}

#[cold]
#[inline(never)]
fn broken_contract(what: &str) -> ! {
    panic!("rma-shm atomic transport: {what} (rma-win should have rejected this call)")
}

impl Transport for AtomicTransport {
    fn name(&self) -> &'static str {
        "atomic"
    }

    fn put(&self, at: Access<'_>, data: &[u8]) -> Result<()> {
        self.for_each_run(at, |p, _, r| {
            // SAFETY: `p` is valid for `r.len()` bytes inside the target window
            // (`for_each_run` checks it), whose mapping holds whole aligned words;
            // `data` is local. Every access to window memory is a word atomic
            // (rma_ops::shared), so a concurrent access by another rank is no data
            // race; a conflicting one (MPI-erroneous) gives unspecified bytes.
            unsafe { rma_ops::shared::copy_in(p, &data[r]) };
            Ok(())
        })
    }

    fn get(&self, at: Access<'_>, out: &mut [u8]) -> Result<()> {
        self.for_each_run(at, |p, _, r| {
            // SAFETY: as in `put`, reading instead of writing.
            unsafe { rma_ops::shared::copy_out(p, &mut out[r]) };
            Ok(())
        })
    }

    fn accumulate(&self, at: Access<'_>, basic: BasicType, op: Op, data: &[u8]) -> Result<()> {
        let dom = self
            .mem
            .domain(self.target_index(at.target), self.mem.rank());
        let exclusive = at.exclusive;
        if let Some((p, key, st)) = self.strided(&at) {
            let (stride, n) = (st.stride as usize, st.len / basic.size());
            aligned(p, basic);
            if stride % atomic::atomic_align(basic) != 0 {
                broken_contract("stride not aligned for the element's atomic");
            }
            if data.len() != st.count * st.len {
                broken_contract("accumulate data length");
            }
            return rma_ops::with_element!(basic, T => {
                // SAFETY: `strided` checked every block lies inside the target window;
                // alignment and the element count are rma-win's contract; every access
                // is a word atomic (rma_ops::shared). Exclusive: as below; otherwise
                // the domain's chunk locks exclude every other accumulate-family
                // access, for MPI's element atomicity.
                unsafe {
                    if exclusive {
                        rma_ops::shared::apply_strided::<T>(op, p, stride, data.as_ptr(), st.count, n);
                        Ok(())
                    } else {
                        atomic::accumulate_strided(basic, op, p, key, stride, st.len, st.count, &dom, data)
                    }
                }
            });
        }
        self.for_each_run(at, |p, key, r| {
            aligned(p, basic);
            if exclusive {
                let n = r.len() / basic.size();
                rma_ops::with_element!(basic, T => {
                    // SAFETY: the run is inside the target window and aligned (rma-win);
                    // its accesses are word atomics (rma_ops::shared), so nothing is a
                    // data race; under the exclusive lock no other origin updates the
                    // target's window in a correct program, so the element-wise
                    // read-modify-write needs no further claim (rma-win sets
                    // `exclusive` only for a lock it really holds).
                    unsafe { rma_ops::shared::apply::<T>(op, p, data[r].as_ptr(), n) }
                });
                return Ok(());
            }
            // SAFETY: the run is inside the target window and aligned for `basic`
            // (rma-win checks alignment); every accumulate-family access to this window
            // goes through these kernels with this window's atomicity domain and
            // window-offset keys (docs/design.md decision 3).
            unsafe { atomic::accumulate(basic, op, p, key, &dom, &data[r]) }
        })
    }

    fn get_accumulate(
        &self,
        at: Access<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        let dom = self
            .mem
            .domain(self.target_index(at.target), self.mem.rank());
        self.for_each_run(at, |p, key, r| {
            aligned(p, basic);
            let src = if op == Op::NoOp {
                &[][..]
            } else {
                &data[r.clone()]
            };
            // SAFETY: as in `accumulate`.
            unsafe { atomic::get_accumulate(basic, op, p, key, &dom, src, &mut out[r]) }
        })
    }

    fn fetch_and_op(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.direct(target)
            .fetch_and_op(offset, basic, op, origin, out)
    }

    fn compare_and_swap(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.direct(target)
            .compare_and_swap(offset, basic, origin, compare, out)
    }

    fn fetch_and_op_bits(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<u64> {
        self.direct(target)
            .fetch_and_op_bits(offset, basic, op, origin)
    }

    fn compare_and_swap_bits(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: u64,
        compare: u64,
    ) -> Result<u64> {
        self.direct(target)
            .compare_and_swap_bits(offset, basic, origin, compare)
    }

    fn accumulate_bits(
        &self,
        target: Rank,
        offset: usize,
        exclusive: bool,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<()> {
        self.direct(target)
            .accumulate_bits(offset, exclusive, basic, op, origin)
    }

    // Every call completed in target memory before it returned. What a flush still
    // owes is order: puts and gets are relaxed word accesses, so a flag put after a
    // flush could be seen before the data put before it, and a get after a flush
    // could read older data than a get before it saw. An AcqRel fence orders them (a
    // release fence before the next call's stores, an acquire fence after the last
    // call's loads; fence-to-fence synchronization when the two sides flush). On
    // x86-64 it costs no instruction.
    fn flush(&self, _target: Rank) -> Result<()> {
        rma_ops::flush_fence();
        Ok(())
    }

    fn flush_all(&self) -> Result<()> {
        rma_ops::flush_fence();
        Ok(())
    }
}
