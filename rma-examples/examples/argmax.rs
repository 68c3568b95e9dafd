//! Arg-max with MAXLOC: every rank holds `n` random values, finds its local maximum and
//! its global index, and accumulates the (value, index) pair into rank 0 with MAXLOC
//! (DOUBLE_INT). Ties go to the smaller index. Rank 0 checks against a serial scan of
//! every rank's data.

use rma_examples::{run, Flags, Rng};
use rma_win::{Assert, Op, Rank, Window};

fn values(seed: u64, rank: usize, n: usize) -> Vec<f64> {
    let mut rng = Rng::new(seed, rank as u64);
    // a coarse range, so that ties across ranks happen
    (0..n).map(|_| rng.below(1000) as f64).collect()
}

fn main() {
    let flags = Flags::parse(100_000);
    let info = flags.info();
    run(&flags, |world| {
        let (me, p, n) = (world.rank(), world.size(), flags.n);
        let v = values(flags.seed, me, n);
        let (mut best, mut at) = (f64::MIN, 0usize);
        for (i, x) in v.iter().enumerate() {
            if *x > best {
                (best, at) = (*x, i);
            }
        }
        let win = Window::allocate::<rma_win::DoubleInt>(world, 1, &info)?;
        if me == 0 {
            win.write_local(0, &[rma_win::DoubleInt::new(f64::MIN, i32::MAX)])?;
        }
        win.fence(Assert::NOPRECEDE)?;
        let pair = rma_win::DoubleInt::new(best, (me * n + at) as i32);
        win.accumulate(&[pair], Rank::new(0), 0, Op::MaxLoc)?;
        win.fence(Assert::NOSUCCEED)?;
        if me != 0 {
            return Ok(true);
        }
        let mut got = [rma_win::DoubleInt::default()];
        win.read_local(0, &mut got)?;
        let (mut sbest, mut sat) = (f64::MIN, 0usize);
        for r in 0..p {
            for (i, x) in values(flags.seed, r, n).iter().enumerate() {
                if *x > sbest {
                    (sbest, sat) = (*x, r * n + i);
                }
            }
        }
        let ok = got[0].value == sbest && got[0].index as usize == sat;
        println!(
            "argmax (MAXLOC): {p} ranks x {n} values, transport {}, mode {:?}: max {} at global index {} ({})",
            win.transport_name(),
            world.mode(),
            got[0].value,
            got[0].index,
            if ok { "matches the serial scan" } else { "WRONG" }
        );
        Ok(ok)
    })
}
