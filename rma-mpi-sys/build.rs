//! Builds the C shim (`csrc/shim.c`) once per MPI library found, when the `mpi`
//! feature is on (rma-mpi's `mpi` feature turns it on), and tells the crate where the
//! shared objects are (`RMA_MPI_SHIMS=name=path;...`, read by `src/ffi.rs`).
//!
//! Compilers: `RMA_MPICC` if set, else `mpicc.mpich`, `mpicc.openmpi` and `mpicc`
//! (Debian's names), keeping the first that works for each library. The library is
//! told apart by the macros its `mpi.h` defines (`OMPI_MAJOR_VERSION`,
//! `MPICH_VERSION`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SHIM: &str = "csrc/shim.c";

fn main() {
    println!("cargo:rerun-if-changed={SHIM}");
    println!("cargo:rerun-if-env-changed=RMA_MPICC");
    // docs.rs (DOCS_RS) documents the `mpi` feature without an MPI library: no shim is
    // built, so such a build's MPI worlds are an RMA_FLAVOR error, as without the feature
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    if std::env::var_os("CARGO_FEATURE_MPI").is_none() || std::env::var_os("DOCS_RS").is_some() {
        println!("cargo:rustc-env=RMA_MPI_SHIMS=");
        return;
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut built: Vec<(String, PathBuf)> = Vec::new();
    for cc in compilers() {
        let Some(library) = library_of(&cc) else {
            continue;
        };
        if built.iter().any(|(name, _)| *name == library) {
            continue;
        }
        match compile(&cc, &library, &out) {
            Ok(path) => built.push((library, path)),
            Err(e) => println!("cargo:warning=rma-mpi-sys: {cc} could not build the shim: {e}"),
        }
    }
    if built.is_empty() {
        panic!(
            "rma-mpi-sys: the `mpi` feature needs an MPI C compiler wrapper; none of {:?} works. \
             Install MPICH or Open MPI (Debian: apt-get install libmpich-dev mpich or \
             libopenmpi-dev openmpi-bin) or set RMA_MPICC",
            compilers()
        );
    }
    let list: Vec<String> = built
        .iter()
        .map(|(name, path)| format!("{name}={}", path.display()))
        .collect();
    println!("cargo:rustc-env=RMA_MPI_SHIMS={}", list.join(";"));
}

fn compilers() -> Vec<String> {
    match std::env::var("RMA_MPICC") {
        Ok(cc) if !cc.trim().is_empty() => vec![cc.trim().to_owned()],
        _ => ["mpicc.mpich", "mpicc.openmpi", "mpicc"]
            .map(String::from)
            .to_vec(),
    }
}

/// `"openmpi"`, `"mpich"` or `"mpi"` from the macros `cc`'s mpi.h defines; `None` if
/// `cc` cannot preprocess it.
fn library_of(cc: &str) -> Option<String> {
    let mut child = Command::new(cc)
        .args(["-E", "-dM", "-x", "c", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take()?;
        stdin.write_all(b"#include <mpi.h>\n").ok()?;
    }
    let output = child.wait_with_output().ok()?;
    if !output.status.success() {
        return None;
    }
    let macros = String::from_utf8_lossy(&output.stdout);
    let has = |name: &str| {
        macros
            .lines()
            .any(|l| l.starts_with(&format!("#define {name} ")))
    };
    Some(if has("OMPI_MAJOR_VERSION") {
        "openmpi".into()
    } else if has("MPICH_VERSION") {
        "mpich".into()
    } else {
        "mpi".into()
    })
}

/// Compiles the shim with `cc` into `out/librma_mpi_shim_<library>.so`.
fn compile(cc: &str, library: &str, out: &Path) -> Result<PathBuf, String> {
    let path = out.join(format!("librma_mpi_shim_{library}.so"));
    let status = Command::new(cc)
        .args(["-O2", "-fPIC", "-shared", "-Wall", "-o"])
        .arg(&path)
        .arg(SHIM)
        .status()
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(path)
    } else {
        Err(format!("{status}"))
    }
}
