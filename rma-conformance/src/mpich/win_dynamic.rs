//! Ported from MPICH `test/mpi/rma/win_dynamic_acc.c` and `linked_list.c` (the
//! dynamic-window version).
//!
//! - `win_dynamic_acc`: every rank attaches one integer to a dynamic window and
//!   all-gathers its address; for `25 x ranks` fence epochs every rank adds 1 to rank
//!   `i % ranks`'s integer; each integer ends at `25 x ranks`.
//! - `linked_list_dynamic`: rank 0 attaches the list's head; every rank appends
//!   `NUM_ELEMS` elements, each a region it attaches, by compare-and-swap on the tail's
//!   `next.rank` under an exclusive lock, then a put of `next.disp`, chasing a stale
//!   tail with gets; rank 0 walks the list and counts every rank's elements.
//!
//! Adapted: attach takes a `Vec` and detach returns it, so rank 0's count is also
//! checked against the contents the regions come back with; the element is four
//! `i32`s (value, next rank, next address low and high), whose address word is put
//! and got as one `i64`; iteration counts are scaled down under MPI; MPI_Iprobe for
//! progress is left out (rma's transports need none).

use crate::{dynamic_window, scaled};
use rma_win::{Assert, Info, LockType, Op, Rank, Result, World};

pub(crate) fn run_acc(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let Some(win) = dynamic_window(world, info)? else {
        return Ok(());
    };
    let val = win.attach(vec![0i32])?;
    let ptrs: Vec<i64> = world
        .allgather(&val.disp().to_ne_bytes())?
        .iter()
        .map(|b| i64::from_ne_bytes(b.as_slice().try_into().unwrap_or_default()))
        .collect();
    let iter = scaled(25 * p);
    for i in 0..iter {
        win.fence(Assert::NOPRECEDE)?;
        win.accumulate(&[1i32], Rank::new((i % p) as u32), ptrs[i % p], Op::Sum)?;
        win.fence(Assert::NOSUCCEED)?;
    }
    world.barrier()?;
    // in each epoch every rank adds 1 to rank i % p's integer
    let mine = ((0..iter).filter(|i| i % p == me).count() * p) as i32;
    assert_eq!(win.detach(val)?, [mine], "rank {me}'s integer");
    let mut win = win;
    win.free()
}

const NUM_ELEMS: usize = 32;
const NIL: i32 = -1;

pub(crate) fn run_linked_list(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let Some(win) = dynamic_window(world, info)? else {
        return Ok(());
    };
    // element: [value, next rank, next address (low, high)]
    let elem = |value: i32| vec![value, NIL, 0, 0];
    let mut mine = Vec::new();
    if me == 0 {
        mine.push(win.attach(elem(-1))?);
    }
    let head_disp = world.allgather(&mine.first().map_or(0, |r| r.disp()).to_ne_bytes())?[0]
        .as_slice()
        .try_into()
        .map(i64::from_ne_bytes)
        .unwrap_or_default();
    let head = (0usize, head_disp);
    let mut tail = head;
    for _ in 0..scaled(NUM_ELEMS) {
        let region = win.attach(elem(me as i32))?;
        let new = (me, region.disp());
        mine.push(region);
        loop {
            let t = Rank::new(tail.0 as u32);
            win.lock(LockType::Exclusive, t, Assert::NONE)?;
            let old = win.compare_and_swap(me as i32, NIL, t, tail.1 + 4)?;
            win.unlock(t)?;
            if old == NIL {
                win.lock(LockType::Exclusive, t, Assert::NONE)?;
                win.put(&[new.1], t, tail.1 + 8)?;
                win.unlock(t)?;
                tail = new;
                break;
            }
            // stale tail: chase its next address, which may not be there yet
            let mut next = [0i64];
            loop {
                win.lock(LockType::Exclusive, t, Assert::NONE)?;
                win.get(&mut next, t, tail.1 + 8)?;
                win.unlock(t)?;
                if next[0] != 0 {
                    break;
                }
                std::thread::yield_now();
            }
            tail = (old as usize, next[0]);
        }
    }
    world.barrier()?;
    if me == 0 {
        let mut counts = vec![0usize; p];
        let mut at = head;
        let mut have_root = false;
        loop {
            let t = Rank::new(at.0 as u32);
            let mut e = [0i32; 4];
            win.lock(LockType::Exclusive, t, Assert::NONE)?;
            win.get(&mut e, t, at.1)?;
            win.unlock(t)?;
            if have_root {
                assert!((0..p as i32).contains(&e[0]), "element value {}", e[0]);
                counts[e[0] as usize] += 1;
            } else {
                assert_eq!(e[0], -1, "the head");
                have_root = true;
            }
            let disp = i64::from(e[2] as u32) | i64::from(e[3]) << 32;
            if e[1] == NIL {
                break;
            }
            at = (e[1] as usize, disp);
        }
        assert_eq!(counts, vec![scaled(NUM_ELEMS); p], "elements per rank");
    }
    world.barrier()?;
    // every element comes back with its value, linked (but the tail) to another
    let mut linked = 0;
    for r in mine {
        let e = win.detach(r)?;
        linked += usize::from(e[1] != NIL);
    }
    let all = world.allgather(&(linked as u64).to_ne_bytes())?;
    let total: u64 = all
        .iter()
        .map(|b| u64::from_ne_bytes(b.as_slice().try_into().unwrap_or_default()))
        .sum();
    assert_eq!(
        total as usize,
        p * scaled(NUM_ELEMS),
        "every element but the tail links on"
    );
    let mut win = win;
    win.free()
}
