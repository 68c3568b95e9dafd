//! rma in a program that already runs MPI through rsmpi (the `mpi` crate), which has
//! no one-sided communication of its own: rsmpi initializes MPI and splits its world;
//! rma makes worlds over those communicators (`World::from_rsmpi`), windows on them,
//! a node world with a shared table, and typed collectives; rsmpi's own messages go
//! on between rma's calls. Every rank checks exact results.
//!
//! Build it against one MPI library (rsmpi links it at build time; libclang needed):
//! `MPICC=mpicc.mpich cargo build --release -p rma-examples --features rsmpi --example
//! rsmpi_interop`, then `mpiexec.mpich -n 4 target/release/examples/rsmpi_interop`
//! (Open MPI: `MPICC=mpicc.openmpi`, `mpirun.openmpi --mca osc sm -np 4 ...`; its
//! osc/rdma refuses windows of split communicators).

use rma_win::{Assert, Info, Op, Rank, Window, World};
use rsmpi::topology::Color;
use rsmpi::traits::*;

fn main() {
    let universe = rsmpi::initialize().expect("MPI is initialized once");
    let ok = match run(&universe) {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("rsmpi_interop: error ({}): {e}", e.class());
            false
        }
    };
    // every rma world is gone: rsmpi finalizes MPI when `universe` drops
    drop(universe);
    std::process::exit(if ok { 0 } else { 1 });
}

fn run(universe: &rsmpi::environment::Universe) -> rma_win::Result<bool> {
    let comm = universe.world();
    let (me, p) = (comm.rank() as usize, comm.size() as usize);
    // rsmpi splits; rma takes the halves
    let half_comm = comm
        .split_by_color(Color::with_value((me % 2) as i32))
        .expect("every rank has a color");
    let world = World::from_rsmpi(&comm)?;
    let half = World::from_rsmpi(&half_comm)?;
    let info = Info::new();

    // a ring of rsmpi messages names each rank's slot in rank 0's window
    let win = Window::allocate::<u64>(&world, p, &info)?;
    win.fence(Assert::NOPRECEDE)?;
    let next = ((me + 1) % p) as i32;
    let prev = ((me + p - 1) % p) as i32;
    let mine = me as u64;
    let (slot, _) = rsmpi::request::scope(|scope| {
        let sent = comm.process_at_rank(next).immediate_send(scope, &mine);
        let got = comm.process_at_rank(prev).receive::<u64>();
        sent.wait();
        got
    });
    win.accumulate(&[me as u64 + 1], Rank::new(0), slot as i64, Op::Sum)?;
    win.fence(Assert::NOSUCCEED)?;
    let mut ok = true;
    if me == 0 {
        let got = win.local_vec::<u64>()?;
        let want: Vec<u64> = (0..p as u64).map(|s| (s + 1) % p as u64 + 1).collect();
        ok &= got == want;
    }

    // the halves count into their first rank, while rsmpi's barrier runs beside
    let counter = Window::allocate::<u64>(&half, 1, &info)?;
    counter.lock_all(Assert::NONE)?;
    for _ in 0..100 {
        counter.fetch_and_op(1u64, Rank::new(0), 0, Op::Sum)?;
    }
    counter.unlock_all()?;
    comm.barrier();
    half.barrier()?;
    if half.rank() == 0 {
        ok &= counter.local_vec::<u64>()? == [100 * half.size() as u64];
    }

    // the node's ranks share a table on rma's shared memory
    let node = world.split_shared()?;
    let table = Window::allocate_shared::<u64>(&node, 1, &info)?;
    table
        .shared_query(Rank::new(node.rank() as u32))?
        .view::<u64>()?
        .store(0, me as u64)?;
    table.sync()?;
    node.barrier()?;
    table.sync()?;
    let mut on_node = 0u64;
    for r in 0..node.size() {
        on_node += table
            .shared_query(Rank::new(r as u32))?
            .view::<u64>()?
            .load(0)?;
    }
    let firsts = node.allgather_value(me as u64)?;
    ok &= on_node == firsts.iter().sum::<u64>();
    let total = world.allreduce_value(me as u64, Op::Sum)?;
    ok &= total == (p * (p - 1) / 2) as u64;
    if me == 0 || !ok {
        println!(
            "rsmpi_interop: rank {me}/{p} ({}), node of {}, halves of {}: {}",
            rsmpi::environment::library_version()
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or(""),
            node.size(),
            half.size(),
            if ok { "ok" } else { "WRONG" }
        );
    }
    Ok(ok)
}
