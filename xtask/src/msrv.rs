//! `cargo xtask msrv`: what can be checked of the declared minimum Rust version
//! (`rust-version` in the workspace's Cargo.toml) with the toolchains at hand.
//!
//! - (a) dependencies: every package a library crate pulls in for its users (normal
//!   and build dependencies, transitively, on the host platform, all features) must
//!   declare a `rust-version` no newer than the crate's own. Dev-dependencies and the
//!   unpublished crates (examples, conformance suite, benches, xtask) do not reach
//!   users and are only listed.
//! - (b) standard-library APIs: clippy's `incompatible_msrv` lint over the library
//!   crates (it reads `rust-version` from Cargo.toml and knows when each std item was
//!   stabilized).
//! - (c) a real build, `cargo +<msrv> check`, when rustup has that toolchain. Without
//!   it, language features newer than the declared version (syntax, lints-as-errors,
//!   inference changes, newer `const` abilities) go unnoticed: (a) and (b) do not see
//!   them.

use crate::{cargo, feature_args, host_triple, run_captured, show_tail, Counts, UNPUBLISHED};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::process::{Command, Stdio};

/// A Rust version, as `rust-version` writes it ("1.85", "1.65.0"); missing parts are 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Version(u64, u64, u64);

impl Version {
    /// "MAJOR[.MINOR[.PATCH]]" with numbers only; `None` for anything else.
    pub(crate) fn parse(s: &str) -> Option<Version> {
        let mut parts = s.trim().split('.');
        let mut next = |required: bool| match parts.next() {
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.parse().ok(),
            None if !required => Some(0),
            _ => None,
        };
        let v = Version(next(true)?, next(false)?, next(false)?);
        parts.next().is_none().then_some(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// One package of `cargo metadata`.
#[derive(Debug)]
struct Package {
    name: String,
    version: String,
    /// `rust_version` as written (`None` when the package declares none)
    rust_version: Option<String>,
    /// `publish = false`
    unpublished: bool,
}

impl Package {
    fn label(&self) -> String {
        format!("{} {}", self.name, self.version)
    }
}

/// What the checks need of `cargo metadata --format-version 1`.
#[derive(Debug)]
pub(crate) struct Metadata {
    packages: HashMap<String, Package>,
    members: Vec<String>,
    /// resolve graph: package id -> (dependency id, whether it is a normal or build
    /// dependency of that package; false: dev-dependency only)
    deps: HashMap<String, Vec<(String, bool)>>,
}

impl Metadata {
    pub(crate) fn parse(text: &str) -> Result<Metadata, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("cargo metadata: {e}"))?;
        let str_of = |v: &Value, key: &str| -> Result<String, String> {
            v.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("cargo metadata: no string {key:?}"))
        };
        let arr_of = |v: &Value, key: &str| -> Result<Vec<Value>, String> {
            v.get(key)
                .and_then(Value::as_array)
                .cloned()
                .ok_or_else(|| format!("cargo metadata: no array {key:?}"))
        };
        let mut packages = HashMap::new();
        for p in arr_of(&v, "packages")? {
            let package = Package {
                name: str_of(&p, "name")?,
                version: str_of(&p, "version")?,
                rust_version: p
                    .get("rust_version")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                // `publish`: null (anywhere) or a list of registries ([] for false)
                unpublished: p
                    .get("publish")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty),
            };
            packages.insert(str_of(&p, "id")?, package);
        }
        let members = arr_of(&v, "workspace_members")?
            .iter()
            .map(|m| m.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("cargo metadata: workspace_members is not a list of ids")?;
        let resolve = v
            .get("resolve")
            .filter(|r| !r.is_null())
            .ok_or("cargo metadata: no resolve graph")?;
        let mut deps = HashMap::new();
        for node in arr_of(resolve, "nodes")? {
            let mut edges = vec![];
            for d in arr_of(&node, "deps")? {
                // dep_kinds: kind null (normal), "build" or "dev", each per target
                let reaches_users = arr_of(&d, "dep_kinds")?.iter().any(|k| {
                    matches!(k.get("kind"), None | Some(Value::Null)) || k["kind"] == "build"
                });
                edges.push((str_of(&d, "pkg")?, reaches_users));
            }
            deps.insert(str_of(&node, "id")?, edges);
        }
        let edges = deps.values().flatten().map(|(id, _)| id);
        for id in members.iter().chain(deps.keys()).chain(edges) {
            if !packages.contains_key(id) {
                return Err(format!("cargo metadata: {id} is not among the packages"));
            }
        }
        Ok(Metadata {
            packages,
            members,
            deps,
        })
    }

