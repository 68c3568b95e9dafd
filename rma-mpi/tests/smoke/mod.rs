//! The smoke run: every call of rma-mpi on every rank of an MPI job, each result
//! checked exactly. Shared by `examples/smoke.rs` (run it under `mpiexec -n 4`) and
//! `tests/mpi.rs` (which launches itself under each installed MPI).
//!
//! Environment: `RMA_MPI_SMOKE_WINDOWS` (`allocate,create` by default; Open MPI's
//! osc/sm serves only `allocate`), `RMA_MPI_SMOKE_THREADS` (`multiple` by default, or
//! `serialized`).

use rma_core::{
    Access, Assert, BasicType, ErrorClass, Info, LockType, Op, Rank, Transport, TypeClass,
};
use rma_datatype::Datatype;
use rma_mpi::{MpiWindow, Target, ThreadLevel, World};

/// A failed check: what was expected and what happened.
type Check<T = ()> = std::result::Result<T, String>;

/// Counter increments per rank.
const N: i64 = 20;
/// Window size: 512 slots of 8 bytes, disp_unit 8.
const SLOTS: usize = 512;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(format!("{}:{}: {}", file!(), line!(), format!($($fmt)*)));
        }
    };
}

trait Ctx<T> {
    fn ctx(self, what: &str) -> Check<T>;
}

impl<T> Ctx<T> for rma_core::Result<T> {
    fn ctx(self, what: &str) -> Check<T> {
        self.map_err(|e| format!("{what}: {e} [{}]", e.class()))
    }
}

fn rank(i: usize) -> Rank {
    Rank::new(i as u32)
}

fn i64s(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn to_i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8)
        .map(|c| i64::from_ne_bytes(c.try_into().unwrap_or_default()))
        .collect()
}

fn expect_class<T>(r: rma_core::Result<T>, class: ErrorClass, what: &str) -> Check {
    match r {
        Err(e) if e.class() == class => Ok(()),
        Err(e) => Err(format!("{what}: expected {class}, got {e} [{}]", e.class())),
        Ok(_) => Err(format!("{what}: expected {class}, got Ok")),
    }
}

/// Reads `n` slots of `target` from `disp` under a shared lock.
fn read(win: &mut MpiWindow<'_>, target: usize, disp: i64, n: usize) -> Check<Vec<i64>> {
    win.lock(LockType::Shared, rank(target), Assert::NONE)
        .ctx("lock shared")?;
    let mut out = vec![0u8; 8 * n];
    win.get(&mut out, Target::contiguous(rank(target), disp))
        .ctx("get")?;
    win.unlock(rank(target)).ctx("unlock")?;
    Ok(to_i64s(&out))
}

/// Runs every check on every window flavor the environment asks for.
pub(crate) fn run(world: &World) -> Check {
    check_allgather(world)?;
    let flavors =
        std::env::var("RMA_MPI_SMOKE_WINDOWS").unwrap_or_else(|_| "allocate,create".into());
    for flavor in flavors.split(',').map(str::trim) {
        let mut win = match flavor {
            "allocate" => MpiWindow::allocate(world, SLOTS * 8, 8, &Info::new()).ctx("allocate")?,
            "create" => {
                MpiWindow::create(world, vec![0u8; SLOTS * 8], 8, &Info::new()).ctx("create")?
            }
            other => return Err(format!("unknown window flavor {other:?}")),
        };
        if let Err(e) = run_on(world, &mut win) {
            // abort before the window drops: freeing it is collective, and the other
            // ranks may be waiting elsewhere
            fail(world, &format!("{flavor} window: {e}"));
        }
        let buf = win.free().ctx("free")?;
        ensure!(
            buf.as_ref().map(Vec::len) == (flavor == "create").then_some(SLOTS * 8),
            "free gives back the created buffer"
        );
    }
    Ok(())
}

