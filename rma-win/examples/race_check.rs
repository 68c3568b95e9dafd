//! A deliberate race, caught by the conflict checker.
//!
//! Every rank but rank 0 puts its number into element 0 of rank 0's window in the
//! same fence epoch: concurrent puts to one location, which MPI calls erroneous (the
//! value left there is undefined). With the window's `rma_check` info key set to
//! `conflicts` (or `RMA_CHECK=conflicts` in the environment), the fence that closes
//! the epoch fails with class RMA_CONFLICT on the rank that finds the pair, naming
//! both ranks, both call sites and the bytes. The fixed version (an accumulate with
//! REPLACE, which MPI allows to race with itself) then passes the same check.
//!
//! ```text
//! cargo run -p rma-win --example race_check                 # 4 ranks as threads
//! cargo build -p rma-shm --bin rmarun && cargo build -p rma-win --example race_check
//! target/debug/rmarun -n 4 target/debug/examples/race_check  # 4 processes
//! cargo build -p rma-win --features mpi --example race_check
//! mpiexec -n 4 target/debug/examples/race_check              # under MPI
//! ```

use rma_win::{Assert, ErrorClass, Info, Op, Rank, Window};

fn main() -> rma_win::Result<()> {
    let results = rma_win::launch(4, |world| -> rma_win::Result<usize> {
        let info = Info::new().with("rma_check", "conflicts");
        let win = Window::allocate::<u64>(&world, 4, &info)?;
        let me = world.rank() as u64;

        // the race: every rank but 0 puts into the same element of rank 0
        win.fence(Assert::NONE)?;
        if me != 0 {
            win.put(&[me], Rank::new(0), 0)?;
        }
        let found = match win.fence(Assert::NONE) {
            Ok(()) => false,
            Err(e) if e.class() == ErrorClass::RmaConflict => {
                println!("rank {me}: {} ({})", e, e.class());
                true
            }
            Err(e) => return Err(e),
        };

        // the fix: REPLACE accumulates may race (each element is replaced atomically)
        if me != 0 {
            win.accumulate(&[me], Rank::new(0), 1, Op::Replace)?;
        }
        win.fence(Assert::NONE)?;
        // how many ranks found the race (one or more: whoever compared last)
        let all = world.allgather(&[u8::from(found)])?;
        Ok(all.iter().filter(|f| f.first() == Some(&1)).count())
    })?;
    // as threads every rank's count, as a process its own: all the same number
    let found = results.into_iter().next().transpose()?.unwrap_or(0);
    if found == 0 {
        return Err(rma_win::Error::Internal {
            reason: "the checker missed the race".into(),
        });
    }
    println!("race_check: {found} rank(s) reported the race; the fixed epoch passed");
    Ok(())
}
