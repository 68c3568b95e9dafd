//! The soak's model: layouts as type maps computed by hand, the calls and steps an
//! epoch is made of (with what each fetched element must be), and what an op does to
//! a model element.

use rma_win::{Assert, BasicType, Datatype, LockType, Op, Order, Result};

// ---- layouts -----------------------------------------------------------------------

/// How a layout is built; the element offsets are computed here by hand, independently
/// of rma-datatype.
#[derive(Debug, Clone)]
pub(super) enum Shape {
    /// The predefined i64, `count` of them.
    Plain,
    Contig(usize),
    Vector {
        count: usize,
        bl: usize,
        stride: isize,
    },
    Hvector {
        count: usize,
        bl: usize,
        stride_bytes: isize,
    },
    Indexed {
        bls: Vec<usize>,
        disps: Vec<isize>,
    },
    IndexedBlock {
        bl: usize,
        disps: Vec<isize>,
    },
    Subarray {
        sizes: [usize; 2],
        subs: [usize; 2],
        starts: [usize; 2],
        fortran: bool,
    },
}

/// `count` instances of a datatype, with the element offsets (units of i64) of its type
/// map in order.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    pub(super) shape: Shape,
    pub(super) count: usize,
    pub(super) idx: Vec<isize>,
}

impl Layout {
    pub(super) fn lo(&self) -> isize {
        self.idx.iter().copied().min().unwrap_or(0)
    }

    pub(super) fn hi(&self) -> isize {
        self.idx.iter().copied().max().map_or(0, |m| m + 1)
    }

    pub(super) fn is_plain(&self) -> bool {
        matches!(self.shape, Shape::Plain)
    }

    pub(super) fn describe(&self) -> String {
        format!("{:?} x{}", self.shape, self.count)
    }

    pub(super) fn build(&self) -> Result<Datatype> {
        let i64t = Datatype::basic(BasicType::I64);
        let mut d = match &self.shape {
            Shape::Plain => return Ok(i64t),
            Shape::Contig(m) => Datatype::contiguous(*m, &i64t)?,
            Shape::Vector { count, bl, stride } => Datatype::vector(*count, *bl, *stride, &i64t)?,
            Shape::Hvector {
                count,
                bl,
                stride_bytes,
            } => Datatype::hvector(*count, *bl, *stride_bytes, &i64t)?,
            Shape::Indexed { bls, disps } => Datatype::indexed(bls, disps, &i64t)?,
            Shape::IndexedBlock { bl, disps } => Datatype::indexed_block(*bl, disps, &i64t)?,
            Shape::Subarray {
                sizes,
                subs,
                starts,
                fortran,
            } => {
                let order = if *fortran { Order::Fortran } else { Order::C };
                Datatype::subarray(sizes, subs, starts, order, &i64t)?
            }
        };
        d.commit();
        Ok(d)
    }
}

// ---- calls and steps ---------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Put,
    Get,
    Acc(Op),
    GetAcc(Op),
    Fop(Op),
    Cas,
    RPut,
    RGet,
    RAcc(Op),
    RGetAcc(Op),
}

impl Kind {
    pub(super) fn fetches(self) -> bool {
        matches!(
            self,
            Kind::Get | Kind::GetAcc(_) | Kind::Fop(_) | Kind::Cas | Kind::RGet | Kind::RGetAcc(_)
        )
    }

    pub(super) fn has_origin(self) -> bool {
        match self {
            Kind::Get | Kind::RGet => false,
            Kind::GetAcc(op) | Kind::RGetAcc(op) | Kind::Fop(op) => op != Op::NoOp,
            _ => true,
        }
    }

    pub(super) fn op(self) -> Op {
        match self {
            Kind::Put | Kind::RPut | Kind::Cas => Op::Replace,
            Kind::Get | Kind::RGet => Op::NoOp,
            Kind::Acc(o) | Kind::GetAcc(o) | Kind::Fop(o) | Kind::RAcc(o) | Kind::RGetAcc(o) => o,
        }
    }

    /// The class for the conflict rules of own regions.
    pub(super) fn class(self) -> u8 {
        match self {
            Kind::Put | Kind::RPut => PUT,
            Kind::Get | Kind::RGet => GOT,
            _ => ACC,
        }
    }
}

pub(super) const CLEAN: u8 = 0;
pub(super) const ACC: u8 = 1;
pub(super) const PUT: u8 = 2;
pub(super) const GOT: u8 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Region {
    Own,
    Sum,
    Xor,
}

/// What the k-th fetched element must be.
#[derive(Debug, Clone, Copy)]
pub(super) enum Expect {
    Exact(i64),
    /// SUM region element `e`: between start + mine_before and end - (mine - mine_before).
    SumBound {
        e: usize,
        mine_before: i64,
    },
    Any,
}

/// How a request is completed.
#[derive(Debug, Clone, Copy)]
pub(super) enum Completion {
    Wait,
    TestLoop,
    Defer,
}

#[derive(Debug, Clone)]
pub(super) struct Call {
    pub(super) kind: Kind,
    /// `None`: the null rank.
    pub(super) target: Option<usize>,
    pub(super) region: Region,
    pub(super) disp: usize,
    pub(super) tl: Layout,
    /// Origin layout over `origin` (also used for fetch_and_op / cas: one element).
    pub(super) ol: Layout,
    pub(super) origin: Vec<i64>,
    /// Result layout and the length of the result buffer.
    pub(super) rl: Layout,
    pub(super) rlen: usize,
    pub(super) compare: i64,
    pub(super) expect: Vec<Expect>,
    /// Typed convenience form rather than the `_with` form, where one exists.
    pub(super) typed: bool,
    pub(super) completion: Completion,
}

impl Call {
    pub(super) fn describe(&self) -> String {
        format!(
            "{:?} to {} {:?} region disp {} target {} origin {} result {}",
            self.kind,
            self.target.map_or("NULL".to_owned(), |t| t.to_string()),
            self.region,
            self.disp,
            self.tl.describe(),
            self.ol.describe(),
            self.rl.describe()
        )
    }
}

#[derive(Debug, Clone)]
pub(super) enum Step {
    Call(Box<Call>),
    Fence(Assert),
    LockAll(Assert),
    UnlockAll,
    Lock(LockType, usize),
    Unlock(usize),
    Flush(usize),
    FlushAll,
    FlushLocal(usize),
    FlushLocalAll,
    Post(Vec<usize>),
    Start(Vec<usize>),
    Complete,
    WaitPost,
    /// Complete the deferred requests.
    WaitRequests,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Fence,
    LockAll,
    Lock,
    Pscw,
}

pub(super) const MODES: [Mode; 4] = [Mode::Fence, Mode::LockAll, Mode::Lock, Mode::Pscw];

// ---- the model ---------------------------------------------------------------------

pub(super) fn apply(op: Op, t: i64, o: i64) -> i64 {
    match op {
        Op::Sum => t.wrapping_add(o),
        Op::Prod => t.wrapping_mul(o),
        Op::Max => t.max(o),
        Op::Min => t.min(o),
        Op::Land => ((t != 0) && (o != 0)) as i64,
        Op::Lor => ((t != 0) || (o != 0)) as i64,
        Op::Lxor => ((t != 0) != (o != 0)) as i64,
        Op::Band => t & o,
        Op::Bor => t | o,
        Op::Bxor => t ^ o,
        Op::Replace => o,
        Op::NoOp => t,
        other => unreachable!("{other:?} is never generated"),
    }
}