fn run_on(world: &World, win: &mut MpiWindow<'_>) -> Check {
    ensure!(
        win.len_of(rank(world.size() - 1)).ctx("len_of")? == SLOTS * 8,
        "peer window size"
    );
    ensure!(
        win.disp_unit_of(rank(0)).ctx("disp_unit_of")? == 8,
        "peer disp_unit"
    );
    world.barrier().ctx("barrier")?;
    type Step = fn(&World, &mut MpiWindow<'_>) -> Check;
    let steps: [(&str, Step); 14] = [
        ("fence", fence_put_and_strided_accumulate),
        ("exclusive lock", exclusive_lock_counter),
        ("fetch_and_op", fetch_and_op_tickets),
        ("compare_and_swap", compare_and_swap_counters),
        ("get_accumulate", get_accumulate_and_pairs),
        ("basic types", every_basic_type),
        ("requests", request_forms),
        ("many calls, one flush", many_calls_one_flush),
        ("pscw", pscw_ring),
        ("transport", transport_calls),
        ("threads", threads_share_the_window),
        ("refused calls", refused_calls),
        (
            "local copies from two threads",
            local_copies_from_two_threads,
        ),
        ("failed flush", failed_flush_leaves_results_to_mpi),
    ];
    let trace = std::env::var_os("RMA_MPI_SMOKE_TRACE").is_some();
    for (name, step) in steps {
        let start = std::time::Instant::now();
        step(world, win).map_err(|e| format!("{name}: {e}"))?;
        if trace {
            let line = format!(
                "rank {} {:?}: {name} passed in {:.1?}\n",
                world.rank(),
                win.flavor(),
                start.elapsed()
            );
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        }
    }
    world.barrier().ctx("barrier")
}

fn check_allgather(world: &World) -> Check {
    let mine = vec![world.rank() as u8; world.rank()];
    let all = world.allgather(&mine).ctx("allgather")?;
    for (r, got) in all.iter().enumerate() {
        ensure!(*got == vec![r as u8; r], "allgather slot {r}: {got:?}");
    }
    Ok(())
}

/// Fence epoch: a ring of puts and an accumulate SUM over a strided target layout
/// (every 3rd slot) into rank 0; a get there is refused (results come at the fence).
fn fence_put_and_strided_accumulate(world: &World, win: &mut MpiWindow<'_>) -> Check {
    let (r, n) = (world.rank(), world.size());
    let mut vector = Datatype::vector(5, 1, 3, &Datatype::of::<i64>()).ctx("vector")?;
    vector.commit();
    let layout = vector.type_map(1).ctx("type_map")?;
    win.fence(Assert::NOPRECEDE).ctx("fence")?;
    win.put(
        &i64s(&[(r as i64 + 1) * 10]),
        Target::contiguous(rank((r + 1) % n), r as i64),
    )
    .ctx("put")?;
    win.accumulate(
        BasicType::I64,
        Op::Sum,
        &i64s(&[1, 2, 3, 4, 5]),
        Target::with_layout(rank(0), 16, &layout),
    )
    .ctx("strided accumulate")?;
    expect_class(
        win.get(&mut [0u8; 8], Target::contiguous(rank(0), 0)),
        ErrorClass::RmaSync,
        "get in a fence epoch",
    )?;
    win.fence(Assert::NOSUCCEED).ctx("fence")?;
    let prev = (r + n - 1) % n;
    let mut slot = [0u8; 8];
    win.read_local(prev * 8, &mut slot).ctx("read_local")?;
    ensure!(
        to_i64s(&slot) == [(prev as i64 + 1) * 10],
        "ring put: {:?}",
        to_i64s(&slot)
    );
    if r == 0 {
        let mut area = [0u8; 8 * 15];
        win.read_local(16 * 8, &mut area).ctx("read_local")?;
        let got = to_i64s(&area);
        for (i, v) in got.iter().enumerate() {
            let want = if i % 3 == 0 {
                n as i64 * (i as i64 / 3 + 1)
            } else {
                0
            };
            ensure!(
                *v == want,
                "strided accumulate slot {}: {v}, want {want}",
                16 + i
            );
        }
    }
    Ok(())
}

/// Read-modify-write of one slot under an exclusive lock, N times per rank: exactly
/// n * N if the lock excludes.
fn exclusive_lock_counter(world: &World, win: &mut MpiWindow<'_>) -> Check {
    for _ in 0..N {
        win.lock(LockType::Exclusive, rank(0), Assert::NONE)
            .ctx("lock exclusive")?;
        let mut cur = [0u8; 8];
        win.get(&mut cur, Target::contiguous(rank(0), 40))
            .ctx("get")?;
        let next = i64::from_ne_bytes(cur) + 1;
        win.put(&next.to_ne_bytes(), Target::contiguous(rank(0), 40))
            .ctx("put")?;
        win.unlock(rank(0)).ctx("unlock")?;
    }
    world.barrier().ctx("barrier")?;
    let got = read(win, 0, 40, 1)?[0];
    ensure!(
        got == world.size() as i64 * N,
        "exclusive-lock counter {got}, want {}",
        world.size() as i64 * N
    );
    Ok(())
}

/// fetch_and_op SUM +1, N times per rank under lock_all: the old values over all ranks
/// are exactly 0..n*N.
fn fetch_and_op_tickets(world: &World, win: &mut MpiWindow<'_>) -> Check {
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mut tickets = Vec::new();
    for _ in 0..N {
        let mut old = [0u8; 8];
        win.fetch_and_op(
            BasicType::I64,
            Op::Sum,
            &1i64.to_ne_bytes(),
            &mut old,
            rank(0),
            41,
        )
        .ctx("fetch_and_op")?;
        tickets.push(i64::from_ne_bytes(old));
    }
    win.unlock_all().ctx("unlock_all")?;
    let mut all: Vec<i64> = world
        .allgather(&i64s(&tickets))
        .ctx("allgather")?
        .iter()
        .flat_map(|b| to_i64s(b))
        .collect();
    all.sort_unstable();
    let total = world.size() as i64 * N;
    ensure!(
        all == (0..total).collect::<Vec<_>>(),
        "tickets are not 0..{total}"
    );
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mut now = [0u8; 8];
    win.fetch_and_op(BasicType::I64, Op::NoOp, &[], &mut now, rank(0), 41)
        .ctx("fetch_and_op NO_OP")?;
    win.unlock_all().ctx("unlock_all")?;
    ensure!(
        i64::from_ne_bytes(now) == total,
        "NO_OP read {}",
        i64::from_ne_bytes(now)
    );
    world.barrier().ctx("barrier")
}

fn int_bytes(basic: BasicType, v: i64) -> Vec<u8> {
    match basic {
        BasicType::I32 => (v as i32).to_ne_bytes().to_vec(),
        _ => v.to_ne_bytes().to_vec(),
    }
}

fn int_of(b: &[u8]) -> i64 {
    match b.len() {
        4 => i32::from_ne_bytes(b.try_into().unwrap_or_default()) as i64,
        _ => i64::from_ne_bytes(b.try_into().unwrap_or_default()),
    }
}

/// A counter incremented by compare_and_swap loops, N times per rank: exactly n * N.
fn cas_counter(world: &World, win: &mut MpiWindow<'_>, basic: BasicType, disp: i64) -> Check {
    let size = basic.size();
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mut cur = vec![0u8; size];
    win.fetch_and_op(basic, Op::NoOp, &[], &mut cur, rank(0), disp)
        .ctx("fetch NO_OP")?;
    for _ in 0..N {
        loop {
            let (expect, mut old) = (int_of(&cur), vec![0u8; size]);
            let new = int_bytes(basic, expect + 1);
            win.compare_and_swap(basic, &new, &cur, &mut old, rank(0), disp)
                .ctx("compare_and_swap")?;
            if int_of(&old) == expect {
                cur = new;
                break;
            }
            cur = old;
        }
    }
    win.unlock_all().ctx("unlock_all")?;
    world.barrier().ctx("barrier")?;
    let all = read(win, 0, disp, 1)?;
    let got = int_of(&i64s(&all)[..size]);
    ensure!(got == world.size() as i64 * N, "{basic} CAS counter {got}");
    Ok(())
}

fn compare_and_swap_counters(world: &World, win: &mut MpiWindow<'_>) -> Check {
    cas_counter(world, win, BasicType::I32, 42)?;
    if world.cas64_blocked() {
        win.lock_all(Assert::NONE).ctx("lock_all")?;
        let r = win.compare_and_swap(BasicType::I64, &[0; 8], &[0; 8], &mut [0; 8], rank(0), 43);
        win.unlock_all().ctx("unlock_all")?;
        expect_class(
            r,
            ErrorClass::RmaFlavor,
            "8-byte CAS on a library known to crash",
        )
    } else {
        cas_counter(world, win, BasicType::I64, 43)
    }
}

fn pair_f64(value: f64, index: i32) -> Vec<u8> {
    let mut b = value.to_ne_bytes().to_vec();
    b.extend(index.to_ne_bytes());
    b.extend([0u8; 4]);
    b
}

/// get_accumulate SUM from every rank into rank 0 (the fetched values per slot are
/// exactly 0..n), a NO_OP read, and MAXLOC / MINLOC on DOUBLE_INT.
fn get_accumulate_and_pairs(world: &World, win: &mut MpiWindow<'_>) -> Check {
    let (r, n) = (world.rank(), world.size());
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mut out = [0u8; 32];
    win.get_accumulate(
        BasicType::I64,
        Op::Sum,
        &i64s(&[1, 1, 1, 1]),
        &mut out,
        Target::contiguous(rank(0), 44),
    )
    .ctx("get_accumulate")?;
    let maxloc = win.accumulate(
        BasicType::DoubleInt,
        Op::MaxLoc,
        &pair_f64(r as f64 + 1.0, r as i32),
        Target::contiguous(rank(0), 48),
    );
    let minloc = win.accumulate(
        BasicType::DoubleInt,
        Op::MinLoc,
        &pair_f64(-(r as f64) - 1.0, r as i32),
        Target::contiguous(rank(0), 50),
    );
    let pairs_ran = ran(maxloc, "accumulate MPI_MAXLOC on double_int".into())?
        & ran(minloc, "accumulate MPI_MINLOC on double_int".into())?;
    win.unlock_all().ctx("unlock_all")?;
    let fetched: Vec<Vec<i64>> = world
        .allgather(&out)
        .ctx("allgather")?
        .iter()
        .map(|b| to_i64s(b))
        .collect();
    for slot in 0..4 {
        let mut seen: Vec<i64> = fetched.iter().map(|f| f[slot]).collect();
        seen.sort_unstable();
        ensure!(
            seen == (0..n as i64).collect::<Vec<_>>(),
            "get_accumulate fetched {seen:?} in slot {slot}"
        );
    }
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mut now = [0u8; 32];
    win.get_accumulate(
        BasicType::I64,
        Op::NoOp,
        &[],
        &mut now,
        Target::contiguous(rank(0), 44),
    )
    .ctx("get_accumulate NO_OP")?;
    let mut pairs = [0u8; 32];
    win.get_accumulate(
        BasicType::DoubleInt,
        Op::NoOp,
        &[],
        &mut pairs,
        Target::contiguous(rank(0), 48),
    )
    .ctx("fetch pairs")?;
    win.unlock_all().ctx("unlock_all")?;
    ensure!(
        to_i64s(&now) == [n as i64; 4],
        "after get_accumulate: {:?}",
        to_i64s(&now)
    );
    ensure!(
        !pairs_ran || pairs[..16] == pair_f64(n as f64, n as i32 - 1)[..],
        "MAXLOC result {:?}",
        &pairs[..16]
    );
    ensure!(
        !pairs_ran || pairs[16..] == pair_f64(-(n as f64), n as i32 - 1)[..],
        "MINLOC result {:?}",
        &pairs[16..]
    );
    world.barrier().ctx("barrier")
}

/// The 16 bytes of `v` as a `long double`.
fn long_double(v: i64) -> [u8; 16] {
    rma_datatype::LongDouble::from_f64(v as f64)
        .to_bits()
        .to_le_bytes()
}

/// rma's element bytes for `v` as `basic` (numbers), or the pair (v, index).
fn element(basic: BasicType, v: i64, index: i32) -> Vec<u8> {
    use BasicType::*;
    let pair = |mut b: Vec<u8>, pad: usize| {
        b.extend(std::iter::repeat_n(0u8, pad));
        b.extend(index.to_ne_bytes());
        b.resize(basic.size(), 0);
        b
    };
    match basic {
        I8 | U8 | Bool | Byte => vec![v as u8],
        I16 | U16 => (v as i16).to_ne_bytes().to_vec(),
        I32 | U32 => (v as i32).to_ne_bytes().to_vec(),
        I64 | U64 | Isize | Usize => v.to_ne_bytes().to_vec(),
        F32 => (v as f32).to_ne_bytes().to_vec(),
        F64 => (v as f64).to_ne_bytes().to_vec(),
        C32 => [(v as f32).to_ne_bytes(), 0f32.to_ne_bytes()].concat(),
        C64 => [(v as f64).to_ne_bytes(), 0f64.to_ne_bytes()].concat(),
        FloatInt => pair((v as f32).to_ne_bytes().to_vec(), 0),
        DoubleInt => pair((v as f64).to_ne_bytes().to_vec(), 0),
        LongInt => pair(v.to_ne_bytes().to_vec(), 0),
        TwoInt => pair((v as i32).to_ne_bytes().to_vec(), 0),
        ShortInt => pair((v as i16).to_ne_bytes().to_vec(), 2),
        LongDouble => long_double(v).to_vec(),
        LongDoubleInt => pair(long_double(v).to_vec(), 0),
    }
}

/// What each rank contributes to `basic`'s slot, the op, and the expected result.
fn contribution(basic: BasicType, r: usize, n: usize) -> (Op, Vec<u8>, Vec<u8>) {
    match basic.class() {
        TypeClass::Logical => (Op::Lor, vec![u8::from(r == n - 1)], vec![1]),
        TypeClass::Byte => {
            let all = (0..n).fold(0u8, |acc, q| acc | (1 << (q % 8)));
            (Op::Bor, vec![1 << (r % 8)], vec![all])
        }
        TypeClass::Pair => (
            Op::MaxLoc,
            element(basic, r as i64 + 1, r as i32),
            element(basic, n as i64, n as i32 - 1),
        ),
        _ => (Op::Sum, element(basic, 1, 0), element(basic, n as i64, 0)),
    }
}

/// Notes for the summary line: calls refused for a known library defect.
static NOTES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// `Ok(true)` if the call ran, `Ok(false)` if rma-mpi refused it for a known library
/// defect (class RMA_FLAVOR), which is noted for the summary.
fn ran(r: rma_core::Result<()>, what: String) -> Check<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.class() == ErrorClass::RmaFlavor => {
            let mut notes = NOTES
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !notes.contains(&what) {
                notes.push(what);
            }
            Ok(false)
        }
        Err(e) => Err(format!("{what}: {e} [{}]", e.class())),
    }
}

