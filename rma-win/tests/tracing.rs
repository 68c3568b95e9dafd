//! `RUST_LOG` shows rma's spans, each under its rank: this binary re-executes itself
//! (`RMA_TRACING_CHILD`) with `RUST_LOG` set and unset, the child installs the
//! subscriber with `rma_win::init_tracing` and runs 2 ranks as threads (allocate,
//! fence, accumulate, fence, free), and the parent reads the child's stderr.

use libtest_mimic::{Arguments, Failed, Trial};
use rma_win::{Assert, Info, Op, Rank, Window};
use std::process::Command;

const CHILD: &str = "RMA_TRACING_CHILD";

fn child() {
    rma_win::init_tracing();
    let results = rma_win::run_threads(2, |world| -> rma_win::Result<()> {
        let mut win = Window::allocate::<u64>(&world, 1, &Info::new())?;
        win.fence(Assert::NONE)?;
        win.accumulate(&[1u64], Rank::new(0), 0, Op::Sum)?;
        win.fence(Assert::NONE)?;
        win.free()
    })
    .expect("threads start");
    for r in results {
        r.expect("the ranks' calls succeed");
    }
}

fn stderr_with(log: Option<&str>) -> Result<String, Failed> {
    stderr_with_env(log, None)
}

/// The child's stderr, with `RUST_LOG=log` and `RMA_TRACE=trace` where given.
fn stderr_with_env(log: Option<&str>, trace: Option<&std::path::Path>) -> Result<String, Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.env(CHILD, "1")
        .env_remove("RUST_LOG")
        .env_remove("RMA_TRACE");
    if let Some(t) = trace {
        cmd.env("RMA_TRACE", t);
    }
    if let Some(spec) = log {
        cmd.env("RUST_LOG", spec);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("running the child: {e}"))?;
    if !out.status.success() {
        return Err(format!("the child failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&out.stderr).into_owned())
}

fn spans_name_their_rank() -> Result<(), Failed> {
    let err = stderr_with(Some("rma_win=debug"))?;
    for want in [
        "rank{rank=0}",
        "rank{rank=1}",
        "win_allocate",
        "fence",
        "close",
    ] {
        if !err.contains(want) {
            return Err(format!("RUST_LOG=rma_win=debug printed no \"{want}\":\n{err}").into());
        }
    }
    let fences = err
        .lines()
        .filter(|l| l.contains("rank{rank=1}") && l.contains("fence"))
        .count();
    if fences < 2 {
        return Err(format!("rank 1's two fences not both shown:\n{err}").into());
    }
    Ok(())
}

fn silent_without_rust_log() -> Result<(), Failed> {
    let err = stderr_with(None)?;
    if err.contains("fence") || err.contains("rank{") {
        return Err(format!("printed spans without RUST_LOG:\n{err}").into());
    }
    let bad = stderr_with(Some("rma_win=[unclosed"))?;
    if !bad.contains("is not a filter") || bad.contains("fence") {
        return Err(format!("a malformed RUST_LOG was not reported and ignored:\n{bad}").into());
    }
    Ok(())
}

/// `RMA_TRACE=FILE` writes a Chrome trace: a `[` line, then one complete event per
/// line for every rma span of both ranks, each rank its own `pid`; a second run
/// replaces the file, and nothing is printed on stderr.
fn timeline_file() -> Result<(), Failed> {
    let path = std::env::temp_dir().join(format!("rma-timeline-{}.json", std::process::id()));
    for run in 0..2 {
        let err = stderr_with_env(None, Some(&path))?;
        if !err.is_empty() {
            return Err(format!("RMA_TRACE alone printed:\n{err}").into());
        }
        let text = std::fs::read_to_string(&path).map_err(|e| format!("reading the trace: {e}"))?;
        let mut lines = text.lines();
        if lines.next() != Some("[") {
            return Err(format!("the trace does not open its array:\n{text}").into());
        }
        let events: Vec<&str> = lines.collect();
        for e in &events {
            let ok = e.starts_with("{\"name\":\"")
                && e.ends_with("}},")
                && e.contains("\"ph\":\"X\"")
                && e.contains("\"ts\":")
                && e.contains("\"dur\":");
            if !ok {
                return Err(format!("not a complete event: {e}").into());
            }
        }
        for (name, pid) in [
            ("win_allocate", 0),
            ("win_allocate", 1),
            ("fence", 0),
            ("fence", 1),
            ("accumulate", 0),
            ("rank", 1),
        ] {
            let found = events.iter().any(|e| {
                e.starts_with(&format!("{{\"name\":\"{name}\""))
                    && e.contains(&format!("\"pid\":{pid},"))
            });
            if !found {
                return Err(format!("run {run}: no {name} event of rank {pid}:\n{text}").into());
            }
        }
        let ranks = events
            .iter()
            .filter(|e| e.starts_with("{\"name\":\"rank\""))
            .count();
        if ranks != 2 {
            return Err(format!("run {run}: {ranks} rank events, want 2 (a fresh file)").into());
        }
    }
    let _ = std::fs::remove_file(&path);
    Ok(())
}

fn main() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let args = Arguments::from_args();
    let trials = vec![
        Trial::test("spans_name_their_rank", spans_name_their_rank),
        Trial::test("silent_without_rust_log", silent_without_rust_log),
        Trial::test("timeline_file", timeline_file),
    ];
    libtest_mimic::run(&args, trials).exit();
}
