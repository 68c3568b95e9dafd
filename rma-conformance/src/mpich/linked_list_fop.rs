//! Ported from MPICH `test/mpi/rma/linked_list_fop.c`: a linked list shared by all
//! ranks, built concurrently with atomics. Rank 0 holds the head element; every rank
//! appends its own elements at the tail: it compare-and-swaps its rank into the tail's
//! `next.rank` field (expecting nil), and on success writes its element's displacement
//! into `next.disp` with fetch_and_op REPLACE; on failure its idea of the tail is stale,
//! so it polls the tail's `next.disp` with fetch_and_op NO_OP until the winner's write
//! shows, moves on to that element and tries again. Every call is in its own shared
//! NOCHECK lock epoch. Finally rank 0 walks the list with gets: it starts at the head,
//! ends at a nil link, and holds exactly NUM_ELEMS elements of each rank.
//!
//! Adapted: rma has no dynamic windows, so each rank's elements live in a window it
//! allocated up front (slot 0 reserved, rank 0's being the head), addressed by slot
//! displacement instead of an attached address; an element is three `i64`s (value,
//! next rank, next displacement) and nil is -1 in both link fields. Every element is
//! initialised before a barrier, so no element is published half-written.

use rma_win::{Assert, Info, LockType, Op, Rank, Result, Window, World};

const NUM_ELEMS: usize = 64;
/// `i64`s per element: value, next rank, next displacement.
const ELEM: usize = 3;
const NIL: i64 = -1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ptr {
    rank: i64,
    disp: i64,
}

fn slot(k: usize) -> i64 {
    (k * ELEM) as i64
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let mut win = Window::allocate::<i64>(world, (NUM_ELEMS + 1) * ELEM, info)?;
    // slot 0: rank 0's head (value -1), unused elsewhere; slots 1..: my elements
    let mut init = Vec::with_capacity((NUM_ELEMS + 1) * ELEM);
    for k in 0..=NUM_ELEMS {
        let value = if k == 0 { -1 } else { me as i64 };
        init.extend_from_slice(&[value, NIL, NIL]);
    }
    win.write_local(0, &init)?;
    world.barrier()?;

    let lock = |r: i64| win.lock(LockType::Shared, Rank::new(r as u32), Assert::NOCHECK);
    let unlock = |r: i64| win.unlock(Rank::new(r as u32));
    let head = Ptr { rank: 0, disp: 0 };
    let mut tail = head;
    for k in 1..=NUM_ELEMS {
        let new = Ptr {
            rank: me as i64,
            disp: slot(k),
        };
        loop {
            let at = Rank::new(tail.rank as u32);
            lock(tail.rank)?;
            let old = win.compare_and_swap(new.rank, NIL, at, tail.disp + 1)?;
            unlock(tail.rank)?;
            if old == NIL {
                lock(tail.rank)?;
                let was = win.fetch_and_op(new.disp, at, tail.disp + 2, Op::Replace)?;
                unlock(tail.rank)?;
                assert_eq!(was, NIL, "a claimed link already had a displacement");
                tail = new;
                break;
            }
            // stale tail: wait for the winner's displacement, then move on
            let disp = loop {
                lock(tail.rank)?;
                let d = win.fetch_and_op(0i64, at, tail.disp + 2, Op::NoOp)?;
                unlock(tail.rank)?;
                if d != NIL {
                    break d;
                }
                std::thread::yield_now();
                world.check_peers()?;
            };
            tail = Ptr { rank: old, disp };
        }
    }
    world.barrier()?;

    if me == 0 {
        let mut counts = vec![0usize; n];
        let mut at = head;
        let mut seen = 0usize;
        loop {
            let mut e = [0i64; ELEM];
            lock(at.rank)?;
            win.get(&mut e, Rank::new(at.rank as u32), at.disp)?;
            unlock(at.rank)?;
            if at == head {
                assert_eq!(e[0], -1, "the head's value");
            } else {
                assert!(e[0] >= 0 && (e[0] as usize) < n, "element value {}", e[0]);
                assert_eq!(e[0], at.rank, "an element's value is its owner");
                counts[e[0] as usize] += 1;
                seen += 1;
                assert!(seen <= n * NUM_ELEMS, "the list is longer than appended");
            }
            if e[1] == NIL {
                assert_eq!(e[2], NIL, "a half-linked tail");
                break;
            }
            at = Ptr {
                rank: e[1],
                disp: e[2],
            };
        }
        assert_eq!(counts, vec![NUM_ELEMS; n], "elements per rank in the list");
    }
    world.barrier()?;
    win.free()
}
