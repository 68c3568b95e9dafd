//! Type signatures (the sequence of basic types, without displacements) and the
//! checks the RMA calls make on them.

use crate::Datatype;
use rma_core::{BasicType, Error, Result};
use std::fmt;
use std::sync::Arc;

/// One piece of a signature sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sig {
    /// `n > 0` elements of one basic type.
    Elems(BasicType, u128),
    /// `n >= 2` repetitions of a non-empty sequence.
    Rep(u128, Arc<[Sig]>),
}

/// A normalised signature sequence: no empty pieces, no two adjacent `Elems` of the
/// same basic type.
pub(crate) type SigSeq = Arc<[Sig]>;

fn sig_elements(seq: &[Sig]) -> u128 {
    seq.iter()
        .map(|s| match s {
            Sig::Elems(_, n) => *n,
            Sig::Rep(n, inner) => n.saturating_mul(sig_elements(inner)),
        })
        .fold(0u128, u128::saturating_add)
}

/// Builds normalised signature sequences.
#[derive(Default)]
pub(crate) struct SigBuilder(Vec<Sig>);

impl SigBuilder {
    /// Appends `n` repetitions of `seq`.
    pub(crate) fn push_repeat(&mut self, n: u128, seq: &SigSeq) {
        if n == 0 || seq.is_empty() {
            return;
        }
        match &**seq {
            [Sig::Elems(b, k)] => self.push(Sig::Elems(*b, k.saturating_mul(n))),
            _ if n == 1 => seq.iter().for_each(|s| self.push(s.clone())),
            _ => self.push(Sig::Rep(n, seq.clone())),
        }
    }

    fn push(&mut self, s: Sig) {
        if let (Some(Sig::Elems(b, k)), Sig::Elems(b2, k2)) = (self.0.last_mut(), &s) {
            if b == b2 {
                *k = k.saturating_add(*k2);
                return;
            }
        }
        self.0.push(s);
    }

    pub(crate) fn finish(self) -> SigSeq {
        self.0.into()
    }
}

/// Streams a signature as `(basic type, count)` pieces.
struct SigIter<'a> {
    /// (pieces, next index, repetitions left including the current one)
    stack: Vec<(&'a [Sig], usize, u128)>,
}

impl<'a> SigIter<'a> {
    fn new(seq: &'a [Sig]) -> SigIter<'a> {
        SigIter {
            stack: vec![(seq, 0, 1)],
        }
    }
}

impl Iterator for SigIter<'_> {
    type Item = (BasicType, u128);

    fn next(&mut self) -> Option<(BasicType, u128)> {
        loop {
            let (items, next, left) = self.stack.last_mut()?;
            let Some(piece) = items.get(*next) else {
                *left -= 1;
                if *left == 0 {
                    self.stack.pop();
                } else {
                    *next = 0;
                }
                continue;
            };
            *next += 1;
            match piece {
                Sig::Elems(b, n) => return Some((*b, *n)),
                Sig::Rep(n, inner) => self.stack.push((inner, 0, *n)),
            }
        }
    }
}

/// The type signature of `count` instances of a datatype: its sequence of basic types.
///
/// Kept compact: a signature of one basic type is `(basic type, element count)`, and a
/// mixed one is a small tree of repetitions, never the expanded sequence. A pair type
/// (`DoubleInt`, ...) is one element.
#[derive(Clone, PartialEq, Eq)]
pub struct Signature {
    seq: SigSeq,
    elements: u128,
}

impl Signature {
    pub(crate) fn new(count: usize, seq: &SigSeq) -> Signature {
        let mut b = SigBuilder::default();
        b.push_repeat(count as u128, seq);
        let seq = b.finish();
        let elements = sig_elements(&seq);
        Signature { seq, elements }
    }

    /// Number of basic elements (saturating at `u64::MAX`, which no real buffer
    /// reaches).
    pub fn element_count(&self) -> u64 {
        u64::try_from(self.elements).unwrap_or(u64::MAX)
    }

    /// `Some(b)` if every element is of basic type `b`; `None` if the signature mixes
    /// basic types or is empty.
    pub fn basic_type(&self) -> Option<BasicType> {
        match &*self.seq {
            [Sig::Elems(b, _)] => Some(*b),
            _ => None,
        }
    }

    /// Whether the two element sequences are equal.
    ///
    /// O(1) for signatures of one basic type; otherwise the two sequences are streamed
    /// side by side (memory proportional to nesting depth, time to the number of
    /// basic-type changes).
    pub fn matches(&self, other: &Signature) -> bool {
        if self.elements != other.elements {
            return false;
        }
        if self.seq == other.seq {
            return true;
        }
        let (mut a, mut b) = (SigIter::new(&self.seq), SigIter::new(&other.seq));
        let (mut pa, mut pb) = (a.next(), b.next());
        loop {
            match (&mut pa, &mut pb) {
                (None, None) => return true,
                (Some((ta, na)), Some((tb, nb))) => {
                    if ta != tb {
                        return false;
                    }
                    let m = (*na).min(*nb);
                    *na -= m;
                    *nb -= m;
                    if *na == 0 {
                        pa = a.next();
                    }
                    if *nb == 0 {
                        pb = b.next();
                    }
                }
                _ => return false,
            }
        }
    }
}

