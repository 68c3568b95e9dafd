! A second tour of rma's Fortran binding through the mpi module, over the rest
! of what a Fortran MPI program commonly calls: the v-, all-to-all, scan and
! reduce-scatter collectives; the nonblocking collectives, completed by
! MPI_WAIT, MPI_WAITALL, MPI_TESTALL and MPI_WAITANY; the program's own
! reduction operations (a non-commutative 2x2 matrix product, checked against
! the product in rank order, and a commutative one); probes, persistent
! requests round a ring; Cartesian topologies (a periodic ring walked with
! MPI_CART_SHIFT and the neighborhood collectives, a grid and its columns) and
! distributed graphs (weighted, MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY); communicator and group constructors,
! intercommunicators, names and attributes; datatype envelopes and contents;
! window names and attributes; error handlers called by the program.
!
! MPI_TESTANY, MPI_TESTSOME, MPI_WAITSOME, MPI_CANCEL, MPI_TEST_CANCELLED,
! MPI_ISCAN and MPI_IEXSCAN are C functions rma refused when this was written
! (they report MPI_ERR_UNSUPPORTED_OPERATION), the neighborhood collectives new
! ones: their checks take either that refusal or the right results.
!
! Each check that fails prints what failed; rank 0 prints "No Errors" when
! every rank's checks pass, and the program stops with a failure status
! otherwise. Runs on 2 or more ranks.
module breadth_checks
  use mpi
  implicit none
  integer :: failures = 0
  integer :: me = -1
  ! the datatype the last call of a user function was given
  integer :: seen_type = MPI_DATATYPE_NULL
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a,i0,a,a)', 'rank ', me, ' failed: ', what
    end if
  end subroutine check

  ! 2x2 INTEGER matrices, stored by columns: (a11, a21, a12, a22)
  pure function mat2(a, b) result(c)
    integer, intent(in) :: a(4), b(4)
    integer :: c(4)
    c = reshape(matmul(reshape(a, [2, 2]), reshape(b, [2, 2])), [4])
  end function mat2

  ! rank r's matrix: [1 r+1; 0 1] for even r, [1 0; r+1 1] for odd r (no two
  ! neighbours commute)
  pure function rank_matrix(r) result(m)
    integer, intent(in) :: r
    integer :: m(4)
    if (mod(r, 2) == 0) then
      m = [1, 0, r + 1, 1]
    else
      m = [1, r + 1, 0, 1]
    end if
  end function rank_matrix

  ! the product of the matrices of ranks lo to hi, in that order
  pure function product_of(lo, hi) result(p)
    integer, intent(in) :: lo, hi
    integer :: p(4), r
    p = [1, 0, 0, 1]
    do r = lo, hi
      p = mat2(p, rank_matrix(r))
    end do
  end function product_of

  ! MPI_User_function: INOUTVEC(i) = INVEC(i) * INOUTVEC(i), matrices
  subroutine matrix_product(invec, inoutvec, len, datatype)
    integer, intent(in) :: len, datatype
    integer, intent(in) :: invec(4, len)
    integer, intent(inout) :: inoutvec(4, len)
    integer :: i
    seen_type = datatype
    do i = 1, len
      inoutvec(:, i) = mat2(invec(:, i), inoutvec(:, i))
    end do
  end subroutine matrix_product

  ! MPI_User_function: the larger of each pair, a commutative operation
  subroutine larger(invec, inoutvec, len, datatype)
    integer, intent(in) :: len, datatype
    integer, intent(in) :: invec(len)
    integer, intent(inout) :: inoutvec(len)
    seen_type = datatype
    inoutvec = max(invec, inoutvec)
  end subroutine larger

  ! the first index (from 0) of rank r's block when each rank j has j+1 elements
  pure integer function tri(r)
    integer, intent(in) :: r
    tri = r * (r + 1) / 2
  end function tri

  ! a call that returned IERR (and REQ, unless BLOCKING) has completed without a
  ! refusal
  logical function completed(ierr, req, blocking)
    integer, intent(in) :: ierr
    integer, intent(inout) :: req
    logical, intent(in) :: blocking
    integer :: e
    completed = .not. refused(ierr)
    if (completed .and. .not. blocking) then
      call MPI_WAIT(req, MPI_STATUS_IGNORE, e)
      completed = e == MPI_SUCCESS
    end if
  end function completed

  ! two blocks from a ring's two neighbours, in order; on N = 2 ranks both are one
  ! rank, and the order is left open
  subroutine expect_blocks(got, want, n, what)
    integer, intent(in) :: got(2), want(2), n
    character(len=*), intent(in) :: what
    if (n > 2) then
      call check(all(got == want), what)
    else
      call check(minval(got) == minval(want) .and. maxval(got) == maxval(want), what)
    end if
  end subroutine expect_blocks

  ! IERR is MPI_SUCCESS, or the refusal of a function rma does not implement
  logical function refused(ierr)
    integer, intent(in) :: ierr
    integer :: cls, e
    refused = .false.
    if (ierr == MPI_SUCCESS) return
    call MPI_ERROR_CLASS(ierr, cls, e)
    refused = cls == MPI_ERR_UNSUPPORTED_OPERATION
    call check(refused, 'an error other than a refusal')
  end function refused
end module breadth_checks

program breadth
  use mpi
  use breadth_checks
  implicit none
  integer :: nprocs, ierr, left, right
  logical :: flag

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  left = mod(me + nprocs - 1, nprocs)
  right = mod(me + 1, nprocs)
  call MPI_PCONTROL(1)

  call v_collectives(nprocs)
  call nonblocking_collectives(nprocs)
  call user_operations(nprocs)
  call probes_and_persistence(left, right)
  call refused_or_right(left, right)
  call cartesian(nprocs, left, right)
  call graphs(left, right)
  call communicators(nprocs)
  call attributes_and_names(nprocs)
  call datatypes()
  call windows()

  call MPI_ALLREDUCE(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, &
                     MPI_COMM_WORLD, ierr)
  if (me == 0) then
    if (failures == 0) then
      print '(a)', ' No Errors'
    else
      print '(a,i0,a)', ' Found ', failures, ' errors'
    end if
  end if
  call MPI_FINALIZE(ierr)
  call MPI_FINALIZED(flag, ierr)
  if (.not. flag) failures = failures + 1
  if (failures /= 0) error stop 1

