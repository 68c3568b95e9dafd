//! The MPI standard's Example 11.2: the same B(i) = A(map(i)) as Example 11.1, with one
//! get per element instead of one per source rank: simpler, and much slower for large
//! arrays. Each rank checks its B.

use rma_examples::{run, Flags, Rng};
use rma_win::{Assert, Rank, Window};

fn a_value(global: usize) -> f32 {
    global as f32 * 0.5
}

fn main() {
    let flags = Flags::parse(10_000);
    let info = flags.info();
    run(&flags, |world| {
        let (me, p, m) = (world.rank(), world.size(), flags.n);
        let mut rng = Rng::new(flags.seed, me as u64);
        let map: Vec<usize> = (0..m).map(|_| rng.below((m * p) as u64) as usize).collect();
        let win = Window::allocate::<f32>(world, m, &info)?;
        let a: Vec<f32> = (0..m).map(|k| a_value(me * m + k)).collect();
        win.write_local(0, &a)?;
        let mut b = vec![0f32; m];
        win.fence(Assert::NOPRECEDE)?;
        for i in 0..m {
            let (j, k) = (map[i] / m, map[i] % m);
            win.get(&mut b[i..=i], Rank::new(j as u32), k as i64)?;
        }
        win.fence(Assert::NOSUCCEED)?;
        let ok = map.iter().zip(&b).all(|(&g, &v)| v == a_value(g));
        if me == 0 || !ok {
            println!(
                "mapvals_get (Example 11.2): rank {me}/{p}, m = {m} gets, transport {}, mode {:?}: {}",
                win.transport_name(),
                world.mode(),
                if ok { "B matches A(map)" } else { "WRONG" }
            );
        }
        Ok(ok)
    })
}
