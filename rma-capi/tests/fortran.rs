//! The Fortran binding: `include/mpif-constants.h` is what mpi.h's values make (it is
//! generated here: `RMA_BLESS=1 cargo test -p rma-capi --test fortran` rewrites it),
//! the headers fit fixed source form, every routine the `mpi` module declares is in
//! the library, and Fortran programs of `tests/f`, compiled with `bin/rmafort`, pass
//! their own checks under rma-shm's launcher (what `rmarun` runs): three written after
//! the one-sided chapter's Examples 11.1 to 11.3, one in fixed form over mpif.h, and
//! two through the rest of the binding (`tour.f90`: the environment, messages,
//! datatypes, info and every one-sided routine; `breadth.f90`: the v-, nonblocking and
//! user-operation collectives, probes and persistent requests, topologies,
//! communicator and group constructors, attributes, names and envelopes).
//!
//! The programs need a Fortran compiler (`gfortran`, or `$RMA_FC`); without one those
//! tests print a note and pass. CI installs gfortran.

#[allow(dead_code)] // this binary uses lib_dir, not the C programs' compile
mod common;
use common::lib_dir;
use rma_shm::launch::{spawn, LaunchOptions};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let p = crate_dir().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

// ---- mpif-constants.h from mpi.h ---------------------------------------------------

/// One `#define` of mpi.h as Fortran sees it.
enum Define {
    /// An integer constant.
    Value(i64),
    /// A pointer, a function-like macro or another thing only C has.
    COnly,
}

/// The value of a `#define`'s body: an integer, `(integer)`, `((Type)integer)`, or
/// the name of a constant defined before.
fn value(body: &str, known: &[(String, i64)]) -> Option<Define> {
    let mut b = body.trim();
    if b.contains('*') {
        return Some(Define::COnly);
    }
    if let Some(rest) = b.strip_prefix("((") {
        // ((MPI_Type)N)
        let close = rest.find(')')?;
        let ty = &rest[..close];
        if !ty.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        b = rest[close + 1..].strip_suffix(')')?;
    } else if let Some(inner) = b.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        b = inner;
    }
    let b = b.trim();
    let (neg, digits) = match b.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, b),
    };
    let n = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex, 16).ok()
    } else if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    };
    if let Some(n) = n {
        return Some(Define::Value(if neg { -n } else { n }));
    }
    known
        .iter()
        .find(|(k, _)| k == b)
        .map(|&(_, v)| Define::Value(v))
}