    /// Every package reachable from `root` (itself left out), following dev-dependency
    /// edges too when `dev`; never a dev-dependency of a package reached.
    fn closure(&self, root: &str, dev: bool) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![(root.to_string(), dev)];
        while let Some((id, dev)) = todo.pop() {
            for (dep, normal) in self.deps.get(&id).into_iter().flatten() {
                if (*normal || dev) && dep != root && seen.insert(dep.clone()) {
                    todo.push((dep.clone(), false));
                }
            }
        }
        seen
    }
}

/// What check (a) found.
#[derive(Debug, Default)]
pub(crate) struct Closure {
    /// the library crates, each with its declared version
    pub(crate) libs: Vec<(String, Version)>,
    /// packages that reach users and need a newer Rust: (package, its rust-version,
    /// the library crates that pull it in)
    pub(crate) too_new: Vec<(String, Version, Vec<String>)>,
    /// packages needing a newer Rust than the lowest declared one that reach only the
    /// workspace's own tests, benches and tools: (package, its rust-version)
    pub(crate) dev_only: Vec<(String, Version)>,
    /// how many packages reach users
    pub(crate) reaching: usize,
    /// those of them that declare no (or an unreadable) rust-version: not checked
    pub(crate) undeclared: Vec<String>,
    /// what makes the check fail besides `too_new`
    pub(crate) errors: Vec<String>,
}

impl Closure {
    pub(crate) fn ok(&self) -> bool {
        self.too_new.is_empty() && self.errors.is_empty() && !self.libs.is_empty()
    }
}

/// Check (a) over `meta`: the library crates are the workspace members not in
/// `unpublished`.
pub(crate) fn check_closure(meta: &Metadata, unpublished: &[&str]) -> Closure {
    let mut c = Closure::default();
    let mut lib_ids = vec![];
    for id in &meta.members {
        let p = &meta.packages[id];
        let listed = unpublished.contains(&p.name.as_str());
        if listed != p.unpublished {
            c.errors.push(format!(
                "{}: publish = false is {}, but xtask's UNPUBLISHED list {} it",
                p.name,
                p.unpublished,
                if listed { "names" } else { "does not name" }
            ));
        }
        if listed {
            continue;
        }
        match p.rust_version.as_deref().map(|r| (r, Version::parse(r))) {
            Some((_, Some(v))) => {
                c.libs.push((p.name.clone(), v));
                lib_ids.push((id, v));
            }
            Some((r, None)) => c
                .errors
                .push(format!("{}: unreadable rust-version {r:?}", p.name)),
            None => c
                .errors
                .push(format!("{}: declares no rust-version", p.name)),
        }
    }
    c.libs.sort();
    let mut reaching = BTreeSet::new();
    let mut too_new: BTreeMap<String, (Version, Vec<String>)> = BTreeMap::new();
    let mut undeclared = BTreeSet::new();
    for (lib, declared) in &lib_ids {
        let lib_name = &meta.packages[*lib].name;
        for dep in meta.closure(lib, false) {
            let p = &meta.packages[&dep];
            match p.rust_version.as_deref().and_then(Version::parse) {
                Some(v) if v > *declared => {
                    let e = too_new.entry(p.label()).or_insert((v, vec![]));
                    e.1.push(lib_name.clone());
                }
                Some(_) => {}
                None => {
                    undeclared.insert(p.label());
                }
            }
            reaching.insert(dep);
        }
    }
    c.too_new = too_new
        .into_iter()
        .map(|(label, (v, mut libs))| {
            libs.sort();
            (label, v, libs)
        })
        .collect();
    c.undeclared = undeclared.into_iter().collect();
    c.reaching = reaching.len();
    if let Some(lowest) = c.libs.iter().map(|l| l.1).min() {
        let mut dev_only = BTreeSet::new();
        for m in &meta.members {
            for dep in meta.closure(m, true) {
                let p = &meta.packages[&dep];
                let v = p.rust_version.as_deref().and_then(Version::parse);
                if !reaching.contains(&dep) && !meta.members.contains(&dep) {
                    if let Some(v) = v.filter(|v| *v > lowest) {
                        dev_only.insert((p.label(), v));
                    }
                }
            }
        }
        c.dev_only = dev_only.into_iter().collect();
    }
    c
}

