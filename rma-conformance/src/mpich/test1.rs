//! Ported from MPICH `test/mpi/rma/test1.c` (its fence part): two ranks, one fence
//! epoch. Rank 0 puts its array into rank 1's window one element per call, while
//! rank 1 gets rank 0's window one element per call and adds its own last element into
//! rank 0's last element with SUM. After the closing fence, rank 1's window holds what
//! rank 0 put, rank 1's fetched copy holds rank 0's window, and rank 0's last element
//! holds the sum.
//!
//! Adapted: the window is allocated (not created over a stack array) and initialised
//! with `write_local` before the first fence.

use rma_win::{Assert, Info, Op, Rank, Result, Window, World};

const N: usize = 100;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let (mut mine, exposed): (Vec<i32>, Vec<i32>) = if me == 0 {
        ((0..N as i32).collect(), (0..N as i32).collect())
    } else {
        (
            (0..N as i32).map(|i| -3 * i).collect(),
            (0..N as i32).map(|i| -4 * i).collect(),
        )
    };
    let mut win = Window::allocate::<i32>(world, N, info)?;
    win.write_local(0, &exposed)?;
    win.fence(Assert::NONE)?;
    if me == 0 {
        for (i, v) in mine.iter().enumerate().take(N - 1) {
            win.put(std::slice::from_ref(v), Rank::new(1), i as i64)?;
        }
    } else {
        for i in 0..N - 1 {
            win.get(&mut mine[i..i + 1], Rank::new(0), i as i64)?;
        }
        win.accumulate(&mine[N - 1..], Rank::new(0), (N - 1) as i64, Op::Sum)?;
    }
    win.fence(Assert::NONE)?;
    let window: Vec<i32> = win.local_vec()?;
    if me == 1 {
        for i in 0..N - 1 {
            assert_eq!(mine[i], i as i32, "rank 1 fetched element {i}");
            assert_eq!(
                window[i], i as i32,
                "rank 1 window element {i} (put by rank 0)"
            );
        }
        assert_eq!(
            window[N - 1],
            -4 * (N as i32 - 1),
            "rank 1 last element untouched"
        );
    } else {
        for (i, v) in window.iter().enumerate().take(N - 1) {
            assert_eq!(*v, i as i32, "rank 0 window element {i} untouched");
        }
        let last = N as i32 - 1;
        assert_eq!(window[N - 1], last - 3 * last, "accumulated last element");
    }
    win.free()
}
