//! The bench binaries' command lines (clap): `--help` and `--version` print to stdout
//! and exit 0; an unknown flag or a bad value is a usage error with exit 2 that runs
//! nothing.

use std::process::Command;

fn run(bin: &str, args: &[&str]) -> std::process::Output {
    Command::new(bin)
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn help_version_and_usage_errors() {
    for bin in [
        env!("CARGO_BIN_EXE_rma-bench"),
        env!("CARGO_BIN_EXE_rma-scale"),
    ] {
        let help = run(bin, &["--help"]);
        assert_eq!(help.status.code(), Some(0), "{bin} --help");
        assert!(
            String::from_utf8_lossy(&help.stdout).contains("Usage:"),
            "{bin}"
        );
        let version = run(bin, &["--version"]);
        assert_eq!(version.status.code(), Some(0), "{bin} --version");
        assert!(String::from_utf8_lossy(&version.stdout).contains(env!("CARGO_PKG_VERSION")));
        for bad in [
            &["--bogus"][..],
            &["-r", "0"],
            &["-r=x"],
            &["--reps"],
            &["-t", "inf"],
            &["-t", "1e300"],
            &["-t", "0"],
        ] {
            let out = run(bin, bad);
            assert_eq!(out.status.code(), Some(2), "{bin} {bad:?}");
            assert!(out.stdout.is_empty(), "{bin} {bad:?}");
        }
    }
    let out = run(env!("CARGO_BIN_EXE_rma-scale"), &["-s", "no_such_scenario"]);
    assert_eq!(out.status.code(), Some(2));
}
