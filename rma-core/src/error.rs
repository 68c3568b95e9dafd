use crate::{BasicType, Op, Rank, RmaCall};
use std::fmt;

/// The result type of every fallible rma call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// MPI error classes, one per kind of mistake or failure (MPI_ERR_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "MPI_Error_class")]
pub enum ErrorClass {
    /// MPI_ERR_RANK: a rank outside the group.
    #[doc(alias = "MPI_ERR_RANK")]
    Rank,
    /// MPI_ERR_DISP: a negative or overflowing displacement, a bad disp_unit, or a
    /// displacement not aligned for the basic type of an atomic call.
    #[doc(alias = "MPI_ERR_DISP")]
    Disp,
    /// MPI_ERR_COUNT: a count whose byte size overflows.
    #[doc(alias = "MPI_ERR_COUNT")]
    Count,
    /// MPI_ERR_TYPE: an invalid, uncommitted or mismatched datatype.
    #[doc(alias = "MPI_ERR_TYPE")]
    Type,
    /// MPI_ERR_OP: an op not allowed for the call or the type.
    #[doc(alias = "MPI_ERR_OP")]
    Op,
    /// MPI_ERR_BUFFER: a buffer too small for its count and datatype.
    #[doc(alias = "MPI_ERR_BUFFER")]
    Buffer,
    /// MPI_ERR_RMA_RANGE: the target region does not fit in the window.
    #[doc(alias = "MPI_ERR_RMA_RANGE")]
    RmaRange,
    /// MPI_ERR_RMA_SYNC: a call in the wrong epoch state.
    #[doc(alias = "MPI_ERR_RMA_SYNC")]
    RmaSync,
    /// MPI_ERR_RMA_FLAVOR: the call does not fit the window's flavor or transport.
    #[doc(alias = "MPI_ERR_RMA_FLAVOR")]
    RmaFlavor,
    /// MPI_ERR_RMA_CONFLICT: conflicting accesses that were detected.
    #[doc(alias = "MPI_ERR_RMA_CONFLICT")]
    RmaConflict,
    /// MPI_ERR_RMA_SHARED: memory that cannot be shared by load and store (a shared
    /// window over ranks on more than one node).
    #[doc(alias = "MPI_ERR_RMA_SHARED")]
    RmaShared,
    /// MPI_ERR_RMA_ATTACH: memory that cannot be attached to (or detached from) a
    /// dynamic window.
    #[doc(alias = "MPI_ERR_RMA_ATTACH")]
    RmaAttach,
    /// MPI_ERR_ASSERT: an assertion flag not valid for the call.
    #[doc(alias = "MPI_ERR_ASSERT")]
    Assert,
    /// MPI_ERR_INFO_VALUE / MPI_ERR_INFO_KEY: a bad info value.
    #[doc(alias("MPI_ERR_INFO_VALUE", "MPI_ERR_INFO_KEY"))]
    Info,
    /// MPI_ERR_ARG: another invalid argument.
    #[doc(alias = "MPI_ERR_ARG")]
    Arg,
    /// MPI_ERR_WIN: a freed or foreign window.
    #[doc(alias = "MPI_ERR_WIN")]
    Win,
    /// MPI_ERR_NO_MEM: memory or shared segments could not be had.
    #[doc(alias = "MPI_ERR_NO_MEM")]
    NoMem,
    /// MPI_ERR_PROC_FAILED (ULFM): a peer died or stopped responding.
    #[doc(alias = "MPI_ERR_PROC_FAILED")]
    ProcFailed,
    /// MPI_ERR_INTERN: an rma bug or a corrupt shared structure.
    #[doc(alias = "MPI_ERR_INTERN")]
    Intern,
    /// MPI_ERR_OTHER: an operating-system error.
    #[doc(alias = "MPI_ERR_OTHER")]
    Other,
}

