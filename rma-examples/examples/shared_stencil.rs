//! A shared window used by load and store (MPI_Win_allocate_shared): a 1-D stencil on a
//! ring of `ranks x n` cells, each rank owning `n`. Every step each rank computes its
//! cells from the previous step's values, reading its neighbours' edge cells straight
//! from their parts of the window (no RMA call, no message), then all ranks meet in a
//! barrier with `Window::sync` on each side, MPI's recipe for load/store in a shared
//! window. The cells are integers updated with wrapping arithmetic, so rank 0 can check
//! every cell, exactly, against the same steps run on one thread.
//!
//! Under an MPI launcher the window is MPI_Win_allocate_shared's, which needs every
//! rank on one node (class RMA_SHARED otherwise).

use rma_examples::{run, Flags};
use rma_win::{Rank, SharedView, Window};

const STEPS: usize = 20;

/// One step of the stencil for cell `i` of a ring whose cells `at` reads.
fn cell(at: impl Fn(usize) -> u64, i: usize, len: usize) -> u64 {
    let (l, r) = ((i + len - 1) % len, (i + 1) % len);
    at(l)
        .wrapping_add(at(i).wrapping_mul(3))
        .wrapping_add(at(r))
        ^ (i as u64)
}

fn main() {
    let flags = Flags::parse(4096);
    let info = flags.info();
    run(&flags, |world| {
        let (me, p, n) = (world.rank(), world.size(), flags.n);
        let len = p * n;
        // two buffers per rank: cells of the even steps, then of the odd ones
        let win = Window::allocate_shared::<u64>(world, 2 * n, &info)?;
        let parts: Vec<SharedView<'_, u64>> = (0..p)
            .map(|r| win.shared_query(Rank::new(r as u32))?.view::<u64>())
            .collect::<rma_win::Result<_>>()?;
        let start = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mine = &parts[me];
        for i in 0..n {
            mine.store(i, start(me * n + i))?;
        }
        let t0 = std::time::Instant::now();
        for step in 0..STEPS {
            win.sync()?;
            world.barrier()?;
            win.sync()?;
            let (from, to) = if step % 2 == 0 { (0, n) } else { (n, 0) };
            // my cells as of the previous step, in bulk, and my neighbours' edge cells
            let mut prev = vec![0u64; n];
            mine.read(from, &mut prev)?;
            let left = parts[(me + p - 1) % p].load(from + n - 1)?;
            let right = parts[(me + 1) % p].load(from)?;
            // cell g of the ring (only mine and the two beside them are asked for)
            let at = |g: usize| match g {
                _ if g / n == me => prev[g % n],
                _ if (g + 1) % len == me * n => left,
                _ => right,
            };
            let mut next = vec![0u64; n];
            for (i, v) in next.iter_mut().enumerate() {
                *v = cell(at, me * n + i, len);
            }
            mine.write(to, &next)?;
        }
        win.sync()?;
        world.barrier()?;
        win.sync()?;
        let elapsed = t0.elapsed();
        let mut ok = true;
        if me == 0 {
            // the same steps on one thread
            let mut ring: Vec<u64> = (0..len).map(start).collect();
            for _ in 0..STEPS {
                ring = (0..len).map(|i| cell(|g| ring[g], i, len)).collect();
            }
            let last = if STEPS % 2 == 0 { 0 } else { n };
            for (r, part) in parts.iter().enumerate() {
                let mut got = vec![0u64; n];
                part.read(last, &mut got)?;
                ok &= got == ring[r * n..(r + 1) * n];
            }
            println!(
                "shared_stencil: {p} ranks x {n} cells, {STEPS} steps by load/store in a shared window (transport {}, mode {:?}): every cell matches one thread's: {} ({:.1} ns per cell-step on rank 0)",
                win.transport_name(),
                world.mode(),
                if ok { "yes" } else { "NO" },
                elapsed.as_nanos() as f64 / (STEPS * n) as f64
            );
        }
        Ok(ok)
    })
}
