//! Ported from MPICH `test/mpi/rma/transpose5.c`: rank 0 accumulates (SUM) a whole
//! row-major matrix into rank 1's window through a target datatype that walks the
//! window column by column (an hvector of one-column vectors), so rank 1's matrix ends
//! up as itself plus the transpose of rank 0's: `A[j][i] = A[j][i] + B[i][j]`.
//!
//! Adapted: rank 0 exposes an empty window (it only originates); rank 1's window is
//! allocated and filled with `write_local` before the first fence.

use rma_win::{Assert, Buffer, Datatype, Info, Op, Rank, Result, Target, Window, World};

const ROWS: usize = 1000;
const COLS: usize = 1000;

fn initial(i: usize, j: usize) -> i32 {
    (i * COLS + j) as i32
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let matrix: Vec<i32> = (0..ROWS * COLS)
        .map(|k| initial(k / COLS, k % COLS))
        .collect();
    let mut win = Window::allocate::<i32>(world, if me == 1 { ROWS * COLS } else { 0 }, info)?;
    if me == 1 {
        win.write_local(0, &matrix)?;
    }
    win.fence(Assert::NONE)?;
    if me == 0 {
        let int = Datatype::of::<i32>();
        let column = Datatype::vector(ROWS, 1, COLS as isize, &int)?;
        let mut transposed =
            Datatype::hvector(COLS, 1, std::mem::size_of::<i32>() as isize, &column)?;
        transposed.commit();
        win.accumulate_with(
            Buffer::of(&matrix),
            Target::new(Rank::new(1), 0, 1, &transposed),
            Op::Sum,
        )?;
    }
    win.fence(Assert::NONE)?;
    if me == 1 {
        let got: Vec<i32> = win.local_vec()?;
        for j in 0..COLS {
            for i in 0..ROWS {
                let want = initial(j, i) + initial(i, j);
                assert_eq!(got[j * COLS + i], want, "A[{j}][{i}]");
            }
        }
    }
    win.free()
}