/// The fields of `typedef struct MPI_Status { ... }`, all of them `int`.
fn status_fields(h: &str) -> Vec<String> {
    let start = h
        .find("typedef struct MPI_Status {")
        .expect("mpi.h defines struct MPI_Status");
    let body = &h[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    body.split(';')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(|f| {
            let name = f.strip_prefix("int ").unwrap_or_else(|| {
                panic!("MPI_Status field `{f}` is not an int: Fortran's status is an INTEGER array")
            });
            name.trim().to_string()
        })
        .collect()
}

/// Appends a declaration and its PARAMETER statement.
fn parameter(out: &mut String, name: &str, value: &str) {
    writeln!(out, "      INTEGER {name}").unwrap();
    writeln!(out, "      PARAMETER ({name}={value})").unwrap();
}

/// mpif-constants.h as mpi.h and the library's sentinel table make it.
fn render_constants(h: &str) -> String {
    let mut out = String::new();
    out.push_str(
        "! mpif-constants.h: MPI's named constants with rma's values, for mpif.h\n\
         ! and the mpi module. GENERATED from mpi.h (and the sentinel table of\n\
         ! rma-capi/src/fortran.rs) by rma-capi/tests/fortran.rs: do not edit;\n\
         ! after changing mpi.h run\n\
         !   RMA_BLESS=1 cargo test -p rma-capi --test fortran\n\
         ! Valid in fixed and in free source form (comments begin in column 1,\n\
         ! statements in column 7, no line goes past column 72).\n",
    );
    // kinds: the C types' sizes (MPI_Aint is ptrdiff_t; MPI_Offset, MPI_Count long long)
    let digits = |bytes: usize| match bytes {
        4 => 9,
        8 => 18,
        n => panic!("no Fortran integer kind for {n} bytes"),
    };
    assert!(h.contains("typedef ptrdiff_t MPI_Aint;"));
    assert!(h.contains("typedef long long MPI_Offset;"));
    assert!(h.contains("typedef long long MPI_Count;"));
    assert!(h.contains("typedef int MPI_Fint;"));
    out.push_str("! kinds of the C types MPI_Aint, MPI_Offset, MPI_Count, MPI_Fint\n");
    let aint = format!(
        "SELECTED_INT_KIND({})",
        digits(std::mem::size_of::<isize>())
    );
    let ll = format!("SELECTED_INT_KIND({})", digits(8));
    parameter(&mut out, "MPI_ADDRESS_KIND", &aint);
    parameter(&mut out, "MPI_OFFSET_KIND", &ll);
    parameter(&mut out, "MPI_COUNT_KIND", &ll);
    parameter(&mut out, "MPI_INTEGER_KIND", "KIND(0)");
    // the status: C's struct as INTEGERs
    let fields = status_fields(h);
    assert_eq!(
        fields.len(),
        rma_capi::fortran::STATUS_SIZE,
        "the library's STATUS_SIZE disagrees with mpi.h's MPI_Status"
    );
    out.push_str("! a status is C's MPI_Status as INTEGERs; the indices of its fields\n");
    parameter(&mut out, "MPI_STATUS_SIZE", &fields.len().to_string());
    for (i, f) in fields.iter().enumerate() {
        if f.starts_with("MPI_") {
            parameter(&mut out, f, &(i + 1).to_string());
        }
    }
    // the #defines
    out.push_str("! mpi.h's #defines\n");
    let mut known: Vec<(String, i64)> = Vec::new();
    let mut c_only = Vec::new();
    for line in h.lines() {
        let Some(rest) = line.trim().strip_prefix("#define ") else {
            continue;
        };
        assert!(!line.ends_with('\\'), "a #define that goes on: {line}");
        let rest = match rest.find("/*") {
            Some(i) => &rest[..i],
            None => rest,
        };
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (name, body) = rest.split_at(name_end);
        if !name.starts_with("MPI_") {
            continue;
        }
        if body.starts_with('(') {
            // a function-like macro
            c_only.push(name.to_string());
            continue;
        }
        match value(body, &known) {
            Some(Define::Value(v)) => {
                parameter(&mut out, name, &v.to_string());
                known.push((name.to_string(), v));
            }
            Some(Define::COnly) => c_only.push(name.to_string()),
            None => panic!(
                "mpi.h: `{line}`: not a value mpif-constants.h can carry; teach \
                 tests/fortran.rs's `value` about it, or make it a pointer or a macro"
            ),
        }
    }
    // C's view of a Fortran status (MPI_F_STATUS_SIZE, MPI_F_SOURCE ...: 0-based)
    // must be this one
    for (name, v) in &known {
        if name == "MPI_F_STATUS_SIZE" {
            assert_eq!(*v as usize, fields.len(), "mpi.h's {name}");
        } else if let Some(f) = name.strip_prefix("MPI_F_") {
            if let Some(i) = fields.iter().position(|x| x == &format!("MPI_{f}")) {
                assert_eq!(*v as usize, i, "mpi.h's {name}");
            }
        }
    }
    // the sentinels
    let sentinels = rma_capi::fortran::SENTINELS;
    out.push_str(
        "! sentinels: variables alone in common blocks of the library's, passed\n\
         ! where MPI allows them and recognised by their address\n",
    );
    for &(decl, sym) in sentinels {
        let name = decl.split('(').next().unwrap();
        let block = sym
            .strip_suffix('_')
            .expect("a common block's symbol ends in _");
        writeln!(out, "      INTEGER {decl}").unwrap();
        writeln!(out, "      COMMON /{}/ {name}", block.to_uppercase()).unwrap();
    }
    let in_fortran: BTreeSet<&str> = sentinels
        .iter()
        .map(|(d, _)| d.split('(').next().unwrap())
        .collect();
    let rest: Vec<&String> = c_only
        .iter()
        .filter(|n| !in_fortran.contains(n.as_str()))
        .collect();
    out.push_str("! in mpi.h but not here (pointers and macros only C has):\n");
    let mut line = String::from("!");
    for n in rest {
        if line.len() + 1 + n.len() > 72 {
            writeln!(out, "{line}").unwrap();
            line = String::from("!");
        }
        line.push(' ');
        line.push_str(n);
    }
    if line.len() > 1 {
        writeln!(out, "{line}").unwrap();
    }
    out
}

#[test]
fn mpif_constants_h_is_what_mpi_h_makes() {
    let want = render_constants(&read("include/mpi.h"));
    let path = crate_dir().join("include/mpif-constants.h");
    if std::env::var_os("RMA_BLESS").is_some_and(|v| !v.is_empty()) {
        std::fs::write(&path, &want).expect("writing mpif-constants.h");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let diff: Vec<String> = want
            .lines()
            .zip(have.lines().chain(std::iter::repeat("")))
            .filter(|(w, h)| w != h)
            .take(5)
            .map(|(w, h)| format!("  want `{w}`\n  have `{h}`"))
            .collect();
        panic!(
            "include/mpif-constants.h is stale (mpi.h changed?): regenerate it with\n  \
             RMA_BLESS=1 cargo test -p rma-capi --test fortran mpif_constants\nfirst \
             differences:\n{}",
            diff.join("\n")
        );
    }
}

#[test]
fn the_fortran_names_are_distinct_and_the_headers_fit_fixed_form() {
    let consts = render_constants(&read("include/mpi.h"));
    let mut seen = BTreeSet::new();
    for l in consts.lines() {
        if let Some(n) = l.trim().strip_prefix("INTEGER ") {
            let n = n.split('(').next().unwrap().to_uppercase();
            assert!(n.len() <= 63, "{n}: longer than Fortran's 63 characters");
            assert!(seen.insert(n.clone()), "{n} twice (Fortran ignores case)");
        }
    }
    for (file, text) in [
        ("mpif-constants.h", consts),
        ("mpif.h", read("include/mpif.h")),
    ] {
        for (i, l) in text.lines().enumerate() {
            let at = format!("{file}:{}: `{l}`", i + 1);
            assert!(l.len() <= 72, "{at}: past column 72");
            assert!(l.is_ascii() && !l.contains('\t'), "{at}: tab or non-ASCII");
            if l.is_empty() || l.starts_with('!') {
                continue;
            }
            // a statement: columns 1 to 6 blank (no labels, no continuations), so that
            // it reads the same in both source forms
            assert!(
                l.starts_with("      ") && !l[6..].starts_with(' '),
                "{at}: a statement must start in column 7"
            );
            assert!(
                !l.contains('!') && !l.contains('&'),
                "{at}: no inline comments or continuations"
            );
        }
    }
}

/// The routines a Fortran file declares (`SUBROUTINE X` / `FUNCTION X`), as the
/// symbols gfortran calls.
fn declared_routines(src: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for l in src.lines() {
        let l = l.trim().to_lowercase();
        let rest = l
            .strip_prefix("subroutine ")
            .or_else(|| l.strip_prefix("function "));
        if let Some(r) = rest {
            let name: String = r
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.insert(format!("{name}_"));
        }
    }
    out
}

#[test]
fn every_routine_the_mpi_module_declares_is_in_the_library() {
    let names = declared_routines(&read("fortran/mpi.f90"));
    assert!(names.len() > 100, "{} routines?", names.len());
    let so = lib_dir().join("librma_capi.so");
    let so_c = std::ffi::CString::new(so.to_str().unwrap()).unwrap();
    // SAFETY: dlopen of the library this test run built, with a NUL-terminated path;
    // its initializers are Rust's and the Fortran binding's, which have none that run
    // MPI.
    let h = unsafe { libc::dlopen(so_c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!h.is_null(), "dlopen {}", so.display());
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| {
            let c = std::ffi::CString::new(n.as_str()).unwrap();
            // SAFETY: a handle dlopen returned and a NUL-terminated name.
            unsafe { libc::dlsym(h, c.as_ptr()) }.is_null()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "declared in mpi.f90, not in the library: {missing:?}"
    );
    // and the sentinels' blocks
    for (_, sym) in rma_capi::fortran::SENTINELS {
        let c = std::ffi::CString::new(*sym).unwrap();
        // SAFETY: as above.
        assert!(!unsafe { libc::dlsym(h, c.as_ptr()) }.is_null(), "{sym}");
    }
}

// ---- Fortran programs --------------------------------------------------------------

/// The Fortran compiler, or None (with a note) when there is none.
fn compiler(test: &str) -> Option<String> {
    let fc = std::env::var("RMA_FC").unwrap_or_else(|_| "gfortran".into());
    match Command::new(&fc).arg("--version").output() {
        Ok(o) if o.status.success() => Some(fc),
        _ => {
            eprintln!("note: {test} skipped: no Fortran compiler `{fc}` (install gfortran)");
            None
        }
    }
}

/// Compiles `tests/f/<file>` with rmafort into CARGO_TARGET_TMPDIR; the program.
fn compile(fc: &str, file: &str, flags: &[&str]) -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let stem = file.split('.').next().unwrap();
    let out = tmp.join(format!("fortran-{stem}"));
    let o = Command::new(crate_dir().join("bin/rmafort"))
        .env("RMA_FC", fc)
        .env("RMA_CAPI_LIB", lib_dir())
        // the module cache of this build, not the user's
        .env("XDG_CACHE_HOME", tmp.join("fortran-cache"))
        .env_remove("RMA_FMODDIR")
        // where a program's own modules' .mod files go
        .current_dir(&tmp)
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(crate_dir().join("tests/f").join(file))
        .output()
        .expect("running rmafort");
    assert!(
        o.status.success(),
        "rmafort could not build {file}:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Runs `prog` as `ranks` ranks; each rank's output goes to a file of its own. Fails
/// unless every rank exits 0 and rank 0 says "No Errors".
fn run(prog: &Path, ranks: usize) {
    let outs = PathBuf::from(format!("{}.{ranks}.out", prog.display()));
    let mut o = LaunchOptions::new(ranks, "/bin/sh");
    o.args = vec![
        "-c".into(),
        r#"exec "$0" >"$1.$RMA_RANK" 2>&1"#.into(),
        prog.into(),
        outs.clone().into(),
    ];
    o.env = vec![("LD_LIBRARY_PATH".into(), lib_dir().into())];
    o.prefix_output = false;
    o.grace = Duration::from_secs(5);
    o.timeout = Some(Duration::from_secs(60));
    let r = spawn(&o).expect("launching the ranks");
    let output: Vec<String> = (0..ranks)
        .map(|i| std::fs::read_to_string(format!("{}.{i}", outs.display())).unwrap_or_default())
        .collect();
    let shown = output
        .iter()
        .enumerate()
        .map(|(i, s)| format!("--- rank {i}:\n{s}"))
        .collect::<String>();
    assert!(
        r.success(),
        "{} with {ranks} ranks failed: {:?}\n{shown}",
        prog.display(),
        r.failures
    );
    assert!(
        output[0].contains("No Errors"),
        "{} with {ranks} ranks: rank 0 did not say No Errors\n{shown}",
        prog.display()
    );
}

/// Flags for programs that use the module: every warning is an error.
const STRICT: &[&str] = &["-O2", "-Wall", "-Werror", "-std=f2018"];

#[test]
fn example_11_1_gathers_mapped_values_with_indexed_block_types() {
    let Some(fc) = compiler("example_11_1") else {
        return;
    };
    let p = compile(&fc, "ex11_1_mapvals_types.f90", STRICT);
    for ranks in [2, 3, 4] {
        run(&p, ranks);
    }
}

#[test]
fn example_11_2_gathers_mapped_values_one_get_each() {
    let Some(fc) = compiler("example_11_2") else {
        return;
    };
    let p = compile(&fc, "ex11_2_mapvals_gets.f90", STRICT);
    for ranks in [2, 3, 4] {
        run(&p, ranks);
    }
}

#[test]
fn example_11_3_sums_mapped_values_with_accumulate() {
    let Some(fc) = compiler("example_11_3") else {
        return;
    };
    let p = compile(&fc, "ex11_3_sum_accumulate.f90", STRICT);
    for ranks in [2, 3, 4] {
        run(&p, ranks);
    }
}

#[test]
fn a_fixed_form_program_including_mpif_h_passes_its_checks() {
    let Some(fc) = compiler("fixed_form") else {
        return;
    };
    // no -Werror: calls without explicit interfaces that pass different buffer types
    // are warnings (rmafort's -fallow-argument-mismatch)
    let p = compile(&fc, "fixed_form.f", &["-O2", "-Wall"]);
    for ranks in [2, 3] {
        run(&p, ranks);
    }
}

#[test]
fn a_tour_of_the_binding_through_the_mpi_module_passes_its_checks() {
    let Some(fc) = compiler("tour") else {
        return;
    };
    let p = compile(&fc, "tour.f90", STRICT);
    for ranks in [2, 3, 4] {
        run(&p, ranks);
    }
}

#[test]
fn collectives_user_operations_topologies_and_the_rest_pass_their_checks() {
    let Some(fc) = compiler("breadth") else {
        return;
    };
    let p = compile(&fc, "breadth.f90", STRICT);
    for ranks in [2, 3, 4] {
        run(&p, ranks);
    }
}
