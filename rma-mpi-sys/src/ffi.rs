//! The C shim's ABI, loaded at run time.
//!
//! build.rs compiles `csrc/shim.c` with each MPI compiler wrapper it finds into a
//! shared object (`librma_mpi_shim_<library>.so`) and records their paths in
//! `RMA_MPI_SHIMS`. [`api`] picks the one matching the launcher this process runs
//! under, `dlopen`s it (which loads that MPI library) and resolves every function by
//! name, so a missing or mismatched symbol is an error at load time, never a call
//! through a wrong pointer.
//!
//! Only plain integers and pointers cross: MPI handles as `isize` (the C side's
//! `intptr_t`), basic types, ops and assertion bits as rma's own codes.

use rma_core::{Error, Result};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// An MPI handle (communicator, window, datatype, request) as the shim passes it.
pub type Handle = isize;

/// The shim ABI version this crate speaks (`RMA_MPI_SHIM_ABI` in shim.c).
const SHIM_ABI: c_int = 7;

/// `name=path` pairs separated by `;`, one per shim built (empty without the `mpi`
/// feature).
const BUILT_SHIMS: &str = env!("RMA_MPI_SHIMS");

/// Environment variable naming a shim to load instead of the built ones.
pub const ENV_SHIM: &str = "RMA_MPI_SHIM";

/// Environment variable choosing the library (`mpich` or `openmpi`) when the launcher
/// does not tell.
pub const ENV_LIBRARY: &str = "RMA_MPI_LIBRARY";

macro_rules! shim_api {
    ($( fn $name:ident ( $($ty:ty),* $(,)? ) -> $ret:ty ; )*) => {
        /// The shim's functions, resolved from the loaded shared object: field `name`
        /// is csrc/shim.c's `rma_mpi_name`. Each takes MPI handles as [`Handle`]s and
        /// rma's own codes for basic types, ops and assertion bits, and returns an MPI
        /// error code (0 = MPI_SUCCESS) or a negative shim code ([`Call::error`]
        /// reads both).
        ///
        /// [`Call::error`]: crate::Call::error
        pub struct Api {
            $(
                #[doc = concat!("csrc/shim.c's `rma_mpi_", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($ty),*) -> $ret,
            )*
        }

        impl Api {
            /// Resolves every function of the shim in `lib`.
            ///
            /// # Safety
            /// `lib` is a live `dlopen` handle of a shim built from this crate's
            /// `csrc/shim.c` of ABI version [`SHIM_ABI`], so that each symbol has the
            /// signature declared here.
            unsafe fn resolve(lib: *mut c_void) -> std::result::Result<Api, String> {
                Ok(Api {
                    $( $name: {
                        let sym = concat!("rma_mpi_", stringify!($name), "\0");
                        // SAFETY: `lib` is live (caller's contract) and `sym` is
                        // NUL-terminated.
                        let p = unsafe { libc::dlsym(lib, sym.as_ptr().cast()) };
                        if p.is_null() {
                            return Err(format!("the shim lacks {}", sym.trim_end_matches('\0')));
                        }
                        // SAFETY: the symbol is the shim's function of this name, whose
                        // C signature matches the declaration (caller's contract).
                        unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) -> $ret>(p)
                        }
                    }, )*
                })
            }
        }
    };
}

type Keys = *const *const c_char;

