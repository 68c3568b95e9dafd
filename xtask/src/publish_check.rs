//! `cargo xtask publish-check`: `cargo publish --workspace --dry-run` from the
//! workspace root. Every published member (cargo skips those with `publish = false`)
//! is packaged, and each package is built from its own tarball against the others as
//! packaged (they come through a local registry), the way crates.io users would get
//! them; nothing is uploaded.
//!
//! The build runs in a target directory of its own made afresh
//! (`target/package-verify`): cargo never rebuilds a registry crate of a version it
//! already built, so a kept directory would check against an older rma-core.
//! `--allow-dirty` is passed unless `--require-clean`: the check is about packaging and
//! building, and developers run it in trees with changes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

/// `cargo xtask publish-check`'s options.
#[derive(clap::Args, Debug, Default)]
#[command(args_override_self = true)]
pub(crate) struct Options {
    /// Package only: pass --no-verify to cargo (no build from the packaged sources)
    #[arg(long)]
    no_verify: bool,
    /// Leave out --allow-dirty (passed by default): let cargo refuse uncommitted changes
    #[arg(long)]
    require_clean: bool,
}

/// What cargo reported: the crates it packaged and the ones it verified.
#[derive(Debug, Default, PartialEq)]
struct Tally {
    packaged: Vec<String>,
    verified: Vec<String>,
}

impl Tally {
    /// Counts one line of cargo's messages ("   Packaging rma-core v0.1.0 (/path)",
    /// "   Verifying rma-core v0.1.0 (/path)").
    fn read(&mut self, line: &str) {
        let mut words = line.split_whitespace();
        let (Some(verb), Some(name)) = (words.next(), words.next()) else {
            return;
        };
        match verb {
            "Packaging" => self.packaged.push(name.to_owned()),
            "Verifying" => self.verified.push(name.to_owned()),
            _ => {}
        }
    }
}

/// The workspace root (xtask's parent directory).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

/// The cargo command line publish-check runs.
fn command(o: &Options, target: &Path) -> std::process::Command {
    let mut cmd = crate::cargo();
    cmd.current_dir(root())
        .args(["publish", "--workspace", "--dry-run"])
        .env("CARGO_TARGET_DIR", target);
    if !o.require_clean {
        cmd.arg("--allow-dirty");
    }
    if o.no_verify {
        cmd.arg("--no-verify");
    }
    cmd
}

/// Runs the check; prints cargo's messages as they come and one summary line. False
/// when cargo failed (its error is among the messages shown).
pub(crate) fn main(o: &Options) -> bool {
    let start = Instant::now();
    let root = root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map_or_else(|| root.join("target"), |t| root.join(t))
        .join("package-verify");
    let _ = std::fs::remove_dir_all(&target);
    let mut cmd = command(o, &target);
    eprintln!("xtask: running {cmd:?}");
    let mut child = match cmd.stdin(Stdio::null()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("publish-check: could not start {cmd:?}: {e}");
            return false;
        }
    };
    // cargo writes its progress and errors to stderr: shown as they come, and counted
    let mut tally = Tally::default();
    if let Some(err) = child.stderr.take() {
        // read to the end whatever the bytes (a line that is not UTF-8 must not stop
        // the reading, or cargo would block on a full pipe)
        let mut reader = BufReader::new(err);
        let mut raw = Vec::new();
        while reader.read_until(b'\n', &mut raw).is_ok_and(|n| n > 0) {
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end_matches('\n');
            eprintln!("{line}");
            tally.read(line);
            raw.clear();
        }
    }
    let status = child.wait();
    let secs = start.elapsed().as_secs_f64();
    let (packaged, verified) = (tally.packaged.len(), tally.verified.len());
    match status {
        Ok(s) if s.success() => {
            let what = if o.no_verify {
                "packaged (not verified: --no-verify)"
            } else {
                "packaged and verified"
            };
            println!("publish-check: {packaged} crates {what} in {secs:.0} s");
            true
        }
        other => {
            let how = match other {
                Ok(s) => s.to_string(),
                Err(e) => e.to_string(),
            };
            println!(
                "publish-check: FAILED after {secs:.0} s: cargo publish --dry-run ended with \
                 {how} ({packaged} crates packaged, {verified} verified; cargo's error above)"
            );
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_lines_are_counted() {
        let mut t = Tally::default();
        for line in [
            "    Updating crates.io index",
            "   Packaging rma-core v0.1.0 (/w/rma-core)",
            "    Packaged 12 files, 80.0KiB (20.0KiB compressed)",
            "   Packaging rma-win v0.1.0 (/w/rma-win)",
            "   Verifying rma-core v0.1.0 (/w/rma-core)",
            "   Compiling rma-core v0.1.0 (/w/target/package/rma-core-0.1.0)",
            "",
        ] {
            t.read(line);
        }
        assert_eq!(t.packaged, ["rma-core", "rma-win"]);
        assert_eq!(t.verified, ["rma-core"]);
    }

    #[test]
    fn allow_dirty_unless_asked_and_no_verify_passed_on() {
        let args = |o: &Options| -> Vec<String> {
            command(o, Path::new("t"))
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            args(&Options::default()),
            ["publish", "--workspace", "--dry-run", "--allow-dirty"]
        );
        let strict = Options {
            no_verify: true,
            require_clean: true,
        };
        assert_eq!(
            args(&strict),
            ["publish", "--workspace", "--dry-run", "--no-verify"]
        );
    }
}