/// Per basic type, one accumulate, one fetch_and_op and one get_accumulate (SUM, LOR,
/// BOR or MAXLOC) from every rank into rank 0, each call into its own area, and one
/// compare_and_swap per type it accepts: checks rma's BasicType -> MPI datatype
/// mapping for every type in all four calls (each in a 32-byte slot, the largest
/// basic type's size).
fn every_basic_type(world: &World, win: &mut MpiWindow<'_>) -> Check {
    let (r, n) = (world.rank(), world.size());
    let types = BasicType::ALL.len();
    const WORDS: usize = BasicType::MAX_SIZE / 8;
    let disp = |call: usize, i: usize| 128 + (WORDS * (call * types + i)) as i64;
    let mut done = vec![[false; 4]; types];
    let mut swapped = vec![Vec::new(); types];
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    for (i, basic) in BasicType::ALL.into_iter().enumerate() {
        let (op, data, _) = contribution(basic, r, n);
        let (at, mut out) = (
            |c| Target::contiguous(rank(0), disp(c, i)),
            vec![0u8; basic.size()],
        );
        done[i][0] = ran(
            win.accumulate(basic, op, &data, at(0)),
            format!("accumulate {op} on {basic}"),
        )?;
        done[i][1] = ran(
            win.fetch_and_op(basic, op, &data, &mut out, rank(0), disp(1, i)),
            format!("fetch_and_op {op} on {basic}"),
        )?;
        done[i][2] = ran(
            win.get_accumulate(basic, op, &data, &mut out, at(2)),
            format!("get_accumulate {op} on {basic}"),
        )?;
        if rma_ops::check_cas_type(basic).is_ok() {
            let value = if basic == BasicType::Bool {
                1
            } else {
                r as i64 + 1
            };
            let (zero, new) = (vec![0u8; basic.size()], element(basic, value, 0));
            done[i][3] = ran(
                win.compare_and_swap(basic, &new, &zero, &mut out, rank(0), disp(3, i)),
                format!("compare_and_swap on {basic}"),
            )?;
            swapped[i] = out;
        }
    }
    win.unlock_all().ctx("unlock_all")?;
    world.barrier().ctx("barrier")?;
    let all = i64s(&read(win, 0, disp(0, 0), WORDS * 4 * types)?);
    let mut wrong = Vec::new();
    for (call, name) in ["accumulate", "fetch_and_op", "get_accumulate"]
        .into_iter()
        .enumerate()
    {
        for (i, basic) in BasicType::ALL.into_iter().enumerate() {
            let (op, _, want) = contribution(basic, r, n);
            let at = BasicType::MAX_SIZE * (call * types + i);
            let got = &all[at..at + basic.size()];
            if done[i][call] && got != want {
                wrong.push(format!(
                    "{name} {op} on {basic}: got {got:?}, want {want:?}"
                ));
            }
        }
    }
    for (i, basic) in BasicType::ALL.into_iter().enumerate() {
        if done[i][3] {
            let at = BasicType::MAX_SIZE * (3 * types + i);
            check_one_swap_won(
                world,
                basic,
                &swapped[i],
                &all[at..at + basic.size()],
                &mut wrong,
            )?;
        }
    }
    ensure!(wrong.is_empty(), "{}", wrong.join("; "));
    world.barrier().ctx("barrier")
}

