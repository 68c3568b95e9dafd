//! The positive twins of the `compile_fail` doctests in `request.rs`: the same code
//! without the offending line compiles and runs, so those doctests fail for the borrow
//! they are about, not for a typo.

use rma_win::{Assert, Info, LockType, Op, Rank, Window};

#[test]
fn requests_borrow_their_buffers_until_waited() {
    rma_win::run_threads(1, |world| {
        let mut win = Window::allocate::<i64>(&world, 4, &Info::new()).unwrap();
        win.lock(LockType::Shared, Rank::new(0), Assert::NONE)
            .unwrap();
        let mut origin = vec![1i64; 4];
        let req = win.raccumulate(&origin, Rank::new(0), 0, Op::Sum).unwrap();
        req.wait().unwrap();
        origin[0] = 7; // fine once the request is done
        let mut result = vec![0i64; 4];
        let req = win.rget(&mut result, Rank::new(0), 0).unwrap();
        req.wait().unwrap();
        let req = win.rput(&origin, Rank::new(0), 0).unwrap();
        req.wait().unwrap();
        win.unlock(Rank::new(0)).unwrap();
        assert_eq!(result, vec![1i64; 4]);
        win.free().unwrap();
    })
    .unwrap();
}
