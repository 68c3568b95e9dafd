//! Reduction operations: the predefined ones and the program's own
//! (`MPI_Op_create`), and combining the ranks' contributions of a reduction.
//!
//! A program's operation is a C function over two buffers laid out as `len` instances
//! of the call's datatype. rma keeps contributions packed (type-map order), so each
//! one is laid out into a scratch buffer of the datatype's span before the function
//! sees it, and packed again after. MPI allows the program's operations in
//! collectives only: one-sided calls refuse them with MPI_ERR_OP, as MPI requires.
//!
//! The function runs inside the reduction's call, with the library's state held: an
//! MPI call it makes returns MPI_ERR_OTHER ("called from inside an MPI callback"),
//! except MPI_Abort, which works from anywhere.

use crate::dtype::{pack, span, unpack};
use crate::{call, code, count, fail, inp, out, On, State, R};
use rma_win::{Datatype, Op};
use std::ffi::{c_int, c_void};

/// `MPI_User_function`: `(invec, inoutvec, len, datatype)`, inoutvec = invec op inoutvec.
pub(crate) type UserFn =
    unsafe extern "C-unwind" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_int);

/// First handle of a program's operation (the predefined ones are 1..=14).
const FIRST_USER: i32 = 32;
/// The last predefined operation (MPI_NO_OP).
const LAST_PREDEFINED: i32 = 14;

/// A program's operation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserOp {
    f: UserFn,
    commute: bool,
}

/// What a reduction combines with.
#[derive(Debug, Clone)]
pub(crate) enum Reducer {
    /// A predefined operation on elements of one basic type.
    Builtin(Op, rma_win::BasicType),
    /// A program's function, with the datatype handle it is handed and the datatype.
    User {
        op: UserOp,
        handle: c_int,
        dt: Datatype,
    },
}

/// The predefined operation of handle `op`, for one-sided calls (which refuse a
/// program's operations).
pub(crate) fn builtin(op: c_int) -> R<Op> {
    if op >= FIRST_USER {
        return Err(fail(
            code::OP,
            format!("{op} is a user-defined operation: MPI allows only predefined operations in one-sided calls"),
        ));
    }
    u8::try_from(op - 1)
        .ok()
        .and_then(Op::from_u8)
        .ok_or_else(|| fail(code::OP, format!("{op} is not an operation")))
}

impl State {
    /// How to combine `n` elements of datatype `dt` (a handle) with operation `op`
    /// in a reduction.
    pub(crate) fn reducer(&self, op: c_int, dt: c_int) -> R<Reducer> {
        if op >= FIRST_USER {
            let u = *self
                .ops
                .get(op)
                .ok_or_else(|| fail(code::OP, format!("{op} is not an operation")))?;
            return Ok(Reducer::User {
                op: u,
                handle: dt,
                dt: self.dt(dt)?,
            });
        }
        let o = builtin(op)?;
        let basic = self
            .dt(dt)?
            .basic_type()
            .ok_or_else(|| fail(code::TYPE, "a reduction needs elements of one basic type"))?;
        if !rma_ops::op_defined_on(o, basic) || matches!(o, Op::Replace | Op::NoOp) {
            return Err(fail(
                code::OP,
                format!("{o} is not defined on {basic:?} for a reduction"),
            ));
        }
        Ok(Reducer::Builtin(o, basic))
    }
}

/// A scratch buffer holding `n` instances of `dt` laid out as in memory, with the
/// datatype's origin 16-byte aligned (as a C object of any type the datatype
/// describes would be), whatever its lower bound.
struct Laid {
    words: Vec<u128>,
    /// Where the datatype's origin lies, in bytes from the start of `words` (may be
    /// negative or past the end when the type's lower bound is not 0; only the span's
    /// bytes, which lie inside `words`, are ever accessed through it).
    origin: isize,
}

impl Laid {
    fn new(dt: &Datatype, n: usize) -> R<Laid> {
        let (lo, len) = span(dt, n)?;
        // the span starts `lo` bytes from the origin: put it `lo mod 16` bytes into
        // the (16-aligned) allocation, so that the origin is 16-aligned
        let skip = lo.rem_euclid(16);
        let bytes = len
            .checked_add(skip as usize)
            .ok_or_else(|| fail(code::COUNT, "a reduction buffer overflows"))?;
        Ok(Laid {
            words: vec![0; bytes.div_ceil(16).max(1)],
            origin: skip - lo,
        })
    }

