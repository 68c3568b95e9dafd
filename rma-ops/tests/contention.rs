//! Several threads hammering one element with each accumulate op for each basic type,
//! checked exactly: integers exactly, floats with values chosen to stay exact; swaps
//! conserve every value; CAS has exactly one winner per round; pair types and complex
//! are never torn.

mod common;

use common::{random_element, reference, same_value, zero_padding, Rng};
use rma_core::{BasicType, Op, RmaCall, TypeClass};
use rma_ops::atomic::{self, Domain, HeapDomain};
use std::sync::Barrier;

const THREADS: usize = 4;
const ITERS: usize = 20_000;

/// Window memory stand-in: 8-aligned, shared by raw address across threads.
struct Shared {
    buf: Vec<u64>,
    domain: HeapDomain,
}

#[derive(Clone, Copy)]
struct Addr(usize);

impl Shared {
    fn new(init: &[u8]) -> Shared {
        let mut buf = vec![0u64; 4];
        // SAFETY: viewing our own u64 buffer as bytes before sharing it.
        let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), 32) };
        bytes[..init.len()].copy_from_slice(init);
        Shared {
            buf,
            domain: HeapDomain::new(THREADS, 16),
        }
    }
    fn addr(&mut self) -> Addr {
        Addr(self.buf.as_mut_ptr() as usize)
    }
    /// The atomicity domain as thread `t` uses it (its own announcement slot).
    fn locks(&self, t: usize) -> Domain<'_> {
        self.domain.domain(t).unwrap()
    }
    fn read(&self, size: usize) -> Vec<u8> {
        // SAFETY: all threads have joined; reading our own buffer.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), size) }.to_vec()
    }
}

/// Runs `f(thread, fetch)` on THREADS threads, where `fetch(op, origin) -> old` is an
/// atomic fetch_and_op on the shared element.
fn hammer(
    basic: BasicType,
    init: &[u8],
    f: impl Fn(usize, &dyn Fn(Op, &[u8]) -> Vec<u8>) + Sync,
) -> Vec<u8> {
    let mut shared = Shared::new(init);
    let addr = shared.addr();
    let shared = &shared;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let f = &f;
            s.spawn(move || {
                let locks = shared.locks(t);
                let fetch = |op: Op, origin: &[u8]| {
                    let mut old = vec![0u8; basic.size()];
                    let o: &[u8] = if op == Op::NoOp { &[] } else { origin };
                    // SAFETY: `addr` is the 8-aligned shared element; every access to
                    // it in this test goes through the atomic kernels with `locks`.
                    unsafe {
                        atomic::fetch_and_op(basic, op, addr.0 as *mut u8, 0, &locks, o, &mut old)
                            .expect("a kernel stalled")
                    };
                    old
                };
                f(t, &fetch);
            });
        }
    });

    shared.read(basic.size())
}

fn int_bytes(basic: BasicType, v: i128) -> Vec<u8> {
    (v as u128).to_ne_bytes()[..basic.size()].to_vec()
}

fn num_bytes(basic: BasicType, v: f64) -> Vec<u8> {
    match basic {
        BasicType::F32 => (v as f32).to_ne_bytes().to_vec(),
        BasicType::F64 => v.to_ne_bytes().to_vec(),
        BasicType::C32 => [(v as f32).to_ne_bytes(), (v as f32).to_ne_bytes()].concat(),
        BasicType::C64 => [v.to_ne_bytes(), v.to_ne_bytes()].concat(),
        BasicType::LongDouble => common::ld_bytes(v),
        _ => int_bytes(basic, v as i128),
    }
}

fn numeric_types() -> Vec<BasicType> {
    BasicType::ALL
        .into_iter()
        .filter(|t| {
            matches!(
                t.class(),
                TypeClass::Integer | TypeClass::Address | TypeClass::Float | TypeClass::Complex
            )
        })
        .collect()
}

