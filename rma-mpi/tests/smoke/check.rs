//! What every step of the smoke run checks with: the failed check (`Check`,
//! `ensure!`), the error context, the window's shape, and the notes of calls refused
//! for a known library defect.

use rma_core::{Assert, ErrorClass, LockType, Rank};
use rma_mpi::{MpiTargetSpec, MpiWindow};

/// A failed check: what was expected and what happened.
pub(super) type Check<T = ()> = std::result::Result<T, String>;

/// Counter increments per rank.
pub(super) const N: i64 = 20;
/// Window size: 512 slots of 8 bytes, disp_unit 8.
pub(super) const SLOTS: usize = 512;

/// Returns a failed check naming this place when `cond` is false.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(format!("{}:{}: {}", file!(), line!(), format!($($fmt)*)));
        }
    };
}
pub(super) use ensure;

pub(super) trait Ctx<T> {
    fn ctx(self, what: &str) -> Check<T>;
}

impl<T> Ctx<T> for rma_core::Result<T> {
    fn ctx(self, what: &str) -> Check<T> {
        self.map_err(|e| format!("{what}: {e} [{}]", e.class()))
    }
}

pub(super) fn rank(i: usize) -> Rank {
    Rank::new(i as u32)
}

pub(super) fn i64s(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

pub(super) fn to_i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8)
        .map(|c| i64::from_ne_bytes(c.try_into().unwrap_or_default()))
        .collect()
}

pub(super) fn expect_class<T>(r: rma_core::Result<T>, class: ErrorClass, what: &str) -> Check {
    match r {
        Err(e) if e.class() == class => Ok(()),
        Err(e) => Err(format!("{what}: expected {class}, got {e} [{}]", e.class())),
        Ok(_) => Err(format!("{what}: expected {class}, got Ok")),
    }
}

/// Reads `n` slots of `target` from `disp` under a shared lock.
pub(super) fn read(win: &mut MpiWindow<'_>, target: usize, disp: i64, n: usize) -> Check<Vec<i64>> {
    win.lock(LockType::Shared, rank(target), Assert::NONE)
        .ctx("lock shared")?;
    let mut out = vec![0u8; 8 * n];
    win.get(&mut out, MpiTargetSpec::contiguous(rank(target), disp))
        .ctx("get")?;
    win.unlock(rank(target)).ctx("unlock")?;
    Ok(to_i64s(&out))
}

/// Notes for the summary line: calls refused for a known library defect.
pub(super) static NOTES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// `Ok(true)` if the call ran, `Ok(false)` if rma-mpi refused it for a known library
/// defect (class RMA_FLAVOR), which is noted for the summary.
pub(super) fn ran(r: rma_core::Result<()>, what: String) -> Check<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.class() == ErrorClass::RmaFlavor => {
            let mut notes = NOTES
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !notes.contains(&what) {
                notes.push(what);
            }
            Ok(false)
        }
        Err(e) => Err(format!("{what}: {e} [{}]", e.class())),
    }
}