/// Every rank swapped zero for its own value: exactly one rank read zero, and
/// everybody else and the target hold the winner's value.
fn check_one_swap_won(
    world: &World,
    basic: BasicType,
    mine: &[u8],
    target: &[u8],
    wrong: &mut Vec<String>,
) -> Check {
    let fetched = world.allgather(mine).ctx("allgather")?;
    let zero = vec![0u8; basic.size()];
    let winners = fetched.iter().filter(|f| **f == zero).count();
    let others_agree = fetched.iter().all(|f| *f == zero || f == target);
    if winners != 1 || !others_agree || target == zero {
        wrong.push(format!(
            "compare_and_swap on {basic}: fetched {fetched:?}, target {target:?}"
        ));
    }
    Ok(())
}

/// rput / rget / raccumulate / rget_accumulate with wait and test.
fn request_forms(world: &World, win: &mut MpiWindow<'_>) -> Check {
    let (r, n) = (world.rank(), world.size());
    let next = rank((r + 1) % n);
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mine = [r as i64 * 100, r as i64 * 100 + 1];
    win.rput(&i64s(&mine), Target::contiguous(next, 60))
        .ctx("rput")?
        .wait()
        .ctx("wait rput")?;
    win.flush(next).ctx("flush")?;
    let back = win
        .rget(16, Target::contiguous(next, 60))
        .ctx("rget")?
        .wait()
        .ctx("wait rget")?;
    ensure!(to_i64s(&back) == mine, "rget read {:?}", to_i64s(&back));
    // a derived target type: slots 100 and 102 of `next`, through a stride-2 vector
    // (MPICH 4.0 completes such an Rget's request before writing the result; the
    // request flushes before handing it out)
    let spread = [r as i64 + 7, -1, r as i64 + 9];
    win.put(&i64s(&spread), Target::contiguous(next, 100))
        .ctx("put")?;
    win.flush(next).ctx("flush")?;
    let mut every_other = Datatype::vector(2, 1, 2, &Datatype::of::<i64>()).ctx("vector")?;
    every_other.commit();
    let layout = every_other.type_map(1).ctx("type_map")?;
    let picked = win
        .rget(16, Target::with_layout(next, 100, &layout))
        .ctx("strided rget")?
        .wait()
        .ctx("wait strided rget")?;
    ensure!(
        to_i64s(&picked) == [r as i64 + 7, r as i64 + 9],
        "strided rget read {:?}",
        to_i64s(&picked)
    );
    let mut acc = win
        .raccumulate(
            BasicType::I64,
            Op::Sum,
            &i64s(&[1, 1]),
            Target::contiguous(rank(0), 62),
        )
        .ctx("raccumulate")?;
    while !acc.test().ctx("test")? {
        std::thread::yield_now();
    }
    ensure!(
        acc.wait().ctx("wait")?.is_empty(),
        "raccumulate fetched bytes"
    );
    let fetched = win
        .rget_accumulate(
            BasicType::I64,
            Op::Sum,
            &i64s(&[10]),
            Target::contiguous(rank(0), 62),
        )
        .ctx("rget_accumulate")?
        .wait()
        .ctx("wait rget_accumulate")?;
    ensure!(
        fetched.len() == 8 && to_i64s(&fetched)[0] <= 11 * n as i64,
        "rget_accumulate fetched {fetched:?}"
    );
    win.flush_all().ctx("flush_all")?;
    win.flush_local_all().ctx("flush_local_all")?;
    win.unlock_all().ctx("unlock_all")?;
    world.barrier().ctx("barrier")?;
    let got = read(win, 0, 62, 2)?;
    ensure!(
        got == [11 * n as i64, n as i64],
        "request-form accumulates: {got:?}"
    );
    world.barrier().ctx("barrier")
}

