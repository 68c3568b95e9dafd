//! The MPI standard's Example 11.1 (MAPVALS): B(i) = A(map(i)) with A and B distributed
//! alike. Each rank builds, per source rank, an indexed_block datatype over the B slots
//! it fills (origin) and one over the A offsets it reads (target), and issues one get
//! per source rank inside a fence epoch. Each rank checks its B.

use rma_examples::{run, Flags, Rng};
use rma_win::{Assert, BasicType, BufferMut, Datatype, Rank, Target, Window};

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
        // the window exposes A
        let win = Window::allocate::<f32>(world, m, &info)?;
        let a: Vec<f32> = (0..m).map(|k| a_value(me * m + k)).collect();
        win.write_local(0, &a)?;
        // per source rank: B positions (origin) and A offsets (target)
        let mut oindex = vec![Vec::new(); p];
        let mut tindex = vec![Vec::new(); p];
        for (i, &g) in map.iter().enumerate() {
            oindex[g / m].push(i as isize);
            tindex[g / m].push((g % m) as isize);
        }
        let real = Datatype::basic(BasicType::F32);
        let mut types = Vec::with_capacity(p);
        for j in 0..p {
            let mut ot = Datatype::indexed_block(1, &oindex[j], &real)?;
            let mut tt = Datatype::indexed_block(1, &tindex[j], &real)?;
            ot.commit();
            tt.commit();
            types.push((ot, tt));
        }
        let mut b = vec![0f32; m];
        win.fence(Assert::NOPRECEDE)?;
        for (j, (ot, tt)) in types.iter().enumerate() {
            if oindex[j].is_empty() {
                continue;
            }
            win.get_with(
                BufferMut::typed(&mut b, 1, ot)?,
                Target::new(Rank::new(j as u32), 0, 1, tt),
            )?;
        }
        win.fence(Assert::NOSUCCEED)?;
        let ok = map.iter().zip(&b).all(|(&g, &v)| v == a_value(g));
        if me == 0 || !ok {
            println!(
                "mapvals (Example 11.1): rank {me}/{p}, m = {m}, {} gets through indexed_block types, transport {}, mode {:?}: {}",
                oindex.iter().filter(|o| !o.is_empty()).count(),
                win.transport_name(),
                world.mode(),
                if ok { "B matches A(map)" } else { "WRONG" }
            );
        }
        Ok(ok)
    })
}
