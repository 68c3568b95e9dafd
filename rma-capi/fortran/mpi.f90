! The MPI module for rma's library (librma_capi): MPI's constants, the same
! ones mpif.h gives (both include mpif-constants.h, generated from mpi.h),
! and explicit interfaces for every routine the library's Fortran binding
! provides (rma-capi/src/fortran.rs), so that the compiler checks each
! argument's type, kind and rank, but for the choice buffers, which take
! anything (gfortran's NO_ARG_CHECK, and the directives ifx and flang read
! for the same; only gfortran is tested).
!
! rmafort compiles this file with the program's compiler the first time it
! is needed, into a cache directory of its own (see rmafort), and puts that
! directory on the module search path: a program says USE MPI and nothing
! more. The module needs no object file at link time.
!
! MPI_ALLOC_MEM, MPI_WIN_ALLOCATE, MPI_WIN_ALLOCATE_SHARED and
! MPI_WIN_SHARED_QUERY take BASEPTR as INTEGER(KIND=MPI_ADDRESS_KIND) or as
! TYPE(C_PTR) (then C_F_POINTER turns it into a Fortran pointer); the name
! with _CPTR appended is the TYPE(C_PTR) form alone, as MPI defines.
!
! Window memory that one-sided calls change behind the compiler's back:
! declare it ASYNCHRONOUS (or TARGET), or call MPI_F_SYNC_REG(buf) after the
! synchronization that ends the changes, as MPI advises.

