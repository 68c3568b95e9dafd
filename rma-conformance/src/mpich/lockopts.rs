//! Ported from MPICH `test/mpi/rma/lockopts.c`: passive-target calls whose origin
//! datatype is derived (a vector of 10 ints, stride 4) and whose target datatype is
//! predefined (10 contiguous ints), the pairing behind MPICH's lock/op/unlock
//! shortcuts (type maps may differ when signatures match, rule 3). Rank 1, under a
//! shared lock on rank 0, in four rounds: accumulates (SUM) the strided origin into
//! rank 0's first 10 elements; puts it; gets element 10 and then puts; puts and then
//! gets element 10. After each round rank 0, under an exclusive lock on itself, checks
//! its whole window (the first 10 elements hold the sum or the strided values, every
//! other element is untouched) and restores it; rank 1 checks the value it got.
//!
//! Adapted: the window is allocated, not created over user memory; the ranks meet in
//! barriers as in MPICH.

use rma_win::{Assert, Buffer, Datatype, Info, LockType, Op, Rank, Result, Target, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let mem = 10 * 4 * world.size();
    let zero = Rank::new(0);
    let mut win = Window::allocate::<i32>(world, mem, info)?;
    let pristine: Vec<i32> = (0..mem as i32).map(|i| -i).collect();
    win.write_local(0, &pristine)?;
    let src: Vec<i32> = (0..mem as i32).collect();
    let mut vt = Datatype::vector(10, 1, 4, &Datatype::of::<i32>())?;
    vt.commit();
    world.barrier()?;

    for round in 0..4 {
        match me {
            1 => {
                let mut val = [0i32];
                win.lock(LockType::Shared, zero, Assert::NONE)?;
                let origin = Buffer::typed(&src, 1, &vt);
                let target = Target::of::<i32>(zero, 0, 10);
                match round {
                    0 => win.accumulate_with(origin, target, Op::Sum)?,
                    1 => win.put_with(origin, target)?,
                    2 => {
                        win.get(&mut val, zero, 10)?;
                        win.put_with(origin, target)?;
                    }
                    _ => {
                        win.put_with(origin, target)?;
                        win.get(&mut val, zero, 10)?;
                    }
                }
                win.unlock(zero)?;
                world.barrier()?;
                if round >= 2 {
                    assert_eq!(val[0], -10, "round {round}: the get of element 10");
                }
            }
            0 => {
                world.barrier()?;
                win.lock(LockType::Exclusive, zero, Assert::NONE)?;
                let got = win.local_vec::<i32>()?;
                for (i, g) in got.iter().enumerate() {
                    let want = match (i < 10, round) {
                        (true, 0) => -(i as i32) + 4 * i as i32,
                        (true, _) => 4 * i as i32,
                        (false, _) => -(i as i32),
                    };
                    assert_eq!(*g, want, "round {round}: element {i}");
                }
                win.write_local(0, &pristine)?;
                win.unlock(zero)?;
            }
            _ => world.barrier()?,
        }
        world.barrier()?;
    }
    win.free()
}