/// The rustup toolchain whose name starts with `declared` as written ("1.85" finds
/// "1.85.0-x86_64-unknown-linux-gnu" and "1.85-..."), from `rustup toolchain list`.
pub(crate) fn find_toolchain(list: &str, declared: &str) -> Option<String> {
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .find(|name| {
            name.strip_prefix(declared)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '-']))
        })
        .map(str::to_string)
}

/// `-p NAME` for each name.
fn package_args(names: &[String]) -> Vec<String> {
    names
        .iter()
        .flat_map(|n| ["-p".to_string(), n.clone()])
        .collect()
}

/// Runs the checks that can run here; prints what each found and a summary line.
/// Returns how many of them passed and failed (each check counts once).
pub(crate) fn run() -> Counts {
    let mut counts = Counts::default();
    let count = |counts: &mut Counts, good: bool| {
        if good {
            counts.passed += 1;
        } else {
            counts.failed += 1;
        }
        good
    };
    let mut notes = vec![];

    // (a) the dependency closure of each library crate
    let host = host_triple().unwrap_or_else(|| "x86_64-unknown-linux-gnu".into());
    let mut md = cargo();
    md.args(["metadata", "--format-version", "1", "--all-features"])
        .args(["--filter-platform", &host]);
    let (ran, out) = run_captured_stdout(md);
    let meta = if ran {
        Metadata::parse(&out)
    } else {
        Err(format!("cargo metadata failed:\n{out}"))
    };
    let meta = match meta {
        Ok(m) => m,
        Err(e) => {
            eprintln!("msrv: {e}");
            count(&mut counts, false);
            println!("msrv: 0 passed, 1 failed (cannot read cargo metadata; nothing else checked)");
            return counts;
        }
    };
    let closure = check_closure(&meta, UNPUBLISHED);
    let mut by_version: BTreeMap<Version, Vec<String>> = BTreeMap::new();
    for (name, v) in &closure.libs {
        by_version.entry(*v).or_default().push(name.clone());
    }
    let declared: Vec<String> = by_version.keys().map(Version::to_string).collect();
    println!(
        "msrv: library crates {} declare rust-version {}",
        closure
            .libs
            .iter()
            .map(|l| l.0.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        declared.join(" / ")
    );
    for e in &closure.errors {
        println!("msrv: (a) {e}");
    }
    for (label, v, libs) in &closure.too_new {
        println!(
            "msrv: (a) {label} needs Rust {v}, newer than declared; a dependency of {}",
            libs.join(", ")
        );
    }
    if !closure.dev_only.is_empty() {
        let list: Vec<String> = closure
            .dev_only
            .iter()
            .map(|(l, v)| format!("{l} (needs {v})"))
            .collect();
        println!(
            "msrv: (a) not counted, dev-dependencies or unpublished crates' only (they do not \
             reach users): {}",
            list.join(", ")
        );
    }
    let a = count(&mut counts, closure.ok());
    println!(
        "msrv: (a) dependencies: {} ({} packages reach users; {} declare no rust-version and \
         are not checked{})",
        if a { "ok" } else { "FAILED" },
        closure.reaching,
        closure.undeclared.len(),
        if closure.undeclared.is_empty() {
            String::new()
        } else {
            format!(": {}", closure.undeclared.join(", "))
        }
    );
    notes.push(format!(
        "(a) dependencies {}",
        if a { "ok" } else { "FAILED" }
    ));

    let libs: Vec<String> = closure.libs.iter().map(|l| l.0.clone()).collect();
    if libs.is_empty() {
        println!(
            "msrv: {} passed, {} failed (no library crate found)",
            counts.passed, counts.failed
        );
        return counts;
    }

    // (b) standard-library APIs newer than the declared version
    let mut clippy = cargo();
    clippy
        .args(["clippy", "--lib", "--bins", "--keep-going"])
        .args(package_args(&libs))
        .args(feature_args())
        .args(["--", "-D", "clippy::incompatible_msrv"]);
    let (ok, out) = run_captured(clippy);
    if !ok {
        show_tail("cargo clippy -D clippy::incompatible_msrv", &out, 80);
    }
    let b = count(&mut counts, ok);
    println!(
        "msrv: (b) std APIs (clippy::incompatible_msrv over the libraries and their binaries): {}",
        if b { "ok" } else { "FAILED" }
    );
    notes.push(format!("(b) std APIs {}", if b { "ok" } else { "FAILED" }));

    // (c) the real build, with each declared version's toolchain when rustup has it
    let list = Command::new("rustup")
        .args(["toolchain", "list"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    for (v, names) in &by_version {
        // the version as the crates write it ("1.85"), to find rustup's name for it
        let written = meta
            .members
            .iter()
            .map(|m| &meta.packages[m])
            .find(|p| names.contains(&p.name))
            .and_then(|p| p.rust_version.clone())
            .unwrap_or_else(|| v.to_string());
        let Some(toolchain) = find_toolchain(&list, &written) else {
            println!(
                "msrv: (c) real build skipped: no Rust {written} toolchain installed (rustup \
                 toolchain install {written}); (a) and (b) do not catch language features \
                 newer than {written}"
            );
            notes.push(format!("(c) build with {written} skipped"));
            continue;
        };
        // the rustup proxy (`$CARGO` is the running toolchain's own cargo, which has no `+`)
        let mut check = Command::new("cargo");
        check
            .env_remove("RUSTC")
            .env_remove("CARGO")
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .args([
                &format!("+{toolchain}"),
                "check",
                "--lib",
                "--bins",
                "--locked",
            ])
            .args(["--target-dir", &format!("{target}/msrv")])
            .args(package_args(names))
            .args(feature_args());
        let (ok, out) = run_captured(check);
        if !ok {
            show_tail(&format!("cargo +{toolchain} check"), &out, 80);
        }
        let c = count(&mut counts, ok);
        println!(
            "msrv: (c) cargo +{toolchain} check of {}: {}",
            names.join(", "),
            if c { "ok" } else { "FAILED" }
        );
        notes.push(format!(
            "(c) build with {toolchain} {}",
            if c { "ok" } else { "FAILED" }
        ));
    }
    println!(
        "msrv: {} passed, {} failed: {}",
        counts.passed,
        counts.failed,
        notes.join(", ")
    );
    counts
}

/// Like [`run_captured`], but stdout alone when the command succeeds (stderr only on
/// failure: cargo's progress lines must not corrupt the JSON).
fn run_captured_stdout(mut cmd: Command) -> (bool, String) {
    match cmd.stdin(Stdio::null()).output() {
        Ok(o) if o.status.success() => (true, String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => (false, String::from_utf8_lossy(&o.stderr).into_owned()),
        Err(e) => (false, format!("could not start {cmd:?}: {e}")),
    }
}

/// `cargo xtask msrv`.
pub(crate) fn main() -> bool {
    let c = run();
    c.failed == 0 && c.passed > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        let v = |s| Version::parse(s).unwrap();
        assert_eq!(v("1.85"), Version(1, 85, 0));
        assert_eq!(v("1.65.0"), Version(1, 65, 0));
        assert_eq!(v("1"), Version(1, 0, 0));
        assert_eq!(v("1.85"), v("1.85.0"));
        assert!(v("1.88") > v("1.85"));
        assert!(v("1.85.1") > v("1.85"));
        assert!(v("1.9") < v("1.10"), "numeric, not textual");
        assert!(v("2.0") > v("1.99.99"));
        for bad in ["", "1.", "1..2", "1.85.0.1", "1.85-beta", "v1.85", "1.x"] {
            assert_eq!(Version::parse(bad), None, "{bad:?}");
        }
        assert_eq!(v("1.85").to_string(), "1.85.0");
    }

    #[test]
    fn toolchains() {
        let list = "stable-x86_64-unknown-linux-gnu (active, default)\n\
                    nightly-x86_64-unknown-linux-gnu\n\
                    1.850.0-x86_64-unknown-linux-gnu\n\
                    1.85.1-x86_64-unknown-linux-gnu\n";
        assert_eq!(
            find_toolchain(list, "1.85").as_deref(),
            Some("1.85.1-x86_64-unknown-linux-gnu")
        );
        assert_eq!(find_toolchain(list, "1.8"), None);
        assert_eq!(find_toolchain(list, "1.95"), None);
        assert_eq!(find_toolchain("", "1.85"), None);
    }

    /// lib-a (1.85) -> mid (1.80) -> new-normal (1.90); lib-a -build-> gen (1.86);
    /// lib-a -dev-> devtool (1.88) -> devdep-of-devtool; mid -dev-> mid-dev (1.99; a dev
    /// edge of a dependency, never followed); lib-b (1.85) -> mid; tool (unpublished)
    /// -> toolonly (1.87); old (no rust-version) under lib-b.
    const META: &str = r#"{
      "packages": [
        {"id": "lib-a", "name": "lib-a", "version": "0.1.0", "rust_version": "1.85", "publish": null},
        {"id": "lib-b", "name": "lib-b", "version": "0.1.0", "rust_version": "1.85", "publish": null},
        {"id": "tool", "name": "tool", "version": "0.1.0", "rust_version": "1.85", "publish": []},
        {"id": "mid", "name": "mid", "version": "1.0.0", "rust_version": "1.80.0", "publish": null},
        {"id": "new-normal", "name": "new-normal", "version": "2.0.0", "rust_version": "1.90", "publish": null},
        {"id": "gen", "name": "gen", "version": "0.3.0", "rust_version": "1.86", "publish": null},
        {"id": "devtool", "name": "devtool", "version": "1.12.0", "rust_version": "1.88", "publish": null},
        {"id": "devdep-of-devtool", "name": "devdep-of-devtool", "version": "1.0.0", "rust_version": "1.89", "publish": null},
        {"id": "mid-dev", "name": "mid-dev", "version": "1.0.0", "rust_version": "1.99", "publish": null},
        {"id": "toolonly", "name": "toolonly", "version": "1.0.0", "rust_version": "1.87", "publish": null},
        {"id": "old", "name": "old", "version": "0.1.0", "rust_version": null, "publish": null}
      ],
      "workspace_members": ["lib-a", "lib-b", "tool"],
      "resolve": {"root": null, "nodes": [
        {"id": "lib-a", "deps": [
          {"name": "mid", "pkg": "mid", "dep_kinds": [{"kind": null, "target": null}]},
          {"name": "gen", "pkg": "gen", "dep_kinds": [{"kind": "build", "target": null}]},
          {"name": "devtool", "pkg": "devtool", "dep_kinds": [{"kind": "dev", "target": null}]}
        ]},
        {"id": "lib-b", "deps": [
          {"name": "mid", "pkg": "mid", "dep_kinds": [{"kind": "dev", "target": null}, {"kind": null, "target": null}]},
          {"name": "old", "pkg": "old", "dep_kinds": [{"kind": null, "target": null}]}
        ]},
        {"id": "tool", "deps": [
          {"name": "toolonly", "pkg": "toolonly", "dep_kinds": [{"kind": null, "target": null}]},
          {"name": "lib_a", "pkg": "lib-a", "dep_kinds": [{"kind": null, "target": null}]}
        ]},
        {"id": "mid", "deps": [
          {"name": "new_normal", "pkg": "new-normal", "dep_kinds": [{"kind": null, "target": null}]},
          {"name": "mid_dev", "pkg": "mid-dev", "dep_kinds": [{"kind": "dev", "target": null}]}
        ]},
        {"id": "devtool", "deps": [
          {"name": "devdep_of_devtool", "pkg": "devdep-of-devtool", "dep_kinds": [{"kind": null, "target": null}]}
        ]},
        {"id": "new-normal", "deps": []}, {"id": "gen", "deps": []},
        {"id": "devdep-of-devtool", "deps": []}, {"id": "mid-dev", "deps": []},
        {"id": "toolonly", "deps": []}, {"id": "old", "deps": []}
      ]}
    }"#;

    #[test]
    fn closure_walk() {
        let meta = Metadata::parse(META).unwrap();
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(
            meta.closure("lib-a", false),
            set(&["mid", "new-normal", "gen"])
        );
        assert_eq!(
            meta.closure("lib-a", true),
            set(&["mid", "new-normal", "gen", "devtool", "devdep-of-devtool"])
        );
        // an edge that is both dev and normal is normal
        assert_eq!(
            meta.closure("lib-b", false),
            set(&["mid", "new-normal", "old"])
        );

        let c = check_closure(&meta, &["tool"]);
        assert_eq!(
            c.libs,
            vec![
                ("lib-a".to_string(), Version(1, 85, 0)),
                ("lib-b".to_string(), Version(1, 85, 0))
            ]
        );
        assert_eq!(
            c.too_new,
            vec![
                (
                    "gen 0.3.0".to_string(),
                    Version(1, 86, 0),
                    vec!["lib-a".to_string()]
                ),
                (
                    "new-normal 2.0.0".to_string(),
                    Version(1, 90, 0),
                    vec!["lib-a".to_string(), "lib-b".to_string()]
                ),
            ]
        );
        assert_eq!(
            c.dev_only,
            vec![
                ("devdep-of-devtool 1.0.0".to_string(), Version(1, 89, 0)),
                ("devtool 1.12.0".to_string(), Version(1, 88, 0)),
                ("toolonly 1.0.0".to_string(), Version(1, 87, 0)),
            ]
        );
        assert_eq!(c.reaching, 4);
        assert_eq!(c.undeclared, vec!["old 0.1.0".to_string()]);
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert!(!c.ok());

        // the unpublished list must agree with publish = false
        let c = check_closure(&meta, &[]);
        assert_eq!(c.errors.len(), 1, "{:?}", c.errors);
        assert!(c.errors[0].starts_with("tool:"));

        // without the offending edges the check passes
        let fixed = META
            .replace(r#""rust_version": "1.90""#, r#""rust_version": "1.85.0""#)
            .replace(r#""rust_version": "1.86""#, r#""rust_version": "1.60""#);
        let c = check_closure(&Metadata::parse(&fixed).unwrap(), &["tool"]);
        assert!(c.ok(), "{c:?}");
        assert_eq!(c.dev_only.len(), 3);
    }

    #[test]
    fn bad_metadata() {
        assert!(Metadata::parse("{").is_err());
        assert!(
            Metadata::parse(r#"{"packages": [], "workspace_members": [], "resolve": null}"#)
                .is_err()
        );
        let dangling = r#"{"packages": [], "workspace_members": ["x"],
                           "resolve": {"nodes": []}}"#;
        assert!(Metadata::parse(dangling).is_err());
        let dangling_edge = META.replace(r#""pkg": "old""#, r#""pkg": "gone""#);
        assert!(Metadata::parse(&dangling_edge).is_err());
    }
}
