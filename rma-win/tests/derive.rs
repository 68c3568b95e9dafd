//! `#[derive(Equivalence)]` on user structs, used in RMA calls (the compile-time refusals
//! are compile_fail doctests in rma-win's crate docs, "Your own element types").

use rma_win::{Assert, Datatype, DoubleInt, Equivalence, Info, Op, Rank, Window};

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Equivalence)]
struct Point {
    x: f64,
    y: f64,
    z: f64,
}

/// A newtype over a pair type: a MAXLOC element of its own name.
#[repr(transparent)]
#[derive(Clone, Copy, Default, Equivalence)]
struct Best(DoubleInt);

/// A newtype over a bool: not every byte pattern is valid, and the derive keeps that.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Equivalence)]
struct Flags([bool; 4]);

#[test]
fn derived_layouts_are_the_repeated_field_type() {
    let d = Datatype::of::<Point>();
    assert_eq!((d.size(), d.extent()), (24, 24));
    assert_eq!(Point::BASIC, None);
    assert_eq!(Best::BASIC, DoubleInt::BASIC);
    const { assert!(Point::ANY_BIT_PATTERN) };
    const { assert!(!Flags::ANY_BIT_PATTERN) };
    // a byte that is no bool becomes a valid value, never an invalid one
    let f = Flags::from_bytes(&[1, 0, 7, 1]).expect("4 bytes");
    assert!(f.0[0]);
    assert!(f.0[2], "7 is read as true, a valid bool");
    assert_eq!(Flags::from_bytes(&[1, 0, 1]), None);
    let p = Point::from_bytes(&[0u8; 24]).expect("24 bytes");
    assert_eq!(p, Point::default());
}

#[test]
fn derived_structs_travel_through_every_kind_of_call() {
    let results = rma_win::run_threads(3, |world| -> rma_win::Result<(Point, Best)> {
        let me = world.rank();
        let points = Window::allocate::<Point>(&world, 2, &Info::new())?;
        let best = Window::allocate::<Best>(&world, 1, &Info::new())?;
        points.fence(Assert::NONE)?;
        best.fence(Assert::NONE)?;
        let v = me as f64;
        // element-wise sum of points into rank 0's first element, a put into its second
        points.accumulate(
            &[Point {
                x: v,
                y: 1.0,
                z: -v,
            }],
            Rank::new(0),
            0,
            Op::Sum,
        )?;
        if me == 2 {
            points.put(
                &[Point {
                    x: 7.0,
                    y: 8.0,
                    z: 9.0,
                }],
                Rank::new(0),
                1,
            )?;
        }
        // MAXLOC through the newtype: the largest value wins, with its rank
        let mine = Best(DoubleInt::new((me as f64 - 1.0).abs(), me as i32));
        best.accumulate(&[mine], Rank::new(0), 0, Op::MaxLoc)?;
        points.fence(Assert::NONE)?;
        best.fence(Assert::NONE)?;
        let mut got = [Point::default(); 2];
        points.get(&mut got, Rank::new(0), 0)?;
        assert_eq!(
            got[1],
            Point {
                x: 7.0,
                y: 8.0,
                z: 9.0
            }
        );
        let mut b = [Best::default()];
        best.get(&mut b, Rank::new(0), 0)?;
        points.fence(Assert::NONE)?;
        best.fence(Assert::NONE)?;
        Ok((got[0], b[0]))
    })
    .unwrap();
    for r in results {
        let (sum, best) = r.unwrap();
        assert_eq!(
            sum,
            Point {
                x: 3.0,
                y: 3.0,
                z: -3.0
            }
        );
        // |0-1| = 1 at rank 0 and |2-1| = 1 at rank 2: MAXLOC keeps the lower index
        assert_eq!((best.0.value, best.0.index), (1.0, 0));
    }
}