    /// The buffer's address as MPI describes it: the datatype's origin.
    fn origin(&mut self) -> *mut c_void {
        self.words
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_offset(self.origin)
            .cast()
    }
}

impl Reducer {
    /// `a op b` elementwise into `b`, where `a` comes from a lower rank than `b`
    /// (the order MPI defines for operations that are not commutative). Both are
    /// `n` packed elements.
    pub(crate) fn apply(&self, n: usize, a: &[u8], b: &mut Vec<u8>) -> R {
        if a.len() != b.len() {
            return Err(fail(
                code::COUNT,
                "ranks gave different counts to a reduction",
            ));
        }
        match self {
            Reducer::Builtin(op, basic) => {
                // every predefined reduction is commutative: b = b op a
                rma_ops::apply_bytes(*basic, *op, b, a);
                Ok(())
            }
            Reducer::User { op, handle, dt } => {
                let mut inv = Laid::new(dt, n)?;
                let mut inout = Laid::new(dt, n)?;
                let (pi, po) = (inv.origin(), inout.origin());
                // SAFETY: both scratch buffers span n instances of dt from their origin
                // (Laid::new sized them by the same span rule pack and unpack use).
                unsafe {
                    unpack(a, pi, n, dt)?;
                    unpack(b, po, n, dt)?;
                }
                let mut len = c_int::try_from(n)
                    .map_err(|_| fail(code::COUNT, "a reduction of more than INT_MAX elements"))?;
                let mut h = *handle;
                // SAFETY: the program registered `f` as an MPI_User_function; it is
                // handed two buffers of `len` instances of the datatype, laid out as
                // MPI describes, and pointers to two live ints.
                unsafe { (op.f)(pi, po, &mut len, &mut h) };
                // SAFETY: as above: the result is n instances of dt at po.
                *b = unsafe { pack(po, n, dt)? };
                Ok(())
            }
        }
    }

    /// Combines every rank's contribution, given in rank order:
    /// `parts[0] op parts[1] op ... op parts[last]`.
    pub(crate) fn fold(&self, n: usize, parts: &[Vec<u8>]) -> R<Vec<u8>> {
        let Some((last, rest)) = parts.split_last() else {
            return Err(fail(code::INTERN, "a reduction over no ranks"));
        };
        let mut acc = last.clone();
        for p in rest.iter().rev() {
            self.apply(n, p, &mut acc)?;
        }
        Ok(acc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create(f: Option<UserFn>, commute: c_int, op: *mut c_int) -> c_int {
    call("MPI_Op_create", On::World, |st| {
        let f = f.ok_or_else(|| fail(code::ARG, "the user function is NULL"))?;
        if op.is_null() {
            return Err(fail(code::ARG, "op is NULL"));
        }
        let h = st.ops.insert(
            FIRST_USER,
            UserOp {
                f,
                commute: commute != 0,
            },
        );
        // SAFETY: MPI's contract: `op` points to an operation handle (checked non-null).
        unsafe { out(op, h, "op") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_free(op: *mut c_int) -> c_int {
    call("MPI_Op_free", On::World, |st| {
        // SAFETY: MPI's contract: `op` points to an operation handle.
        let h = unsafe { inp(op, "op")? };
        if (1..=LAST_PREDEFINED).contains(&h) {
            return Err(fail(code::OP, "a predefined operation cannot be freed"));
        }
        st.ops
            .remove(h)
            .ok_or_else(|| fail(code::OP, format!("{h} is not an operation")))?;
        // SAFETY: as above.
        unsafe { out(op, 0, "op") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_commutative(op: c_int, commute: *mut c_int) -> c_int {
    call("MPI_Op_commutative", On::World, |st| {
        let c = if (1..=LAST_PREDEFINED).contains(&op) {
            true
        } else {
            st.ops
                .get(op)
                .ok_or_else(|| fail(code::OP, format!("{op} is not an operation")))?
                .commute
        };
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(commute, c_int::from(c), "commute") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
) -> c_int {
    call("MPI_Reduce_local", On::World, |st| {
        let red = st.reducer(op, dt)?;
        let d = st.dt(dt)?;
        let n = count(n, "count")?;
        // SAFETY: MPI's contract: both buffers hold n elements of dt.
        let (a, mut b) = unsafe { (pack(inbuf, n, &d)?, pack(inoutbuf, n, &d)?) };
        red.apply(n, &a, &mut b)?;
        // SAFETY: as above.
        unsafe { unpack(&b, inoutbuf, n, &d) }
    })
}
