//! Each error class a call can raise, and the window checked unchanged afterwards (a
//! rejected call changes nothing, docs/semantics.md rule 20).

use crate::expect_class;
use rma_win::{
    Assert, BasicType, Buffer, BufferMut, Datatype, ErrorClass, Info, Op, Rank, Result, Target,
    Window, World,
};

fn commit(mut d: Datatype) -> Datatype {
    d.commit();
    d
}

/// `r` failed with `class`, and its message holds each of `parts`: what was wrong,
/// with the values, and what would be right (issue 20: no vague or self-contradictory
/// text).
fn expect_text<T: std::fmt::Debug>(r: Result<T>, class: ErrorClass, parts: &[&str]) {
    let e = r.expect_err("the call should have been refused");
    assert_eq!(e.class(), class, "expected {class}, got {e}");
    let text = e.to_string();
    for part in parts {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
}

fn pattern(rank: usize) -> Vec<i64> {
    (0..32).map(|i| (rank * 1000 + i) as i64).collect()
}

pub(crate) fn error_classes(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let win = Window::allocate::<i64>(world, 32, info)?;
    let bytes_win = Window::allocate_bytes(world, 64, 1, info)?;
    win.write_local(0, &pattern(me))?;
    win.fence(Assert::NONE)?;
    bytes_win.fence(Assert::NONE)?;
    let t = Rank::new(((me + 1) % p) as u32);
    let i64t = Datatype::basic(BasicType::I64);
    let ones = [1i64; 8];

    typed_misuse(&win, &bytes_win, t, p);
    let wide = commit(Datatype::vector(4, 1, 12, &i64t)?); // spans 37 elements
    expect_class(
        win.accumulate_with(Buffer::of(&ones[..4]), Target::new(t, 0, 1, &wide), Op::Sum),
        ErrorClass::RmaRange,
    );
    // TYPE: basic types differ, signatures differ, overlapping target, uncommitted,
    // derived type where a predefined one is needed, CAS on floating point
    let f64t = Datatype::basic(BasicType::F64);
    expect_class(
        win.accumulate_with(Buffer::of(&ones[..2]), Target::new(t, 0, 2, &f64t), Op::Sum),
        ErrorClass::Type,
    );
    expect_class(
        win.put_with(Buffer::of(&ones[..3]), Target::new(t, 0, 2, &i64t)),
        ErrorClass::Type,
    );
    let overlap = commit(Datatype::vector(2, 2, 1, &i64t)?);
    expect_class(
        win.accumulate_with(
            Buffer::of(&ones[..4]),
            Target::new(t, 0, 1, &overlap),
            Op::Sum,
        ),
        ErrorClass::Type,
    );
    let uncommitted = Datatype::contiguous(2, &i64t)?;
    expect_class(
        win.put_with(Buffer::of(&ones[..2]), Target::new(t, 0, 1, &uncommitted)),
        ErrorClass::Type,
    );
    let c1 = commit(Datatype::contiguous(1, &i64t)?);
    let mut r8 = [0u8; 8];
    expect_class(
        win.fetch_and_op_with(&1i64.to_ne_bytes(), &mut r8, &c1, t, 0, Op::Sum),
        ErrorClass::Type,
    );
    expect_class(win.compare_and_swap(1.0f64, 0.0, t, 0), ErrorClass::Type);
    let mixed = commit(Datatype::structure(
        &[1, 1],
        &[0, 8],
        &[i64t.clone(), f64t.clone()],
    )?);
    expect_class(
        win.accumulate_with(
            Buffer::of(&ones[..2]),
            Target::new(t, 0, 1, &mixed),
            Op::Sum,
        ),
        ErrorClass::Type,
    );
    // BUFFER: origin slice shorter than its count and datatype
    let raw = rma_datatype::bytes_of(&ones[..2]);
    expect_class(
        win.put_with(Buffer::new(raw, 3, &i64t), Target::new(t, 0, 3, &i64t)),
        ErrorClass::Buffer,
    );
    let mut small = [0u8; 8];
    expect_class(
        win.get_with(
            BufferMut::new(&mut small, 2, &i64t),
            Target::new(t, 0, 2, &i64t),
        ),
        ErrorClass::Buffer,
    );
    bytes_win.fetch_and_op(1i64, t, 8, Op::Sum)?; // aligned: fine
                                                  // ASSERT: a bit fence does not take
    expect_class(win.fence(Assert::NOCHECK), ErrorClass::Assert);
    expect_class(win.fence(Assert::from_bits(1 << 9)), ErrorClass::Assert);
    // INFO and ARG at creation (every rank gets the same error: nothing collective ran)
    expect_class(
        Window::allocate::<i64>(
            world,
            4,
            &info.clone().with("accumulate_ordering", "rar,bogus"),
        ),
        ErrorClass::Info,
    );
    expect_class(
        Window::allocate::<i64>(
            world,
            4,
            &Info::new().with("rma_transport", "carrier-pigeon"),
        ),
        ErrorClass::Arg,
    );
    expect_class(Window::allocate_bytes(world, 4, 0, info), ErrorClass::Disp);
    // ... naming the key, the value, what in it is wrong and what is accepted
    expect_text(
        Window::allocate::<i64>(
            world,
            4,
            &info.clone().with("accumulate_ordering", "rar,bogus"),
        ),
        ErrorClass::Info,
        &[
            "\"accumulate_ordering\"",
            "\"rar,bogus\"",
            "\"bogus\" is not an ordering",
            "rar, raw, war, waw",
        ],
    );
    expect_text(
        win.fence(Assert::NOCHECK),
        ErrorClass::Assert,
        &["NOCHECK", "accepts only", "drop NOCHECK"],
    );

    // nothing above changed any window
    win.fence(Assert::NONE)?;
    bytes_win.fence(Assert::NONE)?;
    let local: Vec<i64> = win.local_vec()?;
    assert_eq!(local, pattern(me), "a rejected call changed the window");
    let bytes_local: Vec<i64> = bytes_win.local_vec()?;
    let bumped = bytes_local.iter().filter(|v| **v != 0).count();
    assert_eq!(
        (bytes_local[1], bumped),
        (1, 1),
        "only the aligned fetch_and_op landed"
    );
    let mut bytes_win = bytes_win;
    // ARG at set_info too, for a transport name that names no transport (the window's
    // info unchanged); a name of another transport is listed as ignored
    let before = bytes_win.info();
    expect_text(
        bytes_win.set_info(&Info::new().with("rma_transport", "carrier-pigeon")),
        ErrorClass::Arg,
        &["\"carrier-pigeon\"", "atomic, queued, mpi"],
    );
    expect_class(
        bytes_win.set_info(
            &Info::new()
                .with("mpi_accumulate_granularity", "64")
                .with("rma_transport", " no-such "),
        ),
        ErrorClass::Arg,
    );
    assert_eq!(
        bytes_win.info(),
        before,
        "a refused set_info changed the info"
    );
    let own = bytes_win.transport_name();
    let other = ["atomic", "queued", "mpi"]
        .into_iter()
        .find(|&t| t != own)
        .unwrap_or("atomic");
    assert_eq!(
        bytes_win.set_info(&Info::new().with("rma_transport", other))?,
        ["rma_transport"]
    );
    assert_eq!(
        bytes_win.set_info(&Info::new().with("rma_transport", own))?,
        Vec::<String>::new()
    );
    bytes_win.free()?;
    let mut win = win;
    win.free()?;
    // WIN: a freed window refuses every call
    expect_class(win.put(&ones, t, 0), ErrorClass::Win);
    expect_class(win.fence(Assert::NONE), ErrorClass::Win);
    expect_class(win.free(), ErrorClass::Win);
    Ok(())
}

/// The misuses the typed calls can make, each refused with its class: run in every
/// kind of access epoch, since the typed calls take a fast path under passive-target
/// epochs that must refuse exactly what the general path refuses.
fn typed_misuse(win: &Window<'_>, bytes_win: &Window<'_>, t: Rank, p: usize) {
    let ones = [1i64; 8];
    // RANK: outside the group, also for the null-rank-like large values
    expect_class(win.put(&ones, Rank::new(p as u32), 0), ErrorClass::Rank);
    expect_class(
        win.accumulate(&ones, Rank::new(1000), 0, Op::Sum),
        ErrorClass::Rank,
    );
    expect_class(
        win.fetch_and_op(1i64, Rank::new(p as u32 + 3), 0, Op::Sum),
        ErrorClass::Rank,
    );
    // ... saying which ranks are valid
    let last = (p - 1).to_string();
    expect_text(
        win.put(&ones, Rank::new(p as u32), 0),
        ErrorClass::Rank,
        &[
            &format!("rank {p} is not in"),
            &format!("group of {p} ranks"),
            &format!("from 0 to {last}"),
        ],
    );
    // RMA_RANGE: past the end of the target window
    expect_class(win.put(&ones, t, 25), ErrorClass::RmaRange);
    expect_class(win.accumulate(&ones, t, 30, Op::Sum), ErrorClass::RmaRange);
    let mut out = [0i64; 8];
    expect_class(win.get(&mut out, t, 31), ErrorClass::RmaRange);
    expect_class(win.fetch_and_op(1i64, t, 32, Op::Sum), ErrorClass::RmaRange);
    expect_class(
        win.compare_and_swap(1i64, 0, t, 1 << 40),
        ErrorClass::RmaRange,
    );
    // ... naming the bytes asked for and the bytes the window has
    let tr = format!("{t}'s window of 256 bytes");
    expect_text(
        win.put(&ones, t, 25),
        ErrorClass::RmaRange,
        &["[200, 264)", "do not fit", &tr, "[0, 256)"],
    );
    expect_text(
        win.fetch_and_op(1i64, t, 32, Op::Sum),
        ErrorClass::RmaRange,
        &["[256, 264)", &tr, "[0, 256)"],
    );
    // DISP: negative, overflowing
    expect_class(win.put(&ones, t, -1), ErrorClass::Disp);
    expect_class(
        win.accumulate(&ones, t, i64::MAX, Op::Sum),
        ErrorClass::Disp,
    );
    // OP: op not defined on the type, NO_OP in accumulate
    expect_class(win.accumulate(&[1.0f64; 2], t, 0, Op::Band), ErrorClass::Op);
    expect_class(win.accumulate(&ones, t, 0, Op::NoOp), ErrorClass::Op);
    // ... naming the types the op takes, and the calls NO_OP belongs to
    expect_text(
        win.accumulate(&[1.0f64; 2], t, 0, Op::Band),
        ErrorClass::Op,
        &[
            "MPI_BAND is not defined on f64",
            "integer, address-sized and byte types",
        ],
    );
    expect_text(
        win.accumulate(&[1i64], t, 0, Op::NoOp),
        ErrorClass::Op,
        &[
            "MPI_NO_OP is not allowed in accumulate",
            "get_accumulate and fetch_and_op",
        ],
    );
    expect_class(win.accumulate(&ones, t, 0, Op::MaxLoc), ErrorClass::Op);
    expect_class(
        win.fetch_and_op(rma_datatype::Complex64 { re: 1.0, im: 0.0 }, t, 0, Op::Max),
        ErrorClass::Op,
    );
    // the single-element forms (passed as bits on the fast path)
    expect_class(
        win.accumulate(&[1i64], t, 32, Op::Sum),
        ErrorClass::RmaRange,
    );
    expect_class(win.accumulate(&[1i64], t, 0, Op::NoOp), ErrorClass::Op);
    expect_class(win.accumulate(&[1.0f64], t, 0, Op::Bor), ErrorClass::Op);
    expect_class(win.compare_and_swap(1.0f64, 0.0, t, 0), ErrorClass::Type);
    let mut one = [0i64; 1];
    expect_class(
        win.get_accumulate(&[1i64], &mut one, t, 32, Op::Sum),
        ErrorClass::RmaRange,
    );
    expect_class(
        win.get_accumulate(&[1i64; 2], &mut one, t, 0, Op::Sum),
        ErrorClass::Type,
    );
    // DISP: misaligned element for an atomic call (window with disp_unit 1)
    expect_class(
        bytes_win.get_accumulate(&[1i64], &mut one, t, 4, Op::Sum),
        ErrorClass::Disp,
    );
    expect_class(
        bytes_win.fetch_and_op(1i64, t, 4, Op::Sum),
        ErrorClass::Disp,
    );
    expect_class(
        bytes_win.accumulate(&[1i32], t, 2, Op::Sum),
        ErrorClass::Disp,
    );
    // ... and the error says what was wrong and what would be right (issue: a rule
    // stricter than MPI must name the alignment needed and the displacement given)
    let e = bytes_win
        .fetch_and_op(1i64, t, 4, Op::Sum)
        .expect_err("misaligned");
    let text = e.to_string();
    for part in [
        "8-byte aligned",
        "displacement 4",
        "byte offset 4",
        "put and get",
    ] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
    // BUFFER: an origin layout reaching below the buffer's first byte (a vector with a
    // negative stride) is named as such, not as a buffer too short for its own length
    let backwards = commit(Datatype::vector(2, 1, -2, &Datatype::basic(BasicType::I64)).unwrap());
    let data = [1i64; 4];
    let e = win
        .accumulate_with(
            Buffer::typed(&data, 1, &backwards),
            Target::of::<i64>(t, 0, 2),
            Op::Sum,
        )
        .expect_err("the layout starts 16 bytes before the buffer");
    assert_eq!(e.class(), ErrorClass::Buffer, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("16 bytes before the buffer's first byte"),
        "the error should say the layout starts before the buffer: {text}"
    );
}

/// The typed calls' misuses refused inside lock_all and inside an exclusive lock (the
/// calls' fast path), then nothing changed, and a freed window refuses the typed calls.
pub(crate) fn passive_error_classes(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let mut win = Window::allocate::<i64>(world, 32, info)?;
    let mut bytes_win = Window::allocate_bytes(world, 64, 1, info)?;
    win.write_local(0, &pattern(me))?;
    world.barrier()?;
    let t = Rank::new(((me + 1) % p) as u32);
    win.lock_all(Assert::NONE)?;
    bytes_win.lock_all(Assert::NONE)?;
    typed_misuse(&win, &bytes_win, t, p);
    win.unlock_all()?;
    bytes_win.unlock_all()?;
    win.lock(rma_win::LockType::Exclusive, t, Assert::NONE)?;
    bytes_win.lock(rma_win::LockType::Exclusive, t, Assert::NONE)?;
    typed_misuse(&win, &bytes_win, t, p);
    win.unlock(t)?;
    bytes_win.unlock(t)?;
    world.barrier()?;
    assert_eq!(
        win.local_vec::<i64>()?,
        pattern(me),
        "a rejected call changed the window"
    );
    assert!(
        bytes_win.local_vec::<i64>()?.iter().all(|v| *v == 0),
        "a rejected call changed the byte window"
    );
    bytes_win.free()?;
    win.free()?;
    let mut out = [0i64; 1];
    expect_class(win.put(&[1i64], t, 0), ErrorClass::Win);
    expect_class(win.get(&mut out, t, 0), ErrorClass::Win);
    expect_class(win.accumulate(&[1i64], t, 0, Op::Sum), ErrorClass::Win);
    expect_class(win.fetch_and_op(1i64, t, 0, Op::Sum), ErrorClass::Win);
    expect_class(win.compare_and_swap(1i64, 0, t, 0), ErrorClass::Win);
    expect_class(win.flush(t), ErrorClass::Win);
    Ok(())
}

/// A window created over a buffer that starts one byte past an 8-byte boundary: every
/// launch mode and transport exposes an aligned copy of the buffer (MPICH cannot expose
/// unaligned memory; other ranks must never write into a buffer whose window was
/// dropped or forgotten), so an 8-byte fetch_and_op at offset 0 is aligned and lands,
/// once, and the buffer gets the result back at free.
pub(crate) fn misaligned_created_window(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let p = world.size();
    // an 8-aligned allocation (u64), viewed as bytes from its second byte on
    let mut words = vec![0u64; 10];
    let bytes = rma_datatype::bytes_of_mut(&mut words).expect("u64 has a byte view");
    let mut win = Window::create::<u8>(world, &mut bytes[1..73], &crate::create_info(world, info))?;
    let t = Rank::new(((me + 1) % p) as u32);
    win.lock_all(Assert::NONE)?;
    win.fetch_and_op(1i64, t, 0, Op::Sum)?;
    win.unlock_all()?;
    world.barrier()?;
    let local: Vec<u8> = win.local_vec()?;
    assert_eq!(
        i64::from_ne_bytes(local[..8].try_into().unwrap_or_default()),
        1
    );
    assert_eq!(local.iter().filter(|b| **b != 0).count(), 1);
    win.free()?;
    drop(win);
    let back = rma_datatype::bytes_of_mut(&mut words).expect("u64 has a byte view");
    assert_eq!(
        i64::from_ne_bytes(back[1..9].try_into().unwrap_or_default()),
        1,
        "free copied the window back into the buffer"
    );
    Ok(())
}

/// Fence-mode misuse of docs/semantics.md rule 16: calls with no epoch, after a fence that
/// closed the epoch, NOPRECEDE with calls pending, free with calls pending.
pub(crate) fn sync_errors(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let other = Rank::new((1 - me) as u32);
    let mut win = Window::allocate::<i32>(world, 8, info)?;
    // before the first fence: no epoch
    expect_class(win.put(&[1i32], other, 0), ErrorClass::RmaSync);
    expect_class(
        win.accumulate(&[1i32], other, 0, Op::Sum),
        ErrorClass::RmaSync,
    );
    expect_class(
        win.fetch_and_op(1i32, other, 0, Op::Sum),
        ErrorClass::RmaSync,
    );
    let mut r = [0i32; 1];
    expect_class(win.get(&mut r, other, 0), ErrorClass::RmaSync);
    // ... naming the target, the epochs open, and the calls that open one
    expect_text(
        win.put(&[1i32], other, 0),
        ErrorClass::RmaSync,
        &[
            &format!("no access epoch covers {other}"),
            "no epoch is open",
            "call fence, lock, lock_all or start first",
        ],
    );
    expect_text(
        win.unlock(other),
        ErrorClass::RmaSync,
        &[
            &format!("{other} is not locked by this rank"),
            "call lock on",
        ],
    );
    expect_text(
        win.flush(other),
        ErrorClass::RmaSync,
        &["passive-target epoch", "or lock_all, first"],
    );
    expect_text(win.complete(), ErrorClass::RmaSync, &["call start first"]);
    expect_text(win.wait(), ErrorClass::RmaSync, &["call post first"]);
    // even to the null rank, and with zero count, a call needs an epoch
    expect_class(win.put(&[1i32], Rank::NULL, 0), ErrorClass::RmaSync);
    win.fence(Assert::NONE)?;
    win.accumulate(&[1i32], other, 0, Op::Sum)?;
    // NOPRECEDE while a call is pending: refused, and the epoch stays open
    expect_class(win.fence(Assert::NOPRECEDE), ErrorClass::RmaSync);
    // free while a call is pending: refused
    expect_class(win.free(), ErrorClass::RmaSync);
    win.fence(Assert::NOSUCCEED)?;
    // after NOSUCCEED: no epoch
    expect_class(
        win.accumulate(&[1i32], other, 0, Op::Sum),
        ErrorClass::RmaSync,
    );
    win.fence(Assert::NOPRECEDE)?;
    win.accumulate(&[1i32], other, 1, Op::Sum)?;
    win.fence(Assert::NOSUCCEED)?;
    let local: Vec<i32> = win.local_vec()?;
    assert_eq!(
        &local[..3],
        &[1, 1, 0],
        "exactly the two accepted accumulates landed"
    );
    win.free()
}
