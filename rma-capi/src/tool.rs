//! Tool support (MPI 3.1 chapter 14): MPI_Pcontrol and the MPI_T tool information
//! interface, whose control variables are rma's settings.
//!
//! The control variables are the environment variables rma reads, each reporting the
//! value the library uses:
//!
//! | name | type | scope | what |
//! |---|---|---|---|
//! | `RMA_TRANSPORT` | string | ALL_EQ, writable | the transport of windows whose info names none ("": the launch mode's default) |
//! | `RMA_CHECK` | string | ALL_EQ, writable | the conflict checker of windows whose info does not set it (`off`, `conflicts`, `conflicts_log`) |
//! | `RMA_WAIT` | string | CONSTANT | how waits wait (`auto`, `spin`, `park`) |
//! | `RMA_STALL_MS` | unsigned long long | CONSTANT | how long a wait on state a live peer holds may make no progress |
//! | `RMA_LIVENESS_MS` | unsigned long long | CONSTANT | how often waits check that the peers are alive |
//!
//! A write to a writable one takes effect for the windows created after it: rma-capi
//! keeps the value and gives it to each new window as the info key it stands for
//! (`rma_transport`, `rma_check`) where the program's info does not set that key, as
//! setting the environment variable before the launch would. The process's
//! environment is never changed (setenv would race with any thread of the program
//! reading it). Writing "" drops the written value: the environment's (or the
//! default) applies again. Their scope is MPI_T_SCOPE_ALL_EQ: every rank must write
//! the same value before the same window creation (ranks whose RMA_CHECK differ fail
//! that creation with MPI_ERR_INFO). The others are read once per process, at their
//! first use: writing them is MPI_T_ERR_CVAR_SET_NEVER.
//!
//! MPI_T works before MPI_Init and after MPI_Finalize, is reference-counted
//! (`MPI_T_init_thread` n times, `MPI_T_finalize` n times) and returns its own error
//! codes (MPI_T_ERR_*), never calling an error handler. rma has no performance
//! variables and no categories (their counts are 0; their indices and names are
//! invalid); the pvar-session, pvar-handle and enum functions are refused
//! (MPI_T_ERR_INVALID, see `refused`).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Mutex, MutexGuard};

/// MPI_T error codes (mpi.h's MPI_T_ERR_*; their values are rma's own).
pub(crate) mod terr {
    pub(crate) const MEMORY: i32 = 60;
    pub(crate) const NOT_INITIALIZED: i32 = 61;
    pub(crate) const CANNOT_INIT: i32 = 62;
    pub(crate) const INVALID_INDEX: i32 = 63;
    pub(crate) const INVALID_ITEM: i32 = 64;
    pub(crate) const INVALID_HANDLE: i32 = 65;
    pub(crate) const OUT_OF_HANDLES: i32 = 66;
    pub(crate) const OUT_OF_SESSIONS: i32 = 67;
    pub(crate) const INVALID_SESSION: i32 = 68;
    pub(crate) const CVAR_SET_NOT_NOW: i32 = 69;
    pub(crate) const CVAR_SET_NEVER: i32 = 70;
    pub(crate) const PVAR_NO_STARTSTOP: i32 = 71;
    pub(crate) const PVAR_NO_WRITE: i32 = 72;
    pub(crate) const PVAR_NO_ATOMIC: i32 = 73;
    pub(crate) const INVALID_NAME: i32 = 74;
    pub(crate) const INVALID: i32 = 75;