module mpi
  implicit none

  include 'mpif-constants.h'

  ! ---- the environment ----
  interface
    subroutine MPI_INIT(ierror)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_INIT_THREAD(required, provided, ierror)
      integer, intent(in) :: required
      integer, intent(out) :: provided, ierror
    end subroutine
    subroutine MPI_INITIALIZED(flag, ierror)
      logical, intent(out) :: flag
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_FINALIZED(flag, ierror)
      logical, intent(out) :: flag
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_IS_THREAD_MAIN(flag, ierror)
      logical, intent(out) :: flag
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_QUERY_THREAD(provided, ierror)
      integer, intent(out) :: provided, ierror
    end subroutine
    subroutine MPI_FINALIZE(ierror)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_ABORT(comm, errorcode, ierror)
      integer, intent(in) :: comm, errorcode
      integer, intent(out) :: ierror
    end subroutine
    function MPI_WTIME() result(t)
      double precision :: t
    end function
    function MPI_WTICK() result(t)
      double precision :: t
    end function
    subroutine MPI_PCONTROL(level)
      integer, intent(in) :: level
    end subroutine
    subroutine MPI_GET_VERSION(version, subversion, ierror)
      integer, intent(out) :: version, subversion, ierror
    end subroutine
    subroutine MPI_GET_PROCESSOR_NAME(name, resultlen, ierror)
      character(len=*), intent(out) :: name
      integer, intent(out) :: resultlen, ierror
    end subroutine
    subroutine MPI_GET_LIBRARY_VERSION(version, resultlen, ierror)
      character(len=*), intent(out) :: version
      integer, intent(out) :: resultlen, ierror
    end subroutine
    subroutine MPI_ERROR_STRING(errorcode, string, resultlen, ierror)
      integer, intent(in) :: errorcode
      character(len=*), intent(out) :: string
      integer, intent(out) :: resultlen, ierror
    end subroutine
    subroutine MPI_ERROR_CLASS(errorcode, errorclass, ierror)
      integer, intent(in) :: errorcode
      integer, intent(out) :: errorclass, ierror
    end subroutine
    subroutine MPI_FREE_MEM(base, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: base
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: base
      !DIR$ IGNORE_TKR base
      type(*), dimension(*) :: base
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_GET_ADDRESS(location, address, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: location
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: location
      !DIR$ IGNORE_TKR location
      type(*), dimension(*) :: location
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: address
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_F_SYNC_REG(buf)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DIR$ IGNORE_TKR buf
      type(*), dimension(*) :: buf
    end subroutine
  end interface

  interface MPI_ALLOC_MEM
    subroutine MPI_ALLOC_MEM(size, info, baseptr, ierror)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: size
      integer, intent(in) :: info
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: baseptr
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_ALLOC_MEM_CPTR(size, info, baseptr, ierror)
      use, intrinsic :: iso_c_binding, only: c_ptr
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: size
      integer, intent(in) :: info
      type(c_ptr), intent(out) :: baseptr
      integer, intent(out) :: ierror
    end subroutine
  end interface

  ! ---- error handlers ----
  interface
    subroutine MPI_COMM_SET_ERRHANDLER(comm, errhandler, ierror)
      integer, intent(in) :: comm, errhandler
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_COMM_GET_ERRHANDLER(comm, errhandler, ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: errhandler, ierror
    end subroutine
    subroutine MPI_WIN_SET_ERRHANDLER(win, errhandler, ierror)
      integer, intent(in) :: win, errhandler
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_GET_ERRHANDLER(win, errhandler, ierror)
      integer, intent(in) :: win
      integer, intent(out) :: errhandler, ierror
    end subroutine
    subroutine MPI_ERRHANDLER_FREE(errhandler, ierror)
      integer, intent(inout) :: errhandler
      integer, intent(out) :: ierror
    end subroutine
  end interface

  ! ---- communicators and groups ----
  interface
    subroutine MPI_COMM_RANK(comm, rank, ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: rank, ierror
    end subroutine
    subroutine MPI_COMM_SIZE(comm, size, ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: size, ierror
    end subroutine
    subroutine MPI_COMM_SPLIT(comm, color, key, newcomm, ierror)
      integer, intent(in) :: comm, color, key
      integer, intent(out) :: newcomm, ierror
    end subroutine
    subroutine MPI_COMM_SPLIT_TYPE(comm, split_type, key, info, newcomm, ierror)
      integer, intent(in) :: comm, split_type, key, info
      integer, intent(out) :: newcomm, ierror
    end subroutine
    subroutine MPI_COMM_DUP(comm, newcomm, ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: newcomm, ierror
    end subroutine
    subroutine MPI_COMM_FREE(comm, ierror)
      integer, intent(inout) :: comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_COMM_GROUP(comm, group, ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: group, ierror
    end subroutine
    subroutine MPI_COMM_COMPARE(comm1, comm2, result, ierror)
      integer, intent(in) :: comm1, comm2
      integer, intent(out) :: result, ierror
    end subroutine
    subroutine MPI_GROUP_SIZE(group, size, ierror)
      integer, intent(in) :: group
      integer, intent(out) :: size, ierror
    end subroutine
    subroutine MPI_GROUP_RANK(group, rank, ierror)
      integer, intent(in) :: group
      integer, intent(out) :: rank, ierror
    end subroutine
    subroutine MPI_GROUP_INCL(group, n, ranks, newgroup, ierror)
      integer, intent(in) :: group, n, ranks(*)
      integer, intent(out) :: newgroup, ierror
    end subroutine
    subroutine MPI_GROUP_EXCL(group, n, ranks, newgroup, ierror)
      integer, intent(in) :: group, n, ranks(*)
      integer, intent(out) :: newgroup, ierror
    end subroutine
    subroutine MPI_GROUP_TRANSLATE_RANKS(group1, n, ranks1, group2, ranks2, ierror)
      integer, intent(in) :: group1, n, ranks1(*), group2
      integer, intent(out) :: ranks2(*), ierror
    end subroutine
    subroutine MPI_GROUP_FREE(group, ierror)
      integer, intent(inout) :: group
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_COMM_CREATE(comm, group, newcomm, ierror)
      integer, intent(in) :: comm, group
      integer, intent(out) :: newcomm, ierror
    end subroutine
    subroutine MPI_COMM_CREATE_GROUP(comm, group, tag, newcomm, ierror)
      integer, intent(in) :: comm, group, tag
      integer, intent(out) :: newcomm, ierror
    end subroutine
    subroutine MPI_COMM_SET_NAME(comm, comm_name, ierror)
      integer, intent(in) :: comm
      character(len=*), intent(in) :: comm_name
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_COMM_GET_NAME(comm, comm_name, resultlen, ierror)
      integer, intent(in) :: comm
      character(len=*), intent(out) :: comm_name
      integer, intent(out) :: resultlen, ierror
    end subroutine
    subroutine MPI_COMM_GET_ATTR(comm, comm_keyval, attribute_val, flag, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: comm, comm_keyval
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
      logical, intent(out) :: flag
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_COMM_CALL_ERRHANDLER(comm, errorcode, ierror)
      integer, intent(in) :: comm, errorcode
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_COMM_REMOTE_SIZE(comm, size, ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: size, ierror
    end subroutine
    subroutine MPI_COMM_TEST_INTER(comm, flag, ierror)
      integer, intent(in) :: comm
      logical, intent(out) :: flag
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_INTERCOMM_CREATE(local_comm, local_leader, peer_comm, &
                                    remote_leader, tag, newintercomm, ierror)
      integer, intent(in) :: local_comm, local_leader, peer_comm, remote_leader, tag
      integer, intent(out) :: newintercomm, ierror
    end subroutine
    subroutine MPI_INTERCOMM_MERGE(intercomm, high, newintracomm, ierror)
      integer, intent(in) :: intercomm
      logical, intent(in) :: high
      integer, intent(out) :: newintracomm, ierror
    end subroutine
    subroutine MPI_GROUP_UNION(group1, group2, newgroup, ierror)
      integer, intent(in) :: group1, group2
      integer, intent(out) :: newgroup, ierror
    end subroutine
    subroutine MPI_GROUP_INTERSECTION(group1, group2, newgroup, ierror)
      integer, intent(in) :: group1, group2
      integer, intent(out) :: newgroup, ierror
    end subroutine
    subroutine MPI_GROUP_DIFFERENCE(group1, group2, newgroup, ierror)
      integer, intent(in) :: group1, group2
      integer, intent(out) :: newgroup, ierror
    end subroutine
    subroutine MPI_GROUP_RANGE_INCL(group, n, ranges, newgroup, ierror)
      integer, intent(in) :: group, n, ranges(3, *)
      integer, intent(out) :: newgroup, ierror
    end subroutine
    subroutine MPI_GROUP_RANGE_EXCL(group, n, ranges, newgroup, ierror)
      integer, intent(in) :: group, n, ranges(3, *)
      integer, intent(out) :: newgroup, ierror
    end subroutine
    subroutine MPI_GROUP_COMPARE(group1, group2, result, ierror)
      integer, intent(in) :: group1, group2
      integer, intent(out) :: result, ierror
    end subroutine
  end interface

  ! ---- topologies ----
  interface
    subroutine MPI_DIMS_CREATE(nnodes, ndims, dims, ierror)
      integer, intent(in) :: nnodes, ndims
      integer, intent(inout) :: dims(*)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_CART_CREATE(comm_old, ndims, dims, periods, reorder, comm_cart, &
                               ierror)
      integer, intent(in) :: comm_old, ndims, dims(*)
      logical, intent(in) :: periods(*), reorder
      integer, intent(out) :: comm_cart, ierror
    end subroutine
    subroutine MPI_CARTDIM_GET(comm, ndims, ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: ndims, ierror
    end subroutine
    subroutine MPI_CART_GET(comm, maxdims, dims, periods, coords, ierror)
      integer, intent(in) :: comm, maxdims
      integer, intent(out) :: dims(*), coords(*)
      logical, intent(out) :: periods(*)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_CART_COORDS(comm, rank, maxdims, coords, ierror)
      integer, intent(in) :: comm, rank, maxdims
      integer, intent(out) :: coords(*), ierror
    end subroutine
    subroutine MPI_CART_RANK(comm, coords, rank, ierror)
      integer, intent(in) :: comm, coords(*)
      integer, intent(out) :: rank, ierror
    end subroutine
    subroutine MPI_CART_SHIFT(comm, direction, disp, rank_source, rank_dest, ierror)
      integer, intent(in) :: comm, direction, disp
      integer, intent(out) :: rank_source, rank_dest, ierror
    end subroutine
    subroutine MPI_CART_SUB(comm, remain_dims, newcomm, ierror)
      integer, intent(in) :: comm
      logical, intent(in) :: remain_dims(*)
      integer, intent(out) :: newcomm, ierror
    end subroutine
    subroutine MPI_TOPO_TEST(comm, status, ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: status, ierror
    end subroutine
    subroutine MPI_DIST_GRAPH_CREATE_ADJACENT(comm_old, indegree, sources, &
                                              sourceweights, outdegree, &
                                              destinations, destweights, info, &
                                              reorder, comm_dist_graph, ierror)
      integer, intent(in) :: comm_old, indegree, sources(*), sourceweights(*)
      integer, intent(in) :: outdegree, destinations(*), destweights(*), info
      logical, intent(in) :: reorder
      integer, intent(out) :: comm_dist_graph, ierror
    end subroutine
    subroutine MPI_DIST_GRAPH_CREATE(comm_old, n, sources, degrees, destinations, &
                                     weights, info, reorder, comm_dist_graph, &
                                     ierror)
      integer, intent(in) :: comm_old, n, sources(*), degrees(*), destinations(*)
      integer, intent(in) :: weights(*), info
      logical, intent(in) :: reorder
      integer, intent(out) :: comm_dist_graph, ierror
    end subroutine
    subroutine MPI_DIST_GRAPH_NEIGHBORS_COUNT(comm, indegree, outdegree, weighted, &
                                              ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: indegree, outdegree
      logical, intent(out) :: weighted
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_DIST_GRAPH_NEIGHBORS(comm, maxindegree, sources, sourceweights, &
                                        maxoutdegree, destinations, destweights, &
                                        ierror)
      integer, intent(in) :: comm, maxindegree, maxoutdegree
      integer :: sources(*), sourceweights(*), destinations(*), destweights(*)
      integer, intent(out) :: ierror
    end subroutine
  end interface

  ! ---- collectives ----
  interface
    subroutine MPI_BARRIER(comm, ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_BCAST(buffer, count, datatype, root, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buffer
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: buffer
      !DIR$ IGNORE_TKR buffer
      type(*), dimension(*) :: buffer
      integer, intent(in) :: count, datatype, root, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_REDUCE(sendbuf, recvbuf, count, datatype, op, root, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: count, datatype, op, root, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_ALLREDUCE(sendbuf, recvbuf, count, datatype, op, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: count, datatype, op, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_GATHER(sendbuf, sendcount, sendtype, recvbuf, recvcount, &
                          recvtype, root, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, root, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_ALLGATHER(sendbuf, sendcount, sendtype, recvbuf, recvcount, &
                             recvtype, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_SCATTER(sendbuf, sendcount, sendtype, recvbuf, recvcount, &
                           recvtype, root, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, root, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_GATHERV(sendbuf, sendcount, sendtype, recvbuf, recvcounts, &
                           displs, recvtype, root, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcounts(*), displs(*)
      integer, intent(in) :: recvtype, root, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_SCATTERV(sendbuf, sendcounts, displs, sendtype, recvbuf, &
                            recvcount, recvtype, root, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcounts(*), displs(*), sendtype
      integer, intent(in) :: recvcount, recvtype, root, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_ALLGATHERV(sendbuf, sendcount, sendtype, recvbuf, recvcounts, &
                              displs, recvtype, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcounts(*), displs(*)
      integer, intent(in) :: recvtype, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_ALLTOALL(sendbuf, sendcount, sendtype, recvbuf, recvcount, &
                            recvtype, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_ALLTOALLV(sendbuf, sendcounts, sdispls, sendtype, recvbuf, &
                             recvcounts, rdispls, recvtype, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcounts(*), sdispls(*), sendtype
      integer, intent(in) :: recvcounts(*), rdispls(*), recvtype, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_ALLTOALLW(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, &
                             recvcounts, rdispls, recvtypes, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcounts(*), sdispls(*), sendtypes(*)
      integer, intent(in) :: recvcounts(*), rdispls(*), recvtypes(*), comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_SCAN(sendbuf, recvbuf, count, datatype, op, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: count, datatype, op, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_EXSCAN(sendbuf, recvbuf, count, datatype, op, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: count, datatype, op, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_REDUCE_SCATTER(sendbuf, recvbuf, recvcounts, datatype, op, &
                                  comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: recvcounts(*), datatype, op, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_REDUCE_SCATTER_BLOCK(sendbuf, recvbuf, recvcount, datatype, op, &
                                        comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: recvcount, datatype, op, comm
      integer, intent(out) :: ierror
    end subroutine
  end interface

  ! ---- nonblocking collectives ----
  interface
    subroutine MPI_IBARRIER(comm, request, ierror)
      integer, intent(in) :: comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IBCAST(buffer, count, datatype, root, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buffer
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: buffer
      !DIR$ IGNORE_TKR buffer
      type(*), dimension(*) :: buffer
      integer, intent(in) :: count, datatype, root, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IALLREDUCE(sendbuf, recvbuf, count, datatype, op, comm, &
                              request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: count, datatype, op, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IREDUCE(sendbuf, recvbuf, count, datatype, op, root, comm, &
                           request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: count, datatype, op, root, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IGATHER(sendbuf, sendcount, sendtype, recvbuf, recvcount, &
                           recvtype, root, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, root, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IALLGATHER(sendbuf, sendcount, sendtype, recvbuf, recvcount, &
                              recvtype, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_ISCATTER(sendbuf, sendcount, sendtype, recvbuf, recvcount, &
                            recvtype, root, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, root, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IALLTOALL(sendbuf, sendcount, sendtype, recvbuf, recvcount, &
                             recvtype, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IGATHERV(sendbuf, sendcount, sendtype, recvbuf, recvcounts, &
                            displs, recvtype, root, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcounts(*), displs(*)
      integer, intent(in) :: recvtype, root, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IALLGATHERV(sendbuf, sendcount, sendtype, recvbuf, recvcounts, &
                               displs, recvtype, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcounts(*), displs(*)
      integer, intent(in) :: recvtype, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_ISCATTERV(sendbuf, sendcounts, displs, sendtype, recvbuf, &
                             recvcount, recvtype, root, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcounts(*), displs(*), sendtype
      integer, intent(in) :: recvcount, recvtype, root, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IALLTOALLV(sendbuf, sendcounts, sdispls, sendtype, recvbuf, &
                              recvcounts, rdispls, recvtype, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcounts(*), sdispls(*), sendtype
      integer, intent(in) :: recvcounts(*), rdispls(*), recvtype, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IALLTOALLW(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, &
                              recvcounts, rdispls, recvtypes, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcounts(*), sdispls(*), sendtypes(*)
      integer, intent(in) :: recvcounts(*), rdispls(*), recvtypes(*), comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IREDUCE_SCATTER(sendbuf, recvbuf, recvcounts, datatype, op, &
                                   comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: recvcounts(*), datatype, op, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IREDUCE_SCATTER_BLOCK(sendbuf, recvbuf, recvcount, datatype, &
                                         op, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: recvcount, datatype, op, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_ISCAN(sendbuf, recvbuf, count, datatype, op, comm, request, &
                         ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: count, datatype, op, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IEXSCAN(sendbuf, recvbuf, count, datatype, op, comm, request, &
                           ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: count, datatype, op, comm
      integer, intent(out) :: request, ierror
    end subroutine
  end interface

  ! ---- neighborhood collectives ----
  interface
    subroutine MPI_NEIGHBOR_ALLGATHER(sendbuf, sendcount, sendtype, recvbuf, &
                                      recvcount, recvtype, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_NEIGHBOR_ALLGATHERV(sendbuf, sendcount, sendtype, recvbuf, &
                                       recvcounts, displs, recvtype, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcounts(*), displs(*)
      integer, intent(in) :: recvtype, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_NEIGHBOR_ALLTOALL(sendbuf, sendcount, sendtype, recvbuf, &
                                     recvcount, recvtype, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_NEIGHBOR_ALLTOALLV(sendbuf, sendcounts, sdispls, sendtype, &
                                      recvbuf, recvcounts, rdispls, recvtype, &
                                      comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcounts(*), sdispls(*), sendtype
      integer, intent(in) :: recvcounts(*), rdispls(*), recvtype, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_NEIGHBOR_ALLTOALLW(sendbuf, sendcounts, sdispls, sendtypes, &
                                      recvbuf, recvcounts, rdispls, recvtypes, &
                                      comm, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcounts(*), sendtypes(*)
      integer, intent(in) :: recvcounts(*), recvtypes(*), comm
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: sdispls(*), rdispls(*)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_INEIGHBOR_ALLGATHER(sendbuf, sendcount, sendtype, recvbuf, &
                                       recvcount, recvtype, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_INEIGHBOR_ALLGATHERV(sendbuf, sendcount, sendtype, recvbuf, &
                                        recvcounts, displs, recvtype, comm, &
                                        request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcounts(*), displs(*)
      integer, intent(in) :: recvtype, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_INEIGHBOR_ALLTOALL(sendbuf, sendcount, sendtype, recvbuf, &
                                      recvcount, recvtype, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, recvcount, recvtype, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_INEIGHBOR_ALLTOALLV(sendbuf, sendcounts, sdispls, sendtype, &
                                       recvbuf, recvcounts, rdispls, recvtype, &
                                       comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcounts(*), sdispls(*), sendtype
      integer, intent(in) :: recvcounts(*), rdispls(*), recvtype, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_INEIGHBOR_ALLTOALLW(sendbuf, sendcounts, sdispls, sendtypes, &
                                       recvbuf, recvcounts, rdispls, recvtypes, &
                                       comm, request, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcounts(*), sendtypes(*)
      integer, intent(in) :: recvcounts(*), recvtypes(*), comm
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: sdispls(*), rdispls(*)
      integer, intent(out) :: request, ierror
    end subroutine
  end interface

  ! ---- the program's own reduction operations ----
  interface
    subroutine MPI_OP_CREATE(user_fn, commute, op, ierror)
      external :: user_fn
      logical, intent(in) :: commute
      integer, intent(out) :: op, ierror
    end subroutine
    subroutine MPI_OP_FREE(op, ierror)
      integer, intent(inout) :: op
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_OP_COMMUTATIVE(op, commute, ierror)
      integer, intent(in) :: op
      logical, intent(out) :: commute
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_REDUCE_LOCAL(inbuf, inoutbuf, count, datatype, op, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: inbuf, inoutbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: inbuf, inoutbuf
      !DIR$ IGNORE_TKR inbuf, inoutbuf
      type(*), dimension(*) :: inbuf, inoutbuf
      integer, intent(in) :: count, datatype, op
      integer, intent(out) :: ierror
    end subroutine
  end interface

  ! ---- point to point ----
  interface
    subroutine MPI_SEND(buf, count, datatype, dest, tag, comm, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DIR$ IGNORE_TKR buf
      type(*), dimension(*) :: buf
      integer, intent(in) :: count, datatype, dest, tag, comm
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_RECV(buf, count, datatype, source, tag, comm, status, ierror)
      import :: MPI_STATUS_SIZE
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DIR$ IGNORE_TKR buf
      type(*), dimension(*) :: buf
      integer, intent(in) :: count, datatype, source, tag, comm
      integer :: status(MPI_STATUS_SIZE)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_SENDRECV(sendbuf, sendcount, sendtype, dest, sendtag, &
                            recvbuf, recvcount, recvtype, source, recvtag, &
                            comm, status, ierror)
      import :: MPI_STATUS_SIZE
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
      !DIR$ IGNORE_TKR sendbuf, recvbuf
      type(*), dimension(*) :: sendbuf, recvbuf
      integer, intent(in) :: sendcount, sendtype, dest, sendtag
      integer, intent(in) :: recvcount, recvtype, source, recvtag, comm
      integer :: status(MPI_STATUS_SIZE)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_ISEND(buf, count, datatype, dest, tag, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DIR$ IGNORE_TKR buf
      type(*), dimension(*) :: buf
      integer, intent(in) :: count, datatype, dest, tag, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_IRECV(buf, count, datatype, source, tag, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DIR$ IGNORE_TKR buf
      type(*), dimension(*) :: buf
      integer, intent(in) :: count, datatype, source, tag, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_WAIT(request, status, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(inout) :: request
      integer :: status(MPI_STATUS_SIZE)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WAITALL(count, array_of_requests, array_of_statuses, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(in) :: count
      integer, intent(inout) :: array_of_requests(*)
      integer :: array_of_statuses(MPI_STATUS_SIZE, *)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TEST(request, flag, status, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(inout) :: request
      logical, intent(out) :: flag
      integer :: status(MPI_STATUS_SIZE)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_GET_COUNT(status, datatype, count, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(in) :: status(MPI_STATUS_SIZE), datatype
      integer, intent(out) :: count, ierror
    end subroutine
    subroutine MPI_REQUEST_FREE(request, ierror)
      integer, intent(inout) :: request
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_PROBE(source, tag, comm, status, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(in) :: source, tag, comm
      integer :: status(MPI_STATUS_SIZE)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_IPROBE(source, tag, comm, flag, status, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(in) :: source, tag, comm
      logical, intent(out) :: flag
      integer :: status(MPI_STATUS_SIZE)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WAITANY(count, array_of_requests, index, status, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(in) :: count
      integer, intent(inout) :: array_of_requests(*)
      integer, intent(out) :: index
      integer :: status(MPI_STATUS_SIZE)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TESTANY(count, array_of_requests, index, flag, status, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(in) :: count
      integer, intent(inout) :: array_of_requests(*)
      integer, intent(out) :: index
      logical, intent(out) :: flag
      integer :: status(MPI_STATUS_SIZE)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TESTALL(count, array_of_requests, flag, array_of_statuses, &
                           ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(in) :: count
      integer, intent(inout) :: array_of_requests(*)
      logical, intent(out) :: flag
      integer :: array_of_statuses(MPI_STATUS_SIZE, *)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WAITSOME(incount, array_of_requests, outcount, &
                            array_of_indices, array_of_statuses, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(in) :: incount
      integer, intent(inout) :: array_of_requests(*)
      integer, intent(out) :: outcount, array_of_indices(*)
      integer :: array_of_statuses(MPI_STATUS_SIZE, *)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TESTSOME(incount, array_of_requests, outcount, &
                            array_of_indices, array_of_statuses, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(in) :: incount
      integer, intent(inout) :: array_of_requests(*)
      integer, intent(out) :: outcount, array_of_indices(*)
      integer :: array_of_statuses(MPI_STATUS_SIZE, *)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_SEND_INIT(buf, count, datatype, dest, tag, comm, request, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DIR$ IGNORE_TKR buf
      type(*), dimension(*) :: buf
      integer, intent(in) :: count, datatype, dest, tag, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_RECV_INIT(buf, count, datatype, source, tag, comm, request, &
                             ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: buf
      !DIR$ IGNORE_TKR buf
      type(*), dimension(*) :: buf
      integer, intent(in) :: count, datatype, source, tag, comm
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_START(request, ierror)
      integer, intent(inout) :: request
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_STARTALL(count, array_of_requests, ierror)
      integer, intent(in) :: count
      integer, intent(inout) :: array_of_requests(*)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_CANCEL(request, ierror)
      integer, intent(in) :: request
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TEST_CANCELLED(status, flag, ierror)
      import :: MPI_STATUS_SIZE
      integer, intent(in) :: status(MPI_STATUS_SIZE)
      logical, intent(out) :: flag
      integer, intent(out) :: ierror
    end subroutine
  end interface

  ! ---- datatypes ----
  interface
    subroutine MPI_TYPE_CONTIGUOUS(count, oldtype, newtype, ierror)
      integer, intent(in) :: count, oldtype
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_VECTOR(count, blocklength, stride, oldtype, newtype, ierror)
      integer, intent(in) :: count, blocklength, stride, oldtype
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_CREATE_HVECTOR(count, blocklength, stride, oldtype, &
                                       newtype, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: count, blocklength, oldtype
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: stride
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_INDEXED(count, array_of_blocklengths, &
                                array_of_displacements, oldtype, newtype, ierror)
      integer, intent(in) :: count, array_of_blocklengths(*)
      integer, intent(in) :: array_of_displacements(*), oldtype
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_CREATE_HINDEXED(count, array_of_blocklengths, &
                                        array_of_displacements, oldtype, &
                                        newtype, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: count, array_of_blocklengths(*), oldtype
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: array_of_displacements(*)
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_CREATE_INDEXED_BLOCK(count, blocklength, &
                                             array_of_displacements, oldtype, &
                                             newtype, ierror)
      integer, intent(in) :: count, blocklength, array_of_displacements(*)
      integer, intent(in) :: oldtype
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_CREATE_HINDEXED_BLOCK(count, blocklength, &
                                              array_of_displacements, oldtype, &
                                              newtype, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: count, blocklength, oldtype
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: array_of_displacements(*)
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_CREATE_STRUCT(count, array_of_blocklengths, &
                                      array_of_displacements, array_of_types, &
                                      newtype, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: count, array_of_blocklengths(*), array_of_types(*)
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: array_of_displacements(*)
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_CREATE_SUBARRAY(ndims, array_of_sizes, array_of_subsizes, &
                                        array_of_starts, order, oldtype, &
                                        newtype, ierror)
      integer, intent(in) :: ndims, array_of_sizes(*), array_of_subsizes(*)
      integer, intent(in) :: array_of_starts(*), order, oldtype
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_CREATE_RESIZED(oldtype, lb, extent, newtype, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: oldtype
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: lb, extent
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_DUP(oldtype, newtype, ierror)
      integer, intent(in) :: oldtype
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_COMMIT(datatype, ierror)
      integer, intent(inout) :: datatype
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TYPE_FREE(datatype, ierror)
      integer, intent(inout) :: datatype
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TYPE_SIZE(datatype, size, ierror)
      integer, intent(in) :: datatype
      integer, intent(out) :: size, ierror
    end subroutine
    subroutine MPI_TYPE_GET_EXTENT(datatype, lb, extent, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: datatype
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: lb, extent
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TYPE_GET_TRUE_EXTENT(datatype, true_lb, true_extent, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: datatype
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: true_lb, true_extent
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TYPE_SIZE_X(datatype, size, ierror)
      import :: MPI_COUNT_KIND
      integer, intent(in) :: datatype
      integer(kind=MPI_COUNT_KIND), intent(out) :: size
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TYPE_GET_ENVELOPE(datatype, num_integers, num_addresses, &
                                     num_datatypes, combiner, ierror)
      integer, intent(in) :: datatype
      integer, intent(out) :: num_integers, num_addresses, num_datatypes, combiner
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TYPE_GET_CONTENTS(datatype, max_integers, max_addresses, &
                                     max_datatypes, array_of_integers, &
                                     array_of_addresses, array_of_datatypes, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: datatype, max_integers, max_addresses, max_datatypes
      integer, intent(out) :: array_of_integers(*), array_of_datatypes(*)
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: array_of_addresses(*)
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TYPE_SET_NAME(datatype, type_name, ierror)
      integer, intent(in) :: datatype
      character(len=*), intent(in) :: type_name
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_TYPE_GET_NAME(datatype, type_name, resultlen, ierror)
      integer, intent(in) :: datatype
      character(len=*), intent(out) :: type_name
      integer, intent(out) :: resultlen, ierror
    end subroutine
    subroutine MPI_TYPE_HVECTOR(count, blocklength, stride, oldtype, newtype, &
                                ierror)
      integer, intent(in) :: count, blocklength, stride, oldtype
      integer, intent(out) :: newtype, ierror
    end subroutine
    subroutine MPI_TYPE_HINDEXED(count, array_of_blocklengths, &
                                 array_of_displacements, oldtype, newtype, ierror)
      integer, intent(in) :: count, array_of_blocklengths(*)
      integer, intent(in) :: array_of_displacements(*), oldtype
      integer, intent(out) :: newtype, ierror
    end subroutine
    function MPI_AINT_ADD(base, disp) result(sum)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: base, disp
      integer(kind=MPI_ADDRESS_KIND) :: sum
    end function
    function MPI_AINT_DIFF(addr1, addr2) result(diff)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: addr1, addr2
      integer(kind=MPI_ADDRESS_KIND) :: diff
    end function
  end interface

  ! ---- info ----
  interface
    subroutine MPI_INFO_CREATE(info, ierror)
      integer, intent(out) :: info, ierror
    end subroutine
    subroutine MPI_INFO_FREE(info, ierror)
      integer, intent(inout) :: info
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_INFO_DUP(info, newinfo, ierror)
      integer, intent(in) :: info
      integer, intent(out) :: newinfo, ierror
    end subroutine
    subroutine MPI_INFO_SET(info, key, value, ierror)
      integer, intent(in) :: info
      character(len=*), intent(in) :: key, value
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_INFO_DELETE(info, key, ierror)
      integer, intent(in) :: info
      character(len=*), intent(in) :: key
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_INFO_GET(info, key, valuelen, value, flag, ierror)
      integer, intent(in) :: info, valuelen
      character(len=*), intent(in) :: key
      character(len=*), intent(out) :: value
      logical, intent(out) :: flag
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_INFO_GET_VALUELEN(info, key, valuelen, flag, ierror)
      integer, intent(in) :: info
      character(len=*), intent(in) :: key
      integer, intent(out) :: valuelen
      logical, intent(out) :: flag
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_INFO_GET_NKEYS(info, nkeys, ierror)
      integer, intent(in) :: info
      integer, intent(out) :: nkeys, ierror
    end subroutine
    subroutine MPI_INFO_GET_NTHKEY(info, n, key, ierror)
      integer, intent(in) :: info, n
      character(len=*), intent(out) :: key
      integer, intent(out) :: ierror
    end subroutine
  end interface

  ! ---- windows ----
  interface
    subroutine MPI_WIN_CREATE(base, size, disp_unit, info, comm, win, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: base
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: base
      !DIR$ IGNORE_TKR base
      type(*), dimension(*) :: base
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: size
      integer, intent(in) :: disp_unit, info, comm
      integer, intent(out) :: win, ierror
    end subroutine
    subroutine MPI_WIN_CREATE_DYNAMIC(info, comm, win, ierror)
      integer, intent(in) :: info, comm
      integer, intent(out) :: win, ierror
    end subroutine
    subroutine MPI_WIN_ATTACH(win, base, size, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: win
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: base
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: base
      !DIR$ IGNORE_TKR base
      type(*), dimension(*) :: base
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: size
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_DETACH(win, base, ierror)
      integer, intent(in) :: win
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: base
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: base
      !DIR$ IGNORE_TKR base
      type(*), dimension(*) :: base
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_FREE(win, ierror)
      integer, intent(inout) :: win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_GET_GROUP(win, group, ierror)
      integer, intent(in) :: win
      integer, intent(out) :: group, ierror
    end subroutine
    subroutine MPI_WIN_SET_INFO(win, info, ierror)
      integer, intent(in) :: win, info
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_GET_INFO(win, info_used, ierror)
      integer, intent(in) :: win
      integer, intent(out) :: info_used, ierror
    end subroutine
    subroutine MPI_WIN_FENCE(assert, win, ierror)
      integer, intent(in) :: assert, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_START(group, assert, win, ierror)
      integer, intent(in) :: group, assert, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_COMPLETE(win, ierror)
      integer, intent(in) :: win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_POST(group, assert, win, ierror)
      integer, intent(in) :: group, assert, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_WAIT(win, ierror)
      integer, intent(in) :: win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_TEST(win, flag, ierror)
      integer, intent(in) :: win
      logical, intent(out) :: flag
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_LOCK(lock_type, rank, assert, win, ierror)
      integer, intent(in) :: lock_type, rank, assert, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_UNLOCK(rank, win, ierror)
      integer, intent(in) :: rank, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_LOCK_ALL(assert, win, ierror)
      integer, intent(in) :: assert, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_UNLOCK_ALL(win, ierror)
      integer, intent(in) :: win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_FLUSH(rank, win, ierror)
      integer, intent(in) :: rank, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_FLUSH_ALL(win, ierror)
      integer, intent(in) :: win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_FLUSH_LOCAL(rank, win, ierror)
      integer, intent(in) :: rank, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_FLUSH_LOCAL_ALL(win, ierror)
      integer, intent(in) :: win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_SYNC(win, ierror)
      integer, intent(in) :: win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_SET_NAME(win, win_name, ierror)
      integer, intent(in) :: win
      character(len=*), intent(in) :: win_name
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_GET_NAME(win, win_name, resultlen, ierror)
      integer, intent(in) :: win
      character(len=*), intent(out) :: win_name
      integer, intent(out) :: resultlen, ierror
    end subroutine
    subroutine MPI_WIN_GET_ATTR(win, win_keyval, attribute_val, flag, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: win, win_keyval
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
      logical, intent(out) :: flag
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_WIN_CALL_ERRHANDLER(win, errorcode, ierror)
      integer, intent(in) :: win, errorcode
      integer, intent(out) :: ierror
    end subroutine
  end interface

  interface MPI_WIN_ALLOCATE
    subroutine MPI_WIN_ALLOCATE(size, disp_unit, info, comm, baseptr, win, ierror)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: size
      integer, intent(in) :: disp_unit, info, comm
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: baseptr
      integer, intent(out) :: win, ierror
    end subroutine
    subroutine MPI_WIN_ALLOCATE_CPTR(size, disp_unit, info, comm, baseptr, win, &
                                     ierror)
      use, intrinsic :: iso_c_binding, only: c_ptr
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: size
      integer, intent(in) :: disp_unit, info, comm
      type(c_ptr), intent(out) :: baseptr
      integer, intent(out) :: win, ierror
    end subroutine
  end interface

  interface MPI_WIN_ALLOCATE_SHARED
    subroutine MPI_WIN_ALLOCATE_SHARED(size, disp_unit, info, comm, baseptr, win, &
                                       ierror)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: size
      integer, intent(in) :: disp_unit, info, comm
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: baseptr
      integer, intent(out) :: win, ierror
    end subroutine
    subroutine MPI_WIN_ALLOCATE_SHARED_CPTR(size, disp_unit, info, comm, baseptr, &
                                            win, ierror)
      use, intrinsic :: iso_c_binding, only: c_ptr
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: size
      integer, intent(in) :: disp_unit, info, comm
      type(c_ptr), intent(out) :: baseptr
      integer, intent(out) :: win, ierror
    end subroutine
  end interface

  interface MPI_WIN_SHARED_QUERY
    subroutine MPI_WIN_SHARED_QUERY(win, rank, size, disp_unit, baseptr, ierror)
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: win, rank
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: size, baseptr
      integer, intent(out) :: disp_unit, ierror
    end subroutine
    subroutine MPI_WIN_SHARED_QUERY_CPTR(win, rank, size, disp_unit, baseptr, &
                                         ierror)
      use, intrinsic :: iso_c_binding, only: c_ptr
      import :: MPI_ADDRESS_KIND
      integer, intent(in) :: win, rank
      integer(kind=MPI_ADDRESS_KIND), intent(out) :: size
      type(c_ptr), intent(out) :: baseptr
      integer, intent(out) :: disp_unit, ierror
    end subroutine
  end interface

  ! ---- one-sided communication ----
  interface
    subroutine MPI_PUT(origin_addr, origin_count, origin_datatype, target_rank, &
                       target_disp, target_count, target_datatype, win, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DIR$ IGNORE_TKR origin_addr
      type(*), dimension(*) :: origin_addr
      integer, intent(in) :: origin_count, origin_datatype, target_rank
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: target_disp
      integer, intent(in) :: target_count, target_datatype, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_GET(origin_addr, origin_count, origin_datatype, target_rank, &
                       target_disp, target_count, target_datatype, win, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DIR$ IGNORE_TKR origin_addr
      type(*), dimension(*) :: origin_addr
      integer, intent(in) :: origin_count, origin_datatype, target_rank
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: target_disp
      integer, intent(in) :: target_count, target_datatype, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_ACCUMULATE(origin_addr, origin_count, origin_datatype, &
                              target_rank, target_disp, target_count, &
                              target_datatype, op, win, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DIR$ IGNORE_TKR origin_addr
      type(*), dimension(*) :: origin_addr
      integer, intent(in) :: origin_count, origin_datatype, target_rank
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: target_disp
      integer, intent(in) :: target_count, target_datatype, op, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_GET_ACCUMULATE(origin_addr, origin_count, origin_datatype, &
                                  result_addr, result_count, result_datatype, &
                                  target_rank, target_disp, target_count, &
                                  target_datatype, op, win, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr, result_addr
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr, result_addr
      !DIR$ IGNORE_TKR origin_addr, result_addr
      type(*), dimension(*) :: origin_addr, result_addr
      integer, intent(in) :: origin_count, origin_datatype
      integer, intent(in) :: result_count, result_datatype, target_rank
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: target_disp
      integer, intent(in) :: target_count, target_datatype, op, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_FETCH_AND_OP(origin_addr, result_addr, datatype, target_rank, &
                                target_disp, op, win, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr, result_addr
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr, result_addr
      !DIR$ IGNORE_TKR origin_addr, result_addr
      type(*), dimension(*) :: origin_addr, result_addr
      integer, intent(in) :: datatype, target_rank
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: target_disp
      integer, intent(in) :: op, win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_COMPARE_AND_SWAP(origin_addr, compare_addr, result_addr, &
                                    datatype, target_rank, target_disp, win, &
                                    ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr, compare_addr, result_addr
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr, compare_addr, result_addr
      !DIR$ IGNORE_TKR origin_addr, compare_addr, result_addr
      type(*), dimension(*) :: origin_addr, compare_addr, result_addr
      integer, intent(in) :: datatype, target_rank
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: target_disp
      integer, intent(in) :: win
      integer, intent(out) :: ierror
    end subroutine
    subroutine MPI_RPUT(origin_addr, origin_count, origin_datatype, target_rank, &
                        target_disp, target_count, target_datatype, win, &
                        request, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DIR$ IGNORE_TKR origin_addr
      type(*), dimension(*) :: origin_addr
      integer, intent(in) :: origin_count, origin_datatype, target_rank
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: target_disp
      integer, intent(in) :: target_count, target_datatype, win
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_RGET(origin_addr, origin_count, origin_datatype, target_rank, &
                        target_disp, target_count, target_datatype, win, &
                        request, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DIR$ IGNORE_TKR origin_addr
      type(*), dimension(*) :: origin_addr
      integer, intent(in) :: origin_count, origin_datatype, target_rank
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: target_disp
      integer, intent(in) :: target_count, target_datatype, win
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_RACCUMULATE(origin_addr, origin_count, origin_datatype, &
                               target_rank, target_disp, target_count, &
                               target_datatype, op, win, request, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr
      !DIR$ IGNORE_TKR origin_addr
      type(*), dimension(*) :: origin_addr
      integer, intent(in) :: origin_count, origin_datatype, target_rank
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: target_disp
      integer, intent(in) :: target_count, target_datatype, op, win
      integer, intent(out) :: request, ierror
    end subroutine
    subroutine MPI_RGET_ACCUMULATE(origin_addr, origin_count, origin_datatype, &
                                   result_addr, result_count, result_datatype, &
                                   target_rank, target_disp, target_count, &
                                   target_datatype, op, win, request, ierror)
      import :: MPI_ADDRESS_KIND
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr, result_addr
      !DEC$ ATTRIBUTES NO_ARG_CHECK :: origin_addr, result_addr
      !DIR$ IGNORE_TKR origin_addr, result_addr
      type(*), dimension(*) :: origin_addr, result_addr
      integer, intent(in) :: origin_count, origin_datatype
      integer, intent(in) :: result_count, result_datatype, target_rank
      integer(kind=MPI_ADDRESS_KIND), intent(in) :: target_disp
      integer, intent(in) :: target_count, target_datatype, op, win
      integer, intent(out) :: request, ierror
    end subroutine
  end interface

end module mpi
