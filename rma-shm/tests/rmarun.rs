//! The `rmarun` command line: exit codes (a rank's own code, 128+N for signal N, 124
//! for the timeout, 2 for usage errors), option parsing (`--`, unknown options, `-n`'s
//! range, `--option=value`), `--help` and `--version`, `-x`/`--env` for the ranks'
//! environment, stdin forwarded to rank 0, and the one-line summary of failed ranks.

#![cfg(not(loom))]

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn rmarun(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rmarun"))
        .args(args)
        .output()
        .expect("run rmarun")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_rank_killed_by_signal_n_makes_rmarun_exit_128_plus_n() {
    // rank 0 dies of SIGTERM (15); rank 1, killed by rmarun after the grace period,
    // does not decide the code
    let out = rmarun(&[
        "-n",
        "2",
        "--grace",
        "0.2",
        "/bin/sh",
        "-c",
        r#"[ "$RMA_RANK" = 0 ] && kill -TERM $$; sleep 30"#,
    ]);
    assert_eq!(out.status.code(), Some(128 + 15), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("rank 0 was killed by signal 15"), "{err}");
    assert!(err.contains("rank 1 was killed by the launcher"), "{err}");
    let out = rmarun(&["/bin/sh", "-c", "kill -KILL $$"]);
    assert_eq!(out.status.code(), Some(128 + 9), "{}", text(&out.stderr));
    // a rank's own exit code still passes through
    let out = rmarun(&["-n", "2", "/bin/sh", "-c", r#"exit $((RMA_RANK + 3))"#]);
    assert!(
        matches!(out.status.code(), Some(3 | 4)),
        "{:?} {}",
        out.status,
        text(&out.stderr)
    );
}

#[test]
fn the_timeout_exits_124() {
    let out = rmarun(&["-n", "2", "--timeout", "0.2", "sleep", "30"]);
    assert_eq!(out.status.code(), Some(124), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("timed out"));
}

#[test]
fn ranks_out_of_range_are_usage_errors() {
    for n in [
        "0",
        "-1",
        "x",
        "4097",
        "1000000",
        "99999999999999999999999",
        "",
    ] {
        let out = rmarun(&["-n", n, "/bin/sh", "-c", "echo ran"]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "-n {n:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stdout).is_empty(), "-n {n:?} ran the program");
        assert!(text(&out.stderr).contains("usage:"), "-n {n:?}");
    }
    let out = rmarun(&["-n"]);
    assert_eq!(out.status.code(), Some(2));
    // the same option spelled in its other forms
    let out = rmarun(&["--np=3", "/bin/sh", "-c", "echo ran"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).matches("ran").count(), 3);
    let out = rmarun(&["--np=0", "/bin/sh", "-c", "echo ran"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_unknown_option_is_a_usage_error_not_the_program() {
    for args in [
        &["--bogus", "echo", "hi"][..],
        &["-x", "echo", "hi"],
        &["-n", "1", "--no-prefix=1", "echo", "hi"],
        &["-", "echo", "hi"],
        &["--timeout", "soon", "echo", "hi"],
    ] {
        let out = rmarun(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stdout).is_empty(), "{args:?} ran something");
        assert!(text(&out.stderr).contains("usage:"), "{args:?}");
    }
    // nothing to run at all
    for args in [&[][..], &["-n", "2"], &["--"]] {
        assert_eq!(rmarun(args).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn double_dash_separates_the_program() {
    let out = rmarun(&["-n", "2", "--", "echo", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = text(&out.stdout);
    assert!(
        got.contains("[0] hi\n") && got.contains("[1] hi\n"),
        "{got}"
    );
    // after `--` (and after the program) options are the program's
    let out = rmarun(&["--", "echo", "-n", "--help"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "[0] --help\n");
}

#[test]
fn help_goes_to_stdout_and_exits_0() {
    for flag in ["--help", "-h"] {
        let out = rmarun(&[flag]);
        assert_eq!(out.status.code(), Some(0), "{flag}");
        assert!(text(&out.stdout).starts_with("usage: rmarun"), "{flag}");
        assert!(
            text(&out.stderr).is_empty(),
            "{flag}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn a_process_left_holding_a_ranks_output_does_not_keep_rmarun() {
    // the rank exits at once, but a background child keeps its stdout pipe open for
    // 10 s: rmarun forwards what came, then stops after the grace time (0.5 s)
    let started = std::time::Instant::now();
    let out = rmarun(&[
        "--grace",
        "0.5",
        "/bin/sh",
        "-c",
        "sleep 10 & echo rank-done; exit 0",
    ]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("rank-done"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        took < std::time::Duration::from_secs(5),
        "rmarun took {took:?}"
    );
}

/// rmarun with `stdin` written to its standard input.
fn rmarun_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rmarun"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rmarun starts");
    let mut input = child.stdin.take().expect("piped");
    input.write_all(stdin.as_bytes()).expect("stdin written");
    drop(input);
    child.wait_with_output().expect("rmarun ends")
}

#[test]
fn version_goes_to_stdout_and_exits_0() {
    for flag in ["--version", "-V"] {
        let out = rmarun(&[flag]);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            text(&out.stdout).trim(),
            format!("rmarun {}", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn options_take_their_value_inline() {
    let out = rmarun(&["--np=2", "--no-prefix", "--", "sh", "-c", "echo $RMA_RANK"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut lines: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(lines, ["0", "1"]);
}

#[test]
fn the_ranks_environment_and_stdin() {
    let script = "echo $RMA_CLI_A $RMA_CLI_B; cat";
    let args = [
        "-n",
        "2",
        "-x",
        "RMA_CLI_A=1",
        "--env=RMA_CLI_B=two",
        "sh",
        "-c",
        script,
    ];
    let out = rmarun_with_stdin(&args, "to rank zero\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("[0] 1 two") && stdout.contains("[1] 1 two"),
        "{stdout}"
    );
    assert!(stdout.contains("[0] to rank zero"), "{stdout}");
    assert!(
        !stdout.contains("[1] to rank zero"),
        "rank 1 reads end of file: {stdout}"
    );
    // -x VAR takes VAR's value here; a VAR that is not set here is a usage error, and
    // so is one of the variables rmarun sets for each rank
    let out = rmarun(&["-x", "RMA_CLI_SURELY_UNSET_VARIABLE", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let out = rmarun(&["-n", "2", "-x", "RMA_RANK=0", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("rmarun sets RMA_RANK"));
}

#[test]
fn failed_ranks_get_a_one_line_summary() {
    let out = rmarun(&["-n", "3", "sh", "-c", "exit $RMA_RANK"]);
    // the first rank to fail decides: 1 or 2, whichever exited first
    assert!(matches!(out.status.code(), Some(1 | 2)), "{:?}", out.status);
    assert!(
        text(&out.stderr).contains("rmarun: 2 of 3 ranks failed (ranks 1, 2;"),
        "{}",
        text(&out.stderr)
    );
}

/// rmarun run with `env` and `args`, its stdout and stderr both on one pipe whose
/// reader was closed before rmarun started (`rmarun ... 2>&1 | true`, without the race:
/// every write rmarun makes fails with EPIPE). Its exit status, within 60 s.
fn rmarun_into_a_closed_pipe(env: &[(&str, &str)], args: &[&str]) -> std::process::ExitStatus {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [-1; 2];
    // SAFETY: pipe2 writes two new descriptors into the two-element array.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by nothing else.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader); // no reader from here on
    let writer2 = writer.try_clone().expect("dup the pipe's write end");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rmarun"))
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer2))
        .spawn()
        .expect("start rmarun");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("wait for rmarun") {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rmarun {args:?} did not exit within 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_closed_output_pipe_never_makes_rmarun_panic() {
    // (a panic exits 101); each case writes to stdout or stderr, or both
    /// The environment, the arguments, the exit status expected.
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], i32);
    let cases: &[Case<'_>] = &[
        // usage errors: the message and the usage text to stderr
        (&[], &["--bogus"], 2),
        (&[], &["-n2", "x"], 2),
        (&[], &["-n", "0", "/bin/sh", "-c", "true"], 2),
        // --help and --version to stdout
        (&[], &["--help"], 0),
        (&[], &["--version"], 0),
        // the ranks' forwarded output, then rmarun's own lines about the failed ranks
        (
            &[],
            &["-n", "2", "/bin/sh", "-c", "echo out; echo err >&2; exit 3"],
            3,
        ),
        (
            &[],
            &["-n", "2", "/bin/sh", "-c", "echo out; echo err >&2"],
            0,
        ),
        // the timeout's line
        (&[], &["--timeout", "0.2", "sleep", "30"], 124),
        // the ranks could not be started
        (&[], &["/nonexistent/rma-no-such-program"], 1),
        // the tracing set-up's complaint about RUST_LOG, before the options are read
        (&[("RUST_LOG", "rma_shm=[{")], &["--bogus"], 2),
        // ... and the timeline's, about a RMA_TRACE that is no regular file
        (&[("RMA_TRACE", "/")], &["--version"], 0),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|&(env, args, code)| {
            let status = rmarun_into_a_closed_pipe(env, args);
            (status.code() != Some(code))
                .then(|| format!("{env:?} rmarun {args:?}: {status:?}, expected {code}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
