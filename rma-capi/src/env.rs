//! Starting and ending MPI, time, memory, error strings and info objects.

use crate::{
    c_str, call, code, comm, dtype, fail, inp, out, put_str, Errh, On, State, Table, PHASE, R,
};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

/// How MPI_Abort reaches the launcher (rma's shared memory; set at MPI_Init).
static ABORT: OnceLock<rma_win::backend::AbortHandle> = OnceLock::new();

const THREAD_FUNNELED: c_int = 1;
const THREAD_SERIALIZED: c_int = 2;
pub(crate) const THREAD_MULTIPLE: c_int = 3;

/// The thread level provided for `required`: up to MPI_THREAD_MULTIPLE on rma's
/// shared memory; at most FUNNELED under the mpi transport, whose system MPI world
/// stays on the thread that initialized it.
fn level_for(required: c_int, world: &rma_win::World) -> c_int {
    let top = if world.any_thread() {
        THREAD_MULTIPLE
    } else {
        THREAD_FUNNELED
    };
    required.clamp(0, top)
}

fn init(required: c_int) -> R<c_int> {
    if PHASE.load(Ordering::Relaxed) != 0 {
        return Err(fail(code::OTHER, "MPI_Init called twice"));
    }
    MPI_Wtime(); // its origin: now
    let world = match rma_win::World::from_env() {
        Ok(Some(w)) => w,
        Ok(None) => singleton()?,
        // under another MPI's launcher rma tries that MPI as its transport: where it
        // cannot, say what the process is missing
        Err(e) => {
            let mut f = crate::Fail::from(e);
            if let Some(v) = foreign_launcher() {
                f.msg = format!("{}; {}", foreign_note(v), f.msg);
            }
            return Err(f);
        }
    };
    let mut st = State {
        comms: Table::new(),
        groups: Table::new(),
        types: Table::new(),
        infos: Table::new(),
        wins: Table::new(),
        graveyard: Vec::new(),
        reqs: Table::new(),
        ops: Table::new(),
        out_comms: Vec::new(),
        colls_by_messages: false,
        errhs: Table::new(),
        keyvals: BTreeMap::new(),
        next_keyval: 100,
        p2p: crate::p2p::P2p::new(&world)?,
        thread_level: level_for(required, &world),
    };
    st.errhs.put(crate::ERRH_FATAL, Errh::Fatal);
    st.errhs.put(crate::ERRH_RETURN, Errh::Return);
    st.errhs.put(crate::ERRH_ABORT, Errh::Abort);
    st.infos.put(1, rma_win::Info::new()); // MPI_INFO_ENV
    dtype::install(&mut st);
    comm::install(&mut st, world)?;
    // every rank's message socket is open before any rank returns; and the ranks
    // agree on how blocking collectives run: over messages if any rank is at
    // MPI_THREAD_MULTIPLE (ranks may ask for different levels), so all take one path
    let levels = st.world0().allgather(&[st.thread_level as u8])?;
    st.colls_by_messages = levels
        .iter()
        .any(|l| l.first() == Some(&(THREAD_MULTIPLE as u8)));
    let level = st.thread_level;
    let _ = crate::MAIN.set(std::thread::current().id());
    if let Some(h) = st.world0().abort_handle() {
        let _ = ABORT.set(h);
    }
    crate::install_state(st);
    crate::ANY_THREAD.store(level >= THREAD_SERIALIZED, Ordering::Release);
    PHASE.store(1, Ordering::Relaxed);
    Ok(level)
}

/// Variables another MPI library's launcher sets in each process it starts.
const FOREIGN_LAUNCHERS: &[&str] = &[
    "PMI_RANK",
    "PMI_SIZE",
    "PMIX_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "MPI_LOCALNRANKS",
    "HYDI_CONTROL_FD",
];

/// The first variable of another MPI's launcher this process carries.
fn foreign_launcher() -> Option<&'static str> {
    FOREIGN_LAUNCHERS
        .iter()
        .copied()
        .find(|v| std::env::var_os(v).is_some())
}

fn foreign_note(var: &str) -> String {
    format!(
        "this process was started by another MPI library's launcher ({var} is set); a \
         program built with rmacc runs under rmarun (`rmarun -n N ./program`), or alone \
         as a world of one"
    )
}