#[test]
fn sum_is_exact_for_every_numeric_type() {
    for t in numeric_types() {
        let got = hammer(t, &num_bytes(t, 0.0), |_, fetch| {
            let one = num_bytes(t, 1.0);
            for _ in 0..ITERS {
                fetch(Op::Sum, &one);
            }
        });
        let total = (THREADS * ITERS) as i128;
        let expect = match t.class() {
            TypeClass::Float | TypeClass::Complex => num_bytes(t, total as f64),
            _ => int_bytes(t, total),
        };
        assert_eq!(got, expect, "SUM on {t}");
    }
}

#[test]
fn fetched_sums_are_distinct_tickets() {
    for t in [
        BasicType::I32,
        BasicType::U64,
        BasicType::Isize,
        BasicType::F64,
        BasicType::U32,
    ] {
        let tickets = std::sync::Mutex::new(Vec::new());
        hammer(t, &num_bytes(t, 0.0), |_, fetch| {
            let one = num_bytes(t, 1.0);
            let mine: Vec<Vec<u8>> = (0..ITERS).map(|_| fetch(Op::Sum, &one)).collect();
            tickets.lock().unwrap().extend(mine);
        });
        let mut all = tickets.into_inner().unwrap();
        all.sort();
        let mut expect: Vec<Vec<u8>> = (0..THREADS * ITERS)
            .map(|i| num_bytes(t, i as f64))
            .collect();
        expect.sort();
        assert_eq!(all, expect, "every ticket 0..N handed out once, on {t}");
    }
}

#[test]
fn prod_by_minus_one_flips_sign_exactly() {
    for t in numeric_types()
        .into_iter()
        .filter(|t| t.is_signed_integer() || t.class() == TypeClass::Float)
    {
        // thread 0 does one extra multiplication: an odd total leaves -1
        let got = hammer(t, &num_bytes(t, 1.0), |th, fetch| {
            let m = num_bytes(t, -1.0);
            for _ in 0..ITERS + usize::from(th == 0) {
                fetch(Op::Prod, &m);
            }
        });
        assert_eq!(got, num_bytes(t, -1.0), "PROD on {t}");
    }
    // complex: multiply by i four times per round returns to the start
    for t in [BasicType::C32, BasicType::C64] {
        let i_unit = if t == BasicType::C32 {
            [0f32.to_ne_bytes(), 1f32.to_ne_bytes()].concat()
        } else {
            [0f64.to_ne_bytes(), 1f64.to_ne_bytes()].concat()
        };
        let got = hammer(t, &num_bytes(t, 1.0), |_, fetch| {
            for _ in 0..ITERS * 4 / 4 {
                fetch(Op::Prod, &i_unit);
            }
        });
        // THREADS * ITERS multiplications by i, a multiple of 4: back to (1, 1)
        assert_eq!(got, num_bytes(t, 1.0), "PROD on {t}");
    }
}

/// Ops whose result does not depend on the order of application (MAX, MIN, MAXLOC,
/// MINLOC, BAND, BOR, LAND, LOR): the final value is the sequential fold of everything
/// offered.
#[test]
fn order_independent_ops_equal_the_sequential_fold() {
    for t in BasicType::ALL {
        for op in [
            Op::Max,
            Op::Min,
            Op::MaxLoc,
            Op::MinLoc,
            Op::Band,
            Op::Bor,
            Op::Land,
            Op::Lor,
        ] {
            if rma_ops::check(op, t, RmaCall::Accumulate).is_err() {
                continue;
            }
            let offered = |th: usize| -> Vec<Vec<u8>> {
                let mut rng = Rng::new(1000 + th as u64);
                (0..ITERS / 4)
                    .map(|_| {
                        let mut v = random_element(t, &mut rng);
                        if t.class() == TypeClass::Float {
                            // keep NaN out: with NaN the fold is still defined but the
                            // comparison below would be vacuous
                            v = num_bytes(t, rng.below(1000) as f64);
                        }
                        v
                    })
                    .collect()
            };
            let mut rng = Rng::new(7);
            let init = if t.class() == TypeClass::Float {
                num_bytes(t, 3.0)
            } else {
                random_element(t, &mut rng)
            };
            let got = hammer(t, &init, |th, fetch| {
                for v in offered(th) {
                    fetch(op, &v);
                }
            });
            let mut expect = init.clone();
            for th in 0..THREADS {
                for v in offered(th) {
                    expect = reference(t, op, &expect, &v);
                }
            }
            assert!(
                same_value(t, &got, &expect),
                "{op} on {t}: got {got:?} expected {expect:?}"
            );
        }
    }
}

