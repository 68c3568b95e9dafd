//! The queued transport's tests: request decoding, hostile records and corrupt rings.

use super::message::decode_request;
use super::rings::ShmRingMem;
use super::*;
use crate::ring::{ring_cap, RingMem};
use crate::winmem::MemoryOptions;
use rma_core::rng::SplitMix64;
use rma_core::ErrorClass;
use std::sync::atomic::AtomicBool;

/// A request record (`_tag` names the kind it is meant for, for readability: the
/// tag travels outside the record).
fn request(
    _tag: u32,
    basic: BasicType,
    op: Op,
    base: u64,
    runs: &[(i64, u64)],
    data: &[u8],
) -> Vec<u8> {
    let h = Hdr {
        seq: 7,
        basic: basic as u8,
        op: op as u8,
        flags: FLAG_LAST,
        nruns: runs.len() as u32,
        base,
        data_len: data.len() as u32,
    };
    let mut m = h.encode().to_vec();
    for (o, l) in runs {
        m.extend_from_slice(&o.to_ne_bytes());
        m.extend_from_slice(&l.to_ne_bytes());
    }
    m.extend_from_slice(data);
    m
}

#[test]
fn valid_requests_decode() {
    let m = request(
        TAG_ACC,
        BasicType::F64,
        Op::Sum,
        64,
        &[(0, 16), (32, 8)],
        &[0u8; 24],
    );
    let r = decode_request(TAG_ACC, &m, 128, 0).unwrap();
    assert_eq!(r.runs, vec![(64, 16), (96, 8)]);
    assert_eq!((r.data.len(), r.reply_len), (24, 0));
    let m = request(TAG_GET, BasicType::Byte, Op::NoOp, 0, &[(5, 3)], &[]);
    assert_eq!(decode_request(TAG_GET, &m, 8, 0).unwrap().reply_len, 3);
    let m = request(
        TAG_CAS,
        BasicType::I32,
        Op::Replace,
        4,
        &[(0, 4)],
        &[0u8; 8],
    );
    assert!(decode_request(TAG_CAS, &m, 8, 0).is_ok());
}

#[test]
fn malformed_requests_are_rejected() {
    let ok = request(TAG_ACC, BasicType::F64, Op::Sum, 64, &[(0, 16)], &[0u8; 16]);
    let cases: Vec<(&str, u32, Vec<u8>, usize)> = vec![
        ("unknown tag", 99, ok.clone(), 128),
        (
            "run past the end",
            TAG_ACC,
            request(
                TAG_ACC,
                BasicType::F64,
                Op::Sum,
                120,
                &[(0, 16)],
                &[0u8; 16],
            ),
            128,
        ),
        (
            "negative start",
            TAG_PUT,
            request(
                TAG_PUT,
                BasicType::Byte,
                Op::Replace,
                0,
                &[(-1, 1)],
                &[0u8; 1],
            ),
            128,
        ),
        (
            "huge length",
            TAG_GET,
            request(TAG_GET, BasicType::Byte, Op::NoOp, 0, &[(0, u64::MAX)], &[]),
            128,
        ),
        (
            "huge base",
            TAG_GET,
            request(TAG_GET, BasicType::Byte, Op::NoOp, u64::MAX, &[(1, 1)], &[]),
            128,
        ),
        (
            "misaligned element",
            TAG_ACC,
            request(TAG_ACC, BasicType::F64, Op::Sum, 4, &[(0, 8)], &[0u8; 8]),
            128,
        ),
        (
            "partial element",
            TAG_ACC,
            request(TAG_ACC, BasicType::F64, Op::Sum, 0, &[(0, 12)], &[0u8; 12]),
            128,
        ),
        (
            "op not for type",
            TAG_ACC,
            request(TAG_ACC, BasicType::F64, Op::Band, 0, &[(0, 8)], &[0u8; 8]),
            128,
        ),
        (
            "NO_OP in accumulate",
            TAG_ACC,
            request(TAG_ACC, BasicType::F64, Op::NoOp, 0, &[(0, 8)], &[0u8; 8]),
            128,
        ),
        (
            "CAS on float",
            TAG_CAS,
            request(
                TAG_CAS,
                BasicType::F64,
                Op::Replace,
                0,
                &[(0, 8)],
                &[0u8; 16],
            ),
            128,
        ),
        (
            "data too short",
            TAG_PUT,
            request(
                TAG_PUT,
                BasicType::Byte,
                Op::Replace,
                0,
                &[(0, 8)],
                &[0u8; 7],
            ),
            128,
        ),
        (
            "fop of two elements",
            TAG_FOP,
            request(TAG_FOP, BasicType::I32, Op::Sum, 0, &[(0, 8)], &[0u8; 8]),
            128,
        ),
        ("truncated", TAG_ACC, ok[..40].to_vec(), 128),
        ("header only", TAG_ACC, ok[..HDR].to_vec(), 128),
        ("empty", TAG_ACC, vec![], 128),
    ];
    for (what, tag, msg, len) in cases {
        assert!(
            decode_request(tag, &msg, len, 0).is_err(),
            "{what} was accepted"
        );
    }
    // bad basic type / op bytes
    let mut m = ok.clone();
    m[8] = 200;
    assert!(decode_request(TAG_ACC, &m, 128, 0).is_err());
    let mut m = ok.clone();
    m[9] = 200;
    assert!(decode_request(TAG_ACC, &m, 128, 0).is_err());
    // a run count that overflows the record
    let mut m = ok;
    m[12..16].copy_from_slice(&u32::MAX.to_ne_bytes());
    assert!(decode_request(TAG_ACC, &m, 128, 0).is_err());
}

