//! What a newcomer copies from the front page works as written:
//!
//! - README's Rust blocks are doctests: each appears verbatim in a page of rma-win's
//!   guide, where `cargo test --doc` compiles and runs it;
//! - README stays a front page (at most 250 lines) and lists every page of the guide;
//! - the cargo runner the guide documents (`guide::processes`) turns `cargo run
//!   --example sum`, in a project of a user's own, into 4 processes under rmarun: the
//!   test installs rmarun with `cargo install --path rma-shm`, writes a project whose
//!   `.cargo/config.toml` is the guide's block and whose `examples/sum.rs` is README's
//!   first program, and runs it (README's copy of the runner block is the guide's);
//! - the same binary started plainly runs its 4 ranks as threads, and, when MPICH is
//!   installed, built with the `mpi` feature it runs under `mpiexec.mpich -n 4`
//!   (README's three ways to run a program).

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("rma-conformance sits in the workspace")
        .to_path_buf()
}

fn read(rel: &str) -> String {
    let path = workspace().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced blocks of a Markdown text whose info string is exactly `lang` (so
/// `rust` leaves out `rust,no_run` and `rust,ignore`: rustdoc runs only the first),
/// each block's lines joined with newlines.
fn blocks(text: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Some((keep, body)) inside a block
    let mut open: Option<(bool, String)> = None;
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (open.take(), fence) {
            (None, Some(info)) => {
                open = Some((info.trim() == lang, String::new()));
            }
            (Some((keep, body)), Some(_)) => {
                if keep {
                    out.push(body);
                }
            }
            (Some((keep, mut body)), None) => {
                body.push_str(line);
                body.push('\n');
                open = Some((keep, body));
            }
            (None, None) => {}
        }
    }
    out
}

/// A scratch directory removed when the test ends, passed or not.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `program` under `timeout secs`, so that a hung rank or build fails the test instead
/// of blocking it.
fn limited(secs: u32, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.arg(secs.to_string()).arg(program);
    cmd
}

/// Runs `cmd` and returns its stdout, failing the test (with both outputs) unless it
/// exits with 0.
fn succeeded(mut cmd: Command, what: &str) -> String {
    let out = cmd.output().expect("the command starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The `.cargo/config.toml` block that sets rmarun as the runner, in `text`.
fn runner_block(text: &str) -> Option<String> {
    blocks(text, "toml")
        .into_iter()
        .find(|b| b.contains("runner = [\"rmarun\""))
}

fn guide_pages() -> Vec<(String, String)> {
    let dir = workspace().join("rma-win/src/guide");
    let mut pages: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("the guide's directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).expect("a guide page"))
        })
        .collect();
    pages.sort();
    pages
}

#[test]
fn readme_rust_blocks_are_doctests_of_the_guide() {
    let readme = read("README.md");
    let rust = blocks(&readme, "rust");
    assert!(!rust.is_empty(), "README shows a first program");
    let pages = guide_pages();
    for block in rust {
        let found = pages
            .iter()
            .any(|(_, text)| blocks(text, "rust").contains(&block));
        assert!(
            found,
            "this README block is in no guide page, so no test compiles it:\n{block}"
        );
    }
}

#[test]
fn readme_is_a_front_page_listing_every_guide_page() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README has {lines} lines; the front page keeps to 250"
    );
    let module = read("rma-win/src/guide/mod.rs");
    for (name, _) in guide_pages() {
        assert!(
            readme.contains(&format!("(rma-win/src/guide/{name}.md)")),
            "README does not link the guide page {name}"
        );
        assert!(
            module.contains(&format!("include_str!(\"{name}.md\")")),
            "guide/mod.rs does not include {name}.md"
        );
    }
}