contains

  subroutine v_collectives(n)
    integer, intent(in) :: n
    integer :: ierr, i, j, root, pair
    integer :: counts(n), displs(n), rcounts(n), rdispls(n), types(n), rtypes(n)
    integer :: wcounts(n)
    integer :: two(2), big(2 * n), tribuf(tri(n)), mine(n), got(n)
    integer :: sendv(n * n), recvv(n * n), total

    ! MPI_SCATTER: two from rank 0
    big = [(i, i = 1, 2 * n)]
    two = -1
    call MPI_SCATTER(big, 2, MPI_INTEGER, two, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. all(two == [2 * me + 1, 2 * me + 2]), &
               'MPI_SCATTER')
    ! MPI_SCATTERV: rank j gets j+1 elements, from the last rank
    root = n - 1
    counts = [(j + 1, j = 0, n - 1)]
    displs = [(tri(j), j = 0, n - 1)]
    tribuf = [(10 * i, i = 1, tri(n))]
    got = -1
    call MPI_SCATTERV(tribuf, counts, displs, MPI_INTEGER, got, me + 1, MPI_INTEGER, &
                      root, MPI_COMM_WORLD, ierr)
    call check(all(got(1:me + 1) == [(10 * (tri(me) + i), i = 1, me + 1)]), 'MPI_SCATTERV')
    call check(all(got(me + 2:) == -1), 'MPI_SCATTERV wrote no more')
    ! MPI_GATHERV and MPI_ALLGATHERV: rank j gives j+1 elements 100*j+i
    mine = [(100 * me + i, i = 1, n)]
    tribuf = -1
    call MPI_GATHERV(mine, me + 1, MPI_INTEGER, tribuf, counts, displs, MPI_INTEGER, &
                     root, MPI_COMM_WORLD, ierr)
    if (me == root) then
      do j = 0, n - 1
        call check(all(tribuf(tri(j) + 1:tri(j) + j + 1) == &
                       [(100 * j + i, i = 1, j + 1)]), 'MPI_GATHERV')
      end do
    end if
    tribuf = -1
    call MPI_ALLGATHERV(mine, me + 1, MPI_INTEGER, tribuf, counts, displs, MPI_INTEGER, &
                        MPI_COMM_WORLD, ierr)
    do j = 0, n - 1
      call check(all(tribuf(tri(j) + 1:tri(j) + j + 1) == [(100 * j + i, i = 1, j + 1)]), &
                 'MPI_ALLGATHERV')
    end do

    ! MPI_ALLTOALL: element j goes to rank j
    mine = [(100 * me + j, j = 0, n - 1)]
    got = -1
    call MPI_ALLTOALL(mine, 1, MPI_INTEGER, got, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call check(all(got == [(100 * j + me, j = 0, n - 1)]), 'MPI_ALLTOALL')
    ! MPI_ALLTOALLV: me+1 copies of 1000*me+j to rank j
    counts = me + 1
    displs = [(j * (me + 1), j = 0, n - 1)]
    do j = 0, n - 1
      sendv(j * (me + 1) + 1:(j + 1) * (me + 1)) = 1000 * me + j
    end do
    rcounts = [(j + 1, j = 0, n - 1)]
    rdispls = [(tri(j), j = 0, n - 1)]
    recvv = -1
    call MPI_ALLTOALLV(sendv, counts, displs, MPI_INTEGER, recvv, rcounts, rdispls, &
                       MPI_INTEGER, MPI_COMM_WORLD, ierr)
    do j = 0, n - 1
      call check(all(recvv(tri(j) + 1:tri(j) + j + 1) == 1000 * j + me), 'MPI_ALLTOALLV')
    end do
    call check(all(recvv(tri(n) + 1:) == -1), 'MPI_ALLTOALLV wrote no more')
    ! MPI_ALLTOALLW: a pair of INTEGERs as one element of a contiguous type, received
    ! as two INTEGERs; displacements in bytes
    call MPI_TYPE_CONTIGUOUS(2, MPI_INTEGER, pair, ierr)
    call MPI_TYPE_COMMIT(pair, ierr)
    do j = 0, n - 1
      sendv(2 * j + 1:2 * j + 2) = [me, j]
    end do
    counts = 1
    displs = [(8 * j, j = 0, n - 1)]
    types = pair
    wcounts = 2
    rtypes = MPI_INTEGER
    recvv = -1
    call MPI_ALLTOALLW(sendv, counts, displs, types, recvv, wcounts, displs, rtypes, &
                       MPI_COMM_WORLD, ierr)
    do j = 0, n - 1
      call check(all(recvv(2 * j + 1:2 * j + 2) == [j, me]), 'MPI_ALLTOALLW')
    end do
    call MPI_TYPE_FREE(pair, ierr)

    ! MPI_SCAN, MPI_EXSCAN (rank 0's result undefined: left alone here)
    two = [me, 1]
    got(1:2) = -1
    call MPI_SCAN(two, got, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(all(got(1:2) == [tri(me), me + 1]), 'MPI_SCAN')
    got(1:2) = -1
    call MPI_EXSCAN(two, got, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (me > 0) call check(all(got(1:2) == [tri(me - 1), me]), 'MPI_EXSCAN')
    ! MPI_REDUCE_SCATTER: rank j gets j+1 sums; MPI_REDUCE_SCATTER_BLOCK: two each
    total = tri(n)
    sendv(1:total) = [(1000 * me + i, i = 1, total)]
    got = -1
    call MPI_REDUCE_SCATTER(sendv, got, rcounts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                            ierr)
    call check(all(got(1:me + 1) == [(1000 * tri(n - 1) + n * (tri(me) + i), &
                                      i = 1, me + 1)]), 'MPI_REDUCE_SCATTER')
    sendv(1:2 * n) = [(me + i, i = 1, 2 * n)]
    two = -1
    call MPI_REDUCE_SCATTER_BLOCK(sendv, two, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                                  ierr)
    call check(all(two == tri(n - 1) + n * [2 * me + 1, 2 * me + 2]), &
               'MPI_REDUCE_SCATTER_BLOCK')
  end subroutine v_collectives

  ! every nonblocking collective, started together and completed every way
  subroutine nonblocking_collectives(n)
    integer, intent(in) :: n
    integer :: ierr, i, j, k, idx, req, reqs(15), st(MPI_STATUS_SIZE)
    ! what MPI writes behind the compiler's back (read after MPI_F_SYNC_REG)
    integer, asynchronous :: bc(3), arsum, rmax, ga(n), gv(tri(n)), ag(n), agv(tri(n))
    integer, asynchronous :: sc, scv(n), a2a(n), a2av(n), a2aw(n), rs(n), rsb, scan_out
    integer :: ar, scan_in
    integer :: counts(n), displs(n), ones(n), seq(n), seqv(tri(n)), intypes(n)
    integer :: sendseq(n), bdispls(n)
    logical :: done

    counts = [(j + 1, j = 0, n - 1)]
    displs = [(tri(j), j = 0, n - 1)]
    ones = 1
    seq = [(j, j = 0, n - 1)]
    intypes = MPI_INTEGER
    seqv = [(i, i = 1, tri(n))]
    sendseq = seq + 100 * me
    bdispls = 4 * seq
    scv = -1
    ga = -1
    gv = -1
    ag = -1
    agv = -1
    a2a = -1
    a2av = -1
    a2aw = -1
    rs = -1
    rmax = -1
    sc = -1
    rsb = -1
    bc = 0
    if (me == n - 1) bc = [4, 5, 6]

    ! MPI_IBARRIER and MPI_IALLREDUCE, each completed with MPI_WAIT
    call MPI_IBARRIER(MPI_COMM_WORLD, req, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    call check(ierr == MPI_SUCCESS .and. req == MPI_REQUEST_NULL, 'MPI_IBARRIER')
    ar = me + 1
    arsum = -1
    call MPI_IALLREDUCE(ar, arsum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    call MPI_WAIT(req, st, ierr)
    call MPI_F_SYNC_REG(arsum)
    call check(req == MPI_REQUEST_NULL .and. arsum == tri(n), 'MPI_IALLREDUCE')

    call MPI_IBCAST(bc, 3, MPI_INTEGER, n - 1, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_IREDUCE(me, rmax, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_IGATHER(me, 1, MPI_INTEGER, ga, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, &
                     reqs(3), ierr)
    call MPI_IGATHERV(seqv(tri(me) + 1), me + 1, MPI_INTEGER, gv, counts, displs, &
                      MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(4), ierr)
    call MPI_IALLGATHER(me, 1, MPI_INTEGER, ag, 1, MPI_INTEGER, MPI_COMM_WORLD, &
                        reqs(5), ierr)
    call MPI_IALLGATHERV(seqv(tri(me) + 1), me + 1, MPI_INTEGER, agv, counts, displs, &
                         MPI_INTEGER, MPI_COMM_WORLD, reqs(6), ierr)
    call MPI_ISCATTER(seq, 1, MPI_INTEGER, sc, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, &
                      reqs(7), ierr)
    call MPI_ISCATTERV(seqv, counts, displs, MPI_INTEGER, scv, me + 1, MPI_INTEGER, 0, &
                       MPI_COMM_WORLD, reqs(8), ierr)
    call MPI_IALLTOALL(sendseq, 1, MPI_INTEGER, a2a, 1, MPI_INTEGER, &
                       MPI_COMM_WORLD, reqs(9), ierr)
    call MPI_IALLTOALLV(sendseq, ones, seq, MPI_INTEGER, a2av, ones, seq, &
                        MPI_INTEGER, MPI_COMM_WORLD, reqs(10), ierr)
    call MPI_IALLTOALLW(sendseq, ones, bdispls, intypes, a2aw, ones, bdispls, &
                        intypes, MPI_COMM_WORLD, reqs(11), ierr)
    call MPI_IREDUCE_SCATTER(seq, rs, ones, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                             reqs(12), ierr)
    call MPI_IREDUCE_SCATTER_BLOCK(seq, rsb, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                                   reqs(13), ierr)
    call check(ierr == MPI_SUCCESS, 'starting the nonblocking collectives')
    ! two more, to be waited for one at a time
    call MPI_IBARRIER(MPI_COMM_WORLD, reqs(14), ierr)
    call MPI_IBARRIER(MPI_COMM_WORLD, reqs(15), ierr)

    ! the first five by MPI_TESTALL, the next eight by MPI_WAITALL, the last two by
    ! MPI_WAITANY
    done = .false.
    do while (.not. done)
      call MPI_TESTALL(5, reqs(1:5), done, MPI_STATUSES_IGNORE, ierr)
    end do
    call MPI_WAITALL(8, reqs(6:13), MPI_STATUSES_IGNORE, ierr)
    k = 0
    do i = 1, 2
      call MPI_WAITANY(15, reqs, idx, st, ierr)
      call check(idx == 14 .or. idx == 15, 'MPI_WAITANY''s index counts from 1')
      k = k + idx
    end do
    call check(k == 29, 'MPI_WAITANY completed each request once')
    call MPI_WAITANY(15, reqs, idx, MPI_STATUS_IGNORE, ierr)
    call check(idx == MPI_UNDEFINED, 'MPI_WAITANY with no active request')
    call check(all(reqs == MPI_REQUEST_NULL), 'every request completed')
    call MPI_F_SYNC_REG(bc)
    call MPI_F_SYNC_REG(rmax)
    call MPI_F_SYNC_REG(ga)
    call MPI_F_SYNC_REG(gv)
    call MPI_F_SYNC_REG(ag)
    call MPI_F_SYNC_REG(agv)
    call MPI_F_SYNC_REG(sc)
    call MPI_F_SYNC_REG(scv)
    call MPI_F_SYNC_REG(a2a)
    call MPI_F_SYNC_REG(a2av)
    call MPI_F_SYNC_REG(a2aw)
    call MPI_F_SYNC_REG(rs)
    call MPI_F_SYNC_REG(rsb)

    call check(all(bc == [4, 5, 6]), 'MPI_IBCAST')
    if (me == 0) then
      call check(rmax == n - 1, 'MPI_IREDUCE')
      call check(all(ga == seq), 'MPI_IGATHER')
      call check(all(gv == seqv), 'MPI_IGATHERV')
    end if
    call check(all(ag == seq), 'MPI_IALLGATHER')
    call check(all(agv == seqv), 'MPI_IALLGATHERV')
    call check(sc == me, 'MPI_ISCATTER')
    call check(all(scv(1:me + 1) == seqv(tri(me) + 1:tri(me) + me + 1)), 'MPI_ISCATTERV')
    call check(all(a2a == 100 * seq + me), 'MPI_IALLTOALL')
    call check(all(a2av == 100 * seq + me), 'MPI_IALLTOALLV')
    call check(all(a2aw == 100 * seq + me), 'MPI_IALLTOALLW')
    call check(rs(1) == n * me, 'MPI_IREDUCE_SCATTER')
    call check(rsb == n * me, 'MPI_IREDUCE_SCATTER_BLOCK')

    ! MPI_ISCAN and MPI_IEXSCAN, refused by rma today
    call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    scan_in = me + 1
    scan_out = -1
    call MPI_ISCAN(scan_in, scan_out, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    if (.not. refused(ierr)) then
      call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      call MPI_F_SYNC_REG(scan_out)
      call check(scan_out == tri(me + 1), 'MPI_ISCAN')
    end if
    scan_out = -1
    call MPI_IEXSCAN(scan_in, scan_out, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    if (.not. refused(ierr)) then
      call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      call MPI_F_SYNC_REG(scan_out)
      if (me > 0) call check(scan_out == tri(me), 'MPI_IEXSCAN')
    end if
    call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
  end subroutine nonblocking_collectives

  subroutine user_operations(n)
    integer, intent(in) :: n
    integer :: ierr, prod, big, mat, req, r
    integer :: mine(4, 2), a(4), b(4), v(3), vmax(3)
    integer, asynchronous :: res(4, 2)
    logical :: commutes

    call MPI_TYPE_CONTIGUOUS(4, MPI_INTEGER, mat, ierr)
    call MPI_TYPE_COMMIT(mat, ierr)
    call MPI_OP_CREATE(matrix_product, .false., prod, ierr)
    call check(ierr == MPI_SUCCESS .and. prod /= MPI_OP_NULL, 'MPI_OP_CREATE')
    commutes = .true.
    call MPI_OP_COMMUTATIVE(prod, commutes, ierr)
    call check(.not. commutes, 'MPI_OP_COMMUTATIVE of a non-commutative operation')
    ! the order matters for these matrices
    call check(any(mat2(rank_matrix(0), rank_matrix(1)) /= &
                   mat2(rank_matrix(1), rank_matrix(0))), 'the test''s matrices commute')

    ! two matrices a rank: its own and its transpose's
    mine(:, 1) = rank_matrix(me)
    mine(:, 2) = [mine(1, 1), mine(3, 1), mine(2, 1), mine(4, 1)]
    res = 0
    call MPI_ALLREDUCE(mine, res, 2, mat, prod, MPI_COMM_WORLD, ierr)
    call check(all(res(:, 1) == product_of(0, n - 1)), 'MPI_ALLREDUCE in rank order')
    res = 0
    call MPI_REDUCE(mine, res, 2, mat, prod, n - 1, MPI_COMM_WORLD, ierr)
    if (me == n - 1) then
      call check(all(res(:, 1) == product_of(0, n - 1)), 'MPI_REDUCE in rank order')
    end if
    res = 0
    call MPI_SCAN(mine, res, 2, mat, prod, MPI_COMM_WORLD, ierr)
    call check(all(res(:, 1) == product_of(0, me)), 'MPI_SCAN in rank order')
    res = 0
    call MPI_EXSCAN(mine, res, 2, mat, prod, MPI_COMM_WORLD, ierr)
    if (me > 0) then
      call check(all(res(:, 1) == product_of(0, me - 1)), 'MPI_EXSCAN in rank order')
    end if
    ! the transposes: the transpose of the product in reverse order
    res = 0
    call MPI_IALLREDUCE(mine, res, 2, mat, prod, MPI_COMM_WORLD, req, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    call MPI_F_SYNC_REG(res)
    a = product_of(0, n - 1)
    call check(all(res(:, 1) == a), 'MPI_IALLREDUCE with a user operation')
    b = [1, 0, 0, 1]
    do r = n - 1, 0, -1
      b = mat2(b, rank_matrix(r))
    end do
    call check(all(res(:, 2) == [b(1), b(3), b(2), b(4)]), 'the transposes'' product')
    ! MPI_REDUCE_LOCAL: b := a * b
    a = rank_matrix(0)
    b = rank_matrix(1)
    seen_type = MPI_DATATYPE_NULL
    call MPI_REDUCE_LOCAL(a, b, 1, mat, prod, ierr)
    call check(ierr == MPI_SUCCESS .and. all(b == mat2(rank_matrix(0), rank_matrix(1))), &
               'MPI_REDUCE_LOCAL')
    call check(seen_type == mat, 'the user function is given the datatype')
    call MPI_OP_FREE(prod, ierr)
    call check(prod == MPI_OP_NULL, 'MPI_OP_FREE')
    call MPI_TYPE_FREE(mat, ierr)

    ! a commutative one
    call MPI_OP_CREATE(larger, .true., big, ierr)
    call MPI_OP_COMMUTATIVE(big, commutes, ierr)
    call check(commutes, 'MPI_OP_COMMUTATIVE of a commutative operation')
    v = [me, -me, 7]
    call MPI_ALLREDUCE(v, vmax, 3, MPI_INTEGER, big, MPI_COMM_WORLD, ierr)
    call check(all(vmax == [n - 1, 0, 7]), 'a commutative user operation')
    v = [-1, 1, 8]
    call MPI_REDUCE_LOCAL(v, vmax, 3, MPI_INTEGER, big, ierr)
    call check(all(vmax == [n - 1, 1, 8]) .and. seen_type == MPI_INTEGER, &
               'MPI_REDUCE_LOCAL with a commutative user operation')
    call MPI_OP_FREE(big, ierr)
  end subroutine user_operations

  subroutine probes_and_persistence(left, right)
    integer, intent(in) :: left, right
    integer :: ierr, n, i, got(3), out(3), st(MPI_STATUS_SIZE), reqs(2), req
    integer, asynchronous :: sbuf, rbuf
    logical :: flag

    ! MPI_PROBE, then MPI_IPROBE, each before its receive
    out = [me, me, me]
    call MPI_ISEND(out, 3, MPI_INTEGER, right, 21, MPI_COMM_WORLD, req, ierr)
    call MPI_PROBE(left, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
    call MPI_GET_COUNT(st, MPI_INTEGER, n, ierr)
    call check(st(MPI_SOURCE) == left .and. st(MPI_TAG) == 21 .and. n == 3, 'MPI_PROBE')
    call MPI_RECV(got, 3, MPI_INTEGER, left, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call check(all(got == left), 'the probed message')
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    call MPI_ISEND(out, 2, MPI_INTEGER, right, 22, MPI_COMM_WORLD, req, ierr)
    flag = .false.
    do while (.not. flag)
      call MPI_IPROBE(MPI_ANY_SOURCE, 22, MPI_COMM_WORLD, flag, st, ierr)
    end do
    call MPI_GET_COUNT(st, MPI_INTEGER, n, ierr)
    call check(st(MPI_SOURCE) == left .and. n == 2, 'MPI_IPROBE')
    call MPI_RECV(got, 3, MPI_INTEGER, left, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    call MPI_IPROBE(left, 99, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE, ierr)
    call check(ierr == MPI_SUCCESS .and. .not. flag, 'MPI_IPROBE with nothing there')
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)

    ! persistent requests round the ring, started three times
    call MPI_RECV_INIT(rbuf, 1, MPI_INTEGER, left, 23, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_SEND_INIT(sbuf, 1, MPI_INTEGER, right, 23, MPI_COMM_WORLD, reqs(2), ierr)
    do i = 1, 3
      sbuf = 100 * me + i
      rbuf = -1
      ! the compiler cannot see MPI read SBUF and write RBUF behind its back
      call MPI_F_SYNC_REG(sbuf)
      call MPI_F_SYNC_REG(rbuf)
      if (i == 2) then
        call MPI_START(reqs(1), ierr)
        call MPI_START(reqs(2), ierr)
      else
        call MPI_STARTALL(2, reqs, ierr)
      end if
      call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
      call MPI_F_SYNC_REG(rbuf)
      call check(rbuf == 100 * left + i, 'persistent requests round a ring')
    end do
    call check(all(reqs /= MPI_REQUEST_NULL), 'persistent requests outlive their waits')
    call MPI_REQUEST_FREE(reqs(1), ierr)
    call MPI_REQUEST_FREE(reqs(2), ierr)
    call check(all(reqs == MPI_REQUEST_NULL), 'MPI_REQUEST_FREE of persistent requests')
  end subroutine probes_and_persistence

  ! the C functions rma refuses: the refusal, or (once implemented) the results
  subroutine refused_or_right(left, right)
    integer, intent(in) :: left, right
    integer :: ierr, idx, n, i, k, reqs(2), nulls(2), st(MPI_STATUS_SIZE)
    integer, asynchronous :: got, got2
    integer :: indices(2)
    logical :: flag

    call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    nulls = MPI_REQUEST_NULL

    ! MPI_TESTANY of a receive
    got = -1
    call MPI_IRECV(got, 1, MPI_INTEGER, left, 31, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_SEND(me, 1, MPI_INTEGER, right, 31, MPI_COMM_WORLD, ierr)
    flag = .false.
    do while (.not. flag)
      call MPI_TESTANY(1, reqs, idx, flag, st, ierr)
      if (refused(ierr)) exit
    end do
    if (flag) then
      call check(idx == 1 .and. st(MPI_SOURCE) == left .and. reqs(1) == MPI_REQUEST_NULL, &
                 'MPI_TESTANY')
    else
      call MPI_WAIT(reqs(1), MPI_STATUS_IGNORE, ierr)
    end if
    call MPI_F_SYNC_REG(got)
    call check(got == left, 'the message MPI_TESTANY tested')
    call MPI_TESTANY(2, nulls, idx, flag, MPI_STATUS_IGNORE, ierr)
    if (.not. refused(ierr)) then
      call check(flag .and. idx == MPI_UNDEFINED, 'MPI_TESTANY with no active request')
    end if

    ! MPI_WAITSOME of two receives
    got = -1
    got2 = -1
    call MPI_IRECV(got, 1, MPI_INTEGER, left, 32, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_IRECV(got2, 1, MPI_INTEGER, right, 33, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_SEND(me, 1, MPI_INTEGER, right, 32, MPI_COMM_WORLD, ierr)
    call MPI_SEND(me, 1, MPI_INTEGER, left, 33, MPI_COMM_WORLD, ierr)
    k = 0
    do while (any(reqs /= MPI_REQUEST_NULL))
      call MPI_WAITSOME(2, reqs, n, indices, MPI_STATUSES_IGNORE, ierr)
      if (refused(ierr)) then
        call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
        k = 3
        exit
      end if
      do i = 1, n
        call check(indices(i) == 1 .or. indices(i) == 2, &
                   'MPI_WAITSOME''s indices count from 1')
        k = k + indices(i)
      end do
    end do
    call MPI_F_SYNC_REG(got)
    call MPI_F_SYNC_REG(got2)
    call check(k == 3 .and. got == left .and. got2 == right, 'MPI_WAITSOME')
    call MPI_TESTSOME(2, nulls, n, indices, MPI_STATUSES_IGNORE, ierr)
    if (.not. refused(ierr)) then
      call check(n == MPI_UNDEFINED, 'MPI_TESTSOME with no active request')
    end if

    ! MPI_CANCEL of a receive nobody sends to, then MPI_TEST_CANCELLED
    call MPI_IRECV(got, 1, MPI_INTEGER, left, 34, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_CANCEL(reqs(1), ierr)
    if (refused(ierr)) then
      ! still pending: satisfy it
      call MPI_SEND(me, 1, MPI_INTEGER, right, 34, MPI_COMM_WORLD, ierr)
      call MPI_WAIT(reqs(1), st, ierr)
      call MPI_TEST_CANCELLED(st, flag, ierr)
      if (.not. refused(ierr)) call check(.not. flag, 'MPI_TEST_CANCELLED of a receive')
    else
      call MPI_WAIT(reqs(1), st, ierr)
      call MPI_TEST_CANCELLED(st, flag, ierr)
      if (.not. refused(ierr)) call check(flag, 'MPI_TEST_CANCELLED after MPI_CANCEL')
    end if
    call check(reqs(1) == MPI_REQUEST_NULL, 'the cancelled request completed')
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
  end subroutine refused_or_right

  subroutine cartesian(n, left, right)
    integer, intent(in) :: n, left, right
    integer :: ierr, ring, grid, col, src, dst, k, r, got, cme, csize
    integer :: dims(3), coords(3), d1(1), d2(2), expect2(2)
    logical :: periods(3)

    ! MPI_DIMS_CREATE
    d1 = 0
    call MPI_DIMS_CREATE(n, 1, d1, ierr)
    call check(d1(1) == n, 'MPI_DIMS_CREATE in one dimension')
    d2 = 0
    call MPI_DIMS_CREATE(n, 2, d2, ierr)
    select case (n)
    case (4)
      expect2 = [2, 2]
    case default
      expect2 = [n, 1]
    end select
    if (n <= 4) call check(all(d2 == expect2), 'MPI_DIMS_CREATE in two dimensions')
    call check(product(d2) == n .and. d2(1) >= d2(2), 'MPI_DIMS_CREATE''s product')

    ! a periodic ring: rma keeps the ranks, so MPI_CART_SHIFT gives the neighbours
    call MPI_CART_CREATE(MPI_COMM_WORLD, 1, [n], [.true.], .false., ring, ierr)
    call check(ierr == MPI_SUCCESS .and. ring /= MPI_COMM_NULL, 'MPI_CART_CREATE')
    call MPI_TOPO_TEST(ring, k, ierr)
    call check(k == MPI_CART, 'MPI_TOPO_TEST of a Cartesian communicator')
    call MPI_CARTDIM_GET(ring, k, ierr)
    call check(k == 1, 'MPI_CARTDIM_GET')
    dims = -1
    coords = -1
    periods = .false.
    call MPI_CART_GET(ring, 1, dims, periods, coords, ierr)
    call check(dims(1) == n .and. periods(1) .and. coords(1) == me, &
               'MPI_CART_GET of the ring')
    call MPI_CART_SHIFT(ring, 0, 1, src, dst, ierr)
    call check(src == left .and. dst == right, 'MPI_CART_SHIFT round the ring')
    call MPI_SENDRECV(me, 1, MPI_INTEGER, dst, 41, got, 1, MPI_INTEGER, src, 41, ring, &
                      MPI_STATUS_IGNORE, ierr)
    call check(got == left, 'a message to MPI_CART_SHIFT''s neighbour')
    call MPI_CART_RANK(ring, [me + 1], r, ierr)
    call check(r == right, 'MPI_CART_RANK wraps round a periodic dimension')
    call MPI_CART_COORDS(ring, right, 1, coords, ierr)
    call check(coords(1) == right, 'MPI_CART_COORDS')
    call neighborhood(ring, n, left, right)

    ! a grid, periodic in its second dimension only, and its columns
    call MPI_CART_CREATE(MPI_COMM_WORLD, 2, d2, [.false., .true.], .true., grid, ierr)
    call MPI_COMM_RANK(grid, r, ierr)
    dims = -1
    coords = -1
    periods = [.true., .false., .false.]
    call MPI_CART_GET(grid, 3, dims, periods, coords, ierr)
    call check(all(dims(1:2) == d2) .and. .not. periods(1) .and. periods(2), &
               'MPI_CART_GET of the grid')
    call check(coords(1) * d2(2) + coords(2) == r, 'the grid is in row-major order')
    call MPI_CART_SHIFT(grid, 0, 1, src, dst, ierr)
    if (coords(1) == 0) call check(src == MPI_PROC_NULL, 'MPI_CART_SHIFT off the grid')
    if (coords(1) == d2(1) - 1) then
      call check(dst == MPI_PROC_NULL, 'MPI_CART_SHIFT off the end')
    end if
    call MPI_CART_SUB(grid, [.true., .false.], col, ierr)
    call MPI_COMM_SIZE(col, csize, ierr)
    call MPI_COMM_RANK(col, cme, ierr)
    call MPI_CARTDIM_GET(col, k, ierr)
    call check(csize == d2(1) .and. cme == coords(1) .and. k == 1, 'MPI_CART_SUB')
    call MPI_COMM_FREE(col, ierr)
    call MPI_COMM_FREE(grid, ierr)
    call MPI_COMM_FREE(ring, ierr)
  end subroutine cartesian

  ! the neighborhood collectives, blocking and not, over RING, a periodic ring whose
  ! neighbours are [left, right]; a refusal (C's before rma implemented them)
  ! passes. On two ranks both neighbours are one rank, and which of its blocks
  ! arrives first is left open.
  subroutine neighborhood(ring, n, left, right)
    integer, intent(in) :: ring, n, left, right
    integer :: ierr, req, i, sendnb(2), ones(2), d01(2), d10(2), types(2)
    integer, asynchronous :: nb(2)
    integer(kind=MPI_ADDRESS_KIND) :: b01(2), b10(2)
    logical :: blocking, ok

    call MPI_COMM_SET_ERRHANDLER(ring, MPI_ERRORS_RETURN, ierr)
    sendnb = [100 * me + 1, 100 * me + 2]
    ones = 1
    d01 = [0, 1]
    d10 = [1, 0]
    b01 = [0, 4]
    b10 = [4, 0]
    types = MPI_INTEGER
    req = MPI_REQUEST_NULL
    do i = 1, 2
      blocking = i == 1
      ! each neighbour's rank, in order, then in the reverse order
      nb = -1
      if (blocking) then
        call MPI_NEIGHBOR_ALLGATHER(me, 1, MPI_INTEGER, nb, 1, MPI_INTEGER, ring, ierr)
      else
        call MPI_INEIGHBOR_ALLGATHER(me, 1, MPI_INTEGER, nb, 1, MPI_INTEGER, ring, req, &
                                     ierr)
      end if
      ok = completed(ierr, req, blocking)
      call MPI_F_SYNC_REG(nb)
      if (ok) call check(all(nb == [left, right]), 'MPI_(I)NEIGHBOR_ALLGATHER')
      nb = -1
      if (blocking) then
        call MPI_NEIGHBOR_ALLGATHERV(me, 1, MPI_INTEGER, nb, ones, d10, MPI_INTEGER, &
                                     ring, ierr)
      else
        call MPI_INEIGHBOR_ALLGATHERV(me, 1, MPI_INTEGER, nb, ones, d10, MPI_INTEGER, &
                                      ring, req, ierr)
      end if
      ok = completed(ierr, req, blocking)
      call MPI_F_SYNC_REG(nb)
      if (ok) call check(all(nb == [right, left]), 'MPI_(I)NEIGHBOR_ALLGATHERV')
      ! block k goes to neighbour k: the left one's second, the right one's first
      nb = -1
      if (blocking) then
        call MPI_NEIGHBOR_ALLTOALL(sendnb, 1, MPI_INTEGER, nb, 1, MPI_INTEGER, ring, ierr)
      else
        call MPI_INEIGHBOR_ALLTOALL(sendnb, 1, MPI_INTEGER, nb, 1, MPI_INTEGER, ring, &
                                    req, ierr)
      end if
      ok = completed(ierr, req, blocking)
      call MPI_F_SYNC_REG(nb)
      if (ok) call expect_blocks(nb, [100 * left + 2, 100 * right + 1], n, &
                                 'MPI_(I)NEIGHBOR_ALLTOALL')
      nb = -1
      if (blocking) then
        call MPI_NEIGHBOR_ALLTOALLV(sendnb, ones, d01, MPI_INTEGER, nb, ones, d10, &
                                    MPI_INTEGER, ring, ierr)
      else
        call MPI_INEIGHBOR_ALLTOALLV(sendnb, ones, d01, MPI_INTEGER, nb, ones, d10, &
                                     MPI_INTEGER, ring, req, ierr)
      end if
      ok = completed(ierr, req, blocking)
      call MPI_F_SYNC_REG(nb)
      if (ok) call expect_blocks(nb, [100 * right + 1, 100 * left + 2], n, &
                                 'MPI_(I)NEIGHBOR_ALLTOALLV')
      nb = -1
      if (blocking) then
        call MPI_NEIGHBOR_ALLTOALLW(sendnb, ones, b01, types, nb, ones, b10, types, &
                                    ring, ierr)
      else
        call MPI_INEIGHBOR_ALLTOALLW(sendnb, ones, b01, types, nb, ones, b10, types, &
                                     ring, req, ierr)
      end if
      ok = completed(ierr, req, blocking)
      call MPI_F_SYNC_REG(nb)
      if (ok) call expect_blocks(nb, [100 * right + 1, 100 * left + 2], n, &
                                 'MPI_(I)NEIGHBOR_ALLTOALLW')
    end do
  end subroutine neighborhood

  subroutine graphs(left, right)
    integer, intent(in) :: left, right
    integer :: ierr, g, indeg, outdeg, k
    integer :: srcs(2), dsts(2), sw(2), dw(2)
    logical :: weighted

    ! a ring, unweighted
    call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, [left], MPI_UNWEIGHTED, 1, &
                                        [right], MPI_UNWEIGHTED, MPI_INFO_NULL, .false., &
                                        g, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_DIST_GRAPH_CREATE_ADJACENT')
    call MPI_TOPO_TEST(g, k, ierr)
    call check(k == MPI_DIST_GRAPH, 'MPI_TOPO_TEST of a distributed graph')
    weighted = .true.
    call MPI_DIST_GRAPH_NEIGHBORS_COUNT(g, indeg, outdeg, weighted, ierr)
    call check(indeg == 1 .and. outdeg == 1 .and. .not. weighted, &
               'MPI_DIST_GRAPH_NEIGHBORS_COUNT, unweighted')
    srcs = -1
    dsts = -1
    call MPI_DIST_GRAPH_NEIGHBORS(g, 2, srcs, MPI_UNWEIGHTED, 2, dsts, MPI_UNWEIGHTED, &
                                  ierr)
    call check(srcs(1) == left .and. dsts(1) == right .and. srcs(2) == -1, &
               'MPI_DIST_GRAPH_NEIGHBORS, unweighted')
    call check(all(MPI_UNWEIGHTED == 0), 'MPI_UNWEIGHTED left alone')
    call MPI_COMM_FREE(g, ierr)

    ! the same ring, weighted: the edge from a to b weighs 10*a+b
    call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, [left], [10 * left + me], 1, &
                                        [right], [10 * me + right], MPI_INFO_NULL, &
                                        .false., g, ierr)
    call MPI_DIST_GRAPH_NEIGHBORS_COUNT(g, indeg, outdeg, weighted, ierr)
    call check(weighted, 'MPI_DIST_GRAPH_NEIGHBORS_COUNT, weighted')
    sw = -1
    dw = -1
    call MPI_DIST_GRAPH_NEIGHBORS(g, 1, srcs, sw, 1, dsts, dw, ierr)
    call check(sw(1) == 10 * left + me .and. dw(1) == 10 * me + right .and. &
               sw(2) == -1, 'MPI_DIST_GRAPH_NEIGHBORS, weighted')
    call MPI_COMM_FREE(g, ierr)

    ! MPI_DIST_GRAPH_CREATE: every rank but 0 gives the edge to its right neighbour,
    ! of weight 7; rank 0 gives none, with MPI_WEIGHTS_EMPTY
    if (me == 0) then
      call MPI_DIST_GRAPH_CREATE(MPI_COMM_WORLD, 0, srcs, srcs, dsts, MPI_WEIGHTS_EMPTY, &
                                 MPI_INFO_NULL, .false., g, ierr)
    else
      call MPI_DIST_GRAPH_CREATE(MPI_COMM_WORLD, 1, [me], [1], [right], [7], &
                                 MPI_INFO_NULL, .false., g, ierr)
    end if
    call check(ierr == MPI_SUCCESS, 'MPI_DIST_GRAPH_CREATE')
    call MPI_DIST_GRAPH_NEIGHBORS_COUNT(g, indeg, outdeg, weighted, ierr)
    call check(weighted .and. indeg == merge(0, 1, me == 1) .and. &
               outdeg == merge(0, 1, me == 0), 'MPI_DIST_GRAPH_CREATE''s degrees')
    srcs = -1
    sw = -1
    call MPI_DIST_GRAPH_NEIGHBORS(g, 2, srcs, sw, 2, dsts, dw, ierr)
    if (me /= 1) call check(srcs(1) == left .and. sw(1) == 7, &
                            'MPI_DIST_GRAPH_CREATE''s edges')
    call MPI_COMM_FREE(g, ierr)
  end subroutine graphs

  subroutine communicators(n)
    integer, intent(in) :: n
    integer :: ierr, wg, evens, odds, both, g, res, ec, oc, s, r, half, inter, merged
    integer :: ranges(3, 1)
    logical :: flag

    call MPI_COMM_GROUP(MPI_COMM_WORLD, wg, ierr)
    ranges(:, 1) = [0, n - 1, 2]
    call MPI_GROUP_RANGE_INCL(wg, 1, ranges, evens, ierr)
    call MPI_GROUP_RANGE_EXCL(wg, 1, ranges, odds, ierr)
    call MPI_GROUP_SIZE(evens, s, ierr)
    call check(s == (n + 1) / 2, 'MPI_GROUP_RANGE_INCL')
    call MPI_GROUP_SIZE(odds, s, ierr)
    call check(s == n / 2, 'MPI_GROUP_RANGE_EXCL')
    call MPI_GROUP_UNION(evens, odds, both, ierr)
    call MPI_GROUP_COMPARE(both, wg, res, ierr)
    call check(res == merge(MPI_IDENT, MPI_SIMILAR, n <= 2), 'MPI_GROUP_UNION')
    call MPI_GROUP_FREE(both, ierr)
    call MPI_GROUP_INTERSECTION(wg, evens, g, ierr)
    call MPI_GROUP_COMPARE(g, evens, res, ierr)
    call check(res == MPI_IDENT, 'MPI_GROUP_INTERSECTION')
    call MPI_GROUP_FREE(g, ierr)
    call MPI_GROUP_DIFFERENCE(wg, evens, g, ierr)
    call MPI_GROUP_COMPARE(g, odds, res, ierr)
    call check(res == MPI_IDENT, 'MPI_GROUP_DIFFERENCE')
    call MPI_GROUP_FREE(g, ierr)
    call MPI_GROUP_COMPARE(evens, odds, res, ierr)
    call check(res == MPI_UNEQUAL, 'MPI_GROUP_COMPARE')

    ! MPI_COMM_CREATE over the world, MPI_COMM_CREATE_GROUP by the odd ranks alone
    call MPI_COMM_CREATE(MPI_COMM_WORLD, evens, ec, ierr)
    if (mod(me, 2) == 0) then
      call MPI_COMM_SIZE(ec, s, ierr)
      call MPI_COMM_RANK(ec, r, ierr)
      call check(s == (n + 1) / 2 .and. r == me / 2, 'MPI_COMM_CREATE')
      call MPI_COMM_FREE(ec, ierr)
    else
      call check(ec == MPI_COMM_NULL, 'MPI_COMM_CREATE outside the group')
      call MPI_COMM_CREATE_GROUP(MPI_COMM_WORLD, odds, 5, oc, ierr)
      call MPI_COMM_SIZE(oc, s, ierr)
      call MPI_COMM_RANK(oc, r, ierr)
      call check(s == n / 2 .and. r == me / 2, 'MPI_COMM_CREATE_GROUP')
      call MPI_COMM_FREE(oc, ierr)
    end if
    call MPI_GROUP_FREE(evens, ierr)
    call MPI_GROUP_FREE(odds, ierr)
    call MPI_GROUP_FREE(wg, ierr)

    ! the even and the odd ranks, joined by an intercommunicator and merged
    call MPI_COMM_TEST_INTER(MPI_COMM_WORLD, flag, ierr)
    call check(.not. flag, 'MPI_COMM_TEST_INTER of MPI_COMM_WORLD')
    call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(me, 2), me, half, ierr)
    call MPI_INTERCOMM_CREATE(half, 0, MPI_COMM_WORLD, 1 - mod(me, 2), 77, inter, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_INTERCOMM_CREATE')
    call MPI_COMM_TEST_INTER(inter, flag, ierr)
    call MPI_COMM_REMOTE_SIZE(inter, s, ierr)
    call check(flag .and. s == merge(n / 2, (n + 1) / 2, mod(me, 2) == 0), &
               'MPI_COMM_TEST_INTER and MPI_COMM_REMOTE_SIZE')
    call MPI_INTERCOMM_MERGE(inter, mod(me, 2) == 1, merged, ierr)
    call MPI_COMM_SIZE(merged, s, ierr)
    call MPI_COMM_RANK(merged, r, ierr)
    call check(s == n .and. r == merge(me / 2, (n + 1) / 2 + me / 2, mod(me, 2) == 0), &
               'MPI_INTERCOMM_MERGE puts the low group first')
    call MPI_COMM_FREE(merged, ierr)
    call MPI_COMM_FREE(inter, ierr)
    call MPI_COMM_FREE(half, ierr)
  end subroutine communicators

  subroutine attributes_and_names(n)
    integer, intent(in) :: n
    integer :: ierr, dup, r, tag, got
    integer(kind=MPI_ADDRESS_KIND) :: v
    logical :: flag
    character(len=MPI_MAX_OBJECT_NAME) :: name
    character(len=3) :: short

    ! predefined attributes: their values, not C's pointers to them
    v = -1
    call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_TAG_UB, v, flag, ierr)
    call check(ierr == MPI_SUCCESS .and. flag .and. v >= 32767 .and. v <= huge(0), &
               'MPI_TAG_UB')
    tag = int(v)
    call MPI_SENDRECV(me, 1, MPI_INTEGER, me, tag, got, 1, MPI_INTEGER, me, tag, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call check(ierr == MPI_SUCCESS .and. got == me, 'a message tagged MPI_TAG_UB')
    call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, v, flag, ierr)
    call check(flag .and. v == n, 'MPI_UNIVERSE_SIZE')
    call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, v, flag, ierr)
    call check(flag .and. (v == 0 .or. v == 1), 'MPI_WTIME_IS_GLOBAL')
    call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_APPNUM, v, flag, ierr)
    call check(ierr == MPI_SUCCESS .and. (.not. flag .or. v >= 0), 'MPI_APPNUM')

    ! names
    call MPI_COMM_GET_NAME(MPI_COMM_WORLD, name, r, ierr)
    call check(name == 'MPI_COMM_WORLD' .and. r == 14, 'MPI_COMM_WORLD''s name')
    call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
    call MPI_COMM_SET_NAME(dup, 'the twin   ', ierr)
    name = repeat('#', len(name))
    call MPI_COMM_GET_NAME(dup, name, r, ierr)
    call check(name == 'the twin' .and. r == 8, 'MPI_COMM_SET_NAME and MPI_COMM_GET_NAME')
    call MPI_COMM_GET_NAME(dup, short, r, ierr)
    call check(short == 'the' .and. r == 3, 'MPI_COMM_GET_NAME into 3 characters')

    ! an error handler called by the program: MPI_ERRORS_RETURN returns
    call MPI_COMM_SET_ERRHANDLER(dup, MPI_ERRORS_RETURN, ierr)
    call MPI_COMM_CALL_ERRHANDLER(dup, MPI_ERR_OTHER, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_COMM_CALL_ERRHANDLER')
    call MPI_COMM_FREE(dup, ierr)
  end subroutine attributes_and_names

  subroutine datatypes()
    integer :: ierr, t, ni, na, nd, comb, r
    integer :: ints(4), types(2)
    integer(kind=MPI_ADDRESS_KIND) :: addrs(2), a, b
    integer(kind=MPI_COUNT_KIND) :: sx
    character(len=MPI_MAX_OBJECT_NAME) :: name

    call MPI_TYPE_SIZE_X(MPI_DOUBLE_PRECISION, sx, ierr)
    call check(sx == 8, 'MPI_TYPE_SIZE_X')
    call MPI_TYPE_GET_ENVELOPE(MPI_INTEGER, ni, na, nd, comb, ierr)
    call check(comb == MPI_COMBINER_NAMED, 'MPI_TYPE_GET_ENVELOPE of MPI_INTEGER')

    call MPI_TYPE_VECTOR(3, 2, 4, MPI_REAL, t, ierr)
    call MPI_TYPE_SIZE_X(t, sx, ierr)
    call check(sx == 24, 'MPI_TYPE_SIZE_X of a vector')
    call MPI_TYPE_GET_ENVELOPE(t, ni, na, nd, comb, ierr)
    call check(ni == 3 .and. na == 0 .and. nd == 1 .and. comb == MPI_COMBINER_VECTOR, &
               'MPI_TYPE_GET_ENVELOPE of a vector')
    ints = -1
    types = -1
    call MPI_TYPE_GET_CONTENTS(t, 4, 2, 2, ints, addrs, types, ierr)
    call check(all(ints(1:3) == [3, 2, 4]) .and. types(1) == MPI_REAL, &
               'MPI_TYPE_GET_CONTENTS of a vector')
    call MPI_TYPE_SET_NAME(t, 'pairs of three  ', ierr)
    name = ''
    call MPI_TYPE_GET_NAME(t, name, r, ierr)
    call check(name == 'pairs of three' .and. r == 14, &
               'MPI_TYPE_SET_NAME and MPI_TYPE_GET_NAME')
    call MPI_TYPE_FREE(t, ierr)

    ! MPI-1's forms, with default INTEGER strides and displacements
    call MPI_TYPE_HVECTOR(2, 1, 16, MPI_DOUBLE_PRECISION, t, ierr)
    call MPI_TYPE_GET_ENVELOPE(t, ni, na, nd, comb, ierr)
    call check(ni == 2 .and. na == 1 .and. nd == 1 .and. comb == MPI_COMBINER_HVECTOR, &
               'MPI_TYPE_HVECTOR''s envelope')
    call MPI_TYPE_GET_CONTENTS(t, 4, 2, 2, ints, addrs, types, ierr)
    call check(all(ints(1:2) == [2, 1]) .and. addrs(1) == 16 .and. &
               types(1) == MPI_DOUBLE_PRECISION, 'MPI_TYPE_HVECTOR''s contents')
    call MPI_TYPE_FREE(t, ierr)
    call MPI_TYPE_HINDEXED(2, [1, 2], [0, 12], MPI_INTEGER, t, ierr)
    call MPI_TYPE_GET_ENVELOPE(t, ni, na, nd, comb, ierr)
    call check(ni == 3 .and. na == 2 .and. nd == 1 .and. comb == MPI_COMBINER_HINDEXED, &
               'MPI_TYPE_HINDEXED''s envelope')
    call MPI_TYPE_GET_CONTENTS(t, 4, 2, 2, ints, addrs, types, ierr)
    call check(all(ints(1:3) == [2, 1, 2]) .and. all(addrs == [0, 12]) .and. &
               types(1) == MPI_INTEGER, 'MPI_TYPE_HINDEXED''s contents')
    call MPI_TYPE_SIZE_X(t, sx, ierr)
    call check(sx == 12, 'MPI_TYPE_HINDEXED''s size')
    call MPI_TYPE_FREE(t, ierr)

    a = 4096
    b = MPI_AINT_ADD(a, 24_MPI_ADDRESS_KIND)
    call check(b == 4120 .and. MPI_AINT_DIFF(b, a) == 24, 'MPI_AINT_ADD and MPI_AINT_DIFF')
  end subroutine datatypes

  subroutine windows()
    use, intrinsic :: iso_c_binding, only: c_ptr
    integer :: ierr, win, r, model
    integer, target :: mem(10)
    integer(kind=MPI_ADDRESS_KIND) :: v, addr
    logical :: flag
    type(c_ptr) :: cp
    character(len=MPI_MAX_OBJECT_NAME) :: name

    mem = 0
    call MPI_WIN_CREATE(mem, 40_MPI_ADDRESS_KIND, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &
                        win, ierr)
    call MPI_GET_ADDRESS(mem, addr, ierr)
    v = -1
    call MPI_WIN_GET_ATTR(win, MPI_WIN_BASE, v, flag, ierr)
    call check(ierr == MPI_SUCCESS .and. flag .and. v == addr, 'MPI_WIN_BASE')
    call MPI_WIN_GET_ATTR(win, MPI_WIN_SIZE, v, flag, ierr)
    call check(flag .and. v == 40, 'MPI_WIN_SIZE')
    call MPI_WIN_GET_ATTR(win, MPI_WIN_DISP_UNIT, v, flag, ierr)
    call check(flag .and. v == 4, 'MPI_WIN_DISP_UNIT')
    call MPI_WIN_GET_ATTR(win, MPI_WIN_CREATE_FLAVOR, v, flag, ierr)
    call check(flag .and. v == MPI_WIN_FLAVOR_CREATE, 'MPI_WIN_CREATE_FLAVOR')
    call MPI_WIN_GET_ATTR(win, MPI_WIN_MODEL, v, flag, ierr)
    model = int(v)
    call check(flag .and. (model == MPI_WIN_UNIFIED .or. model == MPI_WIN_SEPARATE), &
               'MPI_WIN_MODEL')
    call MPI_WIN_SET_NAME(win, 'ten integers', ierr)
    call MPI_WIN_GET_NAME(win, name, r, ierr)
    call check(name == 'ten integers' .and. r == 12, &
               'MPI_WIN_SET_NAME and MPI_WIN_GET_NAME')
    call MPI_WIN_SET_ERRHANDLER(win, MPI_ERRORS_RETURN, ierr)
    call MPI_WIN_CALL_ERRHANDLER(win, MPI_ERR_OTHER, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_WIN_CALL_ERRHANDLER')
    call MPI_WIN_FREE(win, ierr)

    call MPI_WIN_ALLOCATE(24_MPI_ADDRESS_KIND, 8, MPI_INFO_NULL, MPI_COMM_WORLD, cp, &
                          win, ierr)
    call MPI_WIN_GET_ATTR(win, MPI_WIN_BASE, v, flag, ierr)
    call check(flag .and. v == transfer(cp, v), 'MPI_WIN_BASE of an allocated window')
    call MPI_WIN_GET_ATTR(win, MPI_WIN_CREATE_FLAVOR, v, flag, ierr)
    call check(flag .and. v == MPI_WIN_FLAVOR_ALLOCATE, 'MPI_WIN_CREATE_FLAVOR, allocated')
    call MPI_WIN_GET_ATTR(win, MPI_WIN_DISP_UNIT, v, flag, ierr)
    call check(flag .and. v == 8, 'MPI_WIN_DISP_UNIT, allocated')
    call MPI_WIN_FREE(win, ierr)
  end subroutine windows

end program breadth