    /// The name of an MPI_T error code, as mpi.h spells it ("" for other codes).
    pub(crate) fn name(c: i32) -> &'static str {
        match c {
            MEMORY => "MPI_T_ERR_MEMORY",
            NOT_INITIALIZED => "MPI_T_ERR_NOT_INITIALIZED",
            CANNOT_INIT => "MPI_T_ERR_CANNOT_INIT",
            INVALID_INDEX => "MPI_T_ERR_INVALID_INDEX",
            INVALID_ITEM => "MPI_T_ERR_INVALID_ITEM",
            INVALID_HANDLE => "MPI_T_ERR_INVALID_HANDLE",
            OUT_OF_HANDLES => "MPI_T_ERR_OUT_OF_HANDLES",
            OUT_OF_SESSIONS => "MPI_T_ERR_OUT_OF_SESSIONS",
            INVALID_SESSION => "MPI_T_ERR_INVALID_SESSION",
            CVAR_SET_NOT_NOW => "MPI_T_ERR_CVAR_SET_NOT_NOW",
            CVAR_SET_NEVER => "MPI_T_ERR_CVAR_SET_NEVER",
            PVAR_NO_STARTSTOP => "MPI_T_ERR_PVAR_NO_STARTSTOP",
            PVAR_NO_WRITE => "MPI_T_ERR_PVAR_NO_WRITE",
            PVAR_NO_ATOMIC => "MPI_T_ERR_PVAR_NO_ATOMIC",
            INVALID_NAME => "MPI_T_ERR_INVALID_NAME",
            INVALID => "MPI_T_ERR_INVALID",
            _ => "",
        }
    }
}

/// mpi.h's values of the constants the control variables' descriptions use.
mod k {
    pub(super) const MPI_CHAR: i32 = 1;
    pub(super) const MPI_UNSIGNED_LONG_LONG: i32 = 12;
    pub(super) const VERBOSITY_USER_BASIC: i32 = 221;
    pub(super) const VERBOSITY_TUNER_BASIC: i32 = 224;
    pub(super) const BIND_NO_OBJECT: i32 = 9700;
    pub(super) const SCOPE_CONSTANT: i32 = 60438;
    pub(super) const SCOPE_ALL_EQ: i32 = 60444;
    pub(super) const ENUM_NULL: i32 = 0;
    pub(super) const THREAD_MULTIPLE: i32 = 3;
}

/// The bytes a string control variable's buffer holds (its count of MPI_CHARs, the
/// terminating NUL included).
const STRING_COUNT: usize = 64;

/// One control variable.
struct Cvar {
    name: &'static str,
    desc: &'static str,
    verbosity: i32,
    /// MPI_CHAR (a string of up to STRING_COUNT bytes) or MPI_UNSIGNED_LONG_LONG.
    datatype: i32,
    scope: i32,
    read: fn() -> Value,
    /// None: never writable; else sets the value, false if it is not one.
    write: Option<fn(&str) -> bool>,
}

enum Value {
    Str(String),
    U64(u64),
}

fn env_str(key: &str) -> String {
    std::env::var(key)
        .map(|v| v.trim().to_string())
        .unwrap_or_default()
}

/// The written control variables: (environment variable, info key, value).
static WRITTEN: std::sync::Mutex<Vec<(&str, &str, String)>> = std::sync::Mutex::new(Vec::new());

/// What a window created now gets for the info keys the program's info does not
/// set: the written control variables, as (info key, value).
pub(crate) fn window_defaults() -> Vec<(&'static str, String)> {
    WRITTEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .map(|(_, k, v)| (*k, v.clone()))
        .collect()
}

/// The value of control variable `env`: the written one, else the environment's.
fn current(env: &str) -> String {
    let w = WRITTEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match w.iter().find(|(e, _, _)| *e == env) {
        Some((_, _, v)) => v.clone(),
        None => env_str(env),
    }
}

/// Writes control variable `env` (info key `key`); "" drops the written value.
fn set(env: &'static str, key: &'static str, value: &str) {
    let mut w = WRITTEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    w.retain(|(e, _, _)| *e != env);
    if !value.is_empty() {
        w.push((env, key, value.to_string()));
    }
}

