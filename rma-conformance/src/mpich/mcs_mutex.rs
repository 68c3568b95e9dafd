//! Ported from MPICH `test/mpi/rma/mcs_mutex.c` (the MCS queue lock built from RMA
//! atomics) and its benchmark `mutex_bench.c`, turned into a correctness test.
//!
//! The mutex: rank 0 holds the queue's tail; every rank has a `next` field. To lock,
//! a rank clears its `next`, swaps itself into the tail with fetch_and_op REPLACE, and
//! if there was a previous tail writes its rank into that rank's `next` (accumulate
//! REPLACE) and waits to be handed the lock. Trylock is a compare_and_swap of itself
//! into an empty tail. To unlock, a rank reads its `next` (fetch_and_op NO_OP); if
//! empty it tries to swing the tail from itself back to empty (compare_and_swap), and
//! if someone queued meanwhile waits for its `next` to be filled; then it hands the
//! lock to `next`. Everything runs in one lock_all epoch with a flush after each call.
//!
//! The test: as in the benchmark, odd ranks spin on trylock and even ranks use lock,
//! so compare_and_swap and fetch_and_op contend on the tail; each rank enters the
//! critical section iter() times. Inside it a rank increments a counter on rank 0 with a
//! plain get + put (flushed), which comes out exact only if the mutex excludes; and an
//! occupancy count (fetch_and_op SUM +1 on entry, -1 on exit) must read 0 on entry.
//!
//! Adapted: MPICH hands the lock over with a zero-byte send/recv; here the unlocking
//! rank sets a `granted` flag in the waiter's window (accumulate REPLACE + flush), which
//! the waiter polls with fetch_and_op NO_OP. Nil is -1 (the null rank's role).

use rma_win::{Assert, Info, Op, Rank, Result, Window, World};

const NEXT: i64 = 0;
const TAIL: i64 = 1;
const GRANTED: i64 = 2;
const NIL: i32 = -1;
fn iter() -> u64 {
    crate::scaled(300)
}

struct Mcs<'a, 'w> {
    world: &'a World,
    win: &'a Window<'w>,
    me: i32,
    tail_rank: Rank,
}

impl Mcs<'_, '_> {
    /// Between polls: lets others run, and gives up if a peer died.
    fn pause(&self) -> Result<()> {
        std::thread::yield_now();
        self.world.check_peers()
    }

    fn own(&self) -> Rank {
        Rank::new(self.me as u32)
    }

    /// Clears `next` and `granted` before this rank queues up (no one else writes them
    /// until it is in the queue).
    fn prepare(&self) -> Result<()> {
        self.win.write_local(NEXT as usize, &[NIL])?;
        self.win.write_local(GRANTED as usize, &[0i32])?;
        self.win.sync()
    }

    fn read_own(&self, field: i64) -> Result<i32> {
        let v = self.win.fetch_and_op(0i32, self.own(), field, Op::NoOp)?;
        self.win.flush(self.own())?;
        Ok(v)
    }

    fn lock(&self) -> Result<()> {
        self.prepare()?;
        let prev = self
            .win
            .fetch_and_op(self.me, self.tail_rank, TAIL, Op::Replace)?;
        self.win.flush(self.tail_rank)?;
        if prev != NIL {
            let p = Rank::new(prev as u32);
            self.win.accumulate(&[self.me], p, NEXT, Op::Replace)?;
            self.win.flush(p)?;
            while self.read_own(GRANTED)? == 0 {
                self.pause()?;
            }
        }
        Ok(())
    }

    fn trylock(&self) -> Result<bool> {
        self.prepare()?;
        let tail = self
            .win
            .compare_and_swap(self.me, NIL, self.tail_rank, TAIL)?;
        self.win.flush(self.tail_rank)?;
        Ok(tail == NIL)
    }

    fn unlock(&self) -> Result<()> {
        self.win.sync()?;
        let mut next = self.read_own(NEXT)?;
        if next == NIL {
            let tail = self
                .win
                .compare_and_swap(NIL, self.me, self.tail_rank, TAIL)?;
            self.win.flush(self.tail_rank)?;
            if tail == self.me {
                return Ok(()); // no one queued
            }
            assert!(
                tail >= 0,
                "the tail was empty while this rank held the lock"
            );
            while next == NIL {
                self.pause()?;
                next = self.read_own(NEXT)?;
            }
        }
        let n = Rank::new(next as u32);
        self.win.accumulate(&[1i32], n, GRANTED, Op::Replace)?;
        self.win.flush(n)
    }
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let zero = Rank::new(0);
    let mut mtx = Window::allocate::<i32>(world, 3, info)?;
    // rank 0: [counter, occupancy]
    let mut data = Window::allocate::<u64>(world, if me == 0 { 2 } else { 0 }, info)?;
    mtx.lock_all(Assert::NONE)?;
    data.lock_all(Assert::NONE)?;
    mtx.write_local(0, &[NIL, NIL, 0])?;
    mtx.sync()?;
    world.barrier()?;
    {
        let m = Mcs {
            world,
            win: &mtx,
            me: me as i32,
            tail_rank: zero,
        };
        for i in 0..iter() {
            if me % 2 == 1 {
                while !m.trylock()? {
                    m.pause()?;
                }
            } else {
                m.lock()?;
            }
            let inside = data.fetch_and_op(1u64, zero, 1, Op::Sum)?;
            assert_eq!(inside, 0, "round {i}: another rank holds the mutex");
            let mut c = [0u64];
            data.get(&mut c, zero, 0)?;
            data.flush(zero)?;
            std::thread::yield_now(); // widen the window a broken mutex would let others in
            c[0] += 1;
            data.put(&c, zero, 0)?;
            data.flush(zero)?;
            data.fetch_and_op(u64::MAX, zero, 1, Op::Sum)?; // -1, wrapping
            data.flush(zero)?;
            m.unlock()?;
        }
    }
    world.barrier()?;
    data.unlock_all()?;
    mtx.unlock_all()?;
    world.barrier()?;
    if me == 0 {
        assert_eq!(
            data.local_vec::<u64>()?,
            vec![iter() * world.size() as u64, 0],
            "counter and occupancy"
        );
    }
    world.barrier()?;
    data.free()?;
    mtx.free()
}
