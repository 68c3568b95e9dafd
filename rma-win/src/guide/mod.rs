//! The manual: everything the front page (the README) leaves out, one page per topic.
//!
//! Every Rust block on these pages is a doctest of this crate: `cargo xtask test-all`
//! compiles each and runs those that need no launcher (they run their ranks as
//! threads). Figures (times, rates, ratios) are not repeated here: they live in the
//! repository's `docs/PERFORMANCE.md` and `benches/results/`, each with its machine
//! and command.
//!
//! | page | what it covers |
//! |---|---|
//! | [`start`] | adding rma to a project, a first program, threads, processes, mpiexec |
//! | [`epochs`] | epochs as values, target handles checked once |
//! | [`windows`] | the four window flavors, dynamic windows, windows over part of the world |
//! | [`blocks`] | counter, mutex, put-with-signal, batched atomics, futures |
//! | [`checker`] | finding races: the conflict checker |
//! | [`transports`] | atomic, queued, mpi; plugging in your own backend |
//! | [`processes`] | rmarun, rmarun as a cargo runner, its conventions |
//! | [`mpi`] | under mpiexec, inside an existing MPI program, node worlds, rma-mpi directly |
//! | [`c_and_fortran`] | MPI's C and Fortran interface over rma |
//! | [`reliability`] | what holds crate by crate, soundness, errors on one rank, faults of others |
//! | [`tracing`] | `RUST_LOG` and the epoch timeline (`RMA_TRACE`) |
//! | [`mpich_suite`] | MPICH's own one-sided test suite and third-party clients |
//! | [`mpi_defects`] | defects of the packaged MPI libraries and what rma does about them |
//! | [`environment`] | every `RMA_*` environment variable, in one table |
//! | [`internals`] | crates, dependencies, repository layout, MSRV, status |

#[doc = include_str!("start.md")]
pub mod start {}

#[doc = include_str!("epochs.md")]
pub mod epochs {}

#[doc = include_str!("windows.md")]
pub mod windows {}

#[doc = include_str!("blocks.md")]
pub mod blocks {}

#[doc = include_str!("checker.md")]
pub mod checker {}

#[doc = include_str!("transports.md")]
pub mod transports {}

#[doc = include_str!("processes.md")]
pub mod processes {}

#[doc = include_str!("mpi.md")]
pub mod mpi {}

#[doc = include_str!("c_and_fortran.md")]
pub mod c_and_fortran {}

#[doc = include_str!("reliability.md")]
pub mod reliability {}

#[doc = include_str!("tracing.md")]
pub mod tracing {}

#[doc = include_str!("mpich_suite.md")]
pub mod mpich_suite {}

#[doc = include_str!("mpi_defects.md")]
pub mod mpi_defects {}

#[doc = include_str!("environment.md")]
pub mod environment {}

#[doc = include_str!("internals.md")]
pub mod internals {}
