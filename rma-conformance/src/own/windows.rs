//! Window creation, info read-back, many windows, uneven sizes and units.

use crate::expect_class;
use rma_win::{Assert, ErrorClass, Flavor, Info, LaunchMode, Op, Rank, Result, Window, World};

/// get_info reports the effective value of every key, defaults included.
pub(crate) fn info_values(world: &World, info: &Info) -> Result<()> {
    let w = Window::allocate::<u8>(world, 16, info)?;
    let got = w.info();
    assert_eq!(got.get("accumulate_ordering"), Some("rar,raw,war,waw"));
    assert_eq!(got.get("accumulate_ops"), Some("same_op_no_op"));
    assert_eq!(got.get("rma_transport"), Some(w.transport_name()));
    let custom = info
        .clone()
        .with("accumulate_ordering", "waw, rar")
        .with("accumulate_ops", "same_op")
        .with("mpi_accumulate_granularity", "8")
        .with("some_other_library_key", "1");
    let w2 = Window::allocate::<u8>(world, 16, &custom)?;
    let got = w2.info();
    assert_eq!(got.get("accumulate_ordering"), Some("rar,waw"));
    assert_eq!(got.get("accumulate_ops"), Some("same_op"));
    assert_eq!(got.get("mpi_accumulate_granularity"), Some("8"));
    assert_eq!(got.get("some_other_library_key"), None);
    let none =
        Window::allocate::<u8>(world, 16, &info.clone().with("accumulate_ordering", "none"))?;
    assert_eq!(none.info().get("accumulate_ordering"), Some("none"));
    // all still usable
    none.fence(Assert::NONE)?;
    none.accumulate(&[1u8], Rank::new(0), world.rank() as i64, Op::Sum)?;
    none.fence(Assert::NONE)?;
    if world.rank() == 0 {
        let v: Vec<u8> = none.local_vec()?;
        assert_eq!(&v[..world.size()], &vec![1u8; world.size()][..]);
    }
    for mut w in [w, w2, none] {
        w.free()?;
    }
    Ok(())
}

/// A window over memory the rank owns: every call works on it. With processes no other
/// process can reach it directly, so it uses the queued transport (a case whose info
/// names atomic names none here: see [`crate::create_info`]).
pub(crate) fn create_private(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let mut buf = vec![0u64; 8];
    let created = Window::create(world, &mut buf, &crate::create_info(world, info));
    {
        {
            let mut win = created?;
            assert_eq!(win.flavor(), Flavor::Create);
            if world.mode() == LaunchMode::Processes {
                assert_eq!(win.transport_name(), "queued");
                assert_eq!(win.info().get("rma_transport"), Some("queued"));
            }
            win.fence(Assert::NONE)?;
            for r in 0..p {
                win.accumulate(&[me as u64 + 1], Rank::new(r as u32), me as i64, Op::Sum)?;
            }
            win.fence(Assert::NONE)?;
            let mut got = vec![0u64; p];
            win.read_local(0, &mut got)?;
            assert_eq!(got, (1..=p as u64).collect::<Vec<_>>());
            win.free()?;
        }
    }
    drop(buf);
    Ok(())
}

/// The info naming transport `name`.
fn named(name: &str) -> Info {
    Info::new().with("rma_transport", name)
}

/// Asserts that `r` is an RMA_FLAVOR error whose message holds each of `says`.
#[track_caller]
fn refused<T: std::fmt::Debug>(r: Result<T>, says: &[&str]) {
    match r {
        Err(e) => {
            assert_eq!(
                e.class(),
                ErrorClass::RmaFlavor,
                "expected RMA_FLAVOR, got {e}"
            );
            let msg = e.to_string();
            for s in says {
                assert!(msg.contains(s), "{msg:?} does not say {s:?}");
            }
        }
        Ok(v) => panic!("expected an error of class RMA_FLAVOR, got Ok({v:?})"),
    }
}