static CVARS: [Cvar; 5] = [
    Cvar {
        name: rma_win::ENV_TRANSPORT,
        desc: "The transport of windows whose info names none (rma_transport), where it \
               can serve them: atomic, queued, mpi; empty for the launch mode's default \
               (writing empty drops a written value). \
               Read at each window's creation; the same on every rank.",
        verbosity: k::VERBOSITY_USER_BASIC,
        datatype: k::MPI_CHAR,
        scope: k::SCOPE_ALL_EQ,
        read: || Value::Str(current(rma_win::ENV_TRANSPORT)),
        write: Some(|v| {
            let known =
                v.is_empty() || rma_win::TRANSPORTS.contains(&v) || v == rma_win::MPI_TRANSPORT;
            if known {
                set(rma_win::ENV_TRANSPORT, "rma_transport", v);
            }
            known
        }),
    },
    Cvar {
        name: rma_core::CheckMode::ENV,
        desc: "The conflict checker of windows whose info does not set it (rma_check): \
               off, conflicts or conflicts_log. Read at each window's creation; the same \
               on every rank.",
        verbosity: k::VERBOSITY_USER_BASIC,
        datatype: k::MPI_CHAR,
        scope: k::SCOPE_ALL_EQ,
        read: || {
            let v = current(rma_core::CheckMode::ENV);
            Value::Str(
                match rma_core::CheckMode::parse(rma_core::CheckMode::ENV, &v) {
                    Ok(m) => m.as_str().to_string(),
                    // what the next window's creation will refuse (class INFO)
                    Err(_) => v,
                },
            )
        },
        write: Some(
            |v| match rma_core::CheckMode::parse(rma_core::CheckMode::ENV, v) {
                Ok(m) => {
                    set(rma_core::CheckMode::ENV, "rma_check", m.as_str());
                    true
                }
                Err(_) => false,
            },
        ),
    },
    Cvar {
        name: rma_core::wait::ENV_WAIT,
        desc: "How a wait waits: auto (spin on free cores, park when oversubscribed), \
               spin or park. Read once per process.",
        verbosity: k::VERBOSITY_TUNER_BASIC,
        datatype: k::MPI_CHAR,
        scope: k::SCOPE_CONSTANT,
        read: || {
            use rma_core::wait::WaitMode;
            Value::Str(
                match rma_core::wait::wait_mode() {
                    WaitMode::Auto => "auto",
                    WaitMode::Spin => "spin",
                    WaitMode::Park => "park",
                }
                .into(),
            )
        },
        write: None,
    },
    Cvar {
        name: rma_core::ENV_STALL_MS,
        desc: "Milliseconds a wait on shared state a live peer holds may make no progress \
               before it fails. Read once per process.",
        verbosity: k::VERBOSITY_TUNER_BASIC,
        datatype: k::MPI_UNSIGNED_LONG_LONG,
        scope: k::SCOPE_CONSTANT,
        read: || Value::U64(rma_core::stall_limit().as_millis() as u64),
        write: None,
    },
    Cvar {
        name: rma_win::backend::ENV_LIVENESS_MS,
        desc: "Milliseconds between a waiting rank's checks that its peers are alive. Read \
               once per process.",
        verbosity: k::VERBOSITY_TUNER_BASIC,
        datatype: k::MPI_UNSIGNED_LONG_LONG,
        scope: k::SCOPE_CONSTANT,
        read: || Value::U64(rma_win::backend::liveness_interval().as_millis() as u64),
        write: None,
    },
];

/// The interface's state: how many times it is initialized, and the handles.
struct Tool {
    refs: usize,
    /// handle - 1 -> the control variable's index.
    handles: Vec<Option<usize>>,
}

static TOOL: Mutex<Tool> = Mutex::new(Tool {
    refs: 0,
    handles: Vec::new(),
});

fn lock() -> MutexGuard<'static, Tool> {
    TOOL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The state, if initialized.
fn initialized() -> Result<MutexGuard<'static, Tool>, c_int> {
    let t = lock();
    if t.refs == 0 {
        return Err(terr::NOT_INITIALIZED);
    }
    Ok(t)
}

fn code(r: Result<(), c_int>) -> c_int {
    r.err().unwrap_or(0)
}

/// What a refused MPI_T function returns.
pub(crate) fn refused(_name: &str) -> c_int {
    match initialized() {
        Ok(_) => terr::INVALID,
        Err(e) => e,
    }
}

/// Stores `v` through `p` unless it is null (MPI_T's out-parameters may be NULL).
///
/// # Safety
/// `p` is null or valid for writing a `T`.
unsafe fn opt<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: the caller's contract.
        unsafe { p.write(v) };
    }
}

/// MPI_T's string out-parameters: `*len` is the buffer's size on input; with a
/// buffer and a size, up to size - 1 bytes and a NUL are written and `*len` becomes
/// the bytes written with the NUL; with no buffer or size 0, `*len` becomes the size
/// the whole string needs. A NULL `len` asks for nothing.
///
/// # Safety
/// `len` is null or an int; `buf` is null or holds `*len` bytes.
unsafe fn put_tstr(s: &str, buf: *mut c_char, len: *mut c_int) {
    if len.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    unsafe {
        let cap = *len;
        if buf.is_null() || cap <= 0 {
            *len = s.len() as c_int + 1;
            return;
        }
        let n = s.len().min(cap as usize - 1);
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
        *len = n as c_int + 1;
    }
}

