//! mpi.h against `src/mpi31.txt` and librma_capi.so:
//!
//! - its two generated blocks (the rest of MPI 3.1; PMPI_ names) are what the rest of
//!   the header and the list make them (`RMA_BLESS=1` rewrites them instead);
//! - it compiles alone as C99 and as C++11, warnings as errors;
//! - a program that includes it, declares every listed function again (so a
//!   prototype of mpi.h that disagrees with the list fails to compile) and takes the
//!   address of every MPI_ and PMPI_ function mpi.h declares, links and loads with
//!   every symbol bound;
//! - the library exports each of them (nm -D), and a PMPI_ name for each MPI_ one.
//!
//! Needs a C compiler (`cc`, or `$RMA_CC`), a C++ compiler (`c++`, or `$RMA_CXX`)
//! and `nm`.

#[path = "../build/cdecl.rs"]
mod cdecl;
#[allow(dead_code)]
mod common;

use cdecl::Decl;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const A_BEGIN: &str = "/* BEGIN GENERATED: the rest of MPI 3.1 */";
const A_END: &str = "/* END GENERATED: the rest of MPI 3.1 */";
const P_BEGIN: &str = "/* BEGIN GENERATED: PMPI */";
const P_END: &str = "/* END GENERATED: PMPI */";

fn dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    dir().join("include/mpi.h")
}

fn listed() -> Vec<cdecl::Listed> {
    let src = std::fs::read_to_string(dir().join("src/mpi31.txt")).expect("reading mpi31.txt");
    cdecl::read_list(&src).unwrap_or_else(|e| panic!("{e}"))
}

/// The header cut at its markers: (before A, A, between, P, after).
fn cut(h: &str) -> [&str; 5] {
    let at = |m: &str| {
        h.find(m)
            .unwrap_or_else(|| panic!("mpi.h lacks the marker line {m}"))
    };
    let (a0, a1, p0, p1) = (at(A_BEGIN), at(A_END), at(P_BEGIN), at(P_END));
    assert!(
        a0 < a1 && a1 < p0 && p0 < p1,
        "mpi.h's marker lines are out of order"
    );
    let a0e = a0 + A_BEGIN.len() + 1;
    let p0e = p0 + P_BEGIN.len() + 1;
    [&h[..a0e], &h[a0e..a1], &h[a1..p0e], &h[p0e..p1], &h[p1..]]
}

/// What the two blocks should hold, from the rest of the header and the list; and
/// every MPI_ function the header then declares.
fn expected(h: &str) -> (String, String, Vec<Decl>) {
    let [before, _, between, _, after] = cut(h);
    let hand = cdecl::header_decls(&format!("{before}{between}{after}"), &["MPI_", "PMPI_"])
        .unwrap_or_else(|e| panic!("reading mpi.h: {e}"));
    let stray: Vec<&str> = hand
        .iter()
        .filter(|d| d.name.starts_with("PMPI_"))
        .map(|d| d.name.as_str())
        .collect();
    assert!(
        stray.is_empty(),
        "PMPI_ functions declared outside the generated block: {stray:?}"
    );
    let names: BTreeSet<&str> = hand.iter().map(|d| d.name.as_str()).collect();
    let mut rest = String::new();
    let mut all: Vec<Decl> = hand.clone();
    let mut section = String::new();
    for l in listed() {
        if names.contains(l.decl.name.as_str()) {
            continue;
        }
        if l.section != section {
            section = l.section.clone();
            rest.push_str(&format!("/* {section} */\n"));
        }
        rest.push_str(&format!("{};\n", l.decl.prototype()));
        all.push(l.decl);
    }
    let mut pmpi = String::new();
    for d in &all {
        pmpi.push_str(&format!("{};\n", d.prototype_as(&format!("P{}", d.name))));
    }
    (rest, pmpi, all)
}