/// Random bytes and random mutations of valid requests never panic, and whatever
/// is accepted stays inside the window.
#[test]
fn fuzzed_requests_never_escape_the_window() {
    let mut rng = SplitMix64::new(1);
    let mut next = move || rng.next_u64();
    let seeds = [
        request(
            TAG_ACC,
            BasicType::F64,
            Op::Sum,
            64,
            &[(0, 16), (32, 8)],
            &[0u8; 24],
        ),
        request(
            TAG_GACC,
            BasicType::I32,
            Op::NoOp,
            0,
            &[(0, 4), (8, 4)],
            &[],
        ),
        request(
            TAG_PUT,
            BasicType::Byte,
            Op::Replace,
            3,
            &[(0, 5)],
            &[1u8; 5],
        ),
        request(
            TAG_CAS,
            BasicType::U64,
            Op::Replace,
            8,
            &[(0, 8)],
            &[0u8; 16],
        ),
    ];
    let tags = [TAG_PUT, TAG_GET, TAG_ACC, TAG_GACC, TAG_FOP, TAG_CAS, 0, 77];
    let window = 128usize;
    // 200 000 mutations in CI; RMA_FUZZ_CASES=N runs N (the long run by hand)
    let cases: usize = std::env::var("RMA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    for i in 0..cases {
        let mut m = seeds[i % seeds.len()].clone();
        let flips = 1 + (next() % 4) as usize;
        for _ in 0..flips {
            if m.is_empty() {
                break;
            }
            let at = (next() as usize) % m.len();
            m[at] = next() as u8;
        }
        if next() % 8 == 0 {
            m.truncate((next() as usize) % (m.len() + 1));
        }
        if next() % 16 == 0 {
            m = (0..(next() % 96)).map(|_| next() as u8).collect();
        }
        let tag = tags[(next() % tags.len() as u64) as usize];
        if let Ok(r) = decode_request(tag, &m, window, 0) {
            for &(s, l) in &r.runs {
                assert!(s + l <= window, "accepted a run outside the window: {r:?}");
            }
            let total: usize = r.runs.iter().map(|r| r.1).sum();
            assert!(r.data.len() <= 2 * total, "payload larger than the runs");
        }
    }
}

