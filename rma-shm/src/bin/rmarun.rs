//! `rmarun -n N PROGRAM [ARGS...]`: starts N processes that join one rma world (like
//! mpiexec), forwards their output, and exits non-zero if any rank fails.

#[cfg(not(loom))]
use rma_shm::launch::{spawn, LaunchOptions};
use std::process::ExitCode;
#[cfg(not(loom))]
use std::time::Duration;

/// Under `--cfg loom` (the ring's model-checking build) there is no launcher.
#[cfg(loom)]
fn main() -> ExitCode {
    ExitCode::FAILURE
}

#[cfg(not(loom))]
const USAGE: &str = "\
usage: rmarun [-n N] [--no-prefix] [--grace SECS] [--timeout SECS] PROGRAM [ARGS...]

  -n, --np N        number of ranks (default 1)
  --no-prefix       do not prefix output lines with [rank]
  --grace SECS      after a rank fails, seconds the others get to exit before they are
                    killed (default 5)
  --timeout SECS    kill every rank after SECS seconds
";

#[cfg(not(loom))]
fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let mut opts = LaunchOptions::new(1, "");
    let mut program = None;
    let secs = |v: Option<std::ffi::OsString>, flag: &str| -> Result<Duration, String> {
        v.and_then(|s| s.to_str().and_then(|s| s.parse::<f64>().ok()))
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("{flag} needs a number of seconds"))
    };
    let parsed: Result<(), String> = (|| {
        while let Some(a) = args.next() {
            match a.to_str() {
                Some("-n") | Some("--np") | Some("-np") => {
                    opts.ranks = args
                        .next()
                        .and_then(|v| v.to_str().and_then(|s| s.parse().ok()))
                        .filter(|n| *n > 0)
                        .ok_or("-n needs a positive number of ranks")?;
                }
                Some("--no-prefix") => opts.prefix_output = false,
                Some("--grace") => opts.grace = secs(args.next(), "--grace")?,
                Some("--timeout") => opts.timeout = Some(secs(args.next(), "--timeout")?),
                Some("-h") | Some("--help") => return Err(String::new()),
                _ => {
                    program = Some(a);
                    opts.args = args.by_ref().collect();
                    break;
                }
            }
        }
        Ok(())
    })();
    if let Err(msg) = parsed {
        if !msg.is_empty() {
            eprintln!("rmarun: {msg}");
        }
        eprint!("{USAGE}");
        return ExitCode::from(2);
    }
    let Some(program) = program else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    opts.program = program.into();
    match spawn(&opts) {
        Ok(report) => {
            for (rank, what) in &report.failures {
                eprintln!("rmarun: rank {rank} {what}");
            }
            if report.timed_out {
                eprintln!("rmarun: timed out; every rank was killed");
            }
            if report.success() {
                ExitCode::SUCCESS
            } else {
                let code = report
                    .failures
                    .first()
                    .and_then(|(r, _)| report.statuses[*r].code())
                    .filter(|c| *c > 0 && *c < 256)
                    .unwrap_or(1);
                ExitCode::from(code as u8)
            }
        }
        Err(e) => {
            eprintln!("rmarun: {e}");
            ExitCode::from(1)
        }
    }
}