#[test]
fn the_guides_cargo_runner_starts_four_processes() {
    let ws = workspace();
    let tmp = std::env::temp_dir().join(format!("rma-front-page-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let _scratch = Scratch(tmp.clone());
    let root = tmp.join("root");
    let project = tmp.join("my-project");
    // one target directory across runs, so that a second run builds little
    let target = ws.join("target/front-page");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());

    let mut install = limited(600, &cargo);
    install
        .args([
            "install",
            "--quiet",
            "--locked",
            "--debug",
            "--offline",
            "--path",
        ])
        .arg(ws.join("rma-shm"))
        .arg("--root")
        .arg(&root)
        .env("CARGO_TARGET_DIR", &target);
    succeeded(install, "cargo install --path rma-shm");
    assert!(root.join("bin/rmarun").is_file(), "rmarun is installed");

    let processes = read("rma-win/src/guide/processes.md");
    let config =
        runner_block(&processes).expect("guide::processes shows the runner's .cargo/config.toml");
    let readme_config =
        runner_block(&read("README.md")).expect("README shows the runner's .cargo/config.toml");
    assert_eq!(
        readme_config, config,
        "README and guide::processes show the same runner"
    );
    let first_program = blocks(&read("README.md"), "rust")
        .into_iter()
        .next()
        .expect("README's first program");
    std::fs::create_dir_all(project.join(".cargo")).unwrap();
    std::fs::create_dir_all(project.join("examples")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join(".cargo/config.toml"), config).unwrap();
    std::fs::write(project.join("examples/sum.rs"), first_program).unwrap();
    std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        format!(
            "[package]\nname = \"my-project\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nrma-win = {{ path = {:?} }}\n\n\
             [features]\nmpi = [\"rma-win/mpi\"]\n\n[workspace]\n",
            ws.join("rma-win")
        ),
    )
    .unwrap();
    // the workspace's lock file: the same dependency versions, nothing to fetch
    std::fs::copy(ws.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();

    let path = format!(
        "{}:{}",
        root.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut run = limited(600, &cargo);
    run.args(["run", "--quiet", "--offline", "--example", "sum"])
        .current_dir(&project)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RMA_TRANSPORT");
    let stdout = succeeded(run, "cargo run --example sum");
    // rmarun prefixes each rank's lines with [rank]; each rank prints its ticket
    let mut seen: Vec<(u32, u32)> = stdout
        .lines()
        .filter_map(|l| {
            let (rank, rest) = l.strip_prefix('[')?.split_once("] ticket ")?;
            Some((rank.parse().ok()?, rest.trim().parse().ok()?))
        })
        .collect();
    seen.sort();
    let ranks: Vec<u32> = seen.iter().map(|(r, _)| *r).collect();
    let mut tickets: Vec<u32> = seen.iter().map(|(_, t)| *t).collect();
    tickets.sort();
    assert_eq!(
        ranks,
        [0, 1, 2, 3],
        "four processes, one line each:\n{stdout}"
    );
    assert_eq!(tickets, [0, 1, 2, 3], "distinct tickets:\n{stdout}");

    // the binary cargo built, started plainly: 4 ranks as threads of one process
    let binary = target.join("debug/examples/sum");
    let stdout = succeeded(limited(120, &binary), "the plain run");
    assert_eq!(
        unprefixed_tickets(&stdout),
        [0, 1, 2, 3],
        "threads:\n{stdout}"
    );

    // README's mpiexec line, on MPICH when it is installed
    if Command::new("mpicc.mpich")
        .arg("-show")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let mut build = limited(600, &cargo);
        build
            .args([
                "build",
                "--quiet",
                "--offline",
                "--example",
                "sum",
                "--features",
                "mpi",
            ])
            .current_dir(&project)
            .env("CARGO_TARGET_DIR", &target);
        succeeded(build, "cargo build --features mpi");
        let mut mpi = limited(120, "mpiexec.mpich");
        mpi.args(["-n", "4"])
            .arg(&binary)
            .env_remove("RMA_TRANSPORT");
        let stdout = succeeded(mpi, "mpiexec.mpich -n 4");
        assert_eq!(
            unprefixed_tickets(&stdout),
            [0, 1, 2, 3],
            "mpiexec:\n{stdout}"
        );
    } else {
        eprintln!("note: no mpicc.mpich, so README's mpiexec line is not run here");
    }
}

/// The tickets of lines `ticket N`, sorted.
fn unprefixed_tickets(stdout: &str) -> Vec<u32> {
    let mut t: Vec<u32> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ticket ")?.trim().parse().ok())
        .collect();
    t.sort();
    t
}
