//! Known defects of the MPI libraries rma-mpi runs on, and how each is kept away
//! from rma's users. Each was found by rma-mpi's smoke run (`rma-mpi/tests/smoke`) or
//! the conformance suite and is described with its reproduction in rma-win's guide
//! (`rma_win::guide::mpi_defects`).
//! [`Guards`] decides, per process, what is refused and what is issued another way;
//! rma-mpi applies its decisions where it issues the calls.
//!
//! | defect | where | handling |
//! |---|---|---|
//! | 8-byte MPI_Compare_and_swap segfaults the target | Open MPI 4, osc/rdma | refused (RMA_FLAVOR) |
//! | windows on different communicators of one node get each other's accumulates, or cannot be made (MPI_ERR_WIN) | Open MPI 4, osc/rdma | windows on worlds split from the world refused (RMA_FLAVOR) |
//! | SUM on MPI_C_FLOAT_COMPLEX gives garbage (accumulate, get_accumulate, fetch_and_op) | Open MPI 4, osc/rdma, MPI_Win_create windows | refused (RMA_FLAVOR) |
//! | counts > 1 of DOUBLE_INT, LONG_INT, SHORT_INT handled as packed `count x size` bytes: last elements dropped, results misplaced, heap corrupted | Open MPI 4, osc/rdma, MPI_Win_create windows | one element per MPI call |
//! | MPI_Fetch_and_op wrong for every type but 32/64-bit integers | Open MPI 4, osc/ucx | MPI_Rget_accumulate of one element instead |
//! | MPI_Compare_and_swap on 1- and 2-byte types returns the origin, target unchanged | Open MPI 4, osc/ucx | refused (RMA_FLAVOR) |
//! | MAXLOC / MINLOC on DOUBLE_INT, LONG_INT, SHORT_INT, LONG_DOUBLE_INT calls MPI_Abort ("currently unsupported") | Open MPI 4, osc/pt2pt | refused (RMA_FLAVOR) |
//! | MAX / MIN on unsigned integers compare them as signed (max(200u8, 7) = 7), in accumulate, get_accumulate and fetch_and_op | MPICH 4.0 | refused (RMA_FLAVOR) |
//!
//! Whether a component "may be in use" follows Open MPI's `osc` selection (read
//! through MPI_T, so `--mca osc ...`, `OMPI_MCA_osc` and parameter files all count;
//! Debian's file excludes ucx and pt2pt). The workarounds that change how a call is
//! issued keep MPI's semantics (element-wise atomicity, the same datatype, so the same
//! atomicity domain) and apply to every Open MPI version; the refusals apply to Open
//! MPI 4, where they were observed, and `RMA_MPI_NO_GUARDS=1` lifts them for a library
//! that has been fixed.

use crate::ffi::Library;
use rma_core::{BasicType, Error, Flavor, Op};

/// Environment variable lifting the refusals (`RMA_MPI_NO_GUARDS=1`).
pub const ENV_NO_GUARDS: &str = "RMA_MPI_NO_GUARDS";

/// What this process's library needs avoided. The default avoids nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Guards {
    /// Open MPI may run windows on osc/rdma.
    rdma: bool,
    /// Open MPI may run windows on osc/ucx.
    ucx: bool,
    /// Open MPI may run windows on osc/pt2pt.
    pt2pt: bool,
    /// The library is one where the refusals below were observed (Open MPI 4) and
    /// `RMA_MPI_NO_GUARDS` is unset.
    refuse: bool,
    /// MPICH 4.0, whose MAX and MIN treat unsigned integers as signed, and
    /// `RMA_MPI_NO_GUARDS` is unset.
    mpich_signed_max: bool,
}

