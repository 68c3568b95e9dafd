//! Shared plumbing of the example programs: flags, launching, and reporting.
//!
//! Every example runs under `rmarun -n N target/release/examples/NAME` (one process
//! per rank) and also plainly (`cargo run --release -p rma-examples --example NAME`),
//! when it starts its ranks as threads. Flags:
//!
//! - `--ranks N`: ranks to start as threads when run plainly (default 4);
//! - `--n M`: problem size per rank (each example has its own default);
//! - `--transport NAME`: the window transport, put in the window's info (default:
//!   `RMA_TRANSPORT`, else `atomic`, or `mpi` under an MPI launcher); a transport that
//!   cannot serve the window, such as `atomic` or `queued` under an MPI launcher, ends
//!   the example with its RMA_FLAVOR error;
//! - `--seed S`: seed of the example's random data.
#![forbid(unsafe_code)]

use rma_core::rng::SplitMix64;
use rma_win::{Info, Result, World};

/// The examples' common flags.
#[derive(Clone, Debug)]
pub struct Flags {
    /// Ranks to start as threads when not under rmarun.
    pub ranks: usize,
    /// Problem size per rank.
    pub n: usize,
    /// Transport name, if given.
    pub transport: Option<String>,
    /// Seed for random data.
    pub seed: u64,
}

impl Flags {
    /// Parses the process arguments; `default_n` is the example's default size.
    pub fn parse(default_n: usize) -> Flags {
        // every example parses its flags first: `RUST_LOG` then shows rma's spans
        rma_win::init_tracing();
        let mut f = Flags {
            ranks: 4,
            n: default_n,
            transport: None,
            seed: 2026,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut value = |name: &str| -> String {
                args.next()
                    .unwrap_or_else(|| usage(&format!("{name} needs a value")))
            };
            match a.as_str() {
                "--ranks" => f.ranks = number(&value("--ranks")),
                "--n" => f.n = number(&value("--n")),
                "--seed" => f.seed = number(&value("--seed")) as u64,
                "--transport" => f.transport = Some(value("--transport")),
                "-h" | "--help" => usage(""),
                other => usage(&format!("unknown flag {other}")),
            }
        }
        if f.ranks == 0 {
            usage("--ranks must be positive");
        }
        f
    }

    /// The window info these flags ask for.
    pub fn info(&self) -> Info {
        let mut info = Info::new();
        if let Some(t) = &self.transport {
            info.set("rma_transport", t);
        }
        info
    }
}

fn number(s: &str) -> usize {
    s.parse()
        .unwrap_or_else(|_| usage(&format!("{s:?} is not a number")))
}

fn usage(msg: &str) -> ! {
    if !msg.is_empty() {
        eprintln!("error: {msg}");
    }
    eprintln!("flags: [--ranks N] [--n SIZE] [--transport atomic] [--seed S]");
    std::process::exit(2)
}

/// Runs `body` on every rank (threads, or this process under rmarun) and exits the
/// process with status 1 if any rank returned an error or reported a wrong result.
/// `body` returns `Ok(true)` when its check passed.
pub fn run(flags: &Flags, body: impl Fn(&World) -> Result<bool> + Sync) -> ! {
    let results = rma_win::launch(flags.ranks, |world| {
        let r = body(&world);
        (world.rank(), r)
    });
    let mut ok = true;
    match results {
        Ok(results) => {
            for (rank, r) in results {
                match r {
                    Ok(true) => {}
                    Ok(false) => {
                        eprintln!("rank {rank}: WRONG RESULT");
                        ok = false;
                    }
                    Err(e) => {
                        eprintln!("rank {rank}: error ({}): {e}", e.class());
                        ok = false;
                    }
                }
            }
        }
        Err(e) => {
            eprintln!("error starting the world ({}): {e}", e.class());
            ok = false;
        }
    }
    std::process::exit(if ok { 0 } else { 1 })
}

/// A small deterministic generator (splitmix64, [`rma_core::rng::SplitMix64`]), so
/// every rank can recompute every other rank's data from the seed.
#[derive(Clone, Debug)]
pub struct Rng(SplitMix64);

impl Rng {
    /// A generator for (seed, stream).
    pub fn new(seed: u64, stream: u64) -> Rng {
        Rng(SplitMix64::stream(seed, stream))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n.max(1))
    }
}
