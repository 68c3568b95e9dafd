//! One road per call: every entry point to an RMA call (the typed window call, the
//! element call, the MPI-faithful form, a target handle) gives the same results and
//! refuses the same misuse with the same class, under a passive epoch (where the
//! window calls take the road per call) and a fence epoch (where they take the
//! general path), on both transports.

use rma_win::{
    Assert, BasicType, Buffer, BufferMut, Datatype, ErrorClass, Info, Op, Rank, Target, Window,
};

const TRANSPORTS: [&str; 2] = ["atomic", "queued"];

/// The four ways of adding `v` to element `disp` of rank 1's window, by number.
fn add(win: &Window<'_>, way: usize, v: i64, disp: i64) -> rma_win::Result<()> {
    let one = Rank::new(1);
    match way {
        0 => win.accumulate(&[v], one, disp, Op::Sum),
        1 => win.accumulate_elements(BasicType::I64, &v.to_ne_bytes(), one, disp, Op::Sum),
        _ => {
            let dt = Datatype::of::<i64>();
            let bytes = v.to_ne_bytes();
            win.accumulate_with(
                Buffer::new(&bytes, 1, &dt),
                Target::new(one, disp, 1, &dt),
                Op::Sum,
            )
        }
    }
}

#[test]
fn every_entry_point_gives_the_same_sums_in_both_epochs() {
    for t in TRANSPORTS {
        let out = rma_win::run_threads(2, |world| -> rma_win::Result<Vec<i64>> {
            let info = Info::new().with("rma_transport", t);
            let win = Window::allocate::<i64>(&world, 8, &info)?;
            win.fence(Assert::NONE)?;
            // a fence epoch: the general path
            for way in 0..3 {
                add(&win, way, 1 + way as i64, way as i64)?;
            }
            win.fence(Assert::NONE)?;
            win.fence(Assert::NOSUCCEED)?;
            // a passive epoch: the road, per call and through a handle
            win.lock_all(Assert::NONE)?;
            for way in 0..3 {
                add(&win, way, 10, 3 + way as i64)?;
            }
            let mut old = [0u8; 8];
            let five = 5i64.to_ne_bytes();
            win.get_accumulate_elements(
                BasicType::I64,
                &five,
                &mut old,
                Rank::new(1),
                6,
                Op::Replace,
            )?;
            assert!(matches!(i64::from_ne_bytes(old), 0 | 5)); // 5 if the other rank came first
            let mut now = [0u8; 8];
            win.get_accumulate_elements(BasicType::I64, &[], &mut now, Rank::new(1), 6, Op::NoOp)?;
            assert_eq!(i64::from_ne_bytes(now), 5);
            win.flush_all()?;
            win.unlock_all()?;
            world.barrier()?;
            {
                let epoch = win.lock_all_epoch(Assert::NONE)?;
                let h = epoch.target(Rank::new(1))?;
                h.add(&[100i64], 7)?;
                h.flush()?;
                epoch.unlock()?;
            }
            world.barrier()?;
            win.local_vec::<i64>()
        })
        .unwrap()
        .into_iter()
        .collect::<rma_win::Result<Vec<_>>>()
        .unwrap();
        // both ranks added into rank 1's window; the REPLACEs leave one of their 5s
        assert_eq!(out[1], [2, 4, 6, 20, 20, 20, 5, 200], "{t}");
        assert_eq!(out[0], [0; 8], "{t}");
    }
}

#[test]
fn every_entry_point_refuses_the_same_misuse_with_the_same_class() {
    for t in TRANSPORTS {
        rma_win::run_threads(2, |world| -> rma_win::Result<()> {
            let info = Info::new().with("rma_transport", t);
            let win = Window::allocate_bytes(&world, 64, 4, &info)?;
            let one = Rank::new(1);
            let i64t = Datatype::of::<i64>();
            win.lock_all(Assert::NONE)?;
            let class = |r: rma_win::Result<()>| r.unwrap_err().class();
            // past the end (displacement unit 4: element 15 is bytes 60..68)
            assert_eq!(
                class(win.accumulate(&[1i64], one, 15, Op::Sum)),
                ErrorClass::RmaRange
            );
            assert_eq!(
                class(win.accumulate_elements(BasicType::I64, &[0; 8], one, 15, Op::Sum)),
                ErrorClass::RmaRange
            );
            assert_eq!(class(win.put(&[1i64], one, 15)), ErrorClass::RmaRange);
            // misaligned for an 8-byte atomic: displacement 1 is byte 4
            assert_eq!(
                class(win.accumulate(&[1i64], one, 1, Op::Sum)),
                ErrorClass::Disp
            );
            assert_eq!(
                class(win.accumulate_elements(BasicType::I64, &[0; 8], one, 1, Op::Sum)),
                ErrorClass::Disp
            );
            assert_eq!(
                class(win.fetch_and_op(1i64, one, 1, Op::Sum).map(drop)),
                ErrorClass::Disp
            );
            // a put at that displacement is fine (put is not atomic)
            win.put(&[1i64], one, 1)?;
            // an op the type does not take
            assert_eq!(
                class(win.accumulate(&[1.0f64], one, 0, Op::Band)),
                ErrorClass::Op
            );
            assert_eq!(
                class(win.accumulate_elements(BasicType::F64, &[0; 8], one, 0, Op::Band)),
                ErrorClass::Op
            );
            // bytes that are not whole elements
            assert_eq!(
                class(win.accumulate_elements(BasicType::I64, &[0; 5], one, 0, Op::Sum)),
                ErrorClass::Arg
            );
            // an origin buffer shorter than its count says: the general path's refusal
            let short = [0u8; 8];
            assert_eq!(
                class(win.put_with(Buffer::new(&short, 2, &i64t), Target::new(one, 0, 2, &i64t))),
                ErrorClass::Buffer
            );
            let mut small = [0u8; 8];
            assert_eq!(
                class(win.get_with(
                    BufferMut::new(&mut small, 2, &i64t),
                    Target::new(one, 0, 2, &i64t)
                )),
                ErrorClass::Buffer
            );
            // the null rank: nothing, on every road
            win.accumulate(&[1i64], Rank::NULL, 0, Op::Sum)?;
            win.accumulate_elements(BasicType::I64, &[0; 8], Rank::NULL, 0, Op::Sum)?;
            win.unlock_all()?;
            // no epoch at all: RMA_SYNC from every entry point
            assert_eq!(
                class(win.accumulate(&[1i64], one, 0, Op::Sum)),
                ErrorClass::RmaSync
            );
            assert_eq!(
                class(win.accumulate_elements(BasicType::I64, &[0; 8], one, 0, Op::Sum)),
                ErrorClass::RmaSync
            );
            world.barrier()
        })
        .unwrap()
        .into_iter()
        .collect::<rma_win::Result<Vec<_>>>()
        .unwrap();
    }
}
