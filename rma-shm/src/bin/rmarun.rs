//! `rmarun -n N PROGRAM [ARGS...]`: starts N processes that join one rma world (like
//! mpiexec), forwards their output, and exits non-zero if any rank fails.

#[cfg(not(loom))]
use rma_shm::launch::{spawn, LaunchOptions, LaunchReport};
use std::process::ExitCode;
#[cfg(not(loom))]
use std::{ffi::OsString, os::unix::ffi::OsStrExt, time::Duration};

/// Under `--cfg loom` (the ring's model-checking build) there is no launcher.
#[cfg(loom)]
fn main() -> ExitCode {
    ExitCode::FAILURE
}

#[cfg(not(loom))]
const USAGE: &str = "\
usage: rmarun [-n N] [-x VAR[=VAL]]... [--no-prefix] [--grace SECS] [--timeout SECS]
              [--] PROGRAM [ARGS...]

  -n, --np N        number of ranks, 1 to 4096 (default 1)
  -x VAR[=VAL]      set VAR for every rank (to VAL, or to its value here); repeatable
  --env VAR=VAL     the same (VAR=VAL only)
  --no-prefix       do not prefix output lines with [rank]
  --grace SECS      after a rank fails, seconds the others get to exit before they are
                    killed (default 5)
  --timeout SECS    kill every rank after SECS seconds
  --                end of rmarun's options: the program comes next
  -h, --help        print this help and exit
  -V, --version     print rmarun's version and exit

Every option also takes its value as --option=VALUE. The ranks inherit rmarun's
environment; rmarun's stdin goes to rank 0 (the others read end of file).

Exit status: 0 when every rank exits with 0; else that of the first rank to fail (its
exit code, or 128+N when signal N killed it); 124 when the timeout struck before any
rank failed; 2 for a usage error; 1 when the ranks could not be started.
";

/// Usage errors exit with this code.
#[cfg(not(loom))]
const USAGE_ERROR: u8 = 2;
/// What rmarun exits with when its timeout killed the ranks (as timeout(1) does).
#[cfg(not(loom))]
const TIMED_OUT: u8 = 124;

#[cfg(not(loom))]
enum Command {
    Run(LaunchOptions),
    Help,
    Version,
}

/// `VAR=VAL`, or `VAR` alone with its value in rmarun's environment.
#[cfg(not(loom))]
fn env_pair(v: Option<OsString>, flag: &str) -> Result<(OsString, OsString), String> {
    let v = v.ok_or_else(|| format!("{flag} needs VAR or VAR=VALUE"))?;
    let bytes = v.as_bytes();
    let name = bytes.split(|&b| b == b'=').next().unwrap_or_default();
    let own = [
        rma_shm::ENV_WORLD,
        rma_shm::ENV_RANK,
        rma_shm::ENV_SIZE,
        rma_shm::ENV_KEY,
    ];
    if let Some(var) = own.iter().find(|v| v.as_bytes() == name) {
        return Err(format!(
            "{flag} {var}: rmarun sets {var} for each rank itself"
        ));
    }
    match bytes.iter().position(|&b| b == b'=') {
        Some(0) => Err(format!("{flag} needs a variable name before '='")),
        Some(i) => {
            use std::os::unix::ffi::OsStringExt;
            let (k, val) = bytes.split_at(i);
            Ok((
                OsString::from_vec(k.to_vec()),
                OsString::from_vec(val[1..].to_vec()),
            ))
        }
        None if bytes.is_empty() => Err(format!("{flag} needs VAR or VAR=VALUE")),
        None => {
            let val = std::env::var_os(&v).ok_or_else(|| {
                format!(
                    "{flag} {}: no such variable here (give VAR=VALUE)",
                    v.to_string_lossy()
                )
            })?;
            Ok((v, val))
        }
    }
}