shim_api! {
    fn shim_abi() -> c_int;
    fn built_for() -> c_int;
    fn initialized(*mut c_int) -> c_int;
    fn finalized(*mut c_int) -> c_int;
    fn init_thread(c_int, *mut c_int) -> c_int;
    fn finalize() -> c_int;
    fn abort(Handle, c_int) -> ();
    fn library_version(*mut c_char, c_int, *mut c_int) -> c_int;
    fn cvar_string(*const c_char, *mut c_char, c_int, *mut c_int) -> c_int;
    fn world_dup(*mut Handle) -> c_int;
    fn query_thread(*mut c_int) -> c_int;
    fn is_thread_main(*mut c_int) -> c_int;
    fn comm_test_inter(Handle, *mut c_int) -> c_int;
    fn comm_shape(Handle, *mut c_int) -> c_int;
    fn comm_dup(Handle, *mut Handle) -> c_int;
    fn comm_split_shared(Handle, c_int, *mut Handle) -> c_int;
    fn watch_finalize(Option<unsafe extern "C" fn() -> c_int>) -> c_int;
    fn comm_free(Handle) -> c_int;
    fn comm_split(Handle, c_int, c_int, *mut Handle) -> c_int;
    fn comm_create_group(Handle, c_int, *const c_int, c_int, *mut Handle) -> c_int;
    fn comm_rank(Handle, *mut c_int) -> c_int;
    fn comm_size(Handle, *mut c_int) -> c_int;
    fn progress(Handle) -> c_int;
    fn allgather_i64(Handle, i64, *mut i64) -> c_int;
    fn iagree(Handle, *const i64, *mut i64, *mut Handle) -> c_int;
    fn allgatherv_bytes(Handle, *const c_void, c_int, *mut c_void, *const c_int, *const c_int) -> c_int;
    fn error_class(c_int) -> c_int;
    fn error_class_name(c_int) -> *const c_char;
    fn error_string(c_int, *mut c_char, c_int, *mut c_int) -> c_int;
    fn basic(c_int, *mut Handle) -> c_int;
    fn type_extent(Handle, *mut i64, *mut i64) -> c_int;
    fn type_hvector(c_int, c_int, c_int, i64, i64, *mut Handle) -> c_int;
    fn type_hindexed(c_int, c_int, *const c_int, *const i64, *mut Handle) -> c_int;
    fn type_free(Handle) -> c_int;
    fn win_allocate(Handle, i64, c_int, c_int, Keys, Keys, *mut *mut c_void, *mut Handle) -> c_int;
    fn win_allocate_shared(Handle, i64, c_int, c_int, Keys, Keys, *mut *mut c_void, *mut Handle) -> c_int;
    fn win_shared_query(Handle, c_int, *mut i64, *mut c_int, *mut *mut c_void) -> c_int;
    fn node_size(Handle, *mut c_int) -> c_int;
    fn win_create_dynamic(Handle, c_int, Keys, Keys, *mut Handle) -> c_int;
    fn win_attach(Handle, *mut c_void, i64) -> c_int;
    fn win_detach(Handle, *mut c_void) -> c_int;
    fn get_address(*const c_void, *mut i64) -> c_int;
    fn win_create(Handle, *mut c_void, i64, c_int, c_int, Keys, Keys, *mut Handle) -> c_int;
    fn win_free(Handle) -> c_int;
    fn put(*const c_void, c_int, Handle, c_int, i64, c_int, Handle, Handle) -> c_int;
    fn accumulate(*const c_void, c_int, Handle, c_int, i64, c_int, Handle, c_int, Handle) -> c_int;
    fn get(*mut c_void, c_int, Handle, c_int, i64, c_int, Handle, Handle) -> c_int;
    fn get_accumulate(*const c_void, c_int, Handle, *mut c_void, c_int, Handle, c_int, i64, c_int, Handle, c_int, Handle) -> c_int;
    fn fetch_and_op(*const c_void, *mut c_void, Handle, c_int, i64, c_int, Handle) -> c_int;
    fn compare_and_swap(*const c_void, *const c_void, *mut c_void, Handle, c_int, i64, Handle) -> c_int;
    fn rput(*const c_void, c_int, Handle, c_int, i64, c_int, Handle, Handle, *mut Handle) -> c_int;
    fn rget(*mut c_void, c_int, Handle, c_int, i64, c_int, Handle, Handle, *mut Handle) -> c_int;
    fn raccumulate(*const c_void, c_int, Handle, c_int, i64, c_int, Handle, c_int, Handle, *mut Handle) -> c_int;
    fn rget_accumulate(*const c_void, c_int, Handle, *mut c_void, c_int, Handle, c_int, i64, c_int, Handle, c_int, Handle, *mut Handle) -> c_int;
    fn wait(*mut Handle) -> c_int;
    fn test(*mut Handle, *mut c_int) -> c_int;
    fn win_fence(c_int, Handle) -> c_int;
    fn win_lock(c_int, c_int, c_int, Handle) -> c_int;
    fn win_unlock(c_int, Handle) -> c_int;
    fn win_lock_all(c_int, Handle) -> c_int;
    fn win_unlock_all(Handle) -> c_int;
    fn win_flush(c_int, Handle) -> c_int;
    fn test_fail_flushes(c_int) -> ();
    fn win_flush_all(Handle) -> c_int;
    fn win_flush_local(c_int, Handle) -> c_int;
    fn win_flush_local_all(Handle) -> c_int;
    fn win_sync(Handle) -> c_int;
    fn win_post(*const c_int, c_int, c_int, Handle) -> c_int;
    fn win_start(*const c_int, c_int, c_int, Handle) -> c_int;
    fn win_complete(Handle) -> c_int;
    fn win_wait(Handle) -> c_int;
    fn win_test(Handle, *mut c_int) -> c_int;
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Api { .. }")
    }
}