impl Guards {
    /// The guards for `library` of version string `version` whose one-sided component
    /// selection (Open MPI's `osc` variable) is `osc`.
    pub fn detect(library: Library, version: &str, osc: Option<&str>) -> Guards {
        let open_mpi = library == Library::OpenMpi;
        let lifted = std::env::var(ENV_NO_GUARDS).is_ok_and(|v| v.trim() == "1");
        Guards {
            rdma: open_mpi && may_select(osc, "rdma"),
            ucx: open_mpi && may_select(osc, "ucx"),
            pt2pt: open_mpi && may_select(osc, "pt2pt"),
            refuse: open_mpi && version.starts_with("Open MPI v4.") && !lifted,
            mpich_signed_max: library == Library::Mpich
                && version
                    .split("Version:")
                    .nth(1)
                    .is_some_and(|v| v.trim_start().starts_with("4.0"))
                && !lifted,
        }
    }

    /// Whether 8-byte compare_and_swap is refused.
    pub fn cas64_blocked(&self) -> bool {
        self.refuse && self.rdma
    }

    /// Whether windows on worlds split from the world are refused (osc/rdma mixes up
    /// windows of different communicators).
    pub fn rdma_comms_blocked(&self) -> bool {
        self.refuse && self.rdma
    }

    /// The refusal of compare_and_swap on `basic` in a window of `flavor`, if any.
    /// Shared windows are never refused: Open MPI serves them with osc/sm alone (neither
    /// osc/rdma nor osc/ucx takes the shared flavor).
    pub fn check_cas(&self, basic: BasicType, flavor: Flavor) -> Result<(), Error> {
        let size = basic.size();
        let why = if flavor == Flavor::Shared {
            return Ok(());
        } else if size == 8 && self.cas64_blocked() {
            "crashes Open MPI 4's osc/rdma component (open-mpi/ompi#11349); run with \
             `--mca osc sm` (allocated windows) or `--mca osc ucx`"
        } else if size <= 2 && self.refuse && self.ucx {
            "returns the origin value and leaves the target unchanged in Open MPI 4's \
             osc/ucx component; run with `--mca osc sm` or `--mca osc rdma`"
        } else {
            return Ok(());
        };
        Err(Error::Flavor {
            reason: format!(
                "compare_and_swap on {basic} ({size} bytes) {why}, or set {ENV_NO_GUARDS}=1 \
                 if this library is fixed"
            ),
        })
    }

    /// The refusal of an accumulate-family call with `op` on `basic` in a window of
    /// `flavor`, if any.
    #[inline]
    pub fn check_accumulate(&self, basic: BasicType, op: Op, flavor: Flavor) -> Result<(), Error> {
        if !self.refuse && !self.mpich_signed_max {
            return Ok(());
        }
        self.check_accumulate_guarded(basic, op, flavor)
    }

    /// [`Guards::check_accumulate`] where a guard is on.
    #[inline]
    fn check_accumulate_guarded(
        &self,
        basic: BasicType,
        op: Op,
        flavor: Flavor,
    ) -> Result<(), Error> {
        use BasicType::{Usize, U16, U32, U64, U8};
        let unsigned = matches!(basic, U8 | U16 | U32 | U64 | Usize);
        if self.mpich_signed_max && unsigned && matches!(op, Op::Max | Op::Min) {
            return Err(Error::Flavor {
                reason: format!(
                    "{op} on {basic} compares unsigned integers as signed in MPICH 4.0 \
                     (max(200u8, 7) = 7); use a signed type or another MPI library, or set \
                     {ENV_NO_GUARDS}=1 if this library is fixed"
                ),
            });
        }
        if !self.refuse {
            return Ok(());
        }
        let why =
            if self.rdma && flavor == Flavor::Create && basic == BasicType::C32 && op == Op::Sum {
                "returns wrong values in Open MPI 4's osc/rdma on MPI_Win_create windows; \
             allocate the window or run with `--mca osc ucx`"
            } else if self.pt2pt && padded(basic) && matches!(op, Op::MaxLoc | Op::MinLoc) {
                "aborts the job in Open MPI 4's osc/pt2pt (\"datatype is currently unsupported\"); \
             use float_int or 2int, or run with `--mca osc ucx`"
            } else {
                return Ok(());
            };
        Err(Error::Flavor {
            reason: format!(
                "{op} on {basic} {why}, or set {ENV_NO_GUARDS}=1 if this library is fixed"
            ),
        })
    }

