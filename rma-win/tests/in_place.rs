//! `Window::create_in_place`, the C interface's MPI_Win_create over a program's own
//! memory: other ranks' calls land in that memory itself, and memory that breaks the
//! alignment promise is refused on every rank (class ARG), not touched.

#![allow(unsafe_code)] // the constructors under test are unsafe fns

use rma_win::{run_threads, Assert, ErrorClass, Info, Op, Rank, Result, Window};

const RANKS: usize = 3;

#[test]
fn calls_land_in_the_memory_itself() {
    let out = run_threads(RANKS, |world| -> Result<u64> {
        // raw memory, reached only through the window's word atomics while it lives
        let mem = Box::into_raw(Box::new([0u64; 4]));
        // SAFETY: `mem` is 8-aligned, 32 bytes, freed only after the window, and no
        // Rust reference covers it meanwhile (read back after the free below).
        let mut win = unsafe { Window::create_in_place(&world, mem.cast(), 32, 8, &Info::new())? };
        win.fence(Assert::NONE)?;
        for r in 0..world.size() {
            win.accumulate(&[1u64 << world.rank()], Rank::new(r as u32), 3, Op::Sum)?;
        }
        win.fence(Assert::NONE)?;
        win.free()?;
        // SAFETY: the window is freed; `mem` came from Box::into_raw above.
        let back = unsafe { Box::from_raw(mem) };
        Ok(back[3])
    })
    .expect("threads ran");
    for v in out {
        assert_eq!(v.expect("rank ok"), (1 << RANKS) - 1);
    }
}

#[test]
fn misaligned_memory_is_refused_on_every_rank() {
    let out = run_threads(RANKS, |world| -> Result<()> {
        let mem = Box::into_raw(Box::new([0u64; 5]));
        // rank 1 breaks the promise: 4 bytes into its words
        let at = if world.rank() == 1 {
            mem.cast::<u8>().wrapping_add(4)
        } else {
            mem.cast::<u8>()
        };
        // SAFETY: valid for 32 bytes (+4 within the 40-byte box), freed after.
        let made = unsafe { Window::create_in_place(&world, at, 32, 8, &Info::new()) };
        let r = made.map(drop);
        // SAFETY: no window over it lives any more.
        drop(unsafe { Box::from_raw(mem) });
        r
    })
    .expect("threads ran");
    for (rank, r) in out.into_iter().enumerate() {
        let e = r.expect_err("refused");
        if rank == 1 {
            assert_eq!(e.class(), ErrorClass::Arg, "rank 1: {e}");
        }
    }
}
