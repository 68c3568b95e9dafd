//! The distributed linked list of `linked_list`, on a dynamic window (after MPICH's
//! dynamic-window linked_list test): no memory at creation; each rank attaches its
//! elements as it goes, in regions of `CHUNK` elements (an allocator's pools), and a
//! pointer is the element's address with its rank: `(rank + 1) << 48 | address`, 0
//! being null.
//!
//! Rank 0 attaches the head first and all-gathers its address. To append, a rank
//! fills an element of its current region (attaching a new region when that one is
//! full), then swings the tail's next pointer from null to it with compare_and_swap
//! under lock_all, chasing the pointers when another rank got there first. After
//! unlock_all and a barrier rank 0 walks the list and checks that it holds every
//! rank's `n` values exactly once, each rank's in order; then every rank detaches its
//! regions, which come back with the values it appended.

use rma_examples::{run, Flags};
use rma_win::{Assert, Op, Rank, Region, Window};

/// Elements per region.
const CHUNK: usize = 64;
const NIL: u64 = 0;

fn ptr(rank: usize, addr: i64) -> u64 {
    ((rank as u64 + 1) << 48) | addr as u64
}

fn rank_of(p: u64) -> Rank {
    Rank::new(((p >> 48) - 1) as u32)
}

/// The address of a pointer's element (its value word; the next word follows).
fn addr_of(p: u64) -> i64 {
    (p & ((1 << 48) - 1)) as i64
}

fn value_of(rank: usize, seq: usize) -> u64 {
    ((rank as u64) << 32) | seq as u64
}

fn main() {
    let flags = Flags::parse(1000);
    let info = flags.info();
    run(&flags, |world| {
        let (me, p, n) = (world.rank(), world.size(), flags.n);
        let mut win = Window::create_dynamic(world, &info)?;
        // the head: one element on rank 0 (value 0, next null)
        let head = if me == 0 {
            Some(win.attach(vec![0u64, NIL])?)
        } else {
            None
        };
        let head_addr = world.allgather(&head.as_ref().map_or(0, Region::disp).to_ne_bytes())?[0]
            .as_slice()
            .try_into()
            .map(i64::from_ne_bytes)
            .unwrap_or_default();
        let mut regions: Vec<Region<u64>> = Vec::new();
        win.lock_all(Assert::NONE)?;
        let start = std::time::Instant::now();
        let mut tail = ptr(0, head_addr);
        let mut retries = 0u64;
        for seq in 0..n {
            if seq % CHUNK == 0 {
                // a new region, its elements filled in now: values and null pointers
                let len = CHUNK.min(n - seq);
                let pool: Vec<u64> = (seq..seq + len)
                    .flat_map(|s| [value_of(me, s), NIL])
                    .collect();
                regions.push(win.attach(pool)?);
            }
            let region = regions.last().expect("attached above");
            let new = ptr(me, region.disp_of(2 * (seq % CHUNK)));
            loop {
                let t = rank_of(tail);
                let old = win.compare_and_swap(new, NIL, t, addr_of(tail) + 8)?;
                win.flush(t)?;
                if old == NIL {
                    tail = new;
                    break;
                }
                retries += 1;
                tail = old;
                loop {
                    let t = rank_of(tail);
                    let next = win.fetch_and_op(0u64, t, addr_of(tail) + 8, Op::NoOp)?;
                    win.flush(t)?;
                    if next == NIL {
                        break;
                    }
                    tail = next;
                }
            }
        }
        let elapsed = start.elapsed();
        win.unlock_all()?;
        world.barrier()?;
        let mut ok = true;
        if me == 0 {
            win.lock_all(Assert::NONE)?;
            let mut next_seq = vec![0usize; p];
            let mut len = 0usize;
            let mut head_next = [0u64];
            win.get(&mut head_next, Rank::new(0), head_addr + 8)?;
            let mut at = head_next[0];
            while at != NIL && len <= p * n {
                let t = rank_of(at);
                let mut elem = [0u64; 2];
                win.get(&mut elem, t, addr_of(at))?;
                win.flush(t)?;
                let (owner, seq) = ((elem[0] >> 32) as usize, (elem[0] & 0xffff_ffff) as usize);
                if t.index() != Some(owner) || owner >= p || next_seq[owner] != seq {
                    break;
                }
                next_seq[owner] += 1;
                len += 1;
                at = elem[1];
            }
            win.unlock_all()?;
            ok = at == NIL && len == p * n && next_seq.iter().all(|&s| s == n);
            println!(
                "linked_list_dynamic: {p} ranks x {n} appends to a dynamic window ({} regions on rank 0), transport {}, mode {:?}: {len} elements, each once and in per-rank order: {} ({retries} failed swaps on rank 0; {:.0} ns per append on rank 0)",
                regions.len() + 1,
                win.transport_name(),
                world.mode(),
                if ok { "yes" } else { "NO" },
                elapsed.as_nanos() as f64 / n.max(1) as f64
            );
        }
        world.barrier()?;
        // the regions come back holding the values this rank appended
        let mut seq = 0;
        for region in regions {
            for pair in win.detach(region)?.chunks_exact(2) {
                ok &= pair[0] == value_of(me, seq);
                seq += 1;
            }
        }
        if let Some(h) = head {
            win.detach(h)?;
        }
        win.free()?;
        Ok(ok && seq == n)
    })
}
