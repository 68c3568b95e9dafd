//! One access as the checker records it, its encoding in a log slot, and the rules
//! by which two accesses conflict.

use rma_core::{BasicType, Op};

/// Bytes of a record's payload.
pub(super) const PAYLOAD: usize = 160;
/// Runs a record holds (a call with more runs takes several records).
pub(super) const RUNS: usize = 4;
/// Bytes of a call site's file name kept (its tail).
const FILE: usize = 64;

/// What an access does to its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// get.
    Read = 1,
    /// put.
    Write = 2,
    /// accumulate, get_accumulate, fetch_and_op, compare_and_swap.
    Acc = 3,
    /// The target's own load through the window.
    LocalRead = 4,
    /// The target's own store through the window.
    LocalWrite = 5,
}

impl Kind {
    fn from_u8(k: u8) -> Option<Kind> {
        Some(match k {
            1 => Kind::Read,
            2 => Kind::Write,
            3 => Kind::Acc,
            4 => Kind::LocalRead,
            5 => Kind::LocalWrite,
            _ => return None,
        })
    }
}

/// A record's byte ranges: one without an allocation (the common call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Runs {
    One((u64, u64)),
    Many(Vec<(u64, u64)>),
}

impl Runs {
    pub(super) fn as_slice(&self) -> &[(u64, u64)] {
        match self {
            Runs::One(r) => std::slice::from_ref(r),
            Runs::Many(v) => v,
        }
    }

    #[cfg(test)]
    pub(super) fn of(v: &[(u64, u64)]) -> Runs {
        match v {
            [one] => Runs::One(*one),
            _ => Runs::Many(v.to_vec()),
        }
    }

    /// These runs and `r`.
    pub(super) fn with(this: Option<Runs>, r: (u64, u64)) -> Runs {
        match this {
            None => Runs::One(r),
            Some(Runs::One(a)) => Runs::Many(vec![a, r]),
            Some(Runs::Many(mut v)) => {
                v.push(r);
                Runs::Many(v)
            }
        }
    }
}

/// compare_and_swap's op in a record (it replaces, as REPLACE does).
pub(super) const CAS: u8 = 0xFE;

/// One access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Rec {
    pub(super) origin: u32,
    pub(super) kind: Kind,
    pub(super) basic: u8,
    pub(super) op: u8,
    /// Byte ranges `[start, end)` of the target's window.
    pub(super) runs: Runs,
    pub(super) issued: u64,
    pub(super) completed: u64,
    pub(super) line: u32,
    pub(super) col: u32,
    pub(super) file: std::borrow::Cow<'static, str>,
    /// Made in a PSCW access epoch: for the target it completes only at its wait
    /// (every origin's calls in one exposure epoch are unordered with each other).
    pub(super) exposure: bool,
}

/// The bit of a record's kind byte that marks a call of a PSCW access epoch.
const EXPOSURE: u8 = 0x80;

impl Rec {
    pub(super) fn encode(&self, runs: &[(u64, u64)], out: &mut [u8; PAYLOAD]) {
        out.fill(0);
        out[0..4].copy_from_slice(&self.origin.to_le_bytes());
        out[4] = self.kind as u8 | if self.exposure { EXPOSURE } else { 0 };
        out[5] = self.basic;
        out[6] = self.op;
        out[7] = runs.len() as u8;
        out[8..16].copy_from_slice(&self.issued.to_le_bytes());
        out[16..24].copy_from_slice(&self.completed.to_le_bytes());
        out[24..28].copy_from_slice(&self.line.to_le_bytes());
        out[28..32].copy_from_slice(&self.col.to_le_bytes());
        for (i, (a, b)) in runs.iter().enumerate() {
            out[32 + 16 * i..40 + 16 * i].copy_from_slice(&a.to_le_bytes());
            out[40 + 16 * i..48 + 16 * i].copy_from_slice(&b.to_le_bytes());
        }
        let f = self.file.as_bytes();
        let tail = &f[f.len().saturating_sub(FILE)..];
        out[96..96 + tail.len()].copy_from_slice(tail);
    }

    pub(super) fn decode(b: &[u8]) -> Option<Rec> {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let n = usize::from(b[7]).min(RUNS);
        let file = &b[96..96 + FILE];
        let len = file.iter().position(|&c| c == 0).unwrap_or(FILE);
        Some(Rec {
            origin: u32_at(0),
            kind: Kind::from_u8(b[4] & !EXPOSURE)?,
            basic: b[5],
            op: b[6],
            runs: match n {
                1 => Runs::One((u64_at(32), u64_at(40))),
                _ => Runs::Many(
                    (0..n)
                        .map(|i| (u64_at(32 + 16 * i), u64_at(40 + 16 * i)))
                        .collect(),
                ),
            },
            issued: u64_at(8),
            completed: u64_at(16),
            line: u32_at(24),
            col: u32_at(28),
            file: String::from_utf8_lossy(&file[..len]).into_owned().into(),
            exposure: b[4] & EXPOSURE != 0,
        })
    }