#[test]
fn the_generated_blocks_of_mpi_h_are_current() {
    let path = header_path();
    let h = std::fs::read_to_string(&path).expect("reading mpi.h");
    let (rest, pmpi, _) = expected(&h);
    let [before, a, between, p, after] = cut(&h);
    if a == rest && p == pmpi {
        return;
    }
    if std::env::var_os("RMA_BLESS").is_some() {
        std::fs::write(&path, format!("{before}{rest}{between}{pmpi}{after}"))
            .expect("writing mpi.h");
        eprintln!("mpi.h: generated blocks rewritten");
        return;
    }
    let diff = |old: &str, new: &str| {
        let o: BTreeSet<&str> = old.lines().collect();
        let n: BTreeSet<&str> = new.lines().collect();
        let gone: Vec<&&str> = o.difference(&n).take(5).collect();
        let added: Vec<&&str> = n.difference(&o).take(5).collect();
        format!("lines to remove {gone:?}, lines to add {added:?}")
    };
    panic!(
        "mpi.h's generated blocks are stale (rest of MPI 3.1: {}; PMPI: {}): run \
         RMA_BLESS=1 cargo test -p rma-capi --test header",
        diff(a, &rest),
        diff(p, &pmpi)
    );
}

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn run_ok(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn mpi_h_alone_compiles_as_c99_and_as_cxx11_warnings_as_errors() {
    // constants in constant expressions (case labels, static initializers, #if),
    // every kind of handle, and the callbacks' types
    let src = r#"#include <mpi.h>
#if MPI_VERSION < 3
#error "MPI_VERSION"
#endif
static const MPI_Comm world = MPI_COMM_WORLD;
static const MPI_Datatype types[] = { MPI_INT, MPI_DOUBLE, MPI_2INT, MPI_AINT };
static const MPI_Op ops[] = { MPI_SUM, MPI_REPLACE, MPI_NO_OP };
static MPI_Comm_copy_attr_function *const copy = MPI_COMM_DUP_FN;
static const MPI_File file = MPI_FILE_NULL;
static const MPI_T_cvar_handle cvar = MPI_T_CVAR_HANDLE_NULL;
static int size_of_status[sizeof(MPI_Status) == MPI_F_STATUS_SIZE * sizeof(MPI_Fint) ? 1 : -1];
int classify(int rc);
int classify(int rc) {
    switch (rc) {
    case MPI_SUCCESS: return 0;
    case MPI_ERR_UNSUPPORTED_OPERATION: return 1;
    case MPI_T_ERR_INVALID: return 2;
    case MPI_LOCK_EXCLUSIVE: return 3;
    case MPI_MODE_NOCHECK | MPI_MODE_NOPRECEDE: return 4;
    default: return (int)(world + types[0] + ops[0] + file + cvar) + (copy != 0) + (int)sizeof size_of_status;
    }
}
"#;
    let c = tmp("header_alone.c");
    std::fs::write(&c, src).unwrap();
    let inc = dir().join("include");
    let cc = std::env::var("RMA_CC").unwrap_or_else(|_| "cc".into());
    let cxx = std::env::var("RMA_CXX").unwrap_or_else(|_| "c++".into());
    run_ok(
        Command::new(&cc)
            .args([
                "-std=c99",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-fsyntax-only",
                "-I",
            ])
            .arg(&inc)
            .arg(&c),
        "mpi.h as C99",
    );
    run_ok(
        Command::new(&cxx)
            .args([
                "-std=c++11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-fsyntax-only",
                "-x",
                "c++",
                "-I",
            ])
            .arg(&inc)
            .arg(&c),
        "mpi.h as C++11",
    );
}

/// The by-value parameter types build.rs knows, with the size it gives them.
const SIZES: &[(&str, &str)] = &[
    ("MPI_Comm", "int"),
    ("MPI_Datatype", "int"),
    ("MPI_Group", "int"),
    ("MPI_Win", "int"),
    ("MPI_Op", "int"),
    ("MPI_Info", "int"),
    ("MPI_Request", "int"),
    ("MPI_Errhandler", "int"),
    ("MPI_Message", "int"),
    ("MPI_File", "int"),
    ("MPI_Fint", "int"),
    ("MPI_T_enum", "int"),
    ("MPI_T_cvar_handle", "int"),
    ("MPI_T_pvar_handle", "int"),
    ("MPI_T_pvar_session", "int"),
    ("MPI_Aint", "void *"),
    ("MPI_Offset", "long long"),
    ("MPI_Count", "long long"),
];

fn defined_symbols() -> BTreeSet<String> {
    let lib = common::lib_dir().join("librma_capi.so");
    let out = run_ok(
        Command::new("nm").args(["-D", "--defined-only"]).arg(&lib),
        "nm -D",
    );
    out.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (_, kind, name) = (w.next()?, w.next()?, w.next()?);
            (kind == "T").then(|| name.to_string())
        })
        .collect()
}