/// More accumulates without a flush than the window keeps origin copies for (16 Ki):
/// it completes them on its own along the way, and the sum comes out exact. One rank
/// calls (with 4 ranks on 2 cores, MPICH's calls wait for the target to be scheduled).
fn many_calls_one_flush(world: &World, win: &mut MpiWindow<'_>) -> Check {
    const CALLS: i64 = 17_000;
    let caller = world.size() - 1;
    if world.rank() == caller {
        win.lock(LockType::Shared, rank(0), Assert::NONE)
            .ctx("lock")?;
        for _ in 0..CALLS {
            let one = i64s(&[1]);
            win.accumulate(
                BasicType::I64,
                Op::Sum,
                &one,
                Target::contiguous(rank(0), 104),
            )
            .ctx("accumulate")?;
        }
        win.flush(rank(0)).ctx("flush")?;
        win.unlock(rank(0)).ctx("unlock")?;
    }
    world.barrier().ctx("barrier")?;
    let got = read(win, 0, 104, 1)?[0];
    ensure!(got == CALLS, "{CALLS} accumulates summed to {got}");
    world.barrier().ctx("barrier")
}

/// Post/start/complete/wait in a ring: each rank exposes to its predecessor and
/// accesses its successor; odd ranks poll with test instead of waiting.
fn pscw_ring(world: &World, win: &mut MpiWindow<'_>) -> Check {
    let (r, n) = (world.rank(), world.size());
    let (prev, next) = ((r + n - 1) % n, (r + 1) % n);
    win.post(&[rank(prev)], Assert::NONE).ctx("post")?;
    win.start(&[rank(next)], Assert::NONE).ctx("start")?;
    win.put(&i64s(&[r as i64]), Target::contiguous(rank(next), 66))
        .ctx("put")?;
    for _ in 0..2 {
        win.accumulate(
            BasicType::I64,
            Op::Sum,
            &i64s(&[1]),
            Target::contiguous(rank(next), 67),
        )
        .ctx("accumulate")?;
    }
    expect_class(
        win.fetch_and_op(
            BasicType::I64,
            Op::Sum,
            &[0; 8],
            &mut [0; 8],
            rank(next),
            68,
        ),
        ErrorClass::RmaSync,
        "fetch_and_op in PSCW",
    )?;
    win.complete().ctx("complete")?;
    if r % 2 == 0 {
        win.wait().ctx("wait")?;
    } else {
        while !win.test().ctx("test")? {
            std::thread::yield_now();
        }
    }
    let mut got = [0u8; 16];
    win.read_local(66 * 8, &mut got).ctx("read_local")?;
    ensure!(
        to_i64s(&got) == [prev as i64, 2],
        "PSCW ring: {:?}",
        to_i64s(&got)
    );
    world.barrier().ctx("barrier")
}

