//! A distributed linked list: every rank appends `n` elements to one shared list under
//! lock_all, with no lock around the list itself (after MPICH's linked_list_fop and
//! linked_list_lockall tests).
//!
//! Each rank's window is a pool of elements, two u64 words each: the value and the next
//! pointer. A pointer names (rank, index) as `rank << 32 | index`; element 0 of rank 0
//! is the list head and never an element of the list, so pointer 0 is the null pointer.
//! To append, a rank fills an element of its own pool, then swings the next pointer of
//! the tail it knows from null to the new element with compare_and_swap. If another
//! rank got there first, the swap returns that rank's element: the appender follows
//! the next pointers (read with fetch_and_op NO_OP) to the real tail and tries again.
//!
//! The tail is always an element of the rank that appended last, so that rank keeps
//! appending at the speed of its own memory while the others chase it remotely: ranks
//! tend to append in runs, and the count of failed swaps can be as low as ranks - 1
//! (every rank but the first loses its first swap on the head).
//!
//! After unlock_all and a barrier rank 0 walks the list with gets and checks that it
//! holds every rank's `n` values exactly once, each rank's in the order appended.

use rma_examples::{run, Flags};
use rma_win::{Assert, Op, Rank, Window};

/// The null pointer (rank 0, index 0: the head, which no next pointer names).
const NIL: u64 = 0;

fn ptr(rank: usize, index: usize) -> u64 {
    ((rank as u64) << 32) | index as u64
}

fn rank_of(p: u64) -> Rank {
    Rank::new((p >> 32) as u32)
}

fn index_of(p: u64) -> usize {
    (p & 0xffff_ffff) as usize
}

/// Displacement of the value word of element `index`.
fn value_disp(index: usize) -> i64 {
    (2 * index) as i64
}

/// Displacement of the next word of element `index`.
fn next_disp(index: usize) -> i64 {
    (2 * index + 1) as i64
}

/// The value rank `rank` stores in its `seq`-th element (seq from 0).
fn value_of(rank: usize, seq: usize) -> u64 {
    ((rank as u64) << 32) | seq as u64
}

/// Word 0 of rank 0 (the head's value word, otherwise unused) collects the number of
/// failed swaps of every rank.
const RETRIES: i64 = 0;

fn main() {
    let flags = Flags::parse(1000);
    let info = flags.info();
    run(&flags, |world| {
        let (me, p, n) = (world.rank(), world.size(), flags.n);
        // elements 0..=n: element 0 is the head on rank 0, unused elsewhere; zero-filled,
        // so every next pointer starts null
        let mut win = Window::allocate::<u64>(world, 2 * (n + 1), &info)?;
        world.barrier()?;
        win.lock_all(Assert::NONE)?;
        let start = std::time::Instant::now();
        let mut tail = ptr(0, 0);
        let mut retries = 0u64;
        for seq in 0..n {
            let index = seq + 1;
            // fill the element in this rank's own memory, then make the stores visible
            // before the element is published
            win.write_local(2 * index, &[value_of(me, seq), NIL])?;
            win.sync()?;
            let new = ptr(me, index);
            loop {
                let t = rank_of(tail);
                let old = win.compare_and_swap(new, NIL, t, next_disp(index_of(tail)))?;
                win.flush(t)?;
                if old == NIL {
                    tail = new;
                    break;
                }
                // someone appended after our tail: chase the pointers to the end
                retries += 1;
                tail = old;
                loop {
                    let t = rank_of(tail);
                    let next = win.fetch_and_op(0u64, t, next_disp(index_of(tail)), Op::NoOp)?;
                    win.flush(t)?;
                    if next == NIL {
                        break;
                    }
                    tail = next;
                }
            }
        }
        let elapsed = start.elapsed();
        win.accumulate(&[retries], Rank::new(0), RETRIES, Op::Sum)?;
        win.unlock_all()?;
        world.barrier()?;

        let mut ok = true;
        if me == 0 {
            // walk the list from the head, at most p x n steps (a cycle would be an error)
            win.lock_all(Assert::NONE)?;
            let mut next_seq = vec![0usize; p];
            let (mut len, mut in_order) = (0usize, true);
            let mut at = {
                let mut head = [0u64];
                win.get(&mut head, Rank::new(0), next_disp(0))?;
                head[0]
            };
            while at != NIL && len <= p * n {
                let (r, i) = (rank_of(at), index_of(at));
                let mut elem = [0u64; 2];
                win.get(&mut elem, r, value_disp(i))?;
                win.flush(r)?;
                let (owner, seq) = ((elem[0] >> 32) as usize, (elem[0] & 0xffff_ffff) as usize);
                // the value must be the one its owner stored in this very element, and
                // the owner's next one in order
                let here = r.index() == Some(owner) && i == seq + 1;
                if !here || owner >= p || next_seq[owner] != seq {
                    in_order = false;
                    break;
                }
                next_seq[owner] += 1;
                len += 1;
                at = elem[1];
            }
            let mut total_retries = [0u64];
            win.get(&mut total_retries, Rank::new(0), RETRIES)?;
            win.unlock_all()?;
            ok = in_order && at == NIL && len == p * n && next_seq.iter().all(|&s| s == n);
            println!(
                "linked_list: {p} ranks x {n} appends (compare_and_swap under lock_all), transport {}, mode {:?}: {len} elements, each once and in per-rank order: {} ({} failed swaps in all; {:.0} ns per append on rank 0)",
                win.transport_name(),
                world.mode(),
                if ok { "yes" } else { "NO" },
                total_retries[0],
                elapsed.as_nanos() as f64 / n.max(1) as f64
            );
        }
        win.free()?;
        Ok(ok)
    })
}