/// Reads rmarun's options up to the program (the first argument that is not an
/// option, or the one after `--`); everything after the program is its arguments.
#[cfg(not(loom))]
fn parse(mut args: impl Iterator<Item = OsString>) -> Result<Command, String> {
    let mut opts = LaunchOptions::new(1, "");
    opts.progress = true;
    opts.stdin_to_rank0 = true;
    let secs = |v: Option<OsString>, flag: &str| -> Result<Duration, String> {
        v.and_then(|s| s.to_str().and_then(|s| s.parse::<f64>().ok()))
            .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 1e9)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("{flag} needs a number of seconds"))
    };
    let program = loop {
        let Some(a) = args.next() else {
            return Err("no program to run".into());
        };
        // `--flag=value` is `--flag value` (split on the raw bytes: the value may be
        // any bytes, as in `--env=VAR=<not UTF-8>`)
        let (flag, inline) = {
            use std::os::unix::ffi::OsStringExt;
            let b = a.as_bytes();
            match b.iter().position(|&c| c == b'=') {
                Some(i) if b.starts_with(b"--") => (
                    String::from_utf8_lossy(&b[..i]).into_owned(),
                    Some(OsString::from_vec(b[i + 1..].to_vec())),
                ),
                _ => (a.to_string_lossy().into_owned(), None),
            }
        };
        let mut value = || inline.clone().or_else(|| args.next());
        match flag.as_str() {
            "-n" | "-np" | "--np" => {
                let max = rma_shm::MAX_RANKS;
                opts.ranks = value()
                    .and_then(|v| v.to_str().and_then(|s| s.parse::<usize>().ok()))
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| format!("-n needs a number of ranks from 1 to {max}"))?;
            }
            "-x" => opts.env.push(env_pair(value(), "-x")?),
            "--env" => opts.env.push(env_pair(value(), "--env")?),
            "--grace" => opts.grace = secs(value(), "--grace")?,
            "--timeout" => opts.timeout = Some(secs(value(), "--timeout")?),
            "--no-prefix" if inline.is_none() => opts.prefix_output = false,
            "-h" | "--help" if inline.is_none() => return Ok(Command::Help),
            "-V" | "--version" if inline.is_none() => return Ok(Command::Version),
            "--" if inline.is_none() => {
                break args
                    .next()
                    .ok_or_else(|| "no program after --".to_owned())?;
            }
            _ if a.as_bytes().starts_with(b"-") => {
                return Err(format!("unknown option {}", a.to_string_lossy()));
            }
            _ => break a,
        }
    };
    opts.program = program.into();
    opts.args = args.collect();
    Ok(Command::Run(opts))
}

/// The exit code for a world that did not succeed: the first rank that failed by
/// itself decides (its exit code, or 128 + the signal that killed it); ranks the
/// launcher killed do not count.
#[cfg(not(loom))]
fn failure_code(report: &LaunchReport) -> u8 {
    let first = report
        .failures
        .iter()
        .find(|(r, _)| !report.killed.contains(r));
    let Some(&(rank, _)) = first else {
        return if report.timed_out { TIMED_OUT } else { 1 };
    };
    let status = report.statuses[rank];
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) if (1..256).contains(&c) => c as u8,
        (None, Some(s)) if (1..128).contains(&s) => 128 + s as u8,
        _ => 1,
    }
}

/// Writes `text` to stdout or stderr, losing it where that stream is closed: rmarun's
/// exit status must not depend on whether anyone still reads its output (`print!` and
/// `eprint!` panic on EPIPE, and the panic exits 101).
#[cfg(not(loom))]
fn say(to_err: bool, text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = if to_err {
        std::io::stderr().lock().write_fmt(text)
    } else {
        let mut out = std::io::stdout().lock();
        out.write_fmt(text).and_then(|()| out.flush())
    };
}

/// A line on stderr ([`say`]).
#[cfg(not(loom))]
macro_rules! warn {
    ($($arg:tt)*) => {
        say(true, format_args!("{}\n", format_args!($($arg)*)))
    };
}

#[cfg(not(loom))]
fn main() -> ExitCode {
    rma_shm::trace::init();
    let opts = match parse(std::env::args_os().skip(1)) {
        Ok(Command::Run(opts)) => opts,
        Ok(Command::Help) => {
            say(false, format_args!("{USAGE}"));
            return ExitCode::SUCCESS;
        }
        Ok(Command::Version) => {
            say(
                false,
                format_args!("rmarun {}\n", env!("CARGO_PKG_VERSION")),
            );
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            warn!("rmarun: {msg}");
            say(true, format_args!("{USAGE}"));
            return ExitCode::from(USAGE_ERROR);
        }
    };
    match spawn(&opts) {
        Ok(report) => {
            for (rank, what) in &report.failures {
                warn!("rmarun: rank {rank} {what}");
            }
            if report.timed_out {
                warn!("rmarun: timed out; every rank was killed");
            }
            if report.aborted {
                warn!("rmarun: a rank aborted the job (MPI_Abort); the other ranks were killed");
            }
            if !report.success() {
                // one line a script can grep: which ranks failed by themselves
                let mut own: Vec<usize> = report
                    .failures
                    .iter()
                    .filter(|(r, _)| !report.killed.contains(r))
                    .map(|(r, _)| *r)
                    .collect();
                own.sort_unstable();
                let own: Vec<String> = own.iter().map(usize::to_string).collect();
                warn!(
                    "rmarun: {} of {} ranks failed (ranks {}; {} killed by rmarun)",
                    report.failures.len(),
                    opts.ranks,
                    if own.is_empty() {
                        "none by themselves".to_owned()
                    } else {
                        own.join(", ")
                    },
                    report.killed.len()
                );
            }
            if report.success() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(failure_code(&report))
            }
        }
        Err(e) => {
            warn!("rmarun: {e}");
            ExitCode::from(1)
        }
    }
}