    /// Whether [`Guards::check_accumulate`] refuses `op` on `basic` in a window of
    /// `flavor`, as a test a target handle makes in line: for an element type and op
    /// known where it is called, most of it folds away (for a sum of doubles, all of
    /// it).
    #[inline(always)]
    pub fn refuses_accumulate(&self, basic: BasicType, op: Op, flavor: Flavor) -> bool {
        use BasicType::{Usize, U16, U32, U64, U8};
        let unsigned = matches!(basic, U8 | U16 | U32 | U64 | Usize);
        (unsigned && matches!(op, Op::Max | Op::Min) && self.mpich_signed_max)
            || (basic == BasicType::C32
                && op == Op::Sum
                && flavor == Flavor::Create
                && self.refuse
                && self.rdma)
            || (padded(basic) && matches!(op, Op::MaxLoc | Op::MinLoc) && self.refuse && self.pt2pt)
    }

    /// Whether a call on `bytes` bytes of `basic` goes one element per MPI call.
    pub fn split(&self, basic: BasicType, bytes: usize) -> bool {
        self.rdma && padded(basic) && bytes > basic.size()
    }

    /// Whether fetch_and_op on `basic` is issued as a one-element get_accumulate.
    pub fn fetch_and_op_as_get_accumulate(&self, basic: BasicType) -> bool {
        use BasicType::*;
        self.ucx && !matches!(basic, I32 | I64 | U32 | U64 | Isize | Usize)
    }
}

/// The pair types with padding between value and index or after it, whose MPI size
/// is smaller than their extent.
fn padded(basic: BasicType) -> bool {
    matches!(
        basic,
        BasicType::DoubleInt | BasicType::LongInt | BasicType::ShortInt | BasicType::LongDoubleInt
    )
}

