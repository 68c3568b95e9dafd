//! Ported from MPICH `test/mpi/rma/racc_local_comp.c`: completing an raccumulate
//! request means the origin buffer may be reused (rule 15). Under lock_all, rank 1
//! raccumulates (REPLACE) into rank 0's window, waits for the request, overwrites its
//! origin buffer at once, then flushes and reads the target back: it must hold the
//! values as they were when the call was made, not the overwritten ones. Once with one
//! element, once with a 65536-element buffer (of which the first, middle and last
//! elements are overwritten and read back).
//!
//! Adapted: the window is allocated rather than created over user memory, and the
//! large phase runs fewer rounds than MPICH's to stay fast; other ranks only take part
//! in the collective calls.

use rma_win::{Assert, Info, Op, Rank, Result, Window, World};

fn small_rounds() -> i32 {
    crate::scaled(100)
}
fn large_rounds() -> i32 {
    crate::scaled(20)
}
const LARGE: usize = 65536;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let zero = Rank::new(0);
    let mut win = Window::allocate::<i32>(world, LARGE, info)?;
    let mut buf = vec![0i32; LARGE];
    win.lock_all(Assert::NONE)?;
    if me == 1 {
        for i in 0..small_rounds() {
            buf[0] = me as i32 * i;
            win.raccumulate(&buf[..1], zero, 0, Op::Replace)?.wait()?;
            buf[0] = 0;
            win.flush(zero)?;
            let mut back = [-1i32];
            win.get(&mut back, zero, 0)?;
            win.flush(zero)?;
            assert_eq!(back[0], me as i32 * i, "small round {i}");
        }
    }
    world.barrier()?;
    if me == 1 {
        let probes = [0, LARGE / 2, LARGE - 1];
        for i in 0..large_rounds() {
            for (j, b) in buf.iter_mut().enumerate() {
                *b = me as i32 + j as i32 + i;
            }
            win.raccumulate(&buf, zero, 0, Op::Replace)?.wait()?;
            for &p in &probes {
                buf[p] = 0;
            }
            win.flush(zero)?;
            let mut back = [-1i32; 3];
            for (b, &p) in back.iter_mut().zip(&probes) {
                win.get(std::slice::from_mut(b), zero, p as i64)?;
            }
            win.flush(zero)?;
            for (b, &p) in back.iter().zip(&probes) {
                assert_eq!(*b, me as i32 + p as i32 + i, "large round {i}: element {p}");
            }
        }
    }
    win.unlock_all()?;
    world.barrier()?;
    win.free()
}
