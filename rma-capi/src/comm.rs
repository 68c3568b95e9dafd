//! Communicators (rma worlds), groups (sets of MPI_COMM_WORLD ranks), attributes and
//! keyvals, names and error handlers of communicators.

use crate::{
    arr, c_str, call, code, fail, inp, later, out, put_str, Errh, Keyval, On, State, Table,
    ERRH_FATAL, R,
};
use rma_win::World;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void};

pub(crate) const WORLD: i32 = 1;
pub(crate) const SELF: i32 = 2;
const FIRST_COMM: i32 = 3;
const GROUP_EMPTY: i32 = 1;
const FIRST_GROUP: i32 = 2;
pub(crate) const UNDEFINED: c_int = -32766;

/// One communicator: an rma world and what MPI keeps with it.
pub(crate) struct Comm {
    /// Boxed so that windows can borrow it while the table moves; dropped when the
    /// communicator is freed and no window borrows it.
    world: *mut World,
    /// MPI_COMM_WORLD rank of each rank.
    pub(crate) ranks: Vec<usize>,
    pub(crate) name: String,
    pub(crate) errh: i32,
    pub(crate) attrs: BTreeMap<i32, usize>,
    /// Windows made on it (they borrow its world).
    pub(crate) windows: usize,
    freed: bool,
    /// Point-to-point context: equal on every member, distinct from other
    /// communicators that share members.
    pub(crate) ctx: u64,
    children: u64,
    /// An intercommunicator's remote group (MPI_COMM_WORLD ranks); its local group
    /// is `ranks`, its world the local group's.
    pub(crate) remote: Option<Vec<usize>>,
    /// Nonblocking collectives started on it (each rank numbers them alike, as MPI
    /// orders collectives on a communicator).
    pub(crate) nbc: u64,
    /// Its virtual topology, if one was attached.
    pub(crate) topo: Option<crate::topo::Topo>,
}

impl Drop for Comm {
    fn drop(&mut self) {
        // SAFETY: `world` came from Box::into_raw and is dropped only here, once no
        // window borrows it (windows are dropped before their communicator: see
        // `release` and State's drop order at MPI_Finalize).
        drop(unsafe { Box::from_raw(self.world) });
    }
}

impl Comm {
    pub(crate) fn new(world: World, world0: Option<&World>, ctx: u64, name: &str) -> R<Comm> {
        let n = world.size();
        let all: Vec<usize> = (0..n).collect();
        let ranks = match world0 {
            None => all,
            Some(w0) => world
                .translate_ranks(&all, w0)?
                .into_iter()
                .map(|r| r.ok_or_else(|| fail(code::INTERN, "a rank outside MPI_COMM_WORLD")))
                .collect::<R<_>>()?,
        };
        Ok(Comm {
            world: Box::into_raw(Box::new(world)),
            ranks,
            name: name.into(),
            errh: ERRH_FATAL,
            attrs: BTreeMap::new(),
            windows: 0,
            freed: false,
            ctx,
            children: 0,
            remote: None,
            nbc: 0,
            topo: None,
        })
    }

    /// The communicator's world, for as long as the communicator lives (a window
    /// that borrows it counts itself in `windows` first).
    pub(crate) fn world(&self) -> &'static World {
        // SAFETY: the box lives until this Comm drops, which `release` defers while
        // windows count on it; callers that keep the reference longer than this call
        // (windows) register in `windows`.
        unsafe { &*self.world }
    }

    pub(crate) fn rank(&self) -> usize {
        self.world().rank()
    }

    pub(crate) fn size(&self) -> usize {
        self.ranks.len()
    }

    /// The context of its nonblocking collectives' messages (apart from its
    /// point-to-point messages).
    pub(crate) fn nbc_ctx(&self) -> u64 {
        mix(self.ctx, 0x006e_6263_5f63_7478)
    }

    pub(crate) fn child_ctx(&mut self, salt: u64) -> u64 {
        self.children += 1;
        mix(mix(self.ctx, self.children), salt)
    }
}

fn mix(a: u64, b: u64) -> u64 {
    let mut x = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 29)
}

impl State {
    pub(crate) fn comm(&self, c: i32) -> R<&Comm> {
        match self.comms.get(c) {
            Some(x) if !x.freed => Ok(x),
            _ => Err(fail(code::COMM, format!("{c} is not a communicator"))),
        }
    }