/// Whether an MCA selection (`sm`, `^ucx,pt2pt`, empty or unknown for all) may pick
/// `component`.
fn may_select(selection: Option<&str>, component: &str) -> bool {
    let value = selection.map_or("", str::trim);
    if value.is_empty() {
        return true;
    }
    let names = |list: &str| list.split(',').any(|c| c.trim() == component);
    match value.strip_prefix('^') {
        Some(excluded) => !names(excluded),
        None => names(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_rule_components_in_and_out() {
        assert!(may_select(None, "rdma") && may_select(Some(""), "ucx"));
        assert!(!may_select(Some("sm"), "rdma"));
        assert!(may_select(Some("ucx"), "ucx") && !may_select(Some("ucx"), "rdma"));
        assert!(may_select(Some("sm,rdma"), "rdma"));
        assert!(!may_select(Some("^rdma"), "rdma"));
        assert!(may_select(Some("^ucx,pt2pt"), "rdma") && !may_select(Some("^ucx,pt2pt"), "ucx"));
    }

    #[test]
    fn mpich_4_0_refuses_max_and_min_on_unsigned_only() {
        let g = Guards::detect(
            Library::Mpich,
            "MPICH Version: 4.0.2\nMPICH Release date",
            None,
        );
        for basic in [
            BasicType::U8,
            BasicType::U16,
            BasicType::U32,
            BasicType::U64,
        ] {
            for op in [Op::Max, Op::Min] {
                let e = g.check_accumulate(basic, op, Flavor::Allocate).unwrap_err();
                assert_eq!(e.class(), rma_core::ErrorClass::RmaFlavor);
            }
            assert!(g.check_accumulate(basic, Op::Sum, Flavor::Allocate).is_ok());
        }
        assert!(g
            .check_accumulate(BasicType::I8, Op::Max, Flavor::Allocate)
            .is_ok());
        let later = Guards::detect(Library::Mpich, "MPICH Version: 4.1", None);
        assert!(later
            .check_accumulate(BasicType::U8, Op::Max, Flavor::Allocate)
            .is_ok());
    }

    #[test]
    fn only_open_mpi_is_guarded() {
        let g = Guards::detect(Library::Mpich, "MPICH Version: 4.0.2", None);
        assert!(!g.cas64_blocked() && !g.split(BasicType::DoubleInt, 32));
        assert!(!g.fetch_and_op_as_get_accumulate(BasicType::F64));
        assert!(g
            .check_accumulate(BasicType::C32, Op::Sum, Flavor::Create)
            .is_ok());
        let g = Guards::detect(Library::OpenMpi, "Open MPI v4.1.4", Some("^ucx,pt2pt"));
        assert!(g.check_cas(BasicType::I8, Flavor::Allocate).is_ok());
        let g = Guards {
            rdma: true,
            ucx: true,
            pt2pt: true,
            refuse: true,
            mpich_signed_max: false,
        };
        let e = g
            .check_accumulate(BasicType::DoubleInt, Op::MaxLoc, Flavor::Allocate)
            .unwrap_err();
        assert_eq!(e.class(), rma_core::ErrorClass::RmaFlavor);
        assert!(g
            .check_accumulate(BasicType::TwoInt, Op::MaxLoc, Flavor::Allocate)
            .is_ok());
        assert!(g
            .check_accumulate(BasicType::DoubleInt, Op::Replace, Flavor::Allocate)
            .is_ok());
        assert!(
            g.check_cas(BasicType::U16, Flavor::Allocate).is_err()
                && g.check_cas(BasicType::Bool, Flavor::Allocate).is_err()
        );
        assert!(g.split(BasicType::ShortInt, 16) && !g.split(BasicType::ShortInt, 8));
        assert!(!g.split(BasicType::TwoInt, 16));
        assert!(g.fetch_and_op_as_get_accumulate(BasicType::I8));
        assert!(!g.fetch_and_op_as_get_accumulate(BasicType::U64));
        assert!(
            g.check_cas(BasicType::I64, Flavor::Allocate).is_err()
                && g.check_cas(BasicType::I32, Flavor::Allocate).is_ok()
        );
        let e = g
            .check_accumulate(BasicType::C32, Op::Sum, Flavor::Create)
            .unwrap_err();
        assert_eq!(e.class(), rma_core::ErrorClass::RmaFlavor);
        assert!(g
            .check_accumulate(BasicType::C32, Op::Sum, Flavor::Allocate)
            .is_ok());
        assert!(g
            .check_accumulate(BasicType::C32, Op::Prod, Flavor::Create)
            .is_ok());
    }

    /// `refuses_accumulate` is what lets a target handle skip the per-call check: it
    /// must agree with `check_accumulate` everywhere.
    #[test]
    fn refuses_accumulate_is_check_accumulate() {
        for bits in 0..32u32 {
            let on = |i: u32| bits & (1 << i) != 0;
            let (rdma, ucx, pt2pt, refuse, mpich_signed_max) = (on(0), on(1), on(2), on(3), on(4));
            let g = Guards {
                rdma,
                ucx,
                pt2pt,
                refuse,
                mpich_signed_max,
            };
            for flavor in [
                Flavor::Allocate,
                Flavor::Create,
                Flavor::Shared,
                Flavor::Dynamic,
            ] {
                for b in BasicType::ALL {
                    for op in Op::ALL {
                        assert_eq!(
                            g.refuses_accumulate(b, op, flavor),
                            g.check_accumulate(b, op, flavor).is_err(),
                            "{b:?} {op:?} {flavor:?}, guards {bits:05b}"
                        );
                    }
                }
            }
        }
    }
}
