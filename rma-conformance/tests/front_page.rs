//! What a newcomer copies from the front page works as written:
//!
//! - README's Rust blocks are doctests: each appears verbatim in a page of rma-win's
//!   guide, where `cargo test --doc` compiles and runs it;
//! - README stays a front page (at most 250 lines) and lists every page of the guide;
//! - the cargo runner the guide documents (`guide::processes`) turns `cargo run
//!   --example sum`, in a project of a user's own, into 4 processes under rmarun: the
//!   test installs rmarun with `cargo install --path rma-shm`, writes a project whose
//!   `.cargo/config.toml` is the guide's block and whose `examples/sum.rs` is README's
//!   first program, and runs it.

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

/// The fenced blocks of a Markdown text whose info string starts with `lang`
/// (`rust`, `rust,no_run`, ...), each block's lines joined with newlines.
fn blocks(text: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Some((keep, body)) inside a block
    let mut open: Option<(bool, String)> = None;
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (open.take(), fence) {
            (None, Some(info)) => {
                open = Some((info.split(',').next() == Some(lang), String::new()));
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
    let root = tmp.join("root");
    let project = tmp.join("my-project");
    // one target directory across runs, so that a second run builds little
    let target = ws.join("target/front-page");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());

    let install = Command::new(&cargo)
        .args(["install", "--quiet", "--debug", "--offline", "--path"])
        .arg(ws.join("rma-shm"))
        .arg("--root")
        .arg(&root)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cargo install runs");
    assert!(
        install.status.success(),
        "cargo install --path rma-shm failed:\n{}",
        String::from_utf8_lossy(&install.stderr)
    );
    assert!(root.join("bin/rmarun").is_file(), "rmarun is installed");

    let processes = read("rma-win/src/guide/processes.md");
    let config = blocks(&processes, "toml")
        .into_iter()
        .find(|b| b.contains("runner = [\"rmarun\""))
        .expect("guide::processes shows the runner's .cargo/config.toml");
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
             [dependencies]\nrma-win = {{ path = {:?} }}\n\n[workspace]\n",
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
    let run = Command::new(&cargo)
        .args(["run", "--quiet", "--offline", "--example", "sum"])
        .current_dir(&project)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RMA_TRANSPORT")
        .output()
        .expect("cargo run runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "cargo run --example sum failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
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
    let _ = std::fs::remove_dir_all(&tmp);
}