    /// An intracommunicator (collectives, windows and new communicators are not
    /// made on intercommunicators in rma).
    pub(crate) fn intra(&self, c: i32) -> R<&Comm> {
        let x = self.comm(c)?;
        if x.remote.is_some() {
            return Err(fail(
                code::COMM,
                "an intercommunicator: rma supports only point-to-point, MPI_Intercomm_merge and queries on it",
            ));
        }
        Ok(x)
    }

    pub(crate) fn comm_mut(&mut self, c: i32) -> R<&mut Comm> {
        match self.comms.get_mut(c) {
            Some(x) if !x.freed => Ok(x),
            _ => Err(fail(code::COMM, format!("{c} is not a communicator"))),
        }
    }

    pub(crate) fn world0(&self) -> &'static World {
        self.comms.get(WORLD).expect("MPI_COMM_WORLD").world()
    }

    fn add_comm(&mut self, world: World, ctx: u64) -> R<i32> {
        let c = Comm::new(world, Some(self.world0()), ctx, "")?;
        Ok(self.comms.insert(FIRST_COMM, c))
    }

    /// MPI_Comm_free's end: marks `c` freed, and drops it if no window uses it.
    pub(crate) fn drop_comm(&mut self, c: i32) {
        let gone = match self.comms.get_mut(c) {
            Some(x) => {
                x.freed = true;
                x.windows == 0
            }
            None => false,
        };
        if gone {
            self.comms.remove(c);
        }
    }

    /// A window on communicator `c` let go of its world.
    pub(crate) fn release(&mut self, c: i32) {
        let gone = match self.comms.get_mut(c) {
            Some(x) => {
                x.windows -= 1;
                x.freed && x.windows == 0
            }
            None => false,
        };
        if gone {
            self.comms.remove(c);
        }
    }

    pub(crate) fn group(&self, g: i32) -> R<&Vec<usize>> {
        self.groups
            .get(g)
            .ok_or_else(|| fail(code::GROUP, format!("{g} is not a group")))
    }

    fn new_group(&mut self, ranks: Vec<usize>) -> i32 {
        if ranks.is_empty() {
            return GROUP_EMPTY;
        }
        self.groups.insert(FIRST_GROUP, ranks)
    }

    /// The ranks in communicator `c` of a group's members.
    pub(crate) fn local_ranks(&self, c: i32, g: i32) -> R<Vec<usize>> {
        let comm = self.comm(c)?;
        self.group(g)?
            .iter()
            .map(|w| {
                comm.ranks.iter().position(|x| x == w).ok_or_else(|| {
                    fail(
                        code::GROUP,
                        format!("MPI_COMM_WORLD rank {w} of the group is not in the communicator"),
                    )
                })
            })
            .collect()
    }
}

pub(crate) fn install(st: &mut State, world: World) -> R {
    let me = world.rank();
    let selfw = world
        .split(Some(me as u32), 0)?
        .ok_or_else(|| fail(code::INTERN, "MPI_COMM_SELF"))?;
    let w = Comm::new(world, None, 1, "MPI_COMM_WORLD")?;
    let mut s = Comm::new(selfw, None, 2, "MPI_COMM_SELF")?;
    s.ranks = vec![me];
    st.comms.put(WORLD, w);
    st.comms.put(SELF, s);
    st.groups.put(GROUP_EMPTY, Vec::new());
    Ok(())
}