/// A hostile peer pushes a record whose run lies outside the target's window: the
/// target rejects it without touching memory, and the origin's flush reports it.
/// A peer that scribbles impossible positions over a ring gets an error from the
/// ring, not a crash.
#[test]
fn hostile_records_and_corrupt_rings_are_errors() {
    let results = crate::run_threads(
        2,
        |world| -> Result<(Option<ErrorClass>, Option<ErrorClass>)> {
            let mem = Arc::new(WindowMemory::allocate(
                &world,
                256,
                8,
                MemoryOptions { queues: true },
            )?);
            mem.write_local(0, &[0xAB; 256])?;
            let t = QueuedTransport::new(mem.clone(), world.liveness())?;
            world.barrier()?;
            let mut seen = (None, None);
            if world.rank() == 0 {
                let bogus = request(
                    TAG_PUT,
                    BasicType::Byte,
                    Op::Replace,
                    250,
                    &[(0, 64)],
                    &[0u8; 64],
                );
                let r = ring(&mem, 1, 0);
                assert!(r.try_push(TAG_PUT, &[&bogus]).unwrap());
                let bell = mem.doorbell(1);
                bell.bell.fetch_add(1, Ordering::SeqCst);
                sys::futex_wake_all(&bell.bell);
                let start = Instant::now();
                while seen.0.is_none() && start.elapsed() < Duration::from_secs(10) {
                    seen.0 = t.flush(Rank::new(1)).err().map(|e| e.class());
                    std::thread::sleep(Duration::from_millis(1));
                }
                // now scribble impossible positions over the same ring
                let (ctl, _) = mem.ring(1, 0);
                ctl.tail.store(u64::MAX - 5, Ordering::Release);
                let one = Contiguous(8);
                seen.1 = t
                    .accumulate(
                        Access {
                            target: Rank::new(1),
                            base: 0,
                            layout: &one,
                            exclusive: false,
                        },
                        BasicType::I64,
                        Op::Sum,
                        &[1u8; 8],
                    )
                    .err()
                    .map(|e| e.class());
            }
            world.barrier()?;
            if world.rank() == 1 {
                let mut mine = vec![0u8; 256];
                mem.read_local(0, &mut mine)?;
                assert!(
                    mine.iter().all(|b| *b == 0xAB),
                    "the rejected record wrote nothing"
                );
            }
            drop(t);
            Ok(seen)
        },
    )
    .unwrap();
    let seen = results[0].as_ref().unwrap();
    assert_eq!(
        seen.0,
        Some(ErrorClass::Intern),
        "flush reports the rejection"
    );
    assert_eq!(
        seen.1,
        Some(ErrorClass::Intern),
        "a corrupt ring is an error"
    );
    assert!(results[1].is_ok());
}

/// `count` runs of 8 bytes, 16 bytes apart (a vector layout, for calls that stream
/// as several records).
struct EveryOther(usize);

impl Layout for EveryOther {
    fn size(&self) -> usize {
        8 * self.0
    }
    fn for_each_run(&self, f: &mut dyn FnMut(Run)) {
        for i in 0..self.0 {
            f(Run {
                offset: 16 * i as isize,
                len: 8,
            });
        }
    }
    fn as_contiguous(&self) -> Option<usize> {
        None
    }
}

/// One fetching call of each kind, by number, from rank 0 to rank 1 (the strided
/// get streams as several records).
fn fetch(t: &QueuedTransport, kind: u64) -> Result<()> {
    fn at(layout: &dyn Layout) -> Access<'_> {
        Access {
            target: Rank::new(1),
            base: 64,
            layout,
            exclusive: false,
        }
    }
    let one = Rank::new(1);
    let mut out = vec![0u8; 8 * 3000];
    match kind % 5 {
        0 => t.fetch_and_op(
            one,
            8,
            BasicType::I64,
            Op::Sum,
            &1i64.to_ne_bytes(),
            &mut out[..8],
        ),
        1 => t.compare_and_swap(one, 16, BasicType::U64, &[1; 8], &[0; 8], &mut out[..8]),
        2 => t.get(at(&Contiguous(40)), &mut out[..40]),
        3 => t.get_accumulate(
            at(&Contiguous(8)),
            BasicType::F64,
            Op::Sum,
            &2.0f64.to_ne_bytes(),
            &mut out[..8],
        ),
        _ => t.get(at(&EveryOther(3000)), &mut out),
    }
}

