//! Every call of rma-mpi, checked exactly, on every rank of an MPI job:
//!
//! ```sh
//! cargo build -p rma-mpi --features mpi --example smoke
//! mpiexec.mpich -n 4 target/debug/examples/smoke
//! mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 target/debug/examples/smoke
//! ```
//!
//! It prints one line on rank 0 when every check passed, and aborts the job with the
//! failing check's message otherwise. `cargo test -p rma-mpi --features mpi` runs the
//! same checks under every installed MPI library and configuration.

#[path = "../tests/smoke/mod.rs"]
mod smoke;

fn main() {
    std::process::exit(smoke::worker_main());
}
