//! Ported from MPICH `test/mpi/rma/wintest.c`: put and get under post / start /
//! complete / test between the first two ranks, in a world split off from the rest
//! (MPI_Comm_split with color `rank < 2`). Rank 0 exposes nothing and puts into, then
//! gets from, rank 1's created window; rank 1 polls `test` until the epoch ends and
//! checks the puts. The other ranks split off into a world of their own and do nothing
//! in it (as in the C test).
//!
//! Adapted: rank 1 reads its buffer after the collective free, which puts the window's
//! contents back into it (rma windows work on a copy); the groups are the split
//! world's ranks, as in MPI, and rank 0's view of the result buffer is checked, as in
//! the C test.

use crate::{create_info, sub_world};
use rma_win::{Assert, Group, Info, Rank, Result, Window, World};

const SIZE1: usize = 10;
const SIZE2: usize = 20;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let Some(deuce) = sub_world(world, Some(u32::from(me < 2)), me as i32)? else {
        return Ok(());
    };
    if me >= 2 {
        assert_eq!(deuce.size(), world.size() - 2);
        return Ok(());
    }
    assert_eq!((deuce.size(), deuce.rank()), (2, me));
    let info = create_info(&deuce, info);
    if me == 0 {
        let a: Vec<i32> = (0..SIZE2 as i32).collect();
        let mut b = a.clone();
        let mut none: [i32; 0] = [];
        let mut win = Window::create(&deuce, &mut none, &info)?;
        let group = Group::new(&[1])?;
        win.start(&group, Assert::NONE)?;
        for i in 0..SIZE1 {
            win.put(&a[i..i + 1], Rank::new(1), i as i64)?;
        }
        for i in 0..SIZE1 {
            win.get(&mut b[i..i + 1], Rank::new(1), (SIZE1 + i) as i64)?;
        }
        win.complete()?;
        for (i, v) in b.iter().take(SIZE1).enumerate() {
            assert_eq!(*v, -4 * (i + SIZE1) as i32, "get error at {i}");
        }
        win.free()?;
    } else {
        let mut b: Vec<i32> = (0..SIZE2 as i32).map(|i| -4 * i).collect();
        let mut win = Window::create(&deuce, &mut b, &info)?;
        win.post(&Group::new(&[0])?, Assert::NONE)?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !win.test()? {
            assert!(
                std::time::Instant::now() < deadline,
                "the epoch never ended"
            );
            std::thread::yield_now();
        }
        win.free()?;
        drop(win);
        for (i, v) in b.iter().take(SIZE1).enumerate() {
            assert_eq!(*v, i as i32, "put error at {i}");
        }
    }
    Ok(())
}