/// The world of a program run without rmarun: a world of one, as MPI's singleton
/// start has it, unless another MPI's launcher started the process (then it would
/// run as N unrelated singletons: refused).
fn singleton() -> R<rma_win::World> {
    if let Some(v) = foreign_launcher() {
        return Err(fail(code::OTHER, foreign_note(v)));
    }
    Ok(rma_win::World::singleton()?)
}

/// MPI_Init and MPI_Init_thread, which run before there is a state to call with.
fn start(name: &str, required: c_int, provided: *mut c_int) -> c_int {
    match init(required) {
        Ok(level) => {
            // SAFETY: MPI's contract: null or an int out-parameter.
            if let Some(p) = unsafe { provided.as_mut() } {
                *p = level;
            }
            0
        }
        Err(e) => crate::raise(name, On::World, e),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init(_argc: *mut c_int, _argv: *mut c_void) -> c_int {
    start("MPI_Init", 0, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut c_void,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    start("MPI_Init_thread", required, provided)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    // SAFETY: MPI's contract: an int out-parameter.
    if let Some(f) = unsafe { flag.as_mut() } {
        *f = c_int::from(PHASE.load(Ordering::Relaxed) != 0);
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    // SAFETY: MPI's contract: an int out-parameter.
    if let Some(f) = unsafe { flag.as_mut() } {
        *f = c_int::from(PHASE.load(Ordering::Relaxed) == 2);
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    call("MPI_Query_thread", On::World, |st| {
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(provided, st.thread_level, "provided") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    // answered without the state, which lives with the thread that called MPI_Init
    let main = crate::MAIN.get().is_some() && crate::is_main();
    // SAFETY: MPI's contract: an int out-parameter.
    if let Some(f) = unsafe { flag.as_mut() } {
        *f = c_int::from(main);
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    // MPI_COMM_SELF's attributes are deleted first, as MPI has it (libraries hook
    // their own finalization there)
    let rc = call("MPI_Finalize", On::World, |st| {
        let attrs = std::mem::take(&mut st.comm_mut(comm::SELF)?.attrs);
        comm::delete_attrs(&st.keyvals, comm::SELF, &attrs);
        Ok(())
    });
    if rc != 0 {
        return rc;
    }
    let rc = call("MPI_Finalize", On::World, |st| {
        st.progress();
        // every message this rank sent reaches its receiver's socket first
        let w = st.world0();
        st.p2p.wait_all_sent(w)?;
        st.world0().barrier()?;
        Ok(())
    });
    if rc != 0 {
        return rc;
    }
    // windows first (they borrow their communicators' worlds), then communicators,
    // MPI_COMM_WORLD last
    let st = crate::take_state();
    crate::mem::unlink_all();
    if let Some(mut st) = st {
        st.drop_windows();
        for h in comm::all(&st.comms) {
            if h != comm::WORLD {
                st.comms.remove(h);
            }
        }
        drop(st);
    }
    PHASE.store(2, Ordering::Relaxed);
    0
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Abort(_c: c_int, errorcode: c_int) -> c_int {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // rmarun ends every other rank at once when asked, whatever this rank's status
    // (the communicator's ranks are among MPI_COMM_WORLD's: all of them end)
    // without the library's lock: another thread may hold it (waiting in a
    // collective, say), or this call may come from inside a callback
    if let Some(h) = ABORT.get() {
        h.abort();
    }
    // the exit status is the code, as a process status holds it (its low 8 bits)
    std::process::exit(errorcode & 255);
}

/// MPI_Wtime's origin: the CLOCK_MONOTONIC second of its first call.
static WTIME_T0: OnceLock<libc::time_t> = OnceLock::new();

#[no_mangle]
pub extern "C" fn MPI_Wtime() -> f64 {
    // CLOCK_MONOTONIC, read straight (through the vDSO: no system call), in seconds
    // since an arbitrary moment, as MPI allows; std's Instant arithmetic around the
    // same read cost as much again (benchmarks call this twice per iteration)
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter. CLOCK_MONOTONIC always exists on Linux,
    // so this cannot fail (were it to, `ts` stays zero).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    // seconds since the first call (MPI_Init makes one), so that the values stay small
    // and a `float` or an f64 keeps nanoseconds, whatever the machine's uptime
    let t0 = *WTIME_T0.get_or_init(|| ts.tv_sec);
    (ts.tv_sec - t0) as f64 + ts.tv_nsec as f64 * 1e-9
}

#[no_mangle]
pub extern "C" fn MPI_Wtick() -> f64 {
    1e-9
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_version(v: *mut c_int, sub: *mut c_int) -> c_int {
    // SAFETY: MPI's contract: two int out-parameters (callable before MPI_Init).
    unsafe {
        if let Some(v) = v.as_mut() {
            *v = 3;
        }
        if let Some(s) = sub.as_mut() {
            *s = 1;
        }
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_library_version(s: *mut c_char, len: *mut c_int) -> c_int {
    let v = format!(
        "rma {} (C interface over rma-win)",
        env!("CARGO_PKG_VERSION")
    );
    // SAFETY: MPI's contract: MPI_MAX_LIBRARY_VERSION_STRING bytes.
    unsafe { put_str(&v, s, 256, len) };
    0
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_processor_name(s: *mut c_char, len: *mut c_int) -> c_int {
    let host =
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_else(|_| "localhost".into());
    // SAFETY: MPI's contract: MPI_MAX_PROCESSOR_NAME bytes.
    unsafe { put_str(host.trim(), s, 256, len) };
    0
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alloc_mem(size: isize, _info: c_int, baseptr: *mut c_void) -> c_int {
    call("MPI_Alloc_mem", On::World, |st| {
        let n = usize::try_from(size)
            .map_err(|_| fail(code::SIZE, format!("size {size} is negative")))?;
        // a shared segment where rma's processes run (see crate::mem)
        let world = st.world0();
        let shm = match world.segment_name() {
            Some(name) if world.mode() == rma_win::LaunchMode::Processes => Some(name.to_owned()),
            _ => None,
        };
        if let Some(p) = shm.and_then(|name| crate::mem::allocate(&name, n)) {
            // SAFETY: MPI's contract: `baseptr` points to a `void *`.
            return unsafe { out(baseptr.cast::<*mut c_void>(), p.cast::<c_void>(), "baseptr") };
        }
        // SAFETY: malloc of at least one byte; the program frees it with MPI_Free_mem.
        let p = unsafe { libc::malloc(n.max(1)) };
        if p.is_null() {
            return Err(fail(code::NO_MEM, format!("cannot allocate {n} bytes")));
        }
        // SAFETY: MPI's contract: `baseptr` points to a `void *`.
        unsafe { out(baseptr.cast::<*mut c_void>(), p, "baseptr") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Free_mem(base: *mut c_void) -> c_int {
    match crate::mem::free(base as usize) {
        crate::mem::Freed::Block => 0,
        // an address inside a block: refused (free() would abort the process), through
        // the error handler while MPI is initialized, as a code after MPI_Finalize
        crate::mem::Freed::Inside => {
            let inside = || {
                crate::fail(
                    crate::code::BASE,
                    "the address lies inside a block of MPI_Alloc_mem, not at its start",
                )
            };
            if crate::PHASE.load(std::sync::atomic::Ordering::Relaxed) == 2 {
                crate::code::BASE
            } else {
                crate::call("MPI_Free_mem", crate::On::World, |_| Err(inside()))
            }
        }
        crate::mem::Freed::NotABlock => {
            // SAFETY: MPI's contract: memory from MPI_Alloc_mem (or NULL), and not one of
            // its shared blocks (just checked): malloc's.
            unsafe { libc::free(base) };
            0
        }
    }
}

fn describe(c: c_int) -> String {
    match crate::code::name(c) {
        "" => format!("unknown error code {c}"),
        "MPI_SUCCESS" => "MPI_SUCCESS: no error".into(),
        n => format!("{n}: the MPI standard's error class of that name (rma_win::ErrorClass)"),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Error_string(c: c_int, s: *mut c_char, len: *mut c_int) -> c_int {
    if crate::code::name(c).is_empty() {
        // SAFETY: as below.
        unsafe { put_str(&describe(c), s, 512, len) };
        return code::ARG;
    }
    // SAFETY: MPI's contract: MPI_MAX_ERROR_STRING bytes.
    unsafe { put_str(&describe(c), s, 512, len) };
    0
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Error_class(c: c_int, class: *mut c_int) -> c_int {
    if crate::code::name(c).is_empty() {
        return code::ARG;
    }
    // SAFETY: MPI's contract: an int out-parameter.
    if let Some(p) = unsafe { class.as_mut() } {
        *p = c;
    }
    0
}

// ---- info objects ----

impl State {
    fn info_mut(&mut self, i: c_int) -> R<&mut rma_win::Info> {
        self.infos
            .get_mut(i)
            .ok_or_else(|| fail(code::INFO, format!("{i} is not an info object")))
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create(i: *mut c_int) -> c_int {
    call("MPI_Info_create", On::World, |st| {
        let h = st.infos.insert(2, rma_win::Info::new());
        // SAFETY: MPI's contract: an info out-parameter.
        unsafe { out(i, h, "info") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_set(i: c_int, k: *const c_char, v: *const c_char) -> c_int {
    call("MPI_Info_set", On::World, |st| {
        // SAFETY: MPI's contract: C strings.
        let (k, v) = unsafe { (c_str(k, "key")?, c_str(v, "value")?) };
        if k.is_empty() || k.len() > 255 {
            return Err(fail(
                code::INFO_KEY,
                format!("key {k:?} is empty or too long"),
            ));
        }
        if v.len() > 1024 {
            return Err(fail(code::INFO_VALUE, "value longer than MPI_MAX_INFO_VAL"));
        }
        st.info_mut(i)?.set(&k, &v);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get(
    i: c_int,
    k: *const c_char,
    n: c_int,
    v: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Info_get", On::World, |st| {
        // SAFETY: MPI's contract: a C string.
        let k = unsafe { c_str(k, "key")? };
        let got = st.info_mut(i)?.get(&k).map(str::to_owned);
        // SAFETY: MPI's contract: `v` holds n + 1 bytes, `flag` an int.
        unsafe {
            if let Some(val) = &got {
                put_str(val, v, n.max(0) as usize + 1, std::ptr::null_mut());
            }
            out(flag, c_int::from(got.is_some()), "flag")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_valuelen(
    i: c_int,
    k: *const c_char,
    n: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Info_get_valuelen", On::World, |st| {
        // SAFETY: MPI's contract: a C string.
        let k = unsafe { c_str(k, "key")? };
        let got = st.info_mut(i)?.get(&k).map(str::len);
        // SAFETY: MPI's contract: two int out-parameters.
        unsafe {
            if let Some(l) = got {
                out(n, l as c_int, "valuelen")?;
            }
            out(flag, c_int::from(got.is_some()), "flag")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nkeys(i: c_int, n: *mut c_int) -> c_int {
    call("MPI_Info_get_nkeys", On::World, |st| {
        let l = st.info_mut(i)?.len() as c_int;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(n, l, "nkeys") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nthkey(i: c_int, n: c_int, k: *mut c_char) -> c_int {
    call("MPI_Info_get_nthkey", On::World, |st| {
        let key = usize::try_from(n)
            .ok()
            .and_then(|n| {
                st.info_mut(i)
                    .ok()?
                    .iter()
                    .nth(n)
                    .map(|(k, _)| k.to_owned())
            })
            .ok_or_else(|| fail(code::ARG, format!("no key {n}")))?;
        // SAFETY: MPI's contract: MPI_MAX_INFO_KEY + 1 bytes.
        unsafe { put_str(&key, k, 256, std::ptr::null_mut()) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_delete(i: c_int, k: *const c_char) -> c_int {
    call("MPI_Info_delete", On::World, |st| {
        // SAFETY: MPI's contract: a C string.
        let k = unsafe { c_str(k, "key")? };
        st.info_mut(i)?
            .remove(&k)
            .map(|_| ())
            .ok_or_else(|| fail(code::INFO_NOKEY, format!("no key {k:?}")))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_dup(i: c_int, new: *mut c_int) -> c_int {
    call("MPI_Info_dup", On::World, |st| {
        let copy = st.info_mut(i)?.clone();
        let h = st.infos.insert(2, copy);
        // SAFETY: MPI's contract: an info out-parameter.
        unsafe { out(new, h, "newinfo") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_free(i: *mut c_int) -> c_int {
    call("MPI_Info_free", On::World, |st| {
        // SAFETY: MPI's contract: an info handle.
        let h = unsafe { inp(i, "info")? };
        if h < 2 {
            return Err(fail(code::INFO, "a predefined info object cannot be freed"));
        }
        st.infos
            .remove(h)
            .ok_or_else(|| fail(code::INFO, format!("{h} is not an info object")))?;
        // SAFETY: as above.
        unsafe { out(i, 0, "info") }
    })
}
