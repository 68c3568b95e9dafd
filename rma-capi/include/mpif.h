! mpif.h for rma's library (librma_capi): MPI's named constants, the
! sentinels (MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE,
! MPI_STATUSES_IGNORE, MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY) and the
! types of the MPI functions (MPI_WTIME, MPI_WTICK, MPI_AINT_ADD and
! MPI_AINT_DIFF), for a program that says INCLUDE 'mpif.h' (in fixed or
! in free source form: this file and the one it includes are valid in
! both). The values are rma's own, in mpif-constants.h, generated from
! mpi.h. Compile and link with rmafort; run the program with rmarun.
!
! The MPI routines have no explicit interface here: the compiler cannot
! check their arguments. Declare addresses and displacements (SIZE of
! MPI_WIN_CREATE, TARGET_DISP of MPI_PUT, MPI_GET, MPI_ACCUMULATE and
! their kin) INTEGER(KIND=MPI_ADDRESS_KIND), or the library reads
! garbage. USE MPI instead of this file gives explicit interfaces.
      INCLUDE 'mpif-constants.h'
      DOUBLE PRECISION MPI_WTIME, MPI_WTICK
      EXTERNAL MPI_WTIME, MPI_WTICK
      INTEGER(KIND=MPI_ADDRESS_KIND) MPI_AINT_ADD, MPI_AINT_DIFF
      EXTERNAL MPI_AINT_ADD, MPI_AINT_DIFF
