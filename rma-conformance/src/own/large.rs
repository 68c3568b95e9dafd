//! Large operations: payloads far larger than a queued ring (64 KiB) in both directions
//! at once, fetched results streaming back, and target layouts with hundreds of
//! thousands of irregular blocks (MPICH's header size limit broke on such types:
//! pmodels/mpich#7886).

use rma_win::{
    Assert, BasicType, Buffer, BufferMut, Datatype, Info, Op, Rank, Result, Target, Window, World,
};

const N: usize = 1 << 20; // 8 MiB of f64

/// Ranks 0 and 1 accumulate 8 MiB into each other in the same epoch, then fetch it all
/// back with get_accumulate (NO_OP) in both directions at once.
pub(crate) fn both_ways_at_once(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let other = Rank::new((1 - me) as u32);
    let win = Window::allocate::<f64>(world, N, info)?;
    let init: Vec<f64> = (0..N).map(|i| (i % 1000) as f64).collect();
    win.write_local(0, &init)?;
    let add: Vec<f64> = (0..N).map(|i| ((i + me) % 7) as f64).collect();
    win.fence(Assert::NONE)?;
    win.accumulate(&add, other, 0, Op::Sum)?;
    win.accumulate(&add, other, 0, Op::Sum)?;
    win.fence(Assert::NONE)?;
    let mut back = vec![0f64; N];
    win.get_accumulate(&[], &mut back, other, 0, Op::NoOp)?;
    win.fence(Assert::NONE)?;
    // the other rank's window: its initial values plus my two accumulates
    for (i, v) in back.iter().enumerate() {
        let expect = (i % 1000) as f64 + 2.0 * ((i + me) % 7) as f64;
        assert_eq!(*v, expect, "element {i} of rank {}", 1 - me);
    }
    let mut win = win;
    win.free()
}

/// An indexed target of 200 000 irregular blocks (lengths 1-3, gaps 1-2), accumulated
/// by every rank into rank 0, then read back through the same layout.
pub(crate) fn huge_irregular_layout(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    const BLOCKS: usize = 200_000;
    let (mut lens, mut disps) = (Vec::with_capacity(BLOCKS), Vec::with_capacity(BLOCKS));
    let mut at = 0isize;
    for b in 0..BLOCKS {
        let len = 1 + (b * 7919) % 3;
        lens.push(len);
        disps.push(at);
        at += (len + 1 + (b * 104_729) % 2) as isize;
    }
    let span = at as usize;
    let elems: usize = lens.iter().sum();
    let i64t = Datatype::basic(BasicType::I64);
    let mut layout = Datatype::indexed(&lens, &disps, &i64t)?;
    layout.commit();
    let win = Window::allocate::<i64>(world, span, info)?;
    let origin: Vec<i64> = (0..elems as i64).collect();
    win.fence(Assert::NONE)?;
    win.accumulate_with(
        Buffer::of(&origin),
        Target::new(Rank::new(0), 0, 1, &layout),
        Op::Sum,
    )?;
    win.fence(Assert::NONE)?;
    // every rank reads the result back through the layout into a contiguous buffer
    let mut back = vec![0i64; elems];
    let contiguous = Datatype::basic(BasicType::I64);
    win.get_with(
        BufferMut::typed(&mut back, elems, &contiguous)?,
        Target::new(Rank::new(0), 0, 1, &layout),
    )?;
    win.fence(Assert::NONE)?;
    let p = world.size() as i64;
    for (k, v) in back.iter().enumerate() {
        assert_eq!(*v, k as i64 * p, "element {k} through the layout");
    }
    if me == 0 {
        // the gaps are untouched
        let local: Vec<i64> = win.local_vec()?;
        let touched: usize = local.iter().filter(|v| **v != 0).count();
        assert_eq!(
            touched,
            elems - 1,
            "only the layout's elements changed (element 0 adds 0)"
        );
    }
    let mut win = win;
    win.free()
}