/// The Transport trait as rma-win drives it: byte offsets and an indexed layout under
/// a passive epoch; refused outside one.
fn transport_calls(world: &World, win: &mut MpiWindow<'_>) -> Check {
    let n = world.size() as i64;
    let mut indexed = Datatype::indexed(&[1, 2], &[0, 3], &Datatype::of::<i64>()).ctx("indexed")?;
    indexed.commit();
    let layout = indexed.type_map(1).ctx("type_map")?;
    let at = Access {
        target: rank(0),
        base: 72 * 8,
        layout: &layout,
        exclusive: false,
    };
    expect_class(
        Transport::accumulate(&*win, at, BasicType::I64, Op::Sum, &i64s(&[1, 1, 1])),
        ErrorClass::RmaSync,
        "transport outside an epoch",
    )?;
    win.lock_all(Assert::NOCHECK).ctx("lock_all")?;
    let t: &dyn Transport = &*win;
    ensure!(t.name() == "mpi", "transport name {}", t.name());
    let mut old = [0u8; 8];
    t.fetch_and_op(
        rank(0),
        70 * 8,
        BasicType::I64,
        Op::Sum,
        &1i64.to_ne_bytes(),
        &mut old,
    )
    .ctx("transport fetch_and_op")?;
    t.accumulate(at, BasicType::I64, Op::Sum, &i64s(&[1, 1, 1]))
        .ctx("transport accumulate")?;
    t.flush(rank(0)).ctx("transport flush")?;
    t.flush_all().ctx("transport flush_all")?;
    win.unlock_all().ctx("unlock_all")?;
    world.barrier().ctx("barrier")?;
    let got = read(win, 0, 70, 7)?;
    ensure!(got == [n, 0, n, 0, 0, n, n], "transport calls: {got:?}");
    world.barrier().ctx("barrier")
}

/// Two threads per rank issue fetch_and_op on one window at once.
/// Below MPI_THREAD_SERIALIZED (`RMA_MPI_SMOKE_THREADS=single`) only the thread that
/// initialized MPI may call it: the other threads' calls are refused (and counted
/// nowhere).
fn threads_share_the_window(world: &World, win: &mut MpiWindow<'_>) -> Check {
    let owner_only = world.thread_level() < ThreadLevel::Serialized
        || std::env::var("RMA_MPI_SMOKE_THREADS").as_deref() == Ok("confined");
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let shared: &MpiWindow<'_> = win;
    let results: Vec<Check> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(move || -> Check {
                    for _ in 0..N {
                        let mut old = [0u8; 8];
                        let r = shared.fetch_and_op(
                            BasicType::I64,
                            Op::Sum,
                            &1i64.to_ne_bytes(),
                            &mut old,
                            rank(0),
                            80,
                        );
                        if owner_only {
                            let e = r.err().ok_or("a call from another thread ran")?;
                            ensure!(
                                e.to_string().contains("only the thread that"),
                                "refused for another reason: {e}"
                            );
                            continue;
                        }
                        r.ctx("threaded fetch_and_op")?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("thread panicked".into())))
            .collect()
    });
    results.into_iter().collect::<Check<Vec<()>>>()?;
    win.unlock_all().ctx("unlock_all")?;
    world.barrier().ctx("barrier")?;
    let got = read(win, 0, 80, 1)?[0];
    let want = if owner_only {
        0
    } else {
        2 * N * world.size() as i64
    };
    ensure!(got == want, "threaded counter {got}, expected {want}");
    world.barrier().ctx("barrier")
}

