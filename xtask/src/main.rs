//! `cargo xtask`: the one entry point for humans and CI (std only).

use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const HELP: &str = "\
cargo xtask <task> [options]

Tasks:
  test-all [--quick]   every test of the workspace (nextest) and the doctests, group by
                       group, with a one-line summary per group and a total
  ci                   what CI runs: format check, clippy (warnings denied), test-all,
                       and the main example
  bench                the criterion benches (rma-benches)
  demo                 the main job: the README's example
  help                 this text
";

/// A test group: a name, the environment it runs with, and the nextest arguments.
struct Group {
    name: &'static str,
    env: Vec<(&'static str, &'static str)>,
    args: Vec<&'static str>,
}

fn groups() -> Vec<Group> {
    let crate_group = |name: &'static str, pkg: &'static str| Group {
        name,
        env: vec![],
        args: vec!["-p", pkg],
    };
    vec![
        crate_group("rma-core", "rma-core"),
        crate_group("rma-datatype", "rma-datatype"),
        crate_group("rma-ops", "rma-ops"),
    ]
}

#[derive(Default, Clone, Copy)]
struct Counts {
    passed: u64,
    failed: u64,
    skipped: u64,
}

/// Reads nextest's closing line: "Summary [ 1.2s] 40 tests run: 40 passed, 2 skipped".
fn parse_nextest(out: &str) -> Option<Counts> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("Summary"))?;
    let mut c = Counts::default();
    for part in line.split([':', ',']) {
        let words: Vec<&str> = part.split_whitespace().collect();
        for w in words.windows(2) {
            let n: u64 = match w[0].parse() {
                Ok(n) => n,
                Err(_) => continue,
            };
            match w[1] {
                "passed" => c.passed = n,
                "failed" => c.failed += n,
                "timed" => c.failed += n,
                "skipped" => c.skipped = n,
                _ => {}
            }
        }
    }
    Some(c)
}

/// Reads cargo test's "test result: ok. 3 passed; 0 failed; 0 ignored" lines.
fn parse_cargo_test(out: &str) -> Counts {
    let mut c = Counts::default();
    for line in out.lines().filter(|l| l.starts_with("test result:")) {
        for part in line.split([';', '.']) {
            let words: Vec<&str> = part.split_whitespace().collect();
            if words.len() >= 2 {
                if let Ok(n) = words[words.len() - 2].parse::<u64>() {
                    match words[words.len() - 1] {
                        "passed" => c.passed += n,
                        "failed" => c.failed += n,
                        "ignored" => c.skipped += n,
                        _ => {}
                    }
                }
            }
        }
    }
    c
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn run_captured(mut cmd: Command) -> (bool, String) {
    let out = cmd.stdin(Stdio::null()).output();
    match out {
        Ok(o) => {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            (o.status.success(), text)
        }
        Err(e) => (false, format!("could not start {cmd:?}: {e}")),
    }
}

fn have_nextest() -> bool {
    cargo()
        .args(["nextest", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn test_all(quick: bool) -> bool {
    let nextest = have_nextest();
    if !nextest {
        eprintln!("xtask: cargo-nextest not found, falling back to cargo test (install it: cargo install cargo-nextest)");
    }
    let mut total = Counts::default();
    let mut ok = true;
    let mut lines = vec![];
    let mut all_groups = groups();
    if !quick {
        all_groups.push(Group {
            name: "doctests",
            env: vec![],
            args: vec![],
        });
    }
    for g in all_groups {
        let start = Instant::now();
        let mut cmd = cargo();
        let doc = g.name == "doctests";
        if doc {
            cmd.args(["test", "--workspace", "--doc"]);
        } else if nextest {
            cmd.args(["nextest", "run", "--no-fail-fast", "--cargo-quiet"])
                .args(&g.args);
        } else {
            cmd.args(["test", "--no-fail-fast"]).args(&g.args);
        }
        for (k, v) in &g.env {
            cmd.env(k, v);
        }
        let (success, out) = run_captured(cmd);
        let counts = if doc || !nextest {
            parse_cargo_test(&out)
        } else {
            parse_nextest(&out).unwrap_or_default()
        };
        let secs = start.elapsed().as_secs_f64();
        let good = success && counts.failed == 0 && counts.passed > 0;
        if !good {
            ok = false;
            // show what failed: the tail of the output
            let tail: Vec<&str> = out.lines().rev().take(80).collect();
            eprintln!("---- {} output (last lines) ----", g.name);
            for l in tail.into_iter().rev() {
                eprintln!("{l}");
            }
        }
        let line = format!(
            "{:<28} {:>5} passed {:>3} failed {:>3} skipped  {:>7.1}s  {}",
            g.name,
            counts.passed,
            counts.failed,
            counts.skipped,
            secs,
            if good { "ok" } else { "FAILED" }
        );
        println!("{line}");
        lines.push(line);
        total.passed += counts.passed;
        total.failed += counts.failed + u64::from(!good && counts.failed == 0);
        total.skipped += counts.skipped;
    }
    println!("---");
    for l in &lines {
        println!("{l}");
    }
    println!(
        "test-all: {} passed, {} failed, {} skipped",
        total.passed, total.failed, total.skipped
    );
    ok
}

fn status(mut cmd: Command) -> bool {
    eprintln!("xtask: running {cmd:?}");
    cmd.status().map(|s| s.success()).unwrap_or(false)
}

fn demo() -> bool {
    let mut cmd = cargo();
    cmd.args([
        "run",
        "--release",
        "-p",
        "rma-examples",
        "--example",
        "ops_demo",
    ]);
    status(cmd)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let ok = match task {
        "test-all" => test_all(rest.contains(&"--quick")),
        "ci" => {
            let mut fmt = cargo();
            fmt.args(["fmt", "--all", "--", "--check"]);
            let mut clippy = cargo();
            clippy.args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]);
            status(fmt) && status(clippy) && test_all(false) && demo()
        }
        "bench" => {
            let mut cmd = cargo();
            cmd.args(["bench", "-p", "rma-benches"]).args(&rest);
            status(cmd)
        }
        "demo" => demo(),
        "help" | "--help" | "-h" => {
            print!("{HELP}");
            true
        }
        other => {
            eprintln!("xtask: unknown task {other:?}\n\n{HELP}");
            false
        }
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
