//! Cases re-expressed from MPICH's `test/mpi/rma/` suite (pmodels/mpich). Each file
//! names the MPICH test it comes from and says what it checks; the code is our own.

mod accfence2;

use crate::Case;

/// Every ported case.
pub fn cases() -> Vec<Case> {
    vec![Case {
        name: "accfence2",
        ranks: 4,
        body: accfence2::run,
    }]
}