/// Calls rma-mpi refuses before MPI sees them, each with its MPI error class.
fn refused_calls(world: &World, win: &mut MpiWindow<'_>) -> Check {
    let n = world.size();
    let one = i64s(&[1]);
    win.fence(Assert::NONE).ctx("fence")?;
    win.put(&one, Target::contiguous(rank(0), 90 + world.rank() as i64))
        .ctx("put after fence")?;
    expect_class(
        win.lock_all(Assert::NONE),
        ErrorClass::RmaSync,
        "lock_all before the fence that completes a put",
    )?;
    win.fence(Assert::NOSUCCEED).ctx("fence")?;
    expect_class(
        win.put(&one, Target::contiguous(rank(0), 0)),
        ErrorClass::RmaSync,
        "put outside an epoch",
    )?;
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    expect_class(
        win.put(
            &i64s(&[1, 2]),
            Target::contiguous(rank(0), SLOTS as i64 - 1),
        ),
        ErrorClass::RmaRange,
        "put past the end",
    )?;
    expect_class(
        win.put(&one, Target::contiguous(rank(n), 0)),
        ErrorClass::Rank,
        "put to a rank outside",
    )?;
    expect_class(
        win.put(&one, Target::contiguous(rank(0), -1)),
        ErrorClass::Disp,
        "negative displacement",
    )?;
    expect_class(
        win.accumulate(
            BasicType::I64,
            Op::MaxLoc,
            &one,
            Target::contiguous(rank(0), 0),
        ),
        ErrorClass::Op,
        "MAXLOC on i64",
    )?;
    expect_class(
        win.compare_and_swap(BasicType::F64, &one, &one, &mut [0; 8], rank(0), 0),
        ErrorClass::Type,
        "CAS on f64",
    )?;
    expect_class(
        win.fence(Assert::NONE),
        ErrorClass::RmaSync,
        "fence inside lock_all",
    )?;
    expect_class(
        win.lock_all(Assert::NOPUT),
        ErrorClass::Assert,
        "lock_all with NOPUT",
    )?;
    win.put(&one, Target::contiguous(Rank::NULL, 0))
        .ctx("put to the null rank")?;
    win.unlock_all().ctx("unlock_all")?;
    Ok(())
}

/// The worker's entry: initialize MPI, run the checks, report, and abort the job on a
/// failure so that the launcher returns at once.
pub(crate) fn worker_main() -> i32 {
    let threads = std::env::var("RMA_MPI_SMOKE_THREADS");
    let level = match threads.as_deref() {
        Ok("serialized" | "confined") => ThreadLevel::Serialized,
        Ok("single") => ThreadLevel::Single,
        _ => ThreadLevel::Multiple,
    };
    let mut world = match World::init_thread(level) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("rma-mpi smoke: cannot initialize MPI: {e} [{}]", e.class());
            return 2;
        }
    };
    let confined = threads.as_deref() == Ok("confined");
    if confined {
        // calls from other threads are refused from now on (`threads_share_the_window`)
        if let Err(e) = world.confine() {
            eprintln!("rma-mpi smoke: confine: {e} [{}]", e.class());
            return 2;
        }
    }
    let started = std::time::Instant::now();
    let run = |world: &mut World| -> Check {
        run(world)?;
        if confined {
            // once windows were made, confining again is refused
            expect_class(world.confine(), ErrorClass::Arg, "confine after windows")?;
        }
        Ok(())
    };
    match run(&mut world) {
        Ok(()) => {
            if world.rank() == 0 {
                let version = world
                    .library_version()
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned();
                println!(
                    "rma-mpi smoke: all checks passed on {} ranks, {:?}, {}, windows {}, in {:.2?}; refused for known defects: [{}] [{version}]",
                    world.size(),
                    world.library(),
                    format!("{:?}", world.thread_level()).to_lowercase(),
                    std::env::var("RMA_MPI_SMOKE_WINDOWS").unwrap_or_else(|_| "allocate,create".into()),
                    started.elapsed(),
                    NOTES.lock().map(|n| n.join(", ")).unwrap_or_default(),
                );
            }
            match world.finalize() {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("rma-mpi smoke: MPI_Finalize: {e}");
                    3
                }
            }
        }
        Err(msg) => fail(&world, &msg),
    }
}

/// Reports a failed check and ends the job.
fn fail(world: &World, msg: &str) -> ! {
    let line = format!("rma-mpi smoke: rank {} FAILED: {msg}\n", world.rank());
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    world.abort(1)
}

