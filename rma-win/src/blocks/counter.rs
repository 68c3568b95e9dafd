//! [`Counter`]: a distributed counter (NWChem's NXTVAL, a work queue's next index).

use super::{agree, Owned};
use crate::world::World;
use rma_core::{Error, Info, Rank, Result};
use std::cell::Cell;

/// Options of a [`Counter`]; every rank must pass the same ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterOptions {
    /// The rank whose window holds the counter (default 0).
    pub home: usize,
    /// The counter's first value (default 0).
    pub initial: i64,
    /// How many values [`Counter::next`] reserves per call to the home rank (default
    /// 1: every `next` is one atomic call). With a block of `b`, a rank takes `b`
    /// values at once and hands them out locally, so the calls to the home rank, and
    /// the contention there, fall `b`-fold; the values stay unique, but ranks no
    /// longer receive them in global order.
    pub block: u64,
}

impl Default for CounterOptions {
    fn default() -> Self {
        CounterOptions {
            home: 0,
            initial: 0,
            block: 1,
        }
    }
}

/// A counter every rank of a world updates atomically: `fetch_add`, `next`, `read`,
/// `reset`. It lives in a window of its own on its home rank, inside one lock_all
/// epoch for its whole life, and every call completes (is flushed) before it returns.
///
/// Created and freed collectively; used by its rank's thread. Values wrap around on
/// overflow (i64 arithmetic of MPI_SUM).
///
/// ```
/// use rma_win::{Counter, CounterOptions, Info};
/// let per_rank = rma_win::run_threads(4, |world| -> rma_win::Result<Vec<i64>> {
///     // values are handed out in blocks of 8: one call to rank 0 per 8 values
///     let opts = CounterOptions { block: 8, ..CounterOptions::default() };
///     let mut counter = Counter::with_options(&world, opts, &Info::new())?;
///     let mine = (0..20).map(|_| counter.next()).collect::<rma_win::Result<Vec<_>>>()?;
///     world.barrier()?;
///     assert_eq!(counter.read()?, 4 * 24); // 3 blocks of 8 reserved per rank
///     counter.free()?;
///     Ok(mine)
/// })?;
/// let mut all: Vec<i64> = per_rank.into_iter().map(Result::unwrap).flatten().collect();
/// all.sort();
/// all.dedup();
/// assert_eq!(all.len(), 80); // every value handed out once
/// # Ok::<(), rma_win::Error>(())
/// ```
#[derive(Debug)]
pub struct Counter<'w> {
    owned: Owned<'w>,
    home: Rank,
    block: u64,
    /// The block this rank hands out: the next value and the end (exclusive).
    cache: Cell<(i64, i64)>,
}

/// The counter's displacement in its home rank's window.
const AT: i64 = 0;

impl<'w> Counter<'w> {
    /// Collectively creates a counter at 0 on rank 0, handing out one value per call.
    pub fn new(world: &'w World, info: &Info) -> Result<Counter<'w>> {
        Self::with_options(world, CounterOptions::default(), info)
    }

    /// Collectively creates a counter with `options` (the same on every rank: RANK for
    /// a home outside the world, ARG for a block of 0 or options that differ between
    /// ranks, on every rank alike). `info` chooses the window's transport, as for
    /// [`crate::Window::allocate`].
    pub fn with_options(
        world: &'w World,
        options: CounterOptions,
        info: &Info,
    ) -> Result<Counter<'w>> {
        let CounterOptions {
            home,
            initial,
            block,
        } = options;
        // agreed first, so that every rank refuses alike
        let mut key = Vec::with_capacity(24);
        key.extend_from_slice(&(home as u64).to_le_bytes());
        key.extend_from_slice(&initial.to_le_bytes());
        key.extend_from_slice(&block.to_le_bytes());
        agree(world, "Counter::with_options", &key)?;
        if home >= world.size() {
            return Err(Error::InvalidRank {
                rank: Rank::new(home.min(u32::MAX as usize) as u32),
                size: world.size(),
            });
        }
        if block == 0 || block > i64::MAX as u64 {
            return Err(Error::arg(format!(
                "a counter's block must be 1 to 2^63 - 1 values, not {block}"
            )));
        }
        let here = world.rank() == home;
        let owned = Owned::new::<i64>(world, usize::from(here), info, |win| {
            if here {
                win.write_local(0, &[initial])?;
            }
            Ok(())
        })?;
        Ok(Counter {
            owned,
            home: Rank::new(home as u32),
            block,
            cache: Cell::new((0, 0)),
        })
    }

    /// The rank that holds the counter.
    pub fn home(&self) -> usize {
        self.home.index().unwrap_or(0)
    }

    /// Values [`Counter::next`] reserves per call to the home rank.
    pub fn block(&self) -> u64 {
        self.block
    }

    /// The transport of the counter's window (`atomic`, `queued`, `mpi`).
    pub fn transport_name(&self) -> &'static str {
        self.owned.win.transport_name()
    }

    /// Atomically adds `n` to the counter and returns the value before (one
    /// fetch_and_op SUM and its flush; bypasses this rank's block).
    #[inline]
    pub fn fetch_add(&self, n: i64) -> Result<i64> {
        let h = self.owned.target(self.home)?;
        let old = h.fetch_add(n, AT)?;
        h.flush()?;
        Ok(old)
    }

    /// The next value: with a block of 1, `fetch_add(1)`; with a block of `b`, a value
    /// of the block this rank reserved last, reserving the next `b` values (one
    /// `fetch_add(b)`) when it is used up. Every value is handed out once, world-wide.
    #[inline]
    pub fn next(&self) -> Result<i64> {
        if self.block == 1 {
            return self.fetch_add(1);
        }
        let (next, end) = self.cache.get();
        if next != end {
            self.cache.set((next.wrapping_add(1), end));
            return Ok(next);
        }
        let start = self.fetch_add(self.block as i64)?;
        self.cache
            .set((start.wrapping_add(1), start.wrapping_add(self.block as i64)));
        Ok(start)
    }

    /// The counter's value (fetch_and_op NO_OP): every value reserved so far, by any
    /// rank, including those still in ranks' blocks.
    pub fn read(&self) -> Result<i64> {
        let h = self.owned.target(self.home)?;
        let v = h.fetch::<i64>(AT)?;
        h.flush()?;
        Ok(v)
    }

    /// Atomically sets the counter to `value` and returns the value before
    /// (fetch_and_op REPLACE). This rank's reserved block is dropped; other ranks'
    /// blocks are not (they hand out what they reserved before the reset).
    pub fn reset(&self, value: i64) -> Result<i64> {
        let h = self.owned.target(self.home)?;
        let old = h.swap(value, AT)?;
        h.flush()?;
        self.cache.set((0, 0));
        Ok(old)
    }

    /// Collectively frees the counter's window. Dropping the counter instead is sound
    /// and does what dropping a [`crate::Window`] does.
    pub fn free(&mut self) -> Result<()> {
        self.owned.free()
    }
}