fn cvar(index: c_int) -> Result<&'static Cvar, c_int> {
    usize::try_from(index)
        .ok()
        .and_then(|i| CVARS.get(i))
        .ok_or(terr::INVALID_INDEX)
}

fn handle_of(t: &Tool, h: c_int) -> Result<&'static Cvar, c_int> {
    usize::try_from(h - 1)
        .ok()
        .and_then(|i| t.handles.get(i).copied().flatten())
        .map(|i| &CVARS[i])
        .ok_or(terr::INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int {
    let mut t = lock();
    t.refs += 1;
    // the interface's state is behind a lock: any thread may call it
    // SAFETY: MPI's contract: an int out-parameter.
    unsafe { opt(provided, required.clamp(0, k::THREAD_MULTIPLE)) };
    0
}

#[no_mangle]
pub extern "C" fn MPI_T_finalize() -> c_int {
    code(initialized().map(|mut t| {
        t.refs -= 1;
        if t.refs == 0 {
            t.handles.clear();
        }
    }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_num(num: *mut c_int) -> c_int {
    code(initialized().map(|_| {
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { opt(num, CVARS.len() as c_int) }
    }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_info(
    index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype: *mut c_int,
    enumtype: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> c_int {
    code(initialized().and_then(|_| {
        let v = cvar(index)?;
        // SAFETY: MPI's contract: each out-parameter NULL or valid (strings: `*len`
        // bytes).
        unsafe {
            put_tstr(v.name, name, name_len);
            opt(verbosity, v.verbosity);
            opt(datatype, v.datatype);
            opt(enumtype, k::ENUM_NULL);
            put_tstr(v.desc, desc, desc_len);
            opt(bind, k::BIND_NO_OBJECT);
            opt(scope, v.scope);
        }
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_index(name: *const c_char, index: *mut c_int) -> c_int {
    code(initialized().and_then(|_| {
        if name.is_null() {
            return Err(terr::INVALID);
        }
        // SAFETY: MPI's contract: a C string.
        let name = unsafe { CStr::from_ptr(name) }.to_bytes();
        let i = CVARS
            .iter()
            .position(|v| v.name.as_bytes() == name)
            .ok_or(terr::INVALID_NAME)?;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { opt(index, i as c_int) };
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_handle_alloc(
    index: c_int,
    _obj_handle: *mut c_void,
    handle: *mut c_int,
    count: *mut c_int,
) -> c_int {
    code(initialized().and_then(|mut t| {
        let v = cvar(index)?;
        if handle.is_null() {
            return Err(terr::INVALID);
        }
        // every variable binds to no object: obj_handle is ignored, as MPI says
        let slot = match t.handles.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                t.handles.push(None);
                t.handles.len() - 1
            }
        };
        t.handles[slot] = Some(index as usize);
        let n = if v.datatype == k::MPI_CHAR {
            STRING_COUNT
        } else {
            1
        };
        // SAFETY: MPI's contract: two int out-parameters.
        unsafe {
            handle.write(slot as c_int + 1);
            opt(count, n as c_int);
        }
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_handle_free(handle: *mut c_int) -> c_int {
    code(initialized().and_then(|mut t| {
        if handle.is_null() {
            return Err(terr::INVALID);
        }
        // SAFETY: MPI's contract: a handle in-out parameter.
        let h = unsafe { handle.read() };
        handle_of(&t, h)?;
        t.handles[(h - 1) as usize] = None;
        // SAFETY: as above.
        unsafe { handle.write(0) }; // MPI_T_CVAR_HANDLE_NULL
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_read(handle: c_int, buf: *mut c_void) -> c_int {
    code(initialized().and_then(|t| {
        let v = handle_of(&t, handle)?;
        drop(t);
        if buf.is_null() {
            return Err(terr::INVALID);
        }
        match (v.read)() {
            Value::Str(s) => {
                let mut len = STRING_COUNT as c_int;
                // SAFETY: MPI's contract: `buf` holds the handle's count of chars.
                unsafe { put_tstr(&s, buf.cast(), &mut len) };
            }
            // SAFETY: MPI's contract: `buf` holds one unsigned long long.
            Value::U64(n) => unsafe { buf.cast::<u64>().write_unaligned(n) },
        }
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_write(handle: c_int, buf: *const c_void) -> c_int {
    code(initialized().and_then(|t| {
        let v = handle_of(&t, handle)?;
        let write = v.write.ok_or(terr::CVAR_SET_NEVER)?;
        if buf.is_null() {
            return Err(terr::INVALID);
        }
        // a string of at most the handle's count of chars, NUL included, read a byte
        // at a time up to its NUL (a shorter buffer, such as a string literal, is
        // never read past its end)
        let mut bytes = Vec::new();
        loop {
            // SAFETY: MPI's contract: `buf` holds a NUL-terminated string; no byte past
            // the NUL is read.
            let b = unsafe { buf.cast::<u8>().add(bytes.len()).read() };
            if b == 0 {
                break;
            }
            if bytes.len() + 1 == STRING_COUNT {
                return Err(terr::INVALID);
            }
            bytes.push(b);
        }
        let s = std::str::from_utf8(&bytes).map_err(|_| terr::INVALID)?;
        // the lock is held: writes from several threads take turns
        if write(s.trim()) {
            Ok(())
        } else {
            Err(terr::INVALID)
        }
    }))
}

// ---- no performance variables, no categories ----

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_num(num: *mut c_int) -> c_int {
    // SAFETY: MPI's contract: an int out-parameter.
    code(initialized().map(|_| unsafe { opt(num, 0) }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_info(
    _index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _verbosity: *mut c_int,
    _var_class: *mut c_int,
    _datatype: *mut c_int,
    _enumtype: *mut c_int,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _bind: *mut c_int,
    _readonly: *mut c_int,
    _continuous: *mut c_int,
    _atomic: *mut c_int,
) -> c_int {
    code(initialized().and(Err::<(), c_int>(terr::INVALID_INDEX)))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_index(
    _name: *const c_char,
    _var_class: c_int,
    _index: *mut c_int,
) -> c_int {
    code(initialized().and(Err::<(), c_int>(terr::INVALID_NAME)))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_num(num: *mut c_int) -> c_int {
    // SAFETY: MPI's contract: an int out-parameter.
    code(initialized().map(|_| unsafe { opt(num, 0) }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_changed(stamp: *mut c_int) -> c_int {
    // the categories never change
    // SAFETY: MPI's contract: an int out-parameter.
    code(initialized().map(|_| unsafe { opt(stamp, 0) }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_info(
    _index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _num_cvars: *mut c_int,
    _num_pvars: *mut c_int,
    _num_categories: *mut c_int,
) -> c_int {
    code(initialized().and(Err::<(), c_int>(terr::INVALID_INDEX)))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_index(
    _name: *const c_char,
    _index: *mut c_int,
) -> c_int {
    code(initialized().and(Err::<(), c_int>(terr::INVALID_NAME)))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_cvars(
    _index: c_int,
    _len: c_int,
    _indices: *mut c_int,
) -> c_int {
    code(initialized().and(Err::<(), c_int>(terr::INVALID_INDEX)))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_pvars(
    _index: c_int,
    _len: c_int,
    _indices: *mut c_int,
) -> c_int {
    code(initialized().and(Err::<(), c_int>(terr::INVALID_INDEX)))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_categories(
    _index: c_int,
    _len: c_int,
    _indices: *mut c_int,
) -> c_int {
    code(initialized().and(Err::<(), c_int>(terr::INVALID_INDEX)))
}

/// MPI_Pcontrol: profiling control, which a library without a profiler ignores; a
/// tool's MPI_Pcontrol sees the level (and reaches this one as PMPI_Pcontrol).
///
/// MPI declares it variadic (`int MPI_Pcontrol(const int level, ...)`); it is defined
/// with its one named parameter, which the C calling conventions rma runs on (x86-64
/// and AArch64 System V) pass in the same place either way, the rest being ignored.
#[no_mangle]
pub extern "C" fn MPI_Pcontrol(_level: c_int) -> c_int {
    0
}
