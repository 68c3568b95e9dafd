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
/// process can reach it directly, so it falls back to the queued transport.
pub(crate) fn create_private(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let mut buf = vec![0u64; 8];
    let created = Window::create(world, &mut buf, info);
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