#[test]
fn xor_toggles_are_exact() {
    for t in BasicType::ALL {
        for op in [Op::Bxor, Op::Lxor] {
            if rma_ops::check(op, t, RmaCall::Accumulate).is_err() {
                continue;
            }
            // each thread toggles its own bit (BXOR) or the truth value (LXOR), an odd
            // number of times for even threads and an even number for odd ones
            let bits = 8 * t.size();
            let got = hammer(t, &int_bytes(t, 0), |th, fetch| {
                let v = if op == Op::Bxor {
                    int_bytes(t, 1i128 << (th % bits))
                } else {
                    int_bytes(t, 1)
                };
                for _ in 0..ITERS + usize::from(th % 2 == 0) {
                    fetch(op, &v);
                }
            });
            let expect = if op == Op::Bxor {
                int_bytes(
                    t,
                    (0..THREADS)
                        .filter(|th| th % 2 == 0)
                        .map(|th| 1i128 << (th % bits))
                        .sum(),
                )
            } else {
                // THREADS/2 odd counts of toggles
                int_bytes(t, ((THREADS / 2) % 2) as i128)
            };
            assert_eq!(got, expect, "{op} on {t}");
        }
    }
}

/// Swaps (REPLACE with fetch) conserve values: every value written comes back exactly
/// once, either fetched by a later swap or left in the element.
#[test]
fn replace_with_fetch_conserves_every_value() {
    for t in BasicType::ALL {
        let size = t.size();
        let value = |th: usize, i: usize| -> Vec<u8> {
            let mut rng = Rng::new((th * 1_000_003 + i) as u64);
            let mut v = random_element(t, &mut rng);
            zero_padding(t, &mut v);
            v
        };
        let init = vec![0u8; size];
        let fetched = std::sync::Mutex::new(Vec::new());
        let last = hammer(t, &init, |th, fetch| {
            let mine: Vec<Vec<u8>> = (0..ITERS / 4)
                .map(|i| fetch(Op::Replace, &value(th, i)))
                .collect();
            fetched.lock().unwrap().extend(mine);
        });
        let mut out = fetched.into_inner().unwrap();
        out.push(last);
        let mut inn: Vec<Vec<u8>> = (0..THREADS)
            .flat_map(|th| (0..ITERS / 4).map(move |i| value(th, i)))
            .collect();
        inn.push(init);
        for v in out.iter_mut() {
            zero_padding(t, v);
        }
        out.sort();
        inn.sort();
        assert!(out == inn, "REPLACE lost or duplicated a value on {t}");
    }
}