/// `MpiWindow` is `Sync`: two threads copying this rank's window memory at once
/// (`write_local` / `read_local`, which make no MPI call) must never tear a word. The
/// writer stores a range that starts and ends inside words, alternating two patterns;
/// the reader checks that every whole word of the range is all one pattern.
fn local_copies_from_two_threads(world: &World, win: &mut MpiWindow<'_>) -> Check {
    const FROM: usize = 8 * 440 + 4; // slots 440..460, starting mid-word
    const LEN: usize = 8 * 19;
    const ROUNDS: usize = 20_000;
    world.barrier().ctx("barrier")?;
    let shared: &MpiWindow<'_> = win;
    shared.write_local(FROM, &[0x11; LEN]).ctx("write_local")?;
    let torn = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Check> = std::thread::scope(|s| {
        let writer = s.spawn(|| -> Check {
            for i in 0..ROUNDS {
                let b = if i % 2 == 0 { 0x22 } else { 0x11 };
                shared.write_local(FROM, &[b; LEN]).ctx("write_local")?;
            }
            Ok(())
        });
        let reader = s.spawn(|| -> Check {
            let mut buf = [0u8; LEN];
            for _ in 0..ROUNDS {
                shared.read_local(FROM, &mut buf).ctx("read_local")?;
                // the whole words of the range: bytes 4.. of `buf` (FROM + 4 is aligned)
                for w in buf[4..LEN - 4].chunks_exact(8) {
                    if w.iter().any(|&b| b != w[0]) || (w[0] != 0x11 && w[0] != 0x22) {
                        torn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
            Ok(())
        });
        [writer, reader]
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|_| Err("thread panicked".into())))
            .collect()
    });
    results.into_iter().collect::<Check<Vec<()>>>()?;
    let torn = torn.into_inner();
    ensure!(
        torn == 0,
        "{torn} torn words read while another thread wrote them"
    );
    world.barrier().ctx("barrier")
}

/// A fetching call whose MPI_Win_flush fails after the call was issued: the library
/// may still complete it (here: at the next flush), so its result must land in memory
/// rma leaves to MPI, never in the caller's buffer after the call returned (a buffer
/// the caller may have freed by then), and the call still takes effect exactly once.
/// Every form: the general path (get, fetch_and_op, compare_and_swap,
/// get_accumulate) and a target handle's (fetch_and_op, compare_and_swap, get).
fn failed_flush_leaves_results_to_mpi(world: &World, win: &mut MpiWindow<'_>) -> Check {
    const AT: i64 = 500; // slots 500..508
    world.barrier().ctx("barrier")?;
    if world.rank() == 0 {
        let t = rank(1);
        let failed = |what: &str| format!("{what} with a failed flush");
        let untouched = |b: &[u8]| b.iter().all(|&x| x == 0x55);
        win.lock(LockType::Exclusive, t, Assert::NONE)
            .ctx("lock exclusive")?;
        win.put(
            &i64s(&[7, 8, 9, 10, 11, 12, 13, 14]),
            Target::contiguous(t, AT),
        )
        .ctx("put")?;
        win.unlock(t).ctx("unlock")?;
        win.lock(LockType::Shared, t, Assert::NONE)
            .ctx("lock shared")?;
        let before = rma_mpi::abandoned_landings();

        let mut out = vec![0xaau8; 16];
        world.fail_next_flushes(1);
        expect_class(
            win.get(&mut out, Target::contiguous(t, AT)),
            ErrorClass::Other,
            &failed("get"),
        )?;
        out.fill(0x55);
        win.flush(t).ctx("flush after the failed get")?;
        ensure!(
            untouched(&out),
            "the get wrote the caller's buffer after it failed: {out:?}"
        );

        let mut old = [0xaau8; 8];
        world.fail_next_flushes(1);
        expect_class(
            win.fetch_and_op(
                BasicType::I64,
                Op::Sum,
                &1i64.to_ne_bytes(),
                &mut old,
                t,
                AT + 2,
            ),
            ErrorClass::Other,
            &failed("fetch_and_op"),
        )?;
        old.fill(0x55);
        win.flush(t).ctx("flush after the failed fetch_and_op")?;
        ensure!(
            untouched(&old),
            "fetch_and_op wrote the caller's buffer after it failed: {old:?}"
        );

        // Open MPI's osc/rdma refuses 8-byte compare_and_swap (a library defect)
        let cas = !world.cas64_blocked();
        if cas {
            world.fail_next_flushes(1);
            expect_class(
                win.compare_and_swap(
                    BasicType::I64,
                    &90i64.to_ne_bytes(),
                    &10i64.to_ne_bytes(),
                    &mut old,
                    t,
                    AT + 3,
                ),
                ErrorClass::Other,
                &failed("compare_and_swap"),
            )?;
            old.fill(0x55);
            win.flush(t)
                .ctx("flush after the failed compare_and_swap")?;
            ensure!(
                untouched(&old),
                "compare_and_swap wrote the caller's buffer after it failed"
            );
        }

        let mut two = [0xaau8; 16];
        world.fail_next_flushes(1);
        expect_class(
            win.get_accumulate(
                BasicType::I64,
                Op::Sum,
                &i64s(&[100, 100]),
                &mut two,
                Target::contiguous(t, AT + 4),
            ),
            ErrorClass::Other,
            &failed("get_accumulate"),
        )?;
        two.fill(0x55);
        win.flush(t).ctx("flush after the failed get_accumulate")?;
        ensure!(
            untouched(&two),
            "get_accumulate wrote the caller's buffer after it failed"
        );

        {
            let shared: &MpiWindow<'_> = win;
            let h = shared.target_handle(t).ctx("target_handle")?;
            let b = |slot: i64| 8 * slot as usize;
            world.fail_next_flushes(1);
            expect_class(
                h.fetch_and_op_bits(b(AT + 6), BasicType::I64, Op::Sum, 1),
                ErrorClass::Other,
                &failed("a handle's fetch_and_op"),
            )?;
            if cas {
                world.fail_next_flushes(1);
                expect_class(
                    h.compare_and_swap_bits(b(AT + 7), BasicType::I64, 70, 14),
                    ErrorClass::Other,
                    &failed("a handle's compare_and_swap"),
                )?;
            }
            world.fail_next_flushes(1);
            let mut got = [0xaau8; 8];
            expect_class(
                h.get(b(AT), &mut got),
                ErrorClass::Other,
                &failed("a handle's get"),
            )?;
            got.fill(0x55);
            h.flush().ctx("a handle's flush after failed flushes")?;
            ensure!(
                untouched(&got),
                "a handle's get wrote the caller's buffer after it failed"
            );
            // the handle's next calls get a new landing and exact results
            let old = h
                .fetch_and_op_bits(b(AT + 6), BasicType::I64, Op::Sum, 1)
                .ctx("a handle's fetch_and_op after the failures")?;
            ensure!(
                old == 14,
                "fetch_and_op after the failures read {old}, not 14 (13 + 1)"
            );
        }
        let left = rma_mpi::abandoned_landings() - before;
        let want = if cas { 7 } else { 5 };
        ensure!(
            left == want,
            "{left} result buffers left to MPI, not one per failed flush ({want})"
        );
        win.unlock(t).ctx("unlock")?;
        let got = read(win, 1, AT, 8)?;
        // each failed call took effect exactly once, completed by the next flush
        let want = if cas {
            [7, 8, 10, 90, 111, 112, 15, 70]
        } else {
            [7, 8, 10, 10, 111, 112, 15, 14]
        };
        ensure!(
            got == want,
            "target after the failed flushes: {got:?}, not {want:?}"
        );
    }
    world.barrier().ctx("barrier")
}