/// Checks that a window works for every rank after the calls before it: each rank adds
/// `me + 1` into its right neighbour's first element under fences, and finds its left
/// neighbour's addition in its own. A creation refused on some ranks but started on
/// others would leave this window's collective creation or its fences mismatched.
fn works(world: &World, win: &mut Window<'_>, start: u64) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let right = Rank::new(((me + 1) % p) as u32);
    let left = ((me + p - 1) % p) as u64;
    win.fence(Assert::NONE)?;
    win.accumulate(&[me as u64 + 1], right, 0, Op::Sum)?;
    win.fence(Assert::NONE)?;
    let mut got = [0u64];
    win.read_local(0, &mut got)?;
    assert_eq!(
        got[0],
        start + left + 1,
        "rank {me}: the left neighbour's addition"
    );
    Ok(())
}

/// Creates (over a fresh buffer of 4 elements holding 7) or allocates a window with
/// `info`, checks it reports transport `expect`, and uses and frees it.
fn expect_transport(world: &World, create: bool, info: &Info, expect: &str) -> Result<()> {
    let mut buf = vec![7u64; 4];
    let (mut win, start) = if create {
        (Window::create(world, &mut buf, info)?, 7)
    } else {
        (Window::allocate::<u64>(world, 4, info)?, 0)
    };
    let how = if create { "create" } else { "allocate" };
    assert_eq!(win.transport_name(), expect, "{how} with {info:?}");
    assert_eq!(
        win.info().get("rma_transport"),
        Some(expect),
        "{how} with {info:?}: Window::info()"
    );
    works(world, &mut win, start)?;
    win.free()?;
    drop(win);
    let (me, p) = (world.rank(), world.size());
    if create {
        let left = ((me + p - 1) % p) as u64;
        assert_eq!(buf, [8 + left, 7, 7, 7], "free copied the window back");
    }
    Ok(())
}

/// A transport named in the window's info is used, or the creation fails with
/// RMA_FLAVOR saying why and what would work, never swapped silently for another; a
/// refused creation changes nothing (the caller's buffer keeps its values, and the next
/// creation, collective on every rank, works); with no name each launch mode has its
/// default, which `Window::info()` reports.
pub(crate) fn transport_named_or_refused(world: &World, info: &Info) -> Result<()> {
    let mut buf = vec![7u64; 4];
    if !world.backend().builtin() {
        // a backend plugged in from outside has its own transports: rma's are names it
        // does not know (class ARG), refused before anything changes
        for name in ["atomic", "mpi"] {
            expect_class(
                Window::create(world, &mut buf, &named(name)),
                ErrorClass::Arg,
            );
        }
        assert_eq!(buf, [7; 4], "a refused creation changed the buffer");
        let name = info_name(info);
        expect_transport(world, true, info, name)?;
        return expect_transport(world, false, info, name);
    }
    match world.mode() {
        LaunchMode::Processes => {
            refused(
                Window::create(world, &mut buf, &named("atomic")),
                &[
                    "with ranks as processes",
                    "cannot use the atomic transport",
                    "other processes cannot reach this process's memory",
                    "use rma_transport=queued, name no transport, or Window::allocate",
                ],
            );
            refused(
                Window::create(world, &mut buf, &named("mpi")),
                &[
                    "MPI launcher",
                    "use rma_transport=queued or name no transport",
                ],
            );
            assert_eq!(buf, [7; 4], "a refused creation changed the buffer");
            // nothing was left behind: the next creations work
            expect_transport(world, true, &Info::new(), "queued")?;
            expect_transport(world, true, &named("queued"), "queued")?;
            // the refusal is about memory the other processes cannot reach
            expect_transport(world, false, &named("atomic"), "atomic")?;
            expect_transport(world, false, &named("queued"), "queued")?;
        }
        LaunchMode::Threads => {
            for name in ["atomic", "queued"] {
                expect_transport(world, true, &named(name), name)?;
                expect_transport(world, false, &named(name), name)?;
            }
            refused(
                Window::create(world, &mut buf, &named("mpi")),
                &[
                    "MPI launcher",
                    "this world runs as threads",
                    "use rma_transport=atomic or rma_transport=queued, or name no transport",
                ],
            );
            assert_eq!(buf, [7; 4], "a refused creation changed the buffer");
        }
        LaunchMode::Mpi => {
            for name in ["atomic", "queued"] {
                let why = [
                    "under an MPI launcher every window uses the mpi transport",
                    &format!("the {name} transport runs only in rma's own worlds"),
                    "use rma_transport=mpi or name no transport",
                ];
                refused(Window::create(world, &mut buf, &named(name)), &why);
                refused(Window::allocate::<u64>(world, 4, &named(name)), &why);
            }
            assert_eq!(buf, [7; 4], "a refused creation changed the buffer");
            for create in [true, false] {
                expect_transport(world, create, &Info::new(), "mpi")?;
                expect_transport(world, create, &named("mpi"), "mpi")?;
            }
        }
    }
    // the configuration's own transport: honoured for both flavors, except atomic over
    // a created window with processes
    let name = info_name(info);
    if world.mode() == LaunchMode::Processes && name == "atomic" {
        refused(
            Window::create(world, &mut buf, info),
            &["cannot use the atomic transport"],
        );
        expect_transport(world, false, info, name)?;
    } else {
        expect_transport(world, true, info, name)?;
        expect_transport(world, false, info, name)?;
    }
    Ok(())
}

