//! Shared plumbing of the example programs: flags, launching, and reporting.
//!
//! Every example runs under `rmarun -n N target/release/examples/NAME` (one process
//! per rank) and also plainly (`cargo run --release -p rma-examples --example NAME`),
//! when it starts its ranks as threads. Flags:
//!
//! - `--ranks N`: ranks to start as threads when run plainly (default 4; ignored, with a
//!   warning, under a launcher);
//! - `--n M`: problem size per rank (each example has its own default);
//! - `--transport NAME`: the window transport, put in the window's info (default:
//!   `RMA_TRANSPORT`, else `atomic`, or `mpi` under an MPI launcher); a transport that
//!   cannot serve the window, such as `atomic` or `queued` under an MPI launcher, ends
//!   the example with its RMA_FLAVOR error;
//! - `--seed S`: seed of the example's random data;
//! - `--help`, `--version`.
//!
//! The command line is clap's: `--flag value` and `--flag=value` alike, help and version
//! on stdout with exit 0, an unknown flag or bad value exit 2. Under rmarun or an MPI
//! launcher the launcher decides the ranks, and `--ranks` says so on stderr.
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

/// The examples' command line (clap): `--help` and `--version` print to stdout and exit
/// 0, an unknown flag or a bad value exits 2, `--flag=value` and `--flag value` both
/// work.
#[derive(clap::Parser, Debug)]
#[command(
    version,
    about = "An rma example: runs on threads, or as one rank under rmarun or mpiexec"
)]
struct Args {
    /// Ranks to start as threads when run plainly (default 4); under rmarun or an MPI
    /// launcher the launcher's count wins, with a warning
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    ranks: Option<u32>,
    /// Problem size per rank (each example has its own default; at most 2^24)
    #[arg(long, value_name = "SIZE", value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    n: Option<u64>,
    /// The window transport (atomic, queued; mpi under an MPI launcher)
    #[arg(long, value_name = "NAME")]
    transport: Option<String>,
    /// Seed of the example's random data
    #[arg(long, value_name = "S", default_value_t = 2026)]
    seed: u64,
}

impl Flags {
    /// Parses the process arguments; `default_n` is the example's default size. Exits
    /// with status 0 after `--help` or `--version`, 2 on a usage error.
    pub fn parse(default_n: usize) -> Flags {
        // every example parses its flags first: `RUST_LOG` then shows rma's spans
        rma_win::init_tracing();
        match Flags::try_parse_from(default_n, std::env::args_os()) {
            Ok(f) => f,
            Err(e) => e.exit(),
        }
    }

    /// [`Flags::parse`] over `args` (the program name first), without exiting.
    pub fn try_parse_from<I, T>(
        default_n: usize,
        args: I,
    ) -> std::result::Result<Flags, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::Parser;
        let a = Args::try_parse_from(args)?;
        if let (Some(n), Some(by)) = (a.ranks, rma_win::launcher()) {
            eprintln!(
                "warning: --ranks {n} is ignored: {by} started this process as one rank of \
                 its own count"
            );
        }
        Ok(Flags {
            ranks: a.ranks.map_or(4, |r| r as usize),
            n: a.n.map_or(default_n, |n| n as usize),
            transport: a.transport,
            seed: a.seed,
        })
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

/// The MPI standard's Example 11.3 (`sum`, `sum_batched`): rank `r`'s part of A and
/// of map, `m` elements each over `p` ranks; small integers in A so that float sums
/// are exact whatever their order.
pub fn example_11_3_data(seed: u64, r: usize, m: usize, p: usize) -> (Vec<f32>, Vec<usize>) {
    let mut rng = Rng::new(seed, r as u64);
    let a = (0..m).map(|_| rng.below(100) as f32).collect();
    let map = (0..m).map(|_| rng.below((m * p) as u64) as usize).collect();
    (a, map)
}

/// Example 11.3's serial reference: rank `me`'s block of B (B(j) = the sum of A(i)
/// over map(i) = j), computed from every rank's data.
pub fn example_11_3_expected(seed: u64, me: usize, m: usize, p: usize) -> Vec<f32> {
    let mut expect = vec![0f32; m];
    for r in 0..p {
        let (ra, rmap) = example_11_3_data(seed, r, m, p);
        for i in 0..m {
            if rmap[i] / m == me {
                expect[rmap[i] % m] += ra[i];
            }
        }
    }
    expect
}

#[cfg(test)]
mod tests {
    use super::Flags;
    use clap::error::ErrorKind;

    fn parse(args: &[&str]) -> Result<Flags, clap::Error> {
        Flags::try_parse_from(100, std::iter::once("example").chain(args.iter().copied()))
    }

    #[test]
    fn values_inline_or_apart_and_defaults() {
        let f = parse(&["--n=5", "--ranks", "3", "--transport=queued"]).unwrap();
        assert_eq!(
            (f.n, f.ranks, f.transport.as_deref(), f.seed),
            (5, 3, Some("queued"), 2026)
        );
        let f = parse(&[]).unwrap();
        assert_eq!((f.n, f.ranks), (100, 4));
    }

    #[test]
    fn help_version_and_usage_errors() {
        assert_eq!(
            parse(&["--help"]).unwrap_err().kind(),
            ErrorKind::DisplayHelp
        );
        assert_eq!(
            parse(&["--version"]).unwrap_err().kind(),
            ErrorKind::DisplayVersion
        );
        for bad in [
            &["--bogus"][..],
            &["--ranks", "0"],
            &["--n", "x"],
            &["--n"],
            &["--n", "18446744073709551615"],
        ] {
            let e = parse(bad).unwrap_err();
            // clap prints these to stderr and exits 2; help and version go to stdout, 0
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
            assert!(e.use_stderr(), "{bad:?}");
        }
        assert_eq!(parse(&["--help"]).unwrap_err().exit_code(), 0);
        assert!(!parse(&["--help"]).unwrap_err().use_stderr());
    }
}
