//! Node-shared arrays: the ranks of each node share one table through a node world
//! (`World::split_shared`, MPI_Comm_split_type with MPI_COMM_TYPE_SHARED) and a shared
//! window on it (MPI_Win_allocate_shared), read and written with plain loads and
//! stores; the world as a whole then combines the nodes' results with a typed
//! all-reduce.
//!
//! Under `mpiexec` the node world runs on rma's own shared memory (the `atomic`
//! transport, or `queued` with `--transport queued`) while the world that spans the
//! nodes stays on MPI; `--transport mpi` keeps the node world on the MPI library too
//! (`SplitType::SharedMpi`), for comparison. Under rmarun or as threads every rank is
//! on one node. `RMA_NODE_RANKS=2` makes each pair of ranks count as a node.
//!
//! Each rank then times `--n` calls on its node's window, in a passive epoch: a
//! fetch_and_op on the node's first rank and a put + flush to its right neighbour
//! on the node (rank 0 prints the medians of its node).

use rma_examples::{run, Flags};
use rma_win::{Assert, Op, Rank, SplitType, Window};
use std::time::Instant;

fn main() {
    let flags = Flags::parse(2000);
    let mpi_node = flags.transport.as_deref() == Some("mpi");
    let info = flags.info();
    run(&flags, |world| {
        let node = if mpi_node {
            world.split_type(SplitType::SharedMpi, 0)?
        } else {
            world.split_shared()?
        };
        let (me, size) = (node.rank(), node.size());
        // one table per node: each rank owns 8 cells of it
        let table = Window::allocate_shared::<u64>(&node, 8, &info)?;
        let mine = table.shared_query(Rank::new(me as u32))?.view::<u64>()?;
        for i in 0..8 {
            mine.store(i, (world.rank() * 8 + i) as u64)?;
        }
        table.sync()?;
        node.barrier()?;
        table.sync()?;
        // every rank reads the whole node's table, straight from its peers' memory
        let mut node_sum = 0u64;
        for r in 0..size {
            let part = table.shared_query(Rank::new(r as u32))?.view::<u64>()?;
            let mut cells = [0u64; 8];
            part.read(0, &mut cells)?;
            node_sum += cells.iter().sum::<u64>();
        }
        let sums = node.allgather_value(node_sum)?;
        let node_agrees = sums.iter().all(|&s| s == node_sum);
        // each node counted once, by its first rank, in the world-wide reduction
        let counted = if me == 0 { node_sum } else { 0 };
        let total = world.allreduce_value(counted, Op::Sum)?;
        let cells = 8 * world.size() as u64;
        let expect = cells * (cells - 1) / 2;
        let nodes = world.allreduce_value(u32::from(me == 0), Op::Sum)?;

        // per-call cost on the node's window, as a program uses it
        let counter = Window::allocate::<u64>(&node, 2, &info)?;
        let epoch = counter.lock_all_epoch(Assert::NONE)?;
        let first = epoch.target(Rank::new(0))?;
        let right = epoch.target(Rank::new(((me + 1) % size) as u32))?;
        let n = flags.n;
        let t = Instant::now();
        for _ in 0..n {
            first.fetch_and_op(1u64, 0, Op::Sum)?;
        }
        first.flush()?;
        let fop_ns = t.elapsed().as_nanos() as f64 / n as f64;
        let t = Instant::now();
        for i in 0..n {
            right.put(&[i as u64], 1)?;
            right.flush()?;
        }
        let put_ns = t.elapsed().as_nanos() as f64 / n as f64;
        epoch.unlock()?;
        node.barrier()?;
        let count = counter.local_vec::<u64>()?;
        let mut fop = [fop_ns];
        let mut put = [put_ns];
        node.allreduce(&mut fop, Op::Max)?;
        node.allreduce(&mut put, Op::Max)?;
        let counted_ok = me != 0 || count[0] == (n * size) as u64;
        let ok = node_agrees && total == expect && counted_ok;
        if world.rank() == 0 || !ok {
            println!(
                "node_shared: rank {}/{}, {nodes} node(s), this one of {size} ranks on the {} \
                 transport; cells summed over the nodes: {total} (expected {expect}); per call \
                 on the node, slowest rank: fetch_and_op {:.0} ns, put + flush {:.0} ns; {}",
                world.rank(),
                world.size(),
                table.transport_name(),
                fop[0],
                put[0],
                if ok { "ok" } else { "WRONG" }
            );
        }
        Ok(ok)
    })
}