    fn reads(&self) -> bool {
        match self.kind {
            Kind::Read | Kind::LocalRead => true,
            Kind::Acc => self.op == Op::NoOp as u8,
            Kind::Write | Kind::LocalWrite => false,
        }
    }

    fn describe(&self, target: usize) -> String {
        let what = match self.kind {
            Kind::Read => "get".to_string(),
            Kind::Write => "put".to_string(),
            Kind::LocalRead => "local load (read_local)".to_string(),
            Kind::LocalWrite => "local store (write_local)".to_string(),
            Kind::Acc => format!(
                "accumulate-family call ({} on {})",
                op_name(self.op),
                basic_name(self.basic)
            ),
        };
        let site = if self.line == 0 {
            "an unknown call site".to_string()
        } else {
            format!("{}:{}:{}", self.file, self.line, self.col)
        };
        if matches!(self.kind, Kind::LocalRead | Kind::LocalWrite) {
            format!("rank {}'s {what} at {site}", self.origin)
        } else {
            format!("rank {}'s {what} to rank {target} at {site}", self.origin)
        }
    }
}

fn op_name(op: u8) -> &'static str {
    if op == CAS {
        return "MPI_COMPARE_AND_SWAP";
    }
    Op::ALL
        .iter()
        .find(|o| **o as u8 == op)
        .map_or("an unknown op", |o| o.mpi_name())
}

fn basic_name(b: u8) -> &'static str {
    BasicType::ALL
        .get(usize::from(b))
        .map_or("an unknown type", |t| t.name())
}

/// How two records are compared.
#[derive(Clone, Copy, Debug)]
pub(super) struct How {
    /// Only calls that overlapped in time conflict (`false`: the calls of one PSCW
    /// exposure epoch, unordered whenever they ran).
    pub(super) timed: bool,
    /// The window's `accumulate_ops` is `same_op`: NO_OP mixes with no other op.
    pub(super) same_op: bool,
}

/// Whether two accesses to overlapping bytes are allowed to overlap in time, and if
/// not, the rule they break.
fn rule(a: &Rec, b: &Rec, same_op: bool) -> Option<&'static str> {
    if a.reads() && b.reads() {
        return None;
    }
    if a.kind == Kind::Acc && b.kind == Kind::Acc {
        if a.basic != b.basic {
            return Some("concurrent accumulate-family calls to one location must use the same basic datatype");
        }
        let no_op = Op::NoOp as u8;
        let replace = |o: u8| o == Op::Replace as u8 || o == CAS;
        if a.op == b.op || (replace(a.op) && replace(b.op)) {
            return None;
        }
        if same_op {
            return Some("concurrent accumulate-family calls to one location must use the same op (accumulate_ops=same_op: NO_OP included)");
        }
        if a.op == no_op || b.op == no_op {
            return None;
        }
        return Some("concurrent accumulate-family calls to one location must use the same op or NO_OP (accumulate_ops=same_op_no_op)");
    }
    if a.kind == Kind::Acc || b.kind == Kind::Acc {
        return Some("an accumulate-family call and a put, get or local access to one location conflict unless ordered by a synchronization");
    }
    if matches!(a.kind, Kind::LocalRead | Kind::LocalWrite)
        || matches!(b.kind, Kind::LocalRead | Kind::LocalWrite)
    {
        return Some("a local load or store and an RMA call that writes, or a local store and an RMA call that reads, to one location conflict unless ordered by a synchronization");
    }
    Some("a put and another put or a get to one location conflict unless ordered by a synchronization")
}

/// The first byte range the two records share.
fn overlap(a: &Rec, b: &Rec) -> Option<(u64, u64)> {
    a.runs.as_slice().iter().find_map(|&(s, e)| {
        b.runs.as_slice().iter().find_map(|&(t, f)| {
            let (lo, hi) = (s.max(t), e.min(f));
            (lo < hi).then_some((lo, hi))
        })
    })
}

