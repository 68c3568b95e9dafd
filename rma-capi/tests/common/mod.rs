//! What the test binaries that run C programs share: the library built for this run,
//! and compiling a program of `tests/c` with rmacc against it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding librma_capi.so built for this test run.
pub(crate) fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    for d in [
        deps.clone(),
        deps.parent().expect("profile directory").to_path_buf(),
    ] {
        if d.join("librma_capi.so").exists() {
            return d;
        }
    }
    panic!("librma_capi.so is not next to {}", exe.display());
}

/// Compiles `tests/c/<name>.c` with rmacc into `CARGO_TARGET_TMPDIR/<out>` (a name of
/// the caller's, so that tests running at once never write the same file); the
/// program's path.
pub(crate) fn compile(name: &str, out: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(out);
    let status = Command::new(dir.join("bin/rmacc"))
        .env("RMA_CAPI_LIB", lib_dir())
        .args(["-O1", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(dir.join("tests/c").join(format!("{name}.c")))
        .status()
        .expect("running rmacc (needs a C compiler: cc)");
    assert!(status.success(), "rmacc could not build {name}.c");
    out
}