/// The transport `info` names (every configuration of the suite names one).
fn info_name(info: &Info) -> &str {
    info.get("rma_transport")
        .expect("the suite's info names a transport")
}

/// Many windows created and freed in the same order on every rank, each independent.
pub(crate) fn many_windows(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let mut wins = vec![];
    for k in 0..20 {
        wins.push(Window::allocate::<u32>(world, 4, info)?);
        let w = wins.last().expect("just pushed");
        w.fence(Assert::NONE)?;
        w.accumulate(&[k as u32], Rank::new(0), 0, Op::Sum)?;
        w.fence(Assert::NONE)?;
    }
    for (k, w) in wins.iter_mut().enumerate() {
        if me == 0 {
            let v: Vec<u32> = w.local_vec()?;
            assert_eq!(v[0], (k * world.size()) as u32, "window {k}");
        }
        w.free()?;
    }
    Ok(())
}

/// Ranks expose windows of different sizes and displacement units; offsets are scaled
/// by the target's unit and ranges checked against the target's size.
pub(crate) fn uneven_windows(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    // rank r: (r + 1) * 16 bytes, disp_unit 4 * (r + 1)
    let mut win = Window::allocate_bytes(world, (me + 1) * 16, 4 * (me + 1), info)?;
    win.fence(Assert::NONE)?;
    for r in 0..world.size() {
        assert_eq!(win.len_of(r)?, (r + 1) * 16);
        assert_eq!(win.disp_unit_of(r)?, 4 * (r + 1));
        // last 4-byte slot of rank r: byte (r+1)*16 - 4 = disp ((r+1)*16-4) / (4(r+1))
        // only when it divides; use disp 1 (byte 4(r+1)) instead
        win.accumulate(&[1u32], Rank::new(r as u32), 1, Op::Sum)?;
        expect_class(
            win.accumulate(&[1u32], Rank::new(r as u32), 4, Op::Sum),
            ErrorClass::RmaRange,
        );
    }
    win.fence(Assert::NONE)?;
    let mut v = [0u32; 1];
    win.read_local(me + 1, &mut v)?;
    assert_eq!(v[0], world.size() as u32);
    win.free()
}

/// The target makes no RMA call while origins work on its window: fetch_and_op (which
/// needs the target's side of a queued transport to reply) must still complete. The
/// target only reads its own memory until it sees the expected count; a transport that
/// needed its cooperation would leave it waiting past the deadline.
pub(crate) fn progress_without_target_calls(world: &World, info: &Info) -> Result<()> {
    fn ops() -> u64 {
        crate::scaled(200)
    }
    let me = world.rank();
    let win = Window::allocate::<u64>(world, 1, info)?;
    win.fence(Assert::NONE)?;
    if me == 0 {
        for k in 0..ops() {
            assert_eq!(win.fetch_and_op(1u64, Rank::new(1), 0, Op::Sum)?, k);
        }
    } else {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut v = [0u64];
        loop {
            win.read_local(0, &mut v)?;
            if v[0] == ops() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "operations were not applied while the target computed"
            );
            std::hint::spin_loop();
        }
    }
    win.fence(Assert::NONE)?;
    let mut win = win;
    win.free()
}