/// The MPI library family a shim was built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Library {
    /// MPICH and libraries of its ABI (Intel MPI, MVAPICH).
    Mpich,
    /// Open MPI.
    OpenMpi,
    /// Another library (a shim built with `RMA_MPICC` pointing elsewhere).
    Other,
}

impl Library {
    /// The name build.rs and `RMA_MPI_LIBRARY` use (`"mpich"`, `"openmpi"`, `"mpi"`).
    pub const fn name(self) -> &'static str {
        match self {
            Library::Mpich => "mpich",
            Library::OpenMpi => "openmpi",
            Library::Other => "mpi",
        }
    }

    fn from_name(name: &str) -> Library {
        match name {
            "mpich" => Library::Mpich,
            "openmpi" => Library::OpenMpi,
            _ => Library::Other,
        }
    }
}

/// The shims this build offers, as (library, path).
pub fn built_shims() -> Vec<(Library, &'static str)> {
    BUILT_SHIMS
        .split(';')
        .filter_map(|entry| entry.split_once('='))
        .map(|(name, path)| (Library::from_name(name), path))
        .collect()
}

/// The library the launcher of this process belongs to, if its environment tells.
pub fn launcher_library() -> Option<Library> {
    let set = |k: &str| std::env::var_os(k).is_some();
    if set("OMPI_COMM_WORLD_SIZE") || set("OMPI_COMM_WORLD_RANK") {
        Some(Library::OpenMpi)
    } else if set("PMI_RANK") || set("PMI_SIZE") || set("PMI_FD") {
        Some(Library::Mpich)
    } else if set("PMIX_RANK") {
        Some(Library::OpenMpi)
    } else {
        None
    }
}

/// The MPI library already loaded in this process — linked by the program, or loaded
/// by another crate such as rsmpi — as its `MPI_Get_library_version` names it; `None`
/// when no MPI library is loaded, or the one loaded is neither MPICH nor Open MPI.
///
/// It looks the function up in the process's global scope (`dlsym(RTLD_DEFAULT)`),
/// which MPI allows to be called at any time, before MPI_Init and after MPI_Finalize.
pub fn process_library() -> Option<Library> {
    // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the global scope.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"MPI_Get_library_version".as_ptr()) };
    if f.is_null() {
        return None;
    }
    // SAFETY: every MPI library's MPI_Get_library_version has this C signature
    // (char *version, int *resultlen) and may be called at any time.
    let f = unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int>(
            f,
        )
    };
    // MPI_MAX_LIBRARY_VERSION_STRING is 8192 in MPICH, 256 in Open MPI
    let mut buf = vec![0u8; 16384];
    let mut len: c_int = 0;
    // SAFETY: `buf` is larger than any library's MPI_MAX_LIBRARY_VERSION_STRING.
    if unsafe { f(buf.as_mut_ptr().cast(), &mut len) } != 0 {
        return None;
    }
    buf.truncate((len.max(0) as usize).min(buf.len()));
    let text = String::from_utf8_lossy(&buf);
    if text.contains("Open MPI") {
        Some(Library::OpenMpi)
    } else if text.contains("MPICH") {
        Some(Library::Mpich)
    } else {
        None
    }
}