impl fmt::Display for Signature {
    /// `"12 x f64"`, `"0 elements"`, or
    /// `"mixed, 7 elements: 3 x i32, 1 x f64, 3 x i32"` (the first pieces only).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 4;
        if self.elements == 0 {
            return f.write_str("0 elements");
        }
        if let Some(b) = self.basic_type() {
            return write!(f, "{} x {b}", self.elements);
        }
        write!(f, "mixed, {} elements: ", self.elements)?;
        let mut pieces: Vec<(BasicType, u128)> = Vec::with_capacity(SHOWN + 1);
        for (t, n) in SigIter::new(&self.seq) {
            if let Some((lt, ln)) = pieces.last_mut() {
                if *lt == t {
                    *ln = ln.saturating_add(n);
                    continue;
                }
            }
            if pieces.len() == SHOWN + 1 {
                break;
            }
            pieces.push((t, n));
        }
        let more = pieces.len() > SHOWN;
        for (i, (t, n)) in pieces.iter().take(SHOWN).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n} x {t}")?;
        }
        if more {
            f.write_str(", ...")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signature({self})")
    }
}

/// Checks that `count` instances of the origin and target datatypes have the same
/// type signature (put and get), after checking both are committed.
///
/// Errors: [`Error::InvalidDatatype`] for an uncommitted type,
/// [`Error::SignatureMismatch`] (class TYPE) for different signatures. Zero-count
/// calls are no-ops that callers should skip before calling (docs/semantics.md rule 18);
/// two empty signatures match.
pub fn check_signatures(
    call: &'static str,
    origin: (&Datatype, usize),
    target: (&Datatype, usize),
) -> Result<()> {
    origin.0.check_committed()?;
    target.0.check_committed()?;
    let so = origin.0.signature(origin.1);
    let st = target.0.signature(target.1);
    if so.matches(&st) {
        Ok(())
    } else {
        Err(Error::SignatureMismatch {
            call,
            origin: format!("origin: {so}"),
            target: st.to_string(),
        })
    }
}

/// The accumulate family's datatype rules (docs/semantics.md rule 3); returns the one
/// basic type the call applies its op to.
///
/// In order:
/// 1. every given datatype is committed, else [`Error::InvalidDatatype`];
/// 2. if the target side holds no element (`count x elements == 0`) the call is a
///    no-op: `Ok` with the target's basic type, or failing that the origin's or the
///    result's, or [`BasicType::Byte`] if none has one. Callers treat zero-count calls
///    as no-ops before calling this (rule 18), so this is only a fallback;
/// 3. each datatype is built from a single basic type, else
///    [`Error::MixedBasicTypes`] naming `"origin"`, `"target"` or `"result"`;
/// 4. origin and result use the target's basic type, else
///    [`Error::BasicTypeMismatch`];
/// 5. origin and result hold as many elements as the target, else
///    [`Error::SignatureMismatch`].
///
/// All these errors are of class TYPE. `origin` is `None` for NO_OP without an origin
/// buffer; `result` is `None` for accumulate.
pub fn check_accumulate_types(
    call: &'static str,
    origin: Option<(&Datatype, usize)>,
    target: (&Datatype, usize),
    result: Option<(&Datatype, usize)>,
) -> Result<BasicType> {
    let sides = [
        ("origin", origin),
        ("target", Some(target)),
        ("result", result),
    ];
    for (_, side) in sides {
        if let Some((dt, _)) = side {
            dt.check_committed()?;
        }
    }
    let elements = |(dt, count): (&Datatype, usize)| (dt.element_count() as u128) * count as u128;
    let target_elements = elements(target);
    if target_elements == 0 {
        let any = [Some(target), origin, result]
            .iter()
            .find_map(|s| s.and_then(|(dt, _)| dt.basic_type()));
        return Ok(any.unwrap_or(BasicType::Byte));
    }
    let basic_of = |which: &'static str, dt: &Datatype| {
        dt.basic_type()
            .ok_or(Error::MixedBasicTypes { call, which })
    };
    let expected = basic_of("target", target.0)?;
    for (which, side) in [("origin", origin), ("result", result)] {
        let Some(side) = side else { continue };
        let found = basic_of(which, side.0)?;
        if found != expected {
            return Err(Error::BasicTypeMismatch {
                call,
                which,
                expected,
                found,
            });
        }
    }
    for (which, side) in [("origin", origin), ("result", result)] {
        let Some(side) = side else { continue };
        if elements(side) != target_elements {
            let describe = |(dt, count): (&Datatype, usize)| dt.signature(count).to_string();
            return Err(Error::SignatureMismatch {
                call,
                origin: format!("{which}: {}", describe(side)),
                target: describe(target),
            });
        }
    }
    Ok(expected)
}