impl ErrorClass {
    /// The MPI name of the class (`"MPI_ERR_RMA_SYNC"`).
    pub const fn mpi_name(self) -> &'static str {
        match self {
            ErrorClass::Rank => "MPI_ERR_RANK",
            ErrorClass::Disp => "MPI_ERR_DISP",
            ErrorClass::Count => "MPI_ERR_COUNT",
            ErrorClass::Type => "MPI_ERR_TYPE",
            ErrorClass::Op => "MPI_ERR_OP",
            ErrorClass::Buffer => "MPI_ERR_BUFFER",
            ErrorClass::RmaRange => "MPI_ERR_RMA_RANGE",
            ErrorClass::RmaSync => "MPI_ERR_RMA_SYNC",
            ErrorClass::RmaFlavor => "MPI_ERR_RMA_FLAVOR",
            ErrorClass::RmaConflict => "MPI_ERR_RMA_CONFLICT",
            ErrorClass::RmaShared => "MPI_ERR_RMA_SHARED",
            ErrorClass::RmaAttach => "MPI_ERR_RMA_ATTACH",
            ErrorClass::Assert => "MPI_ERR_ASSERT",
            ErrorClass::Info => "MPI_ERR_INFO_VALUE",
            ErrorClass::Arg => "MPI_ERR_ARG",
            ErrorClass::Win => "MPI_ERR_WIN",
            ErrorClass::NoMem => "MPI_ERR_NO_MEM",
            ErrorClass::ProcFailed => "MPI_ERR_PROC_FAILED",
            ErrorClass::Intern => "MPI_ERR_INTERN",
            ErrorClass::Other => "MPI_ERR_OTHER",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mpi_name())
    }
}