/// Hands out the new handle of a collective that gives some ranks no communicator.
fn give(st: &mut State, w: Option<World>, ctx: u64, new: *mut c_int) -> R {
    let h = match w {
        Some(w) => st.add_comm(w, ctx)?,
        None => 0,
    };
    // SAFETY: MPI's contract: `new` points to a communicator handle.
    unsafe { out(new, h, "newcomm") }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_rank(c: c_int, rank: *mut c_int) -> c_int {
    call("MPI_Comm_rank", On::Comm(c), |st| {
        let r = st.comm(c)?.rank() as c_int;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(rank, r, "rank") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_size(c: c_int, size: *mut c_int) -> c_int {
    call("MPI_Comm_size", On::Comm(c), |st| {
        let n = st.comm(c)?.size() as c_int;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(size, n, "size") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_size(c: c_int, _size: *mut c_int) -> c_int {
    call("MPI_Comm_remote_size", On::Comm(c), |st| {
        let n = st.comm(c)?.remote.as_ref().map(Vec::len);
        let n = n.ok_or_else(|| fail(code::COMM, "not an intercommunicator"))?;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(_size, n as c_int, "size") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_test_inter(c: c_int, flag: *mut c_int) -> c_int {
    call("MPI_Comm_test_inter", On::Comm(c), |st| {
        let inter = st.comm(c)?.remote.is_some();
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(flag, c_int::from(inter), "flag") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split(
    c: c_int,
    color: c_int,
    key: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Comm_split", On::Comm(c), |st| {
        st.intra(c)?;
        let color = match color {
            UNDEFINED => None,
            c if c >= 0 => Some(c as u32),
            _ => return Err(fail(code::ARG, format!("color {color} is negative"))),
        };
        let h = st.split(c, color, key)?;
        // SAFETY: MPI's contract: `new` points to a communicator handle.
        unsafe { out(new, h, "newcomm") }
    })
}

impl State {
    /// MPI_Comm_split of intracommunicator `c`: the new communicator's handle, or
    /// MPI_COMM_NULL (0) for a rank without a color.
    pub(crate) fn split(&mut self, c: i32, color: Option<u32>, key: c_int) -> R<i32> {
        self.intra(c)?;
        self.progress();
        let comm = self.comm_mut(c)?;
        let ctx = comm.child_ctx(color.map_or(u64::MAX, u64::from));
        match comm.world().split(color, key)? {
            Some(w) => self.add_comm(w, ctx),
            None => Ok(0),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split_type(
    c: c_int,
    kind: c_int,
    key: c_int,
    _info: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Comm_split_type", On::Comm(c), |st| {
        st.intra(c)?;
        // every rank of an rmarun world is on this node: MPI_COMM_TYPE_SHARED keeps all
        let color = match kind {
            1 => Some(0),
            UNDEFINED => None,
            _ => return Err(fail(code::ARG, format!("split type {kind} is not known"))),
        };
        let comm = st.comm_mut(c)?;
        let ctx = comm.child_ctx(7);
        let w = comm.world().split(color, key)?;
        give(st, w, ctx, new)
    })
}

/// Copies the attributes of a communicator being duplicated into `new`: the
/// predefined copy functions at once, the program's after the call has released the
/// library (they may call MPI).
pub(crate) fn copy_attrs(
    keyvals: &BTreeMap<i32, Keyval>,
    old_handle: c_int,
    attrs: &BTreeMap<i32, usize>,
    new: c_int,
) -> BTreeMap<i32, usize> {
    let mut now = BTreeMap::new();
    for (&k, &v) in attrs {
        let Some(kv) = keyvals.get(&k) else { continue };
        match kv.copy {
            0 => {}
            1 => {
                now.insert(k, v);
            }
            f => {
                type Copy = unsafe extern "C-unwind" fn(
                    c_int,
                    c_int,
                    usize,
                    usize,
                    *mut usize,
                    *mut c_int,
                ) -> c_int;
                // SAFETY: the program registered `f` as a copy function of this shape.
                let f: Copy = unsafe { std::mem::transmute::<usize, Copy>(f) };
                let extra = kv.extra;
                later(move || {
                    let (mut out_v, mut flag) = (0usize, 0 as c_int);
                    // SAFETY: calling the program's copy function with live out-pointers.
                    let rc = unsafe { f(old_handle, k, extra, v, &mut out_v, &mut flag) };
                    if rc == 0 && flag != 0 {
                        crate::with_state(|st| {
                            if let Some(c) = st.comms.get_mut(new) {
                                c.attrs.insert(k, out_v);
                            }
                        });
                    }
                });
            }
        }
    }
    now
}

/// Calls the delete functions of the attributes of an object going away (after the
/// call, outside the library).
pub(crate) fn delete_attrs(
    keyvals: &BTreeMap<i32, Keyval>,
    handle: c_int,
    attrs: &BTreeMap<i32, usize>,
) {
    for (&k, &v) in attrs {
        delete_one(keyvals, handle, k, v);
    }
}

fn delete_one(keyvals: &BTreeMap<i32, Keyval>, handle: c_int, k: i32, v: usize) {
    let Some(kv) = keyvals.get(&k) else { return };
    if kv.delete == 0 {
        return;
    }
    type Del = unsafe extern "C-unwind" fn(c_int, c_int, usize, usize) -> c_int;
    // SAFETY: the program registered `delete` as a delete function of this shape.
    let f: Del = unsafe { std::mem::transmute::<usize, Del>(kv.delete) };
    let extra = kv.extra;
    later(move || {
        // SAFETY: calling the program's delete function with its own values.
        unsafe { f(handle, k, v, extra) };
    });
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup(c: c_int, new: *mut c_int) -> c_int {
    call("MPI_Comm_dup", On::Comm(c), |st| {
        st.intra(c)?;
        let comm = st.comm_mut(c)?;
        let ctx = comm.child_ctx(3);
        let w = comm.world().dup()?;
        let (errh, attrs) = (comm.errh, comm.attrs.clone());
        let h = st.add_comm(w, ctx)?;
        let attrs = copy_attrs(&st.keyvals, c, &attrs, h);
        let x = st.comm_mut(h)?;
        x.errh = errh;
        x.attrs = attrs;
        // SAFETY: MPI's contract: a communicator out-parameter.
        unsafe { out(new, h, "newcomm") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create(c: c_int, g: c_int, new: *mut c_int) -> c_int {
    call("MPI_Comm_create", On::Comm(c), |st| {
        st.intra(c)?;
        let local = st.local_ranks(c, g)?;
        let group = rma_win::Group::new(&local)?;
        let comm = st.comm_mut(c)?;
        let ctx = comm.child_ctx(5);
        let w = comm.world().create(&group)?;
        give(st, w, ctx, new)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_group(
    c: c_int,
    g: c_int,
    tag: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Comm_create_group", On::Comm(c), |st| {
        st.intra(c)?;
        let local = st.local_ranks(c, g)?;
        let comm = st.comm(c)?;
        if !local.contains(&comm.rank()) {
            return Err(fail(code::GROUP, "the calling rank is not in the group"));
        }
        let mut ctx = mix(comm.ctx, 0x6372_6561_7465 ^ tag as u64);
        for &r in &local {
            ctx = mix(ctx, r as u64);
        }
        let group = rma_win::Group::new(&local)?;
        let w = comm.world().create_group(&group, tag as u32)?;
        give(st, Some(w), ctx, new)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(cp: *mut c_int) -> c_int {
    // SAFETY: MPI's contract: `cp` points to a communicator handle.
    let c = unsafe { cp.as_ref().copied().unwrap_or(0) };
    call("MPI_Comm_free", On::Comm(c), |st| {
        if c == WORLD || c == SELF {
            return Err(fail(
                code::COMM,
                "a predefined communicator cannot be freed",
            ));
        }
        st.progress();
        let comm = st.comm_mut(c)?;
        let attrs = std::mem::take(&mut comm.attrs);
        // the delete functions see the communicator still valid (MPI calls them
        // before it goes); then it is marked freed, and dropped once no window uses it
        delete_attrs(&st.keyvals, c, &attrs);
        crate::later(move || crate::with_state(|st| st.drop_comm(c)));
        // SAFETY: as above.
        unsafe { out(cp, 0, "comm") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_group(c: c_int, g: *mut c_int) -> c_int {
    call("MPI_Comm_group", On::Comm(c), |st| {
        let ranks = st.comm(c)?.ranks.clone();
        let h = st.new_group(ranks);
        // SAFETY: MPI's contract: a group out-parameter.
        unsafe { out(g, h, "group") }
    })
}

fn compare_ranks(a: &[usize], b: &[usize]) -> c_int {
    if a == b {
        return 1; // congruent (or ident, decided by the caller)
    }
    let (mut x, mut y) = (a.to_vec(), b.to_vec());
    x.sort_unstable();
    y.sort_unstable();
    if x == y {
        2
    } else {
        3
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_compare(a: c_int, b: c_int, result: *mut c_int) -> c_int {
    call("MPI_Comm_compare", On::Comm(a), |st| {
        let r = if a == b {
            st.comm(a)?;
            0
        } else {
            compare_ranks(&st.comm(a)?.ranks, &st.comm(b)?.ranks)
        };
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(result, r, "result") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_name(c: c_int, name: *mut c_char, len: *mut c_int) -> c_int {
    call("MPI_Comm_get_name", On::Comm(c), |st| {
        let n = st.comm(c)?.name.clone();
        // SAFETY: MPI's contract: MPI_MAX_OBJECT_NAME bytes.
        unsafe { put_str(&n, name, 128, len) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_name(c: c_int, name: *const c_char) -> c_int {
    call("MPI_Comm_set_name", On::Comm(c), |st| {
        // SAFETY: MPI's contract: a C string.
        let n = unsafe { c_str(name, "name")? };
        st.comm_mut(c)?.name = n.chars().take(127).collect();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_errhandler(
    f: Option<unsafe extern "C-unwind" fn(*mut c_int, *mut c_int, ...)>,
    e: *mut c_int,
) -> c_int {
    call("MPI_Comm_create_errhandler", On::World, |st| {
        let f = f.ok_or_else(|| fail(code::ARG, "the function is NULL"))?;
        let h = st.errhs.insert(4, Errh::User(f));
        // SAFETY: MPI's contract: an errhandler out-parameter.
        unsafe { out(e, h, "errhandler") }
    })
}

/// Checks an error handler handle.
pub(crate) fn check_errh(st: &State, e: c_int) -> R {
    st.errhs
        .get(e)
        .map(|_| ())
        .ok_or_else(|| fail(code::ARG, format!("{e} is not an error handler")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_errhandler(c: c_int, e: c_int) -> c_int {
    call("MPI_Comm_set_errhandler", On::Comm(c), |st| {
        check_errh(st, e)?;
        st.comm_mut(c)?.errh = e;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_errhandler(c: c_int, e: *mut c_int) -> c_int {
    call("MPI_Comm_get_errhandler", On::Comm(c), |st| {
        let h = st.comm(c)?.errh;
        // SAFETY: MPI's contract: an errhandler out-parameter.
        unsafe { out(e, h, "errhandler") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_call_errhandler(c: c_int, errorcode: c_int) -> c_int {
    let ok = call("MPI_Comm_call_errhandler", On::Comm(c), |st| {
        st.comm(c).map(|_| ())
    });
    if ok != 0 {
        return ok;
    }
    crate::raise(
        "MPI_Comm_call_errhandler",
        On::Comm(c),
        fail(errorcode, "raised by the program"),
    );
    0
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_free(e: *mut c_int) -> c_int {
    call("MPI_Errhandler_free", On::World, |st| {
        // SAFETY: MPI's contract: an errhandler handle.
        let h = unsafe { inp(e, "errhandler")? };
        check_errh(st, h)?;
        if h > 3 {
            // a handler still set on an object keeps working: user handlers are
            // kept for the life of the process (a few words each)
        }
        // SAFETY: as above.
        unsafe { out(e, 0, "errhandler") }
    })
}

// ---- keyvals and attributes (communicators; windows use the same keyvals) ----

pub(crate) fn create_keyval(st: &mut State, copy: usize, delete: usize, extra: usize) -> R<i32> {
    if delete == 1 {
        return Err(fail(
            code::ARG,
            "MPI_*_DUP_FN is a copy function, not a delete function",
        ));
    }
    let k = st.next_keyval;
    st.next_keyval += 1;
    st.keyvals.insert(
        k,
        Keyval {
            copy,
            delete,
            extra,
            freed: false,
        },
    );
    Ok(k)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_keyval(
    copy: usize,
    delete: usize,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    call("MPI_Comm_create_keyval", On::World, |st| {
        let k = create_keyval(st, copy, delete, extra as usize)?;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(keyval, k, "keyval") }
    })
}

pub(crate) fn free_keyval(st: &mut State, keyval: *mut c_int) -> R {
    // SAFETY: MPI's contract: `keyval` points to an int.
    let k = unsafe { inp(keyval, "keyval")? };
    let kv = st
        .keyvals
        .get_mut(&k)
        .filter(|kv| !kv.freed)
        .ok_or_else(|| fail(code::KEYVAL, format!("{k} is not a keyval")))?;
    // kept (a few words) for the delete functions of attributes already set
    kv.freed = true;
    // SAFETY: as above.
    unsafe { out(keyval, -1, "keyval") }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free_keyval(keyval: *mut c_int) -> c_int {
    call("MPI_Comm_free_keyval", On::World, |st| {
        free_keyval(st, keyval)
    })
}

/// Sets attribute `k` in `attrs` (a replaced value's delete function runs).
pub(crate) fn set_attr(
    keyvals: &BTreeMap<i32, Keyval>,
    handle: c_int,
    attrs: &mut BTreeMap<i32, usize>,
    k: c_int,
    v: usize,
) -> R {
    if keyvals.get(&k).is_none_or(|kv| kv.freed) {
        return Err(fail(code::KEYVAL, format!("{k} is not a keyval")));
    }
    if let Some(old) = attrs.insert(k, v) {
        delete_one(keyvals, handle, k, old);
    }
    Ok(())
}

pub(crate) fn delete_attr(
    keyvals: &BTreeMap<i32, Keyval>,
    handle: c_int,
    attrs: &mut BTreeMap<i32, usize>,
    k: c_int,
) -> R {
    match attrs.remove(&k) {
        Some(old) => {
            delete_one(keyvals, handle, k, old);
            Ok(())
        }
        None => Err(fail(code::KEYVAL, format!("no attribute {k} is set"))),
    }
}

/// Stores an attribute's value and flag for a get_attr call.
///
/// # Safety
/// `value` is null or points to a `void *`; `flag` to an int.
pub(crate) unsafe fn give_attr(v: Option<usize>, value: *mut c_void, flag: *mut c_int) -> R {
    // SAFETY: the caller's contract.
    unsafe {
        out(flag, c_int::from(v.is_some()), "flag")?;
        if let Some(v) = v {
            out(value.cast::<usize>(), v, "attribute_val")?;
        }
    }
    Ok(())
}

/// The values of the predefined communicator attributes (their addresses are the
/// attribute values).
static TAG_UB: c_int = c_int::MAX;
static WTIME_IS_GLOBAL: c_int = 0;
static HOST: c_int = -1; // MPI_PROC_NULL: no host process
static IO: c_int = -2; // MPI_ANY_SOURCE: every process can do I/O
static APPNUM: c_int = 0;
static LASTUSEDCODE: c_int = code::PROC_FAILED;
static UNIVERSE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_attr(
    c: c_int,
    k: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Comm_get_attr", On::Comm(c), |st| {
        let comm = st.comm(c)?;
        let addr = |p: &'static c_int| Some(p as *const c_int as usize);
        let v = match k {
            11 => addr(&TAG_UB),
            12 => addr(&HOST),
            13 => addr(&IO),
            14 => addr(&WTIME_IS_GLOBAL),
            15 => {
                UNIVERSE.store(
                    st.world0().size() as i32,
                    std::sync::atomic::Ordering::Relaxed,
                );
                Some(UNIVERSE.as_ptr() as usize)
            }
            16 => addr(&APPNUM),
            17 => addr(&LASTUSEDCODE),
            _ if st.keyvals.contains_key(&k) => comm.attrs.get(&k).copied(),
            _ => return Err(fail(code::KEYVAL, format!("{k} is not a keyval"))),
        };
        // SAFETY: MPI's contract for MPI_Comm_get_attr's pointers.
        unsafe { give_attr(v, value, flag) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_attr(c: c_int, k: c_int, value: *mut c_void) -> c_int {
    call("MPI_Comm_set_attr", On::Comm(c), |st| {
        let st: &mut crate::State = st;
        let comm = st.comms.get_mut(c).filter(|x| !x.freed);
        let comm = comm.ok_or_else(|| fail(code::COMM, format!("{c} is not a communicator")))?;
        set_attr(&st.keyvals, c, &mut comm.attrs, k, value as usize)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_delete_attr(c: c_int, k: c_int) -> c_int {
    call("MPI_Comm_delete_attr", On::Comm(c), |st| {
        let st: &mut crate::State = st;
        let comm = st.comms.get_mut(c).filter(|x| !x.freed);
        let comm = comm.ok_or_else(|| fail(code::COMM, format!("{c} is not a communicator")))?;
        delete_attr(&st.keyvals, c, &mut comm.attrs, k)
    })
}

fn ranks_bytes(r: &[usize]) -> Vec<u8> {
    r.iter().flat_map(|&x| (x as u32).to_le_bytes()).collect()
}

fn bytes_ranks(b: &[u8]) -> Vec<usize> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")) as usize)
        .collect()
}

/// The leaders swap `mine` (a message each way on `ctx`), then every rank of the
/// local group learns the remote leader's bytes.
fn leaders_swap(
    st: &mut State,
    local: i32,
    leader: usize,
    peer_world: usize,
    ctx: u64,
    mine: &[u8],
) -> R<Vec<u8>> {
    let comm = st.comm(local)?;
    let world = comm.world();
    let theirs = if comm.rank() == leader {
        let (w0, me) = (st.world0(), st.world0().rank() as c_int);
        let seq = st.p2p.send(peer_world, ctx, me, 0, mine)?;
        st.p2p.wait_sent(w0, peer_world, seq)?;
        st.p2p.recv_raw(world, ctx, peer_world as c_int)?
    } else {
        Vec::new()
    };
    let all = crate::coll::allgather_bytes(world, &theirs)?;
    Ok(all[leader].clone())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create(
    local: c_int,
    local_leader: c_int,
    peer: c_int,
    remote_leader: c_int,
    tag: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Intercomm_create", On::Comm(local), |st| {
        let lc = st.comm(local)?;
        let leader = usize::try_from(local_leader)
            .ok()
            .filter(|&l| l < lc.size())
            .ok_or_else(|| {
                fail(
                    code::RANK,
                    format!("local leader {local_leader} is not a rank"),
                )
            })?;
        let mine = lc.ranks.clone();
        // the peer communicator matters at the local leader only
        let peer_world = if lc.rank() == leader {
            let pc = st.comm(peer)?;
            usize::try_from(remote_leader)
                .ok()
                .and_then(|r| pc.ranks.get(r).copied())
                .ok_or_else(|| {
                    fail(
                        code::RANK,
                        format!("remote leader {remote_leader} is not a rank"),
                    )
                })?
        } else {
            0
        };
        let ctx = mix(0x0069_6e74_6572 ^ tag as u64, 0);
        let remote = bytes_ranks(&leaders_swap(
            st,
            local,
            leader,
            peer_world,
            ctx,
            &ranks_bytes(&mine),
        )?);
        let (lo, hi) = if mine[0] < remote[0] {
            (&mine, &remote)
        } else {
            (&remote, &mine)
        };
        let mut ictx = mix(ctx, 1);
        for &r in lo.iter().chain(hi.iter()) {
            ictx = mix(ictx, r as u64);
        }
        let w = st.comm(local)?.world().dup()?;
        let h = st.add_comm(w, ictx)?;
        st.comm_mut(h)?.remote = Some(remote);
        // SAFETY: MPI's contract: a communicator out-parameter.
        unsafe { out(new, h, "newintercomm") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_merge(c: c_int, high: c_int, new: *mut c_int) -> c_int {
    call("MPI_Intercomm_merge", On::Comm(c), |st| {
        let comm = st.comm(c)?;
        let remote = comm
            .remote
            .clone()
            .ok_or_else(|| fail(code::COMM, "not an intercommunicator"))?;
        let mine = comm.ranks.clone();
        let ctx = mix(comm.ctx, 0x006d_6572_6765);
        // the leaders (rank 0 of each group) swap their group's `high`
        let theirs = leaders_swap(st, c, 0, remote[0], ctx, &[u8::from(high != 0)])?;
        let (me_high, them_high) = (high != 0, theirs.first().copied().unwrap_or(0) != 0);
        let mine_first = if me_high == them_high {
            mine[0] < remote[0]
        } else {
            !me_high
        };
        let order: Vec<usize> = if mine_first {
            mine.iter().chain(remote.iter()).copied().collect()
        } else {
            remote.iter().chain(mine.iter()).copied().collect()
        };
        let group = rma_win::Group::new(&order)?;
        let w = st
            .world0()
            .create_group(&group, (ctx as u32) & 0x7fff_ffff)?;
        let h = st.add_comm(w, mix(ctx, 2))?;
        // SAFETY: MPI's contract: a communicator out-parameter.
        unsafe { out(new, h, "newintracomm") }
    })
}

// ---- groups ----

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_size(g: c_int, size: *mut c_int) -> c_int {
    call("MPI_Group_size", On::World, |st| {
        let n = st.group(g)?.len() as c_int;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(size, n, "size") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_rank(g: c_int, rank: *mut c_int) -> c_int {
    call("MPI_Group_rank", On::World, |st| {
        let me = st.world0().rank();
        let r = st.group(g)?.iter().position(|&x| x == me);
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(rank, r.map_or(UNDEFINED, |r| r as c_int), "rank") }
    })
}

fn pick(group: &[usize], ranks: &[c_int]) -> R<Vec<usize>> {
    let mut seen = vec![false; group.len()];
    ranks
        .iter()
        .map(|&r| {
            let i = usize::try_from(r)
                .ok()
                .filter(|&i| i < group.len())
                .ok_or_else(|| fail(code::RANK, format!("rank {r} is not in the group")))?;
            if std::mem::replace(&mut seen[i], true) {
                return Err(fail(code::RANK, format!("rank {r} is named twice")));
            }
            Ok(group[i])
        })
        .collect()
}

fn ranges(group: &[usize], n: c_int, r: *const [c_int; 3]) -> R<Vec<c_int>> {
    // SAFETY: MPI's contract: n triplets.
    let r = unsafe { arr(r, n, "ranges")? };
    let mut out = Vec::new();
    for &[first, last, stride] in r {
        if stride == 0 {
            return Err(fail(code::ARG, "a range with stride 0"));
        }
        let mut i = first;
        while (stride > 0 && i <= last) || (stride < 0 && i >= last) {
            out.push(i);
            i += stride;
            if out.len() > group.len() {
                return Err(fail(code::RANK, "the ranges name a rank twice"));
            }
        }
    }
    Ok(out)
}

fn set_group(st: &mut State, ranks: Vec<usize>, new: *mut c_int) -> R {
    let h = st.new_group(ranks);
    // SAFETY: MPI's contract: a group out-parameter.
    unsafe { out(new, h, "newgroup") }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_incl(
    g: c_int,
    n: c_int,
    ranks: *const c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Group_incl", On::World, |st| {
        // SAFETY: MPI's contract: n ranks.
        let r = unsafe { arr(ranks, n, "ranks")? };
        let v = pick(st.group(g)?, r)?;
        set_group(st, v, new)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_excl(
    g: c_int,
    n: c_int,
    ranks: *const c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Group_excl", On::World, |st| {
        // SAFETY: MPI's contract: n ranks.
        let r = unsafe { arr(ranks, n, "ranks")? };
        let group = st.group(g)?;
        let gone = pick(group, r)?;
        let v = group
            .iter()
            .copied()
            .filter(|x| !gone.contains(x))
            .collect();
        set_group(st, v, new)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_incl(
    g: c_int,
    n: c_int,
    r: *const [c_int; 3],
    new: *mut c_int,
) -> c_int {
    call("MPI_Group_range_incl", On::World, |st| {
        let group = st.group(g)?;
        let v = pick(group, &ranges(group, n, r)?)?;
        set_group(st, v, new)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_excl(
    g: c_int,
    n: c_int,
    r: *const [c_int; 3],
    new: *mut c_int,
) -> c_int {
    call("MPI_Group_range_excl", On::World, |st| {
        let group = st.group(g)?;
        let gone = pick(group, &ranges(group, n, r)?)?;
        let v = group
            .iter()
            .copied()
            .filter(|x| !gone.contains(x))
            .collect();
        set_group(st, v, new)
    })
}

fn set_op(
    st: &mut State,
    a: c_int,
    b: c_int,
    new: *mut c_int,
    keep: fn(bool, bool) -> (bool, bool),
) -> R {
    let (x, y) = (st.group(a)?.clone(), st.group(b)?.clone());
    let mut v: Vec<usize> = x
        .iter()
        .copied()
        .filter(|r| keep(true, y.contains(r)).0)
        .collect();
    v.extend(
        y.iter()
            .copied()
            .filter(|r| keep(x.contains(r), true).1 && !x.contains(r)),
    );
    set_group(st, v, new)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_union(a: c_int, b: c_int, new: *mut c_int) -> c_int {
    call("MPI_Group_union", On::World, |st| {
        set_op(st, a, b, new, |_, _| (true, true))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_intersection(a: c_int, b: c_int, new: *mut c_int) -> c_int {
    call("MPI_Group_intersection", On::World, |st| {
        set_op(st, a, b, new, |_, in_b| (in_b, false))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_difference(a: c_int, b: c_int, new: *mut c_int) -> c_int {
    call("MPI_Group_difference", On::World, |st| {
        set_op(st, a, b, new, |_, in_b| (!in_b, false))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_translate_ranks(
    a: c_int,
    n: c_int,
    r1: *const c_int,
    b: c_int,
    r2: *mut c_int,
) -> c_int {
    call("MPI_Group_translate_ranks", On::World, |st| {
        // SAFETY: MPI's contract: n ranks in, n out.
        let r = unsafe { arr(r1, n, "ranks1")? };
        let (x, y) = (st.group(a)?, st.group(b)?);
        for (i, &rank) in r.iter().enumerate() {
            let t = if rank == -1 {
                -1
            } else {
                let w = usize::try_from(rank)
                    .ok()
                    .and_then(|i| x.get(i))
                    .ok_or_else(|| fail(code::RANK, format!("rank {rank} is not in the group")))?;
                y.iter()
                    .position(|z| z == w)
                    .map_or(UNDEFINED, |p| p as c_int)
            };
            // SAFETY: as above: i < n.
            unsafe { *r2.add(i) = t };
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_compare(a: c_int, b: c_int, result: *mut c_int) -> c_int {
    call("MPI_Group_compare", On::World, |st| {
        let r = match compare_ranks(st.group(a)?, st.group(b)?) {
            1 => 0, // same members in the same order: MPI_IDENT for groups
            r => r,
        };
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(result, r, "result") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_free(g: *mut c_int) -> c_int {
    call("MPI_Group_free", On::World, |st| {
        // SAFETY: MPI's contract: a group handle.
        let h = unsafe { inp(g, "group")? };
        st.group(h)?;
        if h >= FIRST_GROUP {
            st.groups.remove(h);
        }
        // SAFETY: as above.
        unsafe { out(g, 0, "group") }
    })
}

/// Handles of every live communicator (for MPI_Finalize's clean-up).
pub(crate) fn all(t: &Table<Comm>) -> Vec<i32> {
    t.handles()
}