/// The report of `mine` and `other` at `target`, if they conflict.
pub(super) fn conflict(target: usize, mine: &Rec, other: &Rec, how: How) -> Option<String> {
    if mine.origin == other.origin {
        return None;
    }
    if how.timed && !(other.issued < mine.completed && mine.issued < other.completed) {
        return None;
    }
    let (lo, hi) = overlap(mine, other)?;
    let why = rule(mine, other, how.same_op)?;
    Some(format!(
        "{} and {} both touch bytes {lo}..{hi} of rank {target}'s window with no synchronization between them: {why}",
        other.describe(target),
        mine.describe(target),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMED: How = How {
        timed: true,
        same_op: false,
    };
    const UNTIMED: How = How {
        timed: false,
        same_op: false,
    };

    fn rec(origin: u32, kind: Kind, op: Op, runs: &[(u64, u64)], t: (u64, u64)) -> Rec {
        Rec {
            origin,
            kind,
            basic: BasicType::I64 as u8,
            op: op as u8,
            runs: Runs::of(runs),
            issued: t.0,
            completed: t.1,
            line: 7,
            col: 3,
            file: "src/x.rs".into(),
            exposure: false,
        }
    }

    #[test]
    fn a_record_survives_its_encoding() {
        for exposure in [false, true] {
            let mut r = rec(3, Kind::Acc, Op::Sum, &[(0, 8), (16, 24)], (5, 9));
            r.exposure = exposure;
            let mut b = [0u8; PAYLOAD];
            r.encode(r.runs.as_slice(), &mut b);
            assert_eq!(Rec::decode(&b), Some(r));
        }
    }

    #[test]
    fn the_rules_of_the_standard() {
        use Kind::*;
        let at = |o, k, op| rec(o, k, op, &[(0, 8)], (1, 10));
        let pairs = [
            (at(0, Write, Op::Sum), at(1, Write, Op::Sum), true),
            (at(0, Write, Op::Sum), at(1, Read, Op::Sum), true),
            (at(0, Read, Op::Sum), at(1, Read, Op::Sum), false),
            (at(0, Acc, Op::Sum), at(1, Acc, Op::Sum), false),
            (at(0, Acc, Op::Sum), at(1, Acc, Op::NoOp), false),
            (at(0, Acc, Op::Sum), at(1, Acc, Op::Max), true),
            (at(0, Acc, Op::Replace), at(1, Acc, Op::Replace), false),
            (at(0, Acc, Op::Sum), at(1, Write, Op::Sum), true),
            (at(0, Acc, Op::Sum), at(1, Read, Op::Sum), true),
            (at(0, Acc, Op::NoOp), at(1, Read, Op::Sum), false),
            (at(0, LocalWrite, Op::Sum), at(1, Read, Op::Sum), true),
            (at(0, LocalRead, Op::Sum), at(1, Read, Op::Sum), false),
            (at(0, Write, Op::Sum), at(0, Write, Op::Sum), false), // one origin
        ];
        for (a, b, conflicts) in pairs {
            assert_eq!(
                conflict(0, &a, &b, TIMED).is_some(),
                conflicts,
                "{a:?} vs {b:?}"
            );
        }
        // accumulate_ops=same_op: NO_OP mixes with no other op
        let same_op = How {
            same_op: true,
            ..TIMED
        };
        let sum_noop = (at(0, Acc, Op::Sum), at(1, Acc, Op::NoOp));
        assert!(conflict(0, &sum_noop.0, &sum_noop.1, same_op).is_some());
        assert!(conflict(0, &at(0, Acc, Op::Sum), &at(1, Acc, Op::Sum), same_op).is_none());
        assert!(conflict(0, &at(0, Acc, Op::NoOp), &at(1, Acc, Op::NoOp), same_op).is_none());
        let mut other_type = at(1, Acc, Op::Sum);
        other_type.basic = BasicType::F64 as u8;
        assert!(conflict(0, &at(0, Acc, Op::Sum), &other_type, TIMED).is_some());
    }

    #[test]
    fn only_overlap_in_bytes_and_time_conflicts() {
        let a = rec(0, Kind::Write, Op::Sum, &[(0, 8)], (1, 5));
        assert!(conflict(
            0,
            &a,
            &rec(1, Kind::Write, Op::Sum, &[(8, 16)], (1, 5)),
            TIMED
        )
        .is_none());
        assert!(conflict(
            0,
            &a,
            &rec(1, Kind::Write, Op::Sum, &[(4, 12)], (5, 9)),
            TIMED
        )
        .is_none());
        let msg = conflict(
            0,
            &a,
            &rec(1, Kind::Write, Op::Sum, &[(4, 12)], (4, 9)),
            TIMED,
        )
        .unwrap();
        assert!(
            msg.contains("bytes 4..8") && msg.contains("src/x.rs:7:3"),
            "{msg}"
        );
        // untimed (one PSCW exposure epoch): apart in time, still a conflict
        let later = rec(1, Kind::Write, Op::Sum, &[(4, 12)], (5, 9));
        assert!(conflict(0, &a, &later, UNTIMED).is_some());
        assert!(conflict(
            0,
            &a,
            &rec(1, Kind::Write, Op::Sum, &[(8, 16)], (5, 9)),
            UNTIMED
        )
        .is_none());
    }
}
