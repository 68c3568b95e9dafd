use std::fmt;

/// The rank of a process in a window's group, or [`Rank::NULL`].
///
/// A rank is checked against the group size above the transport: a rank outside the
/// group is an [`Error::InvalidRank`](crate::Error::InvalidRank) (class RANK) even when
/// no epoch is open.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rank(u32);

impl Rank {
    /// The null rank: a valid target for every call, which then does nothing
    /// (MPI_PROC_NULL's role).
    #[doc(alias = "MPI_PROC_NULL")]
    pub const NULL: Rank = Rank(u32::MAX);

    /// The rank with this index.
    ///
    /// `u32::MAX` is reserved for [`Rank::NULL`], so `Rank::new(u32::MAX)` is the null
    /// rank.
    pub const fn new(index: u32) -> Rank {
        Rank(index)
    }

    /// The rank's index, or `None` for the null rank.
    pub const fn index(self) -> Option<usize> {
        if self.is_null() {
            None
        } else {
            Some(self.0 as usize)
        }
    }

    /// Whether this is [`Rank::NULL`].
    pub const fn is_null(self) -> bool {
        self.0 == u32::MAX
    }

    /// The raw value (`u32::MAX` for the null rank).
    pub const fn raw(self) -> u32 {
        self.0
    }
}

impl From<u32> for Rank {
    fn from(index: u32) -> Rank {
        Rank(index)
    }
}

/// A rank from a `usize` index (what `World::rank()` and `World::size()` give), so
/// calls take `(me + 1) % p` as it is. An index too large for a rank becomes one no
/// window has (refused with class RANK), never the null rank.
impl From<usize> for Rank {
    fn from(index: usize) -> Rank {
        Rank(u32::try_from(index).map_or(u32::MAX - 1, |i| i.min(u32::MAX - 1)))
    }
}

impl fmt::Debug for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_null() {
            f.write_str("Rank::NULL")
        } else {
            write!(f, "Rank({})", self.0)
        }
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_null() {
            f.write_str("null rank")
        } else {
            write!(f, "rank {}", self.0)
        }
    }
}

/// A target displacement in units of the target window's `disp_unit` (MPI_Aint's
/// role). Signed, as in MPI, so that a negative displacement is reported as an error
/// (class DISP) rather than wrapped.
#[doc(alias = "MPI_Aint")]
pub type Disp = i64;

/// A count of datatype entries. Unsigned: a negative count cannot be written.
pub type Count = usize;