/// Every error an rma call can return. Each variant names its MPI error class through
/// [`Error::class`] and carries what is needed to fix the call. A call that returns an
/// error has changed nothing, locally or at any target.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[doc(alias = "MPI_Error_string")]
pub enum Error {
    /// A rank outside the window's group.
    #[error("{rank} is not in the window's group of {size} ranks; a target must be a rank from 0 to {} (or Rank::NULL, for no target)", .size.saturating_sub(1))]
    InvalidRank {
        /// The rank given.
        rank: Rank,
        /// The group size.
        size: usize,
    },
    /// A negative target displacement.
    #[error("target displacement {disp} is negative; a displacement counts disp_unit units from the start of the target window and must be 0 or more")]
    NegativeDisp {
        /// The displacement given.
        disp: i64,
    },
    /// A displacement whose byte offset overflows.
    #[error("target displacement {disp} x disp_unit {disp_unit} overflows the address space as a byte offset; use a displacement that lies inside the target window")]
    DispOverflow {
        /// The displacement given.
        disp: i64,
        /// The target window's displacement unit.
        disp_unit: usize,
    },
    /// A disp_unit of zero at window creation.
    #[error("disp_unit must be positive (1 for bytes, the element size for typed windows), got {disp_unit}")]
    InvalidDispUnit {
        /// The unit given.
        disp_unit: usize,
    },
    /// A target element not aligned for an element-wise atomic call. MPI leaves
    /// alignment to the user; rma refuses instead (its atomics need aligned words),
    /// while put and get take any displacement.
    #[error("{call} on {basic} needs each target element {align}-byte aligned, but target displacement {disp} (x disp_unit {disp_unit}) puts one at byte offset {offset} of the window, which is not; use a displacement whose byte offset is a multiple of {align} (put and get have no such rule)")]
    Misaligned {
        /// The call.
        call: &'static str,
        /// The basic type.
        basic: BasicType,
        /// The required alignment.
        align: usize,
        /// The target displacement given (in units of the target's disp_unit).
        disp: i64,
        /// The target window's displacement unit.
        disp_unit: usize,
        /// The offending element's byte offset in the target window.
        offset: usize,
    },
    /// A count whose byte size or extent overflows.
    #[error("count {count} of {what} overflows the address space (its byte size or extent exceeds isize::MAX); use a smaller count")]
    CountOverflow {
        /// The count given.
        count: usize,
        /// What was counted.
        what: &'static str,
    },
    /// Ranks of a collective passed different counts where it needs the same.
    #[error("{call}: rank 0 passes {first} bytes and rank {rank} passes {theirs}; every rank passes the same count")]
    CountMismatch {
        /// The collective.
        call: &'static str,
        /// Rank 0's count, in bytes.
        first: u64,
        /// The first rank whose count differs.
        rank: usize,
        /// Its count, in bytes.
        theirs: u64,
    },
    /// A buffer's datatype reaches below the buffer's first byte (a negative lower
    /// bound, e.g. a vector with a negative stride): a layout over a slice may only
    /// touch bytes from its start on.
    #[error("the {which} buffer's count and datatype reach {below} bytes before the buffer's first byte (its lowest byte offset is -{below}); a layout over a slice must start at offset 0 or after: start it at the slice's last element instead, or use a positive stride")]
    BufferUnderrun {
        /// Which buffer ("origin", "result", "compare").
        which: &'static str,
        /// How many bytes before the start the layout's lowest byte lies.
        below: usize,
    },
    /// The origin (or result) buffer is shorter than its count and datatype need.
    #[error("the {which} buffer holds {got} bytes but {needed} are needed for its count and datatype; pass a buffer of at least {needed} bytes, or a smaller count")]
    BufferTooSmall {
        /// Which buffer ("origin", "result", "compare").
        which: &'static str,
        /// Bytes the layout spans.
        needed: usize,
        /// Bytes the buffer has.
        got: usize,
    },
    /// An invalid datatype (bad constructor arguments, freed, or uncommitted).
    #[error("invalid datatype: {reason}")]
    InvalidDatatype {
        /// What is wrong.
        reason: String,
    },
    /// A datatype with more than one basic type where a call needs exactly one.
    #[error("{call} needs a datatype of one basic type, but the {which} datatype mixes several; build it from a single basic type")]
    MixedBasicTypes {
        /// The call.
        call: &'static str,
        /// Which argument ("origin", "target", "result").
        which: &'static str,
    },
    /// Origin, target and result are built from different basic types.
    #[error("{call}: the {which} is built from {found} but the target from {expected}; origin, target and result must share one basic type: use {expected} for the {which} too")]
    BasicTypeMismatch {
        /// The call.
        call: &'static str,
        /// Which argument differs.
        which: &'static str,
        /// The target's basic type.
        expected: BasicType,
        /// The other argument's basic type.
        found: BasicType,
    },
    /// Two (count, datatype) pairs whose type signatures differ.
    #[error("{call}: the type signatures differ ({origin} vs target: {target}); both sides must hold the same sequence of basic types")]
    SignatureMismatch {
        /// The call.
        call: &'static str,
        /// The other side, named, and its signature (`"origin: 3 x i64"`, or
        /// `"result: ..."` for the accumulate family).
        origin: String,
        /// Description of the target side's signature.
        target: String,
    },
    /// A target datatype whose entries overlap.
    #[error("the target datatype has overlapping entries (byte {offset} past the target displacement is written twice); a datatype that writes at the target must cover each byte at most once")]
    OverlappingTarget {
        /// A byte offset (relative to the target displacement) covered twice.
        offset: isize,
    },
    /// A type this call does not accept (e.g. floating point in compare_and_swap).
    #[error("{call} does not accept {found}: {reason}")]
    TypeNotAllowed {
        /// The call.
        call: &'static str,
        /// What was given.
        found: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// An op not defined on a basic type.
    #[error("{op} is not defined on {basic}; {op} takes {} only", .op.domain())]
    OpNotForType {
        /// The op.
        op: Op,
        /// The basic type.
        basic: BasicType,
    },
    /// An op this call does not accept (NO_OP in accumulate).
    #[error("{op} is not allowed in {call}; {}", op_call_hint(*.op, *.call))]
    OpNotForCall {
        /// The op.
        op: Op,
        /// The call.
        call: RmaCall,
    },
    /// The target region does not fit in the target's window.
    #[error("target bytes [{start}, {end}) do not fit in {rank}'s window of {window_len} bytes; every byte accessed must lie in [0, {window_len}): use a smaller displacement or count")]
    OutOfWindow {
        /// The target rank.
        rank: Rank,
        /// First byte of the region (may be negative for a negative lower bound).
        start: i128,
        /// One past the last byte of the region.
        end: i128,
        /// The window's size in bytes.
        window_len: usize,
    },
    /// Target bytes of a dynamic window that lie outside every region the target
    /// attached.
    #[error("target bytes [{start:#x}, {end:#x}) (addresses) of {rank}'s dynamic window are not inside one region it attached; use the address a region's owner got from attach (Region::disp) and stay inside the region")]
    NotAttached {
        /// The target rank.
        rank: Rank,
        /// First byte's address.
        start: i128,
        /// One past the last byte.
        end: i128,
    },
    /// Memory that cannot be attached to, or detached from, a dynamic window.
    #[error("{reason}")]
    Attach {
        /// Why, and what to do instead.
        reason: String,
    },
    /// A call in the wrong epoch state.
    #[error("{call}: {reason}")]
    Sync {
        /// The call.
        call: &'static str,
        /// Which epoch state it met and which it needs.
        reason: String,
    },
    /// The call does not fit this window's flavor or transport.
    #[error("{reason}")]
    Flavor {
        /// Why, and what to do instead.
        reason: String,
    },
    /// A shared window whose ranks cannot all reach each other's memory by load and
    /// store.
    #[error("{reason}")]
    NotShareable {
        /// Why, and what to do instead.
        reason: String,
    },
    /// Conflicting accesses that were detected.
    #[error("conflicting accesses: {reason}")]
    Conflict {
        /// What conflicts.
        reason: String,
    },
    /// An assertion flag the call does not accept.
    #[error("{call} was given assertion {:?} (bits {bits:#x}) but accepts only {:?} (bits {allowed:#x}); drop {:?}", crate::Assert::from_bits(*.bits), crate::Assert::from_bits(*.allowed), crate::Assert::from_bits(*.bits & !*.allowed))]
    InvalidAssert {
        /// The call.
        call: &'static str,
        /// The bits given.
        bits: u32,
        /// The bits it accepts.
        allowed: u32,
    },
    /// A bad info value.
    #[error("info key {key:?} has value {value:?}, which is refused: {reason}")]
    InvalidInfo {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What is accepted.
        reason: String,
    },
    /// An unknown transport name.
    #[error("unknown transport {name:?}; available: {available}")]
    UnknownTransport {
        /// The name given.
        name: String,
        /// The names available.
        available: String,
    },
    /// Another invalid argument.
    #[error("invalid argument: {reason}")]
    InvalidArgument {
        /// What is wrong.
        reason: String,
    },
    /// A freed or foreign window.
    #[error("invalid window: {reason}")]
    InvalidWindow {
        /// What is wrong.
        reason: String,
    },
    /// Memory or a shared segment could not be had.
    #[error("out of memory: {reason}")]
    NoMem {
        /// What was asked for.
        reason: String,
    },
    /// A peer died or did not answer in time.
    #[error("{rank} failed: {reason}")]
    ProcFailed {
        /// The rank lost.
        rank: Rank,
        /// How it was noticed.
        reason: String,
    },
    /// A wait on shared state that another rank holds made no progress within the
    /// stall bound ([`crate::stall_limit`], `RMA_STALL_MS`): its holder is alive but
    /// stopped (SIGSTOP, a debugger), or the shared word is corrupt. Class INTERN.
    #[error("stalled: {what} made no progress for {waited_ms} ms (a holder stopped, or corrupt shared state; RMA_STALL_MS sets the bound)")]
    Stalled {
        /// What was waited for, and on whom.
        what: String,
        /// How long.
        waited_ms: u64,
    },
    /// A corrupt shared structure or an rma bug.
    #[error("internal error: {reason}")]
    Internal {
        /// What was found.
        reason: String,
    },
    /// An operating-system error.
    #[error("{context}: {source}")]
    Os {
        /// What rma was doing.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What would work instead of `op` in `call`, for [`Error::OpNotForCall`].
fn op_call_hint(op: Op, call: RmaCall) -> &'static str {
    match (call, op) {
        (RmaCall::CompareAndSwap, _) => "compare_and_swap takes no op",
        (RmaCall::Allreduce, _) => {
            "a reduction combines values, so MPI_REPLACE and MPI_NO_OP are not reductions"
        }
        (_, Op::NoOp) => {
            "MPI_NO_OP is only for get_accumulate and fetch_and_op (to read atomically); use another op"
        }
        _ => "use an op the call accepts",
    }
}

impl Error {
    /// The MPI error class of this error.
    #[doc(alias = "MPI_Error_class")]
    pub fn class(&self) -> ErrorClass {
        use Error::*;
        match self {
            InvalidRank { .. } => ErrorClass::Rank,
            NegativeDisp { .. }
            | DispOverflow { .. }
            | InvalidDispUnit { .. }
            | Misaligned { .. } => ErrorClass::Disp,
            CountOverflow { .. } | CountMismatch { .. } => ErrorClass::Count,
            BufferTooSmall { .. } | BufferUnderrun { .. } => ErrorClass::Buffer,
            InvalidDatatype { .. }
            | MixedBasicTypes { .. }
            | BasicTypeMismatch { .. }
            | SignatureMismatch { .. }
            | OverlappingTarget { .. }
            | TypeNotAllowed { .. } => ErrorClass::Type,
            OpNotForType { .. } | OpNotForCall { .. } => ErrorClass::Op,
            OutOfWindow { .. } | NotAttached { .. } => ErrorClass::RmaRange,
            Attach { .. } => ErrorClass::RmaAttach,
            Sync { .. } => ErrorClass::RmaSync,
            Flavor { .. } => ErrorClass::RmaFlavor,
            Conflict { .. } => ErrorClass::RmaConflict,
            NotShareable { .. } => ErrorClass::RmaShared,
            InvalidAssert { .. } => ErrorClass::Assert,
            InvalidInfo { .. } => ErrorClass::Info,
            UnknownTransport { .. } | InvalidArgument { .. } => ErrorClass::Arg,
            InvalidWindow { .. } => ErrorClass::Win,
            NoMem { .. } => ErrorClass::NoMem,
            ProcFailed { .. } => ErrorClass::ProcFailed,
            Internal { .. } | Stalled { .. } => ErrorClass::Intern,
            Os { .. } => ErrorClass::Other,
        }
    }

    /// Shorthand for an [`Error::Sync`].
    pub fn sync(call: &'static str, reason: impl Into<String>) -> Error {
        Error::Sync {
            call,
            reason: reason.into(),
        }
    }

    /// Shorthand for an [`Error::InvalidDatatype`].
    pub fn datatype(reason: impl Into<String>) -> Error {
        Error::InvalidDatatype {
            reason: reason.into(),
        }
    }

    /// Shorthand for an [`Error::InvalidArgument`].
    pub fn arg(reason: impl Into<String>) -> Error {
        Error::InvalidArgument {
            reason: reason.into(),
        }
    }

    /// Shorthand for an [`Error::Os`] from the last OS error.
    pub fn last_os(context: impl Into<String>) -> Error {
        Error::Os {
            context: context.into(),
            source: std::io::Error::last_os_error(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_lower_case_and_carry_context() {
        let e = Error::OutOfWindow {
            rank: Rank::new(2),
            start: 96,
            end: 104,
            window_len: 100,
        };
        assert_eq!(e.class(), ErrorClass::RmaRange);
        let msg = e.to_string();
        assert!(msg.contains("rank 2") && msg.contains("100"), "{msg}");
        assert!(!msg.ends_with('.'));
        let e = Error::OpNotForType {
            op: Op::Max,
            basic: BasicType::C64,
        };
        assert_eq!(
            e.to_string(),
            "MPI_MAX is not defined on complex_f64; MPI_MAX takes integer, address-sized and floating-point types only"
        );
        assert_eq!(e.class().mpi_name(), "MPI_ERR_OP");
    }

    /// Each message says what was wrong, with the values, and what would be right
    /// (issue 20): these pin the parts a vaguer text would lose.
    fn says(e: &Error, class: ErrorClass, parts: &[&str]) {
        assert_eq!(e.class(), class, "{e}");
        let msg = e.to_string();
        for part in parts {
            assert!(msg.contains(part), "{part:?} missing from: {msg}");
        }
    }

    #[test]
    fn messages_say_what_was_wrong_and_what_would_be_right() {
        let e = Error::OutOfWindow {
            rank: Rank::new(2),
            start: 96,
            end: 104,
            window_len: 100,
        };
        says(
            &e,
            ErrorClass::RmaRange,
            &[
                "[96, 104)",
                "do not fit",
                "rank 2's window of 100 bytes",
                "[0, 100)",
            ],
        );
        let e = Error::InvalidRank {
            rank: Rank::new(7),
            size: 4,
        };
        says(
            &e,
            ErrorClass::Rank,
            &["rank 7", "group of 4 ranks", "from 0 to 3"],
        );
        says(
            &Error::NegativeDisp { disp: -3 },
            ErrorClass::Disp,
            &["-3", "0 or more"],
        );
        let e = Error::OpNotForCall {
            op: Op::NoOp,
            call: RmaCall::Accumulate,
        };
        says(
            &e,
            ErrorClass::Op,
            &[
                "MPI_NO_OP is not allowed in accumulate",
                "get_accumulate and fetch_and_op",
            ],
        );
        let e = Error::BufferTooSmall {
            which: "origin",
            needed: 24,
            got: 16,
        };
        says(
            &e,
            ErrorClass::Buffer,
            &["holds 16 bytes but 24 are needed", "at least 24"],
        );
        let e = Error::InvalidAssert {
            call: "fence",
            bits: 1,
            allowed: 30,
        };
        says(
            &e,
            ErrorClass::Assert,
            &[
                "given assertion NOCHECK",
                "accepts only NOSTORE | NOPUT",
                "drop NOCHECK",
            ],
        );
        let e = Error::InvalidInfo {
            key: "no_locks".into(),
            value: "maybe".into(),
            reason: "expected \"true\" or \"false\"".into(),
        };
        says(
            &e,
            ErrorClass::Info,
            &["\"no_locks\"", "\"maybe\"", "refused", "\"true\""],
        );
        let e = Error::BasicTypeMismatch {
            call: "accumulate",
            which: "origin",
            expected: BasicType::I64,
            found: BasicType::F64,
        };
        says(
            &e,
            ErrorClass::Type,
            &["origin is built from f64", "use i64 for the origin"],
        );
    }
}
