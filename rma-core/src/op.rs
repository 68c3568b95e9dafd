use std::fmt;

/// A predefined reduction operation usable in RMA calls.
///
/// Which ops a call accepts and which types an op applies to is the business of
/// `rma-ops` (`Op::check`); this is only the vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
#[doc(alias = "MPI_Op")]
pub enum Op {
    /// Sum (MPI_SUM).
    #[doc(alias = "MPI_SUM")]
    Sum,
    /// Product (MPI_PROD).
    #[doc(alias = "MPI_PROD")]
    Prod,
    /// Maximum (MPI_MAX).
    #[doc(alias = "MPI_MAX")]
    Max,
    /// Minimum (MPI_MIN).
    #[doc(alias = "MPI_MIN")]
    Min,
    /// Logical and (MPI_LAND).
    #[doc(alias = "MPI_LAND")]
    Land,
    /// Logical or (MPI_LOR).
    #[doc(alias = "MPI_LOR")]
    Lor,
    /// Logical exclusive or (MPI_LXOR).
    #[doc(alias = "MPI_LXOR")]
    Lxor,
    /// Bit-wise and (MPI_BAND).
    #[doc(alias = "MPI_BAND")]
    Band,
    /// Bit-wise or (MPI_BOR).
    #[doc(alias = "MPI_BOR")]
    Bor,
    /// Bit-wise exclusive or (MPI_BXOR).
    #[doc(alias = "MPI_BXOR")]
    Bxor,
    /// Maximum value and its index, on pair types (MPI_MAXLOC).
    #[doc(alias = "MPI_MAXLOC")]
    MaxLoc,
    /// Minimum value and its index, on pair types (MPI_MINLOC).
    #[doc(alias = "MPI_MINLOC")]
    MinLoc,
    /// Replace the target value with the origin value (MPI_REPLACE).
    #[doc(alias = "MPI_REPLACE")]
    Replace,
    /// Leave the target unchanged; fetch it atomically (MPI_NO_OP).
    #[doc(alias = "MPI_NO_OP")]
    NoOp,
}

impl Op {
    /// Every op, in declaration order.
    pub const ALL: [Op; 14] = [
        Op::Sum,
        Op::Prod,
        Op::Max,
        Op::Min,
        Op::Land,
        Op::Lor,
        Op::Lxor,
        Op::Band,
        Op::Bor,
        Op::Bxor,
        Op::MaxLoc,
        Op::MinLoc,
        Op::Replace,
        Op::NoOp,
    ];

    /// The MPI name (`"MPI_SUM"`).
    pub const fn mpi_name(self) -> &'static str {
        match self {
            Op::Sum => "MPI_SUM",
            Op::Prod => "MPI_PROD",
            Op::Max => "MPI_MAX",
            Op::Min => "MPI_MIN",
            Op::Land => "MPI_LAND",
            Op::Lor => "MPI_LOR",
            Op::Lxor => "MPI_LXOR",
            Op::Band => "MPI_BAND",
            Op::Bor => "MPI_BOR",
            Op::Bxor => "MPI_BXOR",
            Op::MaxLoc => "MPI_MAXLOC",
            Op::MinLoc => "MPI_MINLOC",
            Op::Replace => "MPI_REPLACE",
            Op::NoOp => "MPI_NO_OP",
        }
    }

    /// The types the op is defined on, in words, for messages (docs/semantics.md rule 2;
    /// `rma_ops::op_defined_on` is the rule, and a test there checks this agrees).
    pub const fn domain(self) -> &'static str {
        match self {
            Op::Max | Op::Min => "integer, address-sized and floating-point types",
            Op::Sum | Op::Prod => "integer, address-sized, floating-point and complex types",
            Op::Land | Op::Lor | Op::Lxor => "integer and bool types",
            Op::Band | Op::Bor | Op::Bxor => "integer, address-sized and byte types",
            Op::MaxLoc | Op::MinLoc => "(value, index) pair types",
            Op::Replace | Op::NoOp => "every type",
        }
    }

    /// The op with this `#[repr(u8)]` discriminant (for decoding wire headers).
    pub fn from_u8(raw: u8) -> Option<Op> {
        Op::ALL.get(raw as usize).copied()
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mpi_name())
    }
}

/// The accumulate-family call an op is used in; the accepted ops differ (NO_OP is
/// allowed in get_accumulate and fetch_and_op only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RmaCall {
    /// accumulate / raccumulate.
    Accumulate,
    /// get_accumulate / rget_accumulate.
    GetAccumulate,
    /// fetch_and_op.
    FetchAndOp,
    /// compare_and_swap (no op argument; used for type checks).
    CompareAndSwap,
    /// A world's all-reduce (not an RMA call; its ops are MPI_Allreduce's: neither
    /// MPI_REPLACE nor MPI_NO_OP).
    Allreduce,
}

impl RmaCall {
    /// The call's name in messages.
    pub const fn name(self) -> &'static str {
        match self {
            RmaCall::Accumulate => "accumulate",
            RmaCall::GetAccumulate => "get_accumulate",
            RmaCall::FetchAndOp => "fetch_and_op",
            RmaCall::CompareAndSwap => "compare_and_swap",
            RmaCall::Allreduce => "allreduce",
        }
    }
}

impl fmt::Display for RmaCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
