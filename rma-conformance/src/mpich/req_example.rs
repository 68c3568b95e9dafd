//! Ported from MPICH `test/mpi/rma/req_example.c` (example 11.21 of MPI-3.0): overlap
//! with request-based calls. Under lock_all each rank, step after step, rgets a chunk
//! of its right neighbour's window into one of M local buffers, waits, transforms it
//! and rputs it back to the same place without waiting, so up to M rputs are in flight;
//! a buffer is reused only after its rput request completed.
//!
//! Our addition: MPICH checks nothing; here every window starts with known values and
//! the transform is exact (`2x + step` on small integers held in f64), so after
//! unlock_all and a barrier every rank checks its whole window.
//!
//! Adapted: Rust's borrow rules cannot follow "wait for any request, then refill its
//! buffer" through dynamic indices, so the M buffers are used in rounds of M steps:
//! each round issues M rputs and then drains them with `Request::wait_any`.

use rma_win::{Assert, Info, Rank, Request, Result, Window, World};

const N: usize = 1000;
const M: usize = 10;
/// Steps: whole rounds of M.
fn steps() -> usize {
    M * crate::scaled(10)
}

fn initial(owner: usize, k: usize) -> f64 {
    (owner * 1_000_000 + k) as f64
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let p = world.size();
    let right = (me + 1) % p;
    let target = Rank::new(right as u32);
    let mut win = Window::allocate::<f64>(world, steps() * N, info)?;
    let mine: Vec<f64> = (0..steps() * N).map(|k| initial(me, k)).collect();
    win.write_local(0, &mine)?;
    world.barrier()?;

    let mut data = vec![vec![0f64; N]; M];
    win.lock_all(Assert::NONE)?;
    for round in 0..steps() / M {
        let mut puts = Vec::with_capacity(M);
        for (j, buf) in data.iter_mut().enumerate() {
            let step = round * M + j;
            let disp = (step * N) as i64;
            win.rget(buf, target, disp)?.wait()?;
            for (k, x) in buf.iter_mut().enumerate() {
                assert_eq!(*x, initial(right, step * N + k), "step {step}: fetched {k}");
                *x = 2.0 * *x + step as f64;
            }
            let shared: &[f64] = buf;
            puts.push(win.rput(shared, target, disp)?);
        }
        let mut drained = 0;
        while let Some(i) = Request::wait_any(&mut puts)? {
            assert!(i < M - drained, "wait_any returned index {i}");
            drained += 1;
        }
        assert_eq!(drained, M, "round {round}: requests drained");
    }
    win.unlock_all()?;
    world.barrier()?;
    let got = win.local_vec::<f64>()?;
    for (k, v) in got.iter().enumerate() {
        let step = k / N;
        assert_eq!(*v, 2.0 * initial(me, k) + step as f64, "element {k}");
    }
    world.barrier()?;
    win.free()
}