/// Ring-level fuzzing with fetches in flight: rank 0 has a fetching call
/// outstanding toward rank 1, whose engine is held off the ring, while the request
/// ring is corrupted — the length or tag of the record at its head, the request
/// header, other record bytes, the ring's positions, the reply ring's positions —
/// and then let go. Every case ends within the stall bound and a margin: the call
/// returns (corruption that still decodes may change what it does) or fails with
/// class INTERN, and so does the next call; never a hang. (Before origin waits
/// looked at the target's rejection, a garbage header at the ring head left the
/// origin waiting for its reply forever: the watchdog below then closes the
/// target's window, and the case fails with class WIN after the deadline.)
#[test]
fn corrupt_rings_with_fetches_in_flight_end_in_errors_not_hangs() {
    const CASES: u64 = 100;
    let stall = Duration::from_millis(200);
    let deadline = stall + Duration::from_secs(5);
    let done = AtomicU32::new(u32::MAX);
    let failed = AtomicBool::new(false);
    let results = crate::run_threads(2, |world| -> Result<Vec<String>> {
        world.set_stall_bound(stall);
        let mut bad = vec![];
        let mut rng = SplitMix64::new(2);
        let mut next = move || rng.next_u64();
        for case in 0..CASES {
            let mem = Arc::new(WindowMemory::allocate(
                &world,
                64 * 1024,
                8,
                MemoryOptions { queues: true },
            )?);
            let t = QueuedTransport::new(mem.clone(), world.liveness())?;
            // rank 1's engine stays off rank 0's ring until the corruption is done
            let mut hold = (world.rank() == 1).then(|| t.engine.drains[0].lock().unwrap());
            world.barrier()?;
            if world.rank() == 0 {
                let start = Instant::now();
                let first = fetch(&t, case);
                let took = start.elapsed();
                let second = fetch(&t, case + 1);
                let took2 = start.elapsed() - took;
                eprintln!(
                    "case {case}: {:?} after {took:?}, next call {:?} after {took2:?}",
                    first.as_ref().map_err(|e| e.class()),
                    second.as_ref().map_err(|e| e.class())
                );
                done.store(case as u32, Ordering::SeqCst);
                for (what, r, took) in [("call", &first, took), ("next call", &second, took2)] {
                    let class = r.as_ref().err().map(|e| e.class());
                    if took > deadline || !matches!(class, None | Some(ErrorClass::Intern)) {
                        bad.push(format!("case {case}: {what} took {took:?}: {r:?}"));
                        failed.store(true, Ordering::SeqCst);
                    }
                }
            } else {
                let replies = ring(&mem, 0, 3);
                // rank 0 is asleep waiting for its replies: every record is there
                let start = Instant::now();
                while replies.ctl().consumer_waiting.load(Ordering::SeqCst) == 0
                    && start.elapsed() < deadline
                {
                    std::thread::sleep(Duration::from_micros(200));
                }
                let (ctl, data) = mem.ring(1, 0);
                let cap = ring_cap(mem.ranks());
                let bytes = ShmRingMem(data, cap);
                let (head, tail) = (
                    ctl.head.load(Ordering::SeqCst),
                    ctl.tail.load(Ordering::SeqCst),
                );
                let used = tail.wrapping_sub(head) as usize;
                let pos = (head % cap as u64) as usize;
                // a byte of the ring changed to another value
                let flip = |at: usize, v: u64| {
                    let mut b = [0u8];
                    bytes.read(at % cap, &mut b);
                    b[0] = if v as u8 == b[0] { !b[0] } else { v as u8 };
                    bytes.write(at % cap, &b);
                };
                match next() % 8 {
                    // the length or the tag of the record at the head
                    0 | 1 => flip(pos + (next() % 8) as usize, next()),
                    // its request header
                    2 => flip(pos + 8 + (next() % HDR as u64) as usize, next()),
                    // any bytes of the records in flight
                    3 => {
                        for _ in 0..1 + next() % 4 {
                            flip(pos + (next() as usize) % used.max(1), next());
                        }
                    }
                    // a shorter or longer length that still looks like one
                    4 => {
                        let mut len = [0u8; 4];
                        bytes.read(pos, &mut len);
                        let l = u32::from_ne_bytes(len);
                        let l = if next() % 2 == 0 {
                            l.saturating_sub(8)
                        } else {
                            l + 8
                        };
                        bytes.write(pos, &l.to_ne_bytes());
                    }
                    // the request ring's positions
                    5 => match next() % 4 {
                        0 => ctl.tail.store(head, Ordering::SeqCst),
                        1 => ctl.tail.store(tail.wrapping_sub(8), Ordering::SeqCst),
                        2 => ctl.head.store(head + 8, Ordering::SeqCst),
                        _ => ctl.tail.store(next(), Ordering::SeqCst),
                    },
                    // the reply ring's positions
                    6 => {
                        let (rctl, _) = mem.ring(0, 3);
                        let h = rctl.head.load(Ordering::SeqCst);
                        match next() % 3 {
                            0 => rctl.tail.store(h + 64, Ordering::SeqCst),
                            1 => rctl.head.store(h + 8, Ordering::SeqCst),
                            _ => rctl.tail.store(next(), Ordering::SeqCst),
                        }
                    }
                    // the tag of the record made one that needs no reply
                    _ => bytes.write(pos + 4, &TAG_ACC.to_ne_bytes()),
                }
                drop(hold.take());
                let bell = mem.doorbell(1);
                bell.bell.fetch_add(1, Ordering::SeqCst);
                sys::futex_wake_all(&bell.bell);
                // the watchdog: a wait that never ends is made to end, as a failure
                while done.load(Ordering::SeqCst) != case as u32 {
                    if start.elapsed() > deadline + Duration::from_secs(1) {
                        bell.closed.store(1, Ordering::SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            world.barrier()?;
            drop(hold);
            drop(t);
            world.barrier()?;
            if failed.load(Ordering::SeqCst) {
                break;
            }
        }
        Ok(bad)
    })
    .unwrap();
    for r in results {
        let bad = r.unwrap();
        assert!(
            bad.is_empty(),
            "{} cases went wrong:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }
}

/// The same attacks from another process: the test binary re-runs itself as the
/// two ranks of a world. Rank 1 (the hostile process) pushes a record that points
/// outside rank 0's window and scribbles impossible positions over the ring that
/// carries rank 0's requests to it. Rank 0 must neither crash nor let memory change:
/// its engine rejects the record, and its own next call fails on the corrupt ring.
#[test]
fn attacks_from_another_process_are_errors() {
    const NAME: &str = "queued::tests::attacks_from_another_process_are_errors";
    if let Ok(Some(world)) = crate::ShmWorld::from_env() {
        let code = match hostile_rank(&world) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("rank {}: {e}", world.rank());
                1
            }
        };
        drop(world);
        std::process::exit(code);
    }
    let exe = std::env::current_exe().expect("the test binary");
    let mut opts = crate::launch::LaunchOptions::new(2, exe);
    opts.args = vec!["--exact".into(), NAME.into(), "--nocapture".into()];
    opts.timeout = Some(Duration::from_secs(60));
    let report = crate::launch::spawn(&opts).expect("launch");
    assert!(report.success(), "{report:?}");
}

fn hostile_rank(world: &crate::ShmWorld) -> std::result::Result<(), String> {
    let e = |e: Error| e.to_string();
    let mem =
        Arc::new(WindowMemory::allocate(world, 256, 8, MemoryOptions { queues: true }).map_err(e)?);
    mem.write_local(0, &[0xAB; 256]).map_err(e)?;
    let t = QueuedTransport::new(mem.clone(), world.liveness()).map_err(e)?;
    world.barrier().map_err(e)?;
    let one = Contiguous(8);
    let at = Access {
        target: Rank::new(1),
        base: 0,
        layout: &one,
        exclusive: false,
    };
    if world.rank() == 1 {
        // a record whose run lies far outside rank 0's window
        let bogus = request(
            TAG_PUT,
            BasicType::Byte,
            Op::Replace,
            1 << 40,
            &[(0, 64)],
            &[0u8; 64],
        );
        assert!(ring(&mem, 0, 1)
            .try_push(TAG_PUT, &[&bogus])
            .map_err(|e| format!("{e:?}"))?);
        let bell = mem.doorbell(0);
        bell.bell.fetch_add(1, Ordering::SeqCst);
        sys::futex_wake_all(&bell.bell);
        // scribble over the ring that carries rank 0's requests to this rank
        mem.ring(1, 0).0.tail.store(u64::MAX - 3, Ordering::Release);
        world.barrier().map_err(e)?; // 1: attacks done
        world.barrier().map_err(e)?; // 2: rank 0 has looked
                                     // rank 0 rejected the record: this rank's flush says so
        let start = Instant::now();
        loop {
            match t.flush(Rank::new(0)) {
                Err(err) if err.class() == rma_core::ErrorClass::Intern => break,
                Err(err) => return Err(format!("flush: unexpected {err}")),
                Ok(()) if start.elapsed() < Duration::from_secs(10) => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Ok(()) => return Err("rank 0 never reported the rejected record".into()),
            }
        }
    } else {
        world.barrier().map_err(e)?; // 1
        match t.accumulate(at, BasicType::I64, Op::Sum, &[1u8; 8]) {
            Err(err) if err.class() == rma_core::ErrorClass::Intern => {}
            other => return Err(format!("a push onto the corrupt ring gave {other:?}")),
        }
        // let the engine see the bogus record, then check nothing changed
        let start = Instant::now();
        while mem.pair(0, 1).rejected.load(Ordering::SeqCst) == 0
            && start.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut mine = vec![0u8; 256];
        mem.read_local(0, &mut mine).map_err(e)?;
        if mine.iter().any(|b| *b != 0xAB) {
            return Err("the rejected record changed the window".into());
        }
        world.barrier().map_err(e)?; // 2
    }
    world.barrier().map_err(e)?;
    drop(t);
    Ok(())
}