/// Wide elements (16-byte, lock-protected) and 8-byte pairs are never seen torn: writers
/// keep the two halves equal, readers (NO_OP fetches) check they are.
#[test]
fn wide_and_pair_elements_are_never_torn() {
    for t in [
        BasicType::C64,
        BasicType::DoubleInt,
        BasicType::LongInt,
        BasicType::C32,
        BasicType::FloatInt,
        BasicType::TwoInt,
        BasicType::LongDoubleInt,
    ] {
        let make = |v: i32| -> Vec<u8> {
            let mut b = vec![0u8; t.size()];
            match t {
                BasicType::C64 => {
                    b[..8].copy_from_slice(&(v as f64).to_ne_bytes());
                    b[8..].copy_from_slice(&(v as f64).to_ne_bytes());
                }
                BasicType::C32 => {
                    b[..4].copy_from_slice(&(v as f32).to_ne_bytes());
                    b[4..].copy_from_slice(&(v as f32).to_ne_bytes());
                }
                BasicType::DoubleInt => b[..8].copy_from_slice(&(v as f64).to_ne_bytes()),
                BasicType::LongInt => b[..8].copy_from_slice(&(v as i64).to_ne_bytes()),
                BasicType::FloatInt => b[..4].copy_from_slice(&(v as f32).to_ne_bytes()),
                BasicType::TwoInt => b[..4].copy_from_slice(&v.to_ne_bytes()),
                BasicType::LongDoubleInt => b[..16].copy_from_slice(&common::ld_bytes(v as f64)),
                _ => unreachable!(),
            }
            if let Some(off) = t.pair_index_offset() {
                b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
            }
            b
        };
        let halves_equal = |b: &[u8]| -> bool {
            match t {
                BasicType::C64 | BasicType::C32 => b[..t.size() / 2] == b[t.size() / 2..],
                BasicType::DoubleInt => {
                    f64::from_ne_bytes(b[..8].try_into().unwrap())
                        == i32::from_ne_bytes(b[8..12].try_into().unwrap()) as f64
                }
                BasicType::LongInt => {
                    i64::from_ne_bytes(b[..8].try_into().unwrap())
                        == i32::from_ne_bytes(b[8..12].try_into().unwrap()) as i64
                }
                BasicType::FloatInt => {
                    f32::from_ne_bytes(b[..4].try_into().unwrap())
                        == i32::from_ne_bytes(b[4..8].try_into().unwrap()) as f32
                }
                BasicType::TwoInt => b[..4] == b[4..8],
                BasicType::LongDoubleInt => {
                    b[..16]
                        == common::ld_bytes(i32::from_ne_bytes(b[16..20].try_into().unwrap()) as f64)
                }
                _ => unreachable!(),
            }
        };
        let torn = std::sync::atomic::AtomicUsize::new(0);
        hammer(t, &make(0), |th, fetch| {
            for i in 0..ITERS {
                if th % 2 == 0 {
                    fetch(Op::Replace, &make((th * ITERS + i) as i32 % 100_000));
                } else if !halves_equal(&fetch(Op::NoOp, &[])) {
                    torn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        });
        assert_eq!(torn.into_inner(), 0, "torn reads of {t}");
    }
}

#[test]
fn compare_and_swap_has_one_winner_per_round() {
    const ROUNDS: usize = 1500;
    for t in [
        BasicType::I64,
        BasicType::U32,
        BasicType::I16,
        BasicType::Usize,
        BasicType::U8,
    ] {
        let mut shared = Shared::new(&int_bytes(t, 0));
        let addr = shared.addr();
        let shared = &shared;
        let barrier = Barrier::new(THREADS);
        let results = std::sync::Mutex::new(vec![vec![0i128; THREADS]; ROUNDS]);
        std::thread::scope(|s| {
            for th in 0..THREADS {
                let (barrier, results) = (&barrier, &results);
                s.spawn(move || {
                    let locks = &shared.locks(th);
                    for round in 0..ROUNDS {
                        // winner value of a round: round * THREADS + th + 1 (fits u8 for
                        // the first rounds only, so compare against the round's start)
                        let start = int_bytes(t, (round * THREADS) as i128);
                        let mine = int_bytes(t, (round * THREADS + th + 1) as i128);
                        if th == 0 {
                            // reset the element to this round's start value
                            let mut old = vec![0u8; t.size()];
                            // SAFETY: shared aligned element, atomic access only.
                            unsafe {
                                atomic::fetch_and_op(
                                    t,
                                    Op::Replace,
                                    addr.0 as *mut u8,
                                    0,
                                    locks,
                                    &start,
                                    &mut old,
                                )
                                .expect("a kernel stalled")
                            };
                        }
                        barrier.wait();
                        let mut old = vec![0u8; t.size()];
                        // SAFETY: as above.
                        unsafe {
                            atomic::compare_and_swap(
                                t,
                                addr.0 as *mut u8,
                                0,
                                locks,
                                &mine,
                                &start,
                                &mut old,
                            )
                            .expect("a kernel stalled")
                        };
                        let mut buf = [0u8; 16];
                        buf[..old.len()].copy_from_slice(&old);
                        results.lock().unwrap()[round][th] = u128::from_ne_bytes(buf) as i128;
                        barrier.wait();
                    }
                });
            }
        });
        let mask = if t.size() == 16 {
            !0u128
        } else {
            (1u128 << (8 * t.size())) - 1
        };
        for (round, olds) in results.into_inner().unwrap().iter().enumerate() {
            let start = (round * THREADS) as u128 & mask;
            let winners: Vec<usize> = (0..THREADS)
                .filter(|&th| olds[th] as u128 == start)
                .collect();
            assert_eq!(winners.len(), 1, "{t} round {round}: {olds:?}");
            let w = winners[0];
            let won = (round * THREADS + w + 1) as u128 & mask;
            for th in (0..THREADS).filter(|&th| th != w) {
                assert_eq!(
                    olds[th] as u128, won,
                    "{t} round {round}: loser saw the winner's value"
                );
            }
        }
    }
}

/// Bulk accumulates (plain loops under chunk locks), small accumulates and
/// fetch_and_op (native atomics after an announcement) and strided bulk updates from
/// several threads at once,
/// over a region that spans several chunks and starts mid-chunk: every increment must
/// land (a plain loop racing an atomic on one element would lose one).
#[test]
fn bulk_and_element_updates_never_lose_an_increment() {
    const N: usize = 2400;
    // window offset of element 0: the first chunk boundary falls after 100 elements
    const KEY0: usize = (1 << atomic::CHUNK_SHIFT) - 8 * 100;
    let iters: usize = std::env::var("RMA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10000);
    for basic in [BasicType::I64, BasicType::F64] {
        let one = if basic == BasicType::F64 {
            1f64.to_ne_bytes()
        } else {
            1i64.to_ne_bytes()
        };
        let mut buf = vec![0u64; N];
        let addr = Addr(buf.as_mut_ptr() as usize);
        let tables = HeapDomain::new(THREADS, 1024);
        let counts: Vec<Vec<u64>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let tables = &tables;
                    s.spawn(move || {
                        let dom = tables.domain(t).unwrap();
                        let mut rng = Rng::new(0x5eed + t as u64);
                        let mut count_v = vec![0u64; N];
                        let count_at = |v: &mut Vec<u64>, i: usize| v[i] += 1;
                        for it in 0..iters {
                            let first = rng.below(N as u64) as usize;
                            // even threads mostly stream bulk updates, odd ones mostly hit single elements
                            let bulk = if t % 2 == 0 { it % 4 != 3 } else { it % 4 == 0 };
                            let most = (N - first).min(if bulk { 1200 } else { 7 });
                            let len = 1 + rng.below(most as u64) as usize;
                            let p = (addr.0 + 8 * first) as *mut u8;
                            let key = KEY0 + 8 * first;
                            if bulk && it % 2 == 1 {
                                // a strided bulk update: every `stride`-th element
                                let stride = 2 + rng.below(3) as usize;
                                let count = 1 + (len - 1) / stride;
                                let src: Vec<u8> = one.repeat(count);
                                // SAFETY: `count` aligned elements `stride` apart inside
                                // the shared buffer; all access goes through the kernels
                                // with this domain.
                                unsafe {
                                    atomic::accumulate_strided(
                                        basic,
                                        Op::Sum,
                                        p,
                                        key,
                                        8 * stride,
                                        8,
                                        count,
                                        &dom,
                                        &src,
                                    )
                                    .expect("a kernel stalled")
                                };
                                (0..count).for_each(|c| count_at(&mut count_v, first + c * stride));
                            } else if !bulk && it % 2 == 1 {
                                let mut old = [0u8; 8];
                                // SAFETY: one aligned element of the shared buffer; all
                                // access goes through the kernels with this domain.
                                unsafe {
                                    atomic::fetch_and_op(
                                        basic,
                                        Op::Sum,
                                        p,
                                        key,
                                        &dom,
                                        &one,
                                        &mut old,
                                    )
                                    .expect("a kernel stalled")
                                };
                                count_at(&mut count_v, first);
                            } else {
                                let src: Vec<u8> = one.repeat(len);
                                // SAFETY: `len` aligned elements inside the shared buffer;
                                // all access goes through the kernels with this domain.
                                unsafe {
                                    atomic::accumulate(basic, Op::Sum, p, key, &dom, &src)
                                        .expect("a kernel stalled")
                                };
                                count_v[first..first + len].iter_mut().for_each(|c| *c += 1);
                            }
                        }
                        count_v
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (i, &got) in buf.iter().enumerate() {
            let want: u64 = counts.iter().map(|c| c[i]).sum();
            let got = if basic == BasicType::F64 {
                f64::from_bits(got) as u64
            } else {
                got
            };
            assert_eq!(got, want, "{basic:?} element {i}: lost or extra increments");
        }
    }
}

/// MPI_BYTE accumulates and get-accumulates of a 16-byte struct are applied whole
/// (the chunk lock), as programs moving a (rank, address) pair with MPI_BYTE expect:
/// with one atomic per byte a reader saw half of one writer's pattern and half of
/// another's. (MPICH's linked_list_bench tests rely on this.)
#[test]
fn byte_accumulates_of_a_struct_are_applied_whole() {
    let mut shared = Shared::new(&[0u8; 16]);
    let addr = shared.addr();
    let shared = &shared;
    let torn = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let torn = &torn;
            s.spawn(move || {
                let locks = shared.locks(t);
                let p = addr.0 as *mut u8;
                for i in 0..ITERS {
                    if t % 2 == 0 {
                        let v = [((t * ITERS + i) % 251) as u8; 16];
                        // SAFETY: the 8-aligned 32-byte shared buffer; every access to
                        // it goes through the atomic kernels with these tables.
                        unsafe {
                            atomic::accumulate(BasicType::Byte, Op::Replace, p, 0, &locks, &v)
                        }
                        .expect("a kernel stalled");
                    } else {
                        let mut got = [0u8; 16];
                        // SAFETY: as above.
                        unsafe {
                            atomic::get_accumulate(
                                BasicType::Byte,
                                Op::NoOp,
                                p,
                                0,
                                &locks,
                                &[],
                                &mut got,
                            )
                        }
                        .expect("a kernel stalled");
                        if got.iter().any(|&b| b != got[0]) {
                            torn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    assert_eq!(
        torn.into_inner(),
        0,
        "a 16-byte MPI_BYTE read saw two writes"
    );
}

/// Two threads updating through the same announcement slot (one origin used from two
/// threads) while another origin streams bulk updates over the same elements: the
/// second thread finds the slot busy and takes the chunk lock, so no increment is lost.
#[test]
fn threads_sharing_a_slot_never_race_a_bulk_update() {
    const N: usize = 64;
    let iters: usize = std::env::var("RMA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let mut buf = vec![0u64; N];
    let addr = Addr(buf.as_mut_ptr() as usize);
    let tables = HeapDomain::new(2, 16);
    let one = 1i64.to_ne_bytes();
    let ones: Vec<u8> = one.repeat(N);
    let bulk_rounds = iters / 50;
    std::thread::scope(|s| {
        for t in 0..3 {
            let (tables, one, ones) = (&tables, &one, &ones);
            s.spawn(move || {
                // threads 0 and 1 share slot 0; thread 2 is origin 1
                let dom = tables.domain(t / 2).unwrap();
                let p = addr.0 as *mut u8;
                if t < 2 {
                    for i in 0..iters {
                        let k = 8 * (i % N);
                        let mut old = [0u8; 8];
                        // SAFETY: element i % N of the shared 8-aligned buffer; all
                        // access goes through the kernels with these tables.
                        unsafe {
                            atomic::fetch_and_op(
                                BasicType::I64,
                                Op::Sum,
                                p.add(k),
                                k,
                                &dom,
                                one,
                                &mut old,
                            )
                            .expect("a kernel stalled")
                        };
                    }
                } else {
                    for _ in 0..bulk_rounds {
                        // SAFETY: the whole shared buffer, through the kernels.
                        unsafe {
                            atomic::accumulate(BasicType::I64, Op::Sum, p, 0, &dom, ones)
                                .expect("a kernel stalled")
                        };
                    }
                }
            });
        }
    });
    let total: u64 = buf.iter().sum();
    assert_eq!(
        total,
        (2 * iters + bulk_rounds * N) as u64,
        "an increment was lost"
    );
}