#[test]
fn every_function_of_mpi_h_and_the_list_is_exported_under_both_names_and_links() {
    let h = std::fs::read_to_string(header_path()).expect("reading mpi.h");
    let (_, _, all) = expected(&h);
    let list = listed();
    let syms = defined_symbols();

    // the library: MPI_ and PMPI_ names of everything declared or listed
    let mut missing = Vec::new();
    let names: BTreeSet<&str> = all
        .iter()
        .map(|d| d.name.as_str())
        .chain(list.iter().map(|l| l.decl.name.as_str()))
        .collect();
    for n in &names {
        for s in [n.to_string(), format!("P{n}")] {
            if !syms.contains(&s) {
                missing.push(s);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "librma_capi.so does not export {missing:?}"
    );
    // and a PMPI_ name for every MPI_ name it exports
    let unprofiled: Vec<&String> = syms
        .iter()
        .filter(|s| s.starts_with("MPI_") && !syms.contains(&format!("P{s}")))
        .collect();
    assert!(
        unprofiled.is_empty(),
        "exported without a PMPI_ name: {unprofiled:?}"
    );

    // a program: the list's prototypes again, sizes, every address
    let mut src = String::from("#include <mpi.h>\n#include <stdio.h>\n\n");
    for (t, c) in SIZES {
        src.push_str(&format!(
            "_Static_assert(sizeof({t}) == sizeof({c}), \"{t} has the size build.rs gives it\");\n"
        ));
    }
    src.push_str(
        "_Static_assert(sizeof(MPI_Status) == MPI_F_STATUS_SIZE * sizeof(MPI_Fint), \"status size\");\n\n",
    );
    for l in &list {
        src.push_str(&format!("{};\n", l.decl.prototype()));
        src.push_str(&format!(
            "{};\n",
            l.decl.prototype_as(&format!("P{}", l.decl.name))
        ));
    }
    src.push_str("\ntypedef void (*any_fn)(void);\nstatic const any_fn fns[] = {\n");
    for n in &names {
        src.push_str(&format!("    (any_fn){n},\n    (any_fn)P{n},\n"));
    }
    src.push_str(
        "};\n\nint main(void) {\n    size_t n = sizeof fns / sizeof fns[0], i;\n    \
         for (i = 0; i < n; i++)\n        if (!fns[i]) return 1;\n    \
         printf(\"%zu\\n\", n);\n    return 0;\n}\n",
    );
    let c = tmp("every_function.c");
    std::fs::write(&c, src).unwrap();
    let exe = tmp("every_function");
    run_ok(
        Command::new(dir().join("bin/rmacc"))
            .env("RMA_CAPI_LIB", common::lib_dir())
            .args([
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-Wl,-z,now",
                "-o",
            ])
            .arg(&exe)
            .arg(&c),
        "compiling every_function.c",
    );
    let out = run_ok(
        Command::new(&exe).env("LD_LIBRARY_PATH", common::lib_dir()),
        "running every_function",
    );
    assert_eq!(out.trim(), (2 * names.len()).to_string());
    eprintln!(
        "{} functions declared in mpi.h ({} listed in mpi31.txt), each under MPI_ and PMPI_",
        all.len(),
        list.len()
    );
}

#[test]
fn refused_functions_are_listed_ones_that_no_source_defines() {
    let refused: Vec<&str> = rma_capi::refused::REFUSED.lines().collect();
    let list = listed();
    let names: BTreeSet<&str> = list.iter().map(|l| l.decl.name.as_str()).collect();
    for r in &refused {
        assert!(names.contains(r), "{r} is refused but not listed");
    }
    let implemented = list.len() - refused.len();
    eprintln!(
        "MPI 3.1 (src/mpi31.txt): {} functions, {implemented} implemented, {} refused:",
        list.len(),
        refused.len()
    );
    for l in &list {
        if refused.contains(&l.decl.name.as_str()) {
            eprintln!("  {}  ({})", l.decl.name, l.section);
        }
    }
}