/// Which shim to load: `RMA_MPI_SHIM`, else the built shim for `RMA_MPI_LIBRARY`,
/// `prefer` or the launcher's library, else the first built one.
fn choose_shim(prefer: Option<Library>) -> Result<(Library, String)> {
    if let Some(path) = std::env::var_os(ENV_SHIM) {
        let path = path.to_string_lossy().into_owned();
        return Ok((Library::Other, path));
    }
    let built = built_shims();
    if built.is_empty() {
        return Err(Error::Flavor {
            reason: format!(
                "this build has no MPI shim: rma-mpi-sys was built without its `mpi` feature \
                 (rma-mpi's `mpi` feature turns it on), so it has no MPI library to call; \
                 rebuild with `--features mpi` (needs mpicc), or set {ENV_SHIM} to a shim \
                 built from rma-mpi-sys's csrc/shim.c"
            ),
        });
    }
    let wanted = match std::env::var(ENV_LIBRARY) {
        Ok(name) => Some(Library::from_name(name.trim())),
        Err(_) => prefer.or_else(launcher_library),
    };
    let Some(wanted) = wanted else {
        return Ok((built[0].0, built[0].1.to_owned()));
    };
    match built.iter().find(|(lib, _)| *lib == wanted) {
        Some((lib, path)) => Ok((*lib, (*path).to_owned())),
        None => Err(Error::Flavor {
            reason: format!(
                "this process needs {}'s shim (its launcher's library, or the MPI library it \
                 already runs) but this build has shims only for {}; rebuild with RMA_MPICC \
                 naming that library's mpicc, or set {ENV_LIBRARY}",
                wanted.name(),
                built
                    .iter()
                    .map(|(l, _)| l.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// Opens the shim at `path` with its MPI library (RTLD_GLOBAL: Open MPI's plugins
/// resolve libmpi's symbols from the global scope).
fn open(path: &str) -> std::result::Result<&'static Api, String> {
    let c = CString::new(path).map_err(|_| format!("shim path {path:?} contains NUL"))?;
    // SAFETY: `c` is a NUL-terminated path; dlopen has no other precondition. The
    // handle is never closed: the MPI library must stay loaded for the process's life.
    let lib = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if lib.is_null() {
        return Err(dl_error(path));
    }
    // SAFETY: `lib` is live (never closed); the ABI version is checked right after,
    // before any other function is called.
    let api = unsafe { Api::resolve(lib)? };
    // SAFETY: `shim_abi` takes no arguments and only returns a constant.
    let abi = unsafe { (api.shim_abi)() };
    if abi != SHIM_ABI {
        return Err(format!(
            "{path} speaks shim ABI {abi}, this crate {SHIM_ABI}"
        ));
    }
    Ok(Box::leak(Box::new(api)))
}

fn dl_error(path: &str) -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated message owned by libc, valid
    // until the next dl* call on this thread; it is copied at once.
    let msg = unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown error".to_owned()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    };
    format!("cannot load the MPI shim {path}: {msg}")
}

/// The shim's functions, loaded once per process, and the library they reach.
///
/// Errors: class RMA_FLAVOR if this build has no shim (the `mpi` feature was off) or
/// none for the launcher's library, or if the shim cannot be loaded.
pub fn api() -> Result<(&'static Api, Library)> {
    load(None)
}

/// [`api`] for a process whose MPI library someone else loaded (a program that
/// initialized MPI itself): the shim of that library ([`process_library`]), unless
/// `RMA_MPI_SHIM` or `RMA_MPI_LIBRARY` say otherwise.
///
/// Errors: as [`api`]; class RMA_FLAVOR if this process already runs one library's
/// shim and its MPI is the other library, or this build has no shim for it.
pub fn api_for_process() -> Result<(&'static Api, Library)> {
    let process = process_library();
    let (api, _) = load(process)?;
    // the library the shim was compiled against (RMA_MPI_SHIM's included)
    // SAFETY: takes no arguments and only returns a constant.
    let lib = match unsafe { (api.built_for)() } {
        1 => Library::Mpich,
        2 => Library::OpenMpi,
        _ => Library::Other,
    };
    match process {
        Some(p) if p != lib && lib != Library::Other => Err(Error::Flavor {
            reason: format!(
                "this process's MPI library is {} but rma-mpi loaded its shim for {}: a \
                 communicator of one cannot be used with the other (unset {ENV_LIBRARY}, or \
                 build the program against the library rma-mpi runs)",
                p.name(),
                lib.name()
            ),
        }),
        _ => Ok((api, lib)),
    }
}

fn load(prefer: Option<Library>) -> Result<(&'static Api, Library)> {
    static LOADED: OnceLock<std::result::Result<(&'static Api, Library), String>> = OnceLock::new();
    if let Some(done) = LOADED.get() {
        return done.clone().map_err(|reason| Error::Flavor { reason });
    }
    let (lib, path) = choose_shim(prefer)?;
    LOADED
        .get_or_init(|| open(&path).map(|api| (api, lib)))
        .clone()
        .map_err(|reason| Error::Flavor { reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a shim (the `mpi` feature off, no `RMA_MPI_SHIM`) loading is a typed
    /// error that names the feature, not a link failure or a panic.
    #[test]
    fn no_shim_is_a_flavor_error() {
        if !built_shims().is_empty() || std::env::var_os(ENV_SHIM).is_some() {
            return;
        }
        let e = api().unwrap_err();
        assert_eq!(e.class(), rma_core::ErrorClass::RmaFlavor);
        assert!(e.to_string().contains("`mpi` feature"), "{e}");
    }

    #[test]
    fn library_names_round_trip() {
        for library in [Library::Mpich, Library::OpenMpi, Library::Other] {
            assert_eq!(Library::from_name(library.name()), library);
        }
    }
}
