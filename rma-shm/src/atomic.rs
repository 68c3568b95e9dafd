//! The atomic transport: the origin applies every call directly in the target's memory
//! (mapped into the origin), with the element-wise atomic kernels of `rma-ops`.
//!
//! Every call completes at the target before it returns, so flush is a memory fence,
//! and ordering from one origin is program order whatever `accumulate_ordering` says.

use crate::winmem::WindowMemory;
use rma_core::{Access, BasicType, Op, Rank, Result, Run, Transport};
use rma_ops::atomic;
use std::sync::atomic::{fence, Ordering};
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
        mut f: impl FnMut(*mut u8, usize, std::ops::Range<usize>),
    ) {
        let t = self.target_index(at.target);
        let (base, len) = (self.mem.data_ptr(t), self.mem.len_of(t));
        let mut pos = 0usize;
        at.layout.for_each_run(&mut |Run { offset, len: n }| {
            let start = at.base as isize + offset;
            if start < 0 || (start as usize).checked_add(n).is_none_or(|end| end > len) {
                broken_contract("run outside the target window");
            }
            // SAFETY: start + n <= window length, checked just above.
            let p = unsafe { base.add(start as usize) };
            f(p, start as usize, pos..pos + n);
            pos += n;
        });
    }

    fn element(&self, target: Rank, offset: usize, size: usize) -> *mut u8 {
        let t = self.target_index(target);
        if offset
            .checked_add(size)
            .is_none_or(|end| end > self.mem.len_of(t))
        {
            broken_contract("element outside the target window");
        }
        // SAFETY: offset + size <= window length, checked just above.
        unsafe { self.mem.data_ptr(t).add(offset) }
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
            // (`for_each_run` checks it); `data` is local. Concurrent conflicting
            // accesses are erroneous in MPI and give unspecified bytes, never an access
            // outside the window.
            unsafe { std::ptr::copy_nonoverlapping(data[r.clone()].as_ptr(), p, r.len()) }
        });
        Ok(())
    }

    fn get(&self, at: Access<'_>, out: &mut [u8]) -> Result<()> {
        self.for_each_run(at, |p, _, r| {
            // SAFETY: as in `put`, reading instead of writing.
            unsafe { std::ptr::copy_nonoverlapping(p, out[r.clone()].as_mut_ptr(), r.len()) }
        });
        Ok(())
    }

    fn accumulate(&self, at: Access<'_>, basic: BasicType, op: Op, data: &[u8]) -> Result<()> {
        let dom = self.mem.domain(self.target_index(at.target), self.mem.rank());
        let exclusive = at.exclusive;
        self.for_each_run(at, |p, key, r| {
            if exclusive {
                let n = r.len() / basic.size();
                rma_ops::with_element!(basic, T => {
                    // SAFETY: the run is inside the target window; under the exclusive
                    // lock no other origin accesses the target's window, so a plain
                    // read-modify-write is not raced (rma-win sets `exclusive` only
                    // for a lock it really holds).
                    unsafe { rma_ops::apply_raw::<T>(op, p, data[r].as_ptr(), n) }
                });
                return;
            }
            // SAFETY: the run is inside the target window and aligned for `basic`
            // (rma-win checks alignment); every accumulate-family access to this window
            // goes through these kernels with this window's atomicity domain and
            // window-offset keys (DESIGN.md decision 3).
            unsafe { atomic::accumulate(basic, op, p, key, &dom, &data[r]) }
        });
        Ok(())
    }

    fn get_accumulate(
        &self,
        at: Access<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        let dom = self.mem.domain(self.target_index(at.target), self.mem.rank());
        self.for_each_run(at, |p, key, r| {
            let src = if op == Op::NoOp {
                &[][..]
            } else {
                &data[r.clone()]
            };
            // SAFETY: as in `accumulate`.
            unsafe { atomic::get_accumulate(basic, op, p, key, &dom, src, &mut out[r]) }
        });
        Ok(())
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
        let p = self.element(target, offset, basic.size());
        let dom = self.mem.domain(self.target_index(target), self.mem.rank());
        // SAFETY: one element inside the target window, aligned (checked by rma-win);
        // same kernels, domain and key scheme as every other accumulate.
        unsafe { atomic::fetch_and_op(basic, op, p, offset, &dom, origin, out) };
        Ok(())
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
        let p = self.element(target, offset, basic.size());
        let dom = self.mem.domain(self.target_index(target), self.mem.rank());
        // SAFETY: as in `fetch_and_op`.
        unsafe { atomic::compare_and_swap(basic, p, offset, &dom, origin, compare, out) };
        Ok(())
    }

    fn flush(&self, _target: Rank) -> Result<()> {
        fence(Ordering::SeqCst);
        Ok(())
    }

    fn flush_all(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        Ok(())
    }
}
