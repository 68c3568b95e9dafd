! A tour of rma's Fortran binding through the mpi module: the environment,
! strings going both ways, communicators and groups, collectives (MPI_IN_PLACE
! and LOGICAL reductions among them), messages and statuses, datatype
! constructors and their sizes and extents, info objects, every window flavor
! (TYPE(C_PTR) and address-integer base pointers, shared memory through
! C_F_POINTER, dynamic windows with MPI_GET_ADDRESS), every synchronization
! (fence, post/start/complete/wait/test, lock, lock_all, the flushes, sync),
! every one-sided call with its request form, MPI_BOTTOM as an origin, and
! errors returned through MPI_ERRORS_RETURN.
!
! Each check that fails prints what failed; rank 0 prints "No Errors" when
! every rank's checks pass, and the program stops with a failure status
! otherwise. Runs on 2 or more ranks.
module tour_checks
  implicit none
  integer :: failures = 0
  integer :: me = -1
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a,i0,a,a)', 'rank ', me, ' failed: ', what
    end if
  end subroutine check
end module tour_checks

program tour
  use mpi
  use tour_checks
  implicit none
  integer :: nprocs, ierr, provided, left, right
  logical :: flag

  call MPI_INIT_THREAD(MPI_THREAD_SINGLE, provided, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_INIT_THREAD')
  call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  left = mod(me + nprocs - 1, nprocs)
  right = mod(me + 1, nprocs)

  call environment(provided)
  call communicators(nprocs)
  call collectives(nprocs)
  call messages(left, right)
  call datatypes()
  call infos()
  call fences_and_bottom(left, right)
  call active_target(left, right)
  call passive_target(left, right, nprocs)
  call requests(left, right)
  call shared_memory(nprocs)
  call dynamic_windows(left, right, nprocs)
  call errors_returned(nprocs)

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

  subroutine environment(provided)
    integer, intent(in) :: provided
    integer :: ierr, v, sv, q, n, cls
    logical :: flag
    character(len=MPI_MAX_PROCESSOR_NAME) :: host
    character(len=MPI_MAX_ERROR_STRING) :: text
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
    character(len=4) :: short
    double precision :: t0, t1

    call MPI_INITIALIZED(flag, ierr)
    call check(flag, 'MPI_INITIALIZED')
    call MPI_FINALIZED(flag, ierr)
    call check(.not. flag, 'MPI_FINALIZED before MPI_FINALIZE')
    call MPI_QUERY_THREAD(q, ierr)
    call check(q == provided .and. q >= MPI_THREAD_SINGLE, 'MPI_QUERY_THREAD')
    call MPI_IS_THREAD_MAIN(flag, ierr)
    call check(flag, 'MPI_IS_THREAD_MAIN')
    call MPI_GET_VERSION(v, sv, ierr)
    call check(v == MPI_VERSION .and. sv == MPI_SUBVERSION, 'MPI_GET_VERSION')

    host = repeat('#', len(host))
    call MPI_GET_PROCESSOR_NAME(host, n, ierr)
    call check(ierr == MPI_SUCCESS .and. n > 0 .and. n <= MPI_MAX_PROCESSOR_NAME, &
               'MPI_GET_PROCESSOR_NAME length')
    call check(len_trim(host) == n .and. index(host, '#') == 0, &
               'MPI_GET_PROCESSOR_NAME pads with blanks')
    call MPI_GET_LIBRARY_VERSION(lib, n, ierr)
    call check(ierr == MPI_SUCCESS .and. n > 0 .and. len_trim(lib) == n, &
               'MPI_GET_LIBRARY_VERSION')

    call MPI_ERROR_STRING(MPI_ERR_WIN, text, n, ierr)
    call check(ierr == MPI_SUCCESS .and. n > 0 .and. len_trim(text) == n, &
               'MPI_ERROR_STRING')
    ! a string shorter than the message: cut to fit
    call MPI_ERROR_STRING(MPI_ERR_WIN, short, n, ierr)
    call check(n == 4 .and. short == text(1:4), 'MPI_ERROR_STRING into 4 characters')
    call MPI_ERROR_CLASS(MPI_ERR_RMA_SYNC, cls, ierr)
    call check(cls == MPI_ERR_RMA_SYNC, 'MPI_ERROR_CLASS')

    t0 = MPI_WTIME()
    t1 = MPI_WTIME()
    call check(t1 >= t0 .and. MPI_WTICK() > 0d0, 'MPI_WTIME and MPI_WTICK')
  end subroutine environment

  subroutine communicators(nprocs)
    integer, intent(in) :: nprocs
    integer :: ierr, half, hrank, hsize, twin, res, g, gsize, grank, wg
    integer :: r1(1), r2(1)

    ! by parity, the ranks in reverse order
    call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(me, 2), -me, half, ierr)
    call MPI_COMM_RANK(half, hrank, ierr)
    call MPI_COMM_SIZE(half, hsize, ierr)
    call check(hsize == (nprocs + 1 - mod(me, 2)) / 2, 'MPI_COMM_SPLIT size')
    call check(hrank == hsize - 1 - me / 2, 'MPI_COMM_SPLIT key order')

    call MPI_COMM_DUP(half, twin, ierr)
    call MPI_COMM_COMPARE(half, twin, res, ierr)
    call check(res == MPI_CONGRUENT, 'MPI_COMM_DUP is congruent')
    call MPI_COMM_GROUP(twin, g, ierr)
    call MPI_GROUP_SIZE(g, gsize, ierr)
    call MPI_GROUP_RANK(g, grank, ierr)
    call check(gsize == hsize .and. grank == hrank, 'MPI_COMM_GROUP')
    call MPI_COMM_GROUP(MPI_COMM_WORLD, wg, ierr)
    r1(1) = hrank
    call MPI_GROUP_TRANSLATE_RANKS(g, 1, r1, wg, r2, ierr)
    call check(r2(1) == me, 'MPI_GROUP_TRANSLATE_RANKS')
    call MPI_GROUP_FREE(g, ierr)
    call MPI_GROUP_FREE(wg, ierr)
    call check(g == MPI_GROUP_NULL .and. wg == MPI_GROUP_NULL, 'MPI_GROUP_FREE')

    call MPI_COMM_FREE(twin, ierr)
    call MPI_COMM_FREE(half, ierr)
    call check(twin == MPI_COMM_NULL .and. half == MPI_COMM_NULL, 'MPI_COMM_FREE')
  end subroutine communicators

  subroutine collectives(nprocs)
    integer, intent(in) :: nprocs
    integer :: ierr, i
    integer :: vals(3), everyone(3 * nprocs)
    double precision :: d, dsum
    logical :: mine, all_true, any_true

    ! a broadcast
    vals = [7, 8, 9] * (me + 1)
    call MPI_BCAST(vals, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call check(all(vals == [7, 8, 9]), 'MPI_BCAST')

    ! a reduction to rank 0, and one in place
    d = dble(me) + 0.5d0
    dsum = -1d0
    call MPI_REDUCE(d, dsum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    if (me == 0) call check(dsum == dble(nprocs) * dble(nprocs) / 2d0, 'MPI_REDUCE')
    vals = [me, -me, 1]
    call MPI_ALLREDUCE(MPI_IN_PLACE, vals, 3, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
    call check(all(vals == [nprocs - 1, 0, 1]), 'MPI_ALLREDUCE in place')

    ! LOGICAL reductions: .TRUE. only on rank 0
    mine = me == 0
    call MPI_ALLREDUCE(mine, all_true, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
    call MPI_ALLREDUCE(mine, any_true, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
    call check(.not. all_true .and. any_true, 'MPI_LAND and MPI_LOR on LOGICAL')

    ! gathers
    vals = [me, 10 * me, 100 * me]
    everyone = -1
    call MPI_GATHER(vals, 3, MPI_INTEGER, everyone, 3, MPI_INTEGER, 0, &
                    MPI_COMM_WORLD, ierr)
    if (me == 0) then
      do i = 0, nprocs - 1
        call check(all(everyone(3 * i + 1:3 * i + 3) == [i, 10 * i, 100 * i]), &
                   'MPI_GATHER')
      end do
    end if
    everyone = -1
    call MPI_ALLGATHER(vals, 3, MPI_INTEGER, everyone, 3, MPI_INTEGER, &
                       MPI_COMM_WORLD, ierr)
    do i = 0, nprocs - 1
      call check(all(everyone(3 * i + 1:3 * i + 3) == [i, 10 * i, 100 * i]), &
                 'MPI_ALLGATHER')
    end do
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_BARRIER')
  end subroutine collectives

  subroutine messages(left, right)
    integer, intent(in) :: left, right
    integer :: ierr, n, got, reqs(2), req
    integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2)
    real :: out(5), in(5)
    logical :: done

    ! a blocking ring, with its status
    out = [(real(10 * me + n), n = 1, 5)]
    in = 0
    call MPI_SENDRECV(out, 5, MPI_REAL, right, 11, in, 5, MPI_REAL, left, 11, &
                      MPI_COMM_WORLD, st, ierr)
    call check(all(in == [(real(10 * left + n), n = 1, 5)]), 'MPI_SENDRECV data')
    call check(st(MPI_SOURCE) == left .and. st(MPI_TAG) == 11, 'MPI_SENDRECV status')
    call MPI_GET_COUNT(st, MPI_REAL, n, ierr)
    call check(n == 5, 'MPI_GET_COUNT')

    ! MPI_SEND / MPI_RECV with a status, then ignoring it
    if (mod(me, 2) == 0) then
      call MPI_SEND(out, 3, MPI_REAL, right, 12, MPI_COMM_WORLD, ierr)
      call MPI_RECV(in, 5, MPI_REAL, left, 12, MPI_COMM_WORLD, st, ierr)
    else
      call MPI_RECV(in, 5, MPI_REAL, left, 12, MPI_COMM_WORLD, st, ierr)
      call MPI_SEND(out, 3, MPI_REAL, right, 12, MPI_COMM_WORLD, ierr)
    end if
    call MPI_GET_COUNT(st, MPI_REAL, n, ierr)
    call check(n == 3 .and. st(MPI_SOURCE) == left, 'MPI_RECV status')
    if (mod(me, 2) == 0) then
      call MPI_SEND(me, 1, MPI_INTEGER, right, 13, MPI_COMM_WORLD, ierr)
      call MPI_RECV(got, 1, MPI_INTEGER, left, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_RECV(got, 1, MPI_INTEGER, left, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_SEND(me, 1, MPI_INTEGER, right, 13, MPI_COMM_WORLD, ierr)
    end if
    call check(got == left, 'MPI_RECV with MPI_STATUS_IGNORE')

    ! nonblocking: MPI_WAITALL with statuses, MPI_TEST, MPI_WAIT
    in = 0
    call MPI_IRECV(in, 5, MPI_REAL, left, 14, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_ISEND(out, 5, MPI_REAL, right, 14, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_WAITALL(2, reqs, sts, ierr)
    call check(all(reqs == MPI_REQUEST_NULL), 'MPI_WAITALL frees the requests')
    call check(sts(MPI_SOURCE, 1) == left .and. sts(MPI_TAG, 1) == 14, &
               'MPI_WAITALL statuses')
    call check(all(in == [(real(10 * left + n), n = 1, 5)]), 'MPI_IRECV data')
    call MPI_IRECV(got, 1, MPI_INTEGER, left, 15, MPI_COMM_WORLD, req, ierr)
    call MPI_SEND(me, 1, MPI_INTEGER, right, 15, MPI_COMM_WORLD, ierr)
    done = .false.
    do while (.not. done)
      call MPI_TEST(req, done, st, ierr)
    end do
    call check(req == MPI_REQUEST_NULL .and. got == left .and. &
               st(MPI_TAG) == 15, 'MPI_TEST')
    call MPI_ISEND(me, 1, MPI_INTEGER, right, 16, MPI_COMM_WORLD, req, ierr)
    call MPI_RECV(got, 1, MPI_INTEGER, left, 16, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    call check(req == MPI_REQUEST_NULL .and. got == left, 'MPI_WAIT')
    ! recognised as what they are, the sentinels were never written
    call check(all(MPI_STATUS_IGNORE == 0), 'MPI_STATUS_IGNORE left alone')
  end subroutine messages

  ! size and extent (in bytes) of a datatype, checked and freed
  subroutine expect_type(t, size, lb, extent, what)
    integer, intent(inout) :: t
    integer, intent(in) :: size
    integer(kind=MPI_ADDRESS_KIND), intent(in) :: lb, extent
    character(len=*), intent(in) :: what
    integer :: ierr, s
    integer(kind=MPI_ADDRESS_KIND) :: l, e
    call MPI_TYPE_COMMIT(t, ierr)
    call MPI_TYPE_SIZE(t, s, ierr)
    call MPI_TYPE_GET_EXTENT(t, l, e, ierr)
    call check(ierr == MPI_SUCCESS .and. s == size .and. l == lb .and. e == extent, what)
    call MPI_TYPE_FREE(t, ierr)
    call check(t == MPI_DATATYPE_NULL, what // ': MPI_TYPE_FREE')
  end subroutine expect_type

  subroutine datatypes()
    integer :: ierr, t, s
    integer(kind=MPI_ADDRESS_KIND) :: l, e, tl, te
    integer(kind=MPI_ADDRESS_KIND), parameter :: z = 0
    integer(kind=MPI_ADDRESS_KIND) :: adisp(2)

    ! the Fortran types' sizes
    call MPI_TYPE_SIZE(MPI_INTEGER, s, ierr)
    call check(s == 4, 'MPI_INTEGER')
    call MPI_TYPE_SIZE(MPI_REAL, s, ierr)
    call check(s == 4, 'MPI_REAL')
    call MPI_TYPE_SIZE(MPI_DOUBLE_PRECISION, s, ierr)
    call check(s == 8, 'MPI_DOUBLE_PRECISION')
    call MPI_TYPE_SIZE(MPI_LOGICAL, s, ierr)
    call check(s == 4, 'MPI_LOGICAL')
    call MPI_TYPE_SIZE(MPI_COMPLEX, s, ierr)
    call check(s == 8, 'MPI_COMPLEX')
    call MPI_TYPE_SIZE(MPI_DOUBLE_COMPLEX, s, ierr)
    call check(s == 16, 'MPI_DOUBLE_COMPLEX')
    call MPI_TYPE_SIZE(MPI_INTEGER8, s, ierr)
    call check(s == 8, 'MPI_INTEGER8')
    call MPI_TYPE_SIZE(MPI_REAL8, s, ierr)
    call check(s == 8, 'MPI_REAL8')
    call MPI_TYPE_SIZE(MPI_INTEGER2, s, ierr)
    call check(s == 2, 'MPI_INTEGER2')
    call MPI_TYPE_SIZE(MPI_COMPLEX16, s, ierr)
    call check(s == 16, 'MPI_COMPLEX16')
    call MPI_TYPE_SIZE(MPI_CHARACTER, s, ierr)
    call check(s == 1, 'MPI_CHARACTER')

    call MPI_TYPE_CONTIGUOUS(3, MPI_INTEGER, t, ierr)
    call expect_type(t, 12, z, 12_MPI_ADDRESS_KIND, 'MPI_TYPE_CONTIGUOUS')
    call MPI_TYPE_VECTOR(3, 2, 4, MPI_REAL, t, ierr)
    call MPI_TYPE_COMMIT(t, ierr)
    call MPI_TYPE_GET_TRUE_EXTENT(t, tl, te, ierr)
    call check(tl == 0 .and. te == 40, 'MPI_TYPE_GET_TRUE_EXTENT')
    call expect_type(t, 24, z, 40_MPI_ADDRESS_KIND, 'MPI_TYPE_VECTOR')
    call MPI_TYPE_CREATE_HVECTOR(2, 1, 16_MPI_ADDRESS_KIND, MPI_DOUBLE_PRECISION, t, ierr)
    call expect_type(t, 16, z, 24_MPI_ADDRESS_KIND, 'MPI_TYPE_CREATE_HVECTOR')
    call MPI_TYPE_INDEXED(2, [1, 2], [0, 3], MPI_INTEGER, t, ierr)
    call expect_type(t, 12, z, 20_MPI_ADDRESS_KIND, 'MPI_TYPE_INDEXED')
    adisp = [0_MPI_ADDRESS_KIND, 12_MPI_ADDRESS_KIND]
    call MPI_TYPE_CREATE_HINDEXED(2, [1, 1], adisp, MPI_INTEGER, t, ierr)
    call expect_type(t, 8, z, 16_MPI_ADDRESS_KIND, 'MPI_TYPE_CREATE_HINDEXED')
    call MPI_TYPE_CREATE_INDEXED_BLOCK(3, 2, [0, 4, 8], MPI_INTEGER, t, ierr)
    call expect_type(t, 24, z, 40_MPI_ADDRESS_KIND, 'MPI_TYPE_CREATE_INDEXED_BLOCK')
    adisp = [0_MPI_ADDRESS_KIND, 8_MPI_ADDRESS_KIND]
    call MPI_TYPE_CREATE_HINDEXED_BLOCK(2, 1, adisp, MPI_REAL, t, ierr)
    call expect_type(t, 8, z, 12_MPI_ADDRESS_KIND, 'MPI_TYPE_CREATE_HINDEXED_BLOCK')
    call MPI_TYPE_CREATE_STRUCT(2, [1, 1], adisp, [MPI_INTEGER, MPI_DOUBLE_PRECISION], &
                                t, ierr)
    call expect_type(t, 12, z, 16_MPI_ADDRESS_KIND, 'MPI_TYPE_CREATE_STRUCT')
    call MPI_TYPE_CREATE_RESIZED(MPI_INTEGER, -4_MPI_ADDRESS_KIND, 16_MPI_ADDRESS_KIND, &
                                 t, ierr)
    call expect_type(t, 4, -4_MPI_ADDRESS_KIND, 16_MPI_ADDRESS_KIND, &
                     'MPI_TYPE_CREATE_RESIZED')
    call MPI_TYPE_CREATE_SUBARRAY(2, [4, 5], [2, 3], [1, 1], MPI_ORDER_FORTRAN, &
                                  MPI_REAL, t, ierr)
    call expect_type(t, 24, z, 80_MPI_ADDRESS_KIND, 'MPI_TYPE_CREATE_SUBARRAY')
    call MPI_TYPE_DUP(MPI_DOUBLE_PRECISION, t, ierr)
    call expect_type(t, 8, z, 8_MPI_ADDRESS_KIND, 'MPI_TYPE_DUP')
    call MPI_TYPE_GET_EXTENT(MPI_REAL, l, e, ierr)
    call check(l == 0 .and. e == 4, 'MPI_TYPE_GET_EXTENT of MPI_REAL')
  end subroutine datatypes

  subroutine infos()
    integer :: ierr, info, twin, n, vlen
    logical :: flag
    character(len=MPI_MAX_INFO_KEY) :: key
    character(len=40) :: value
    character(len=4) :: short

    call MPI_INFO_CREATE(info, ierr)
    ! blanks around keys and values are not theirs
    call MPI_INFO_SET(info, '  rma_tour_key ', ' a value  ', ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_INFO_SET')
    call MPI_INFO_GET_NKEYS(info, n, ierr)
    call check(n == 1, 'MPI_INFO_GET_NKEYS')
    call MPI_INFO_GET_NTHKEY(info, 0, key, ierr)
    call check(key == 'rma_tour_key', 'MPI_INFO_GET_NTHKEY')
    call MPI_INFO_GET_VALUELEN(info, 'rma_tour_key', vlen, flag, ierr)
    call check(flag .and. vlen == 7, 'MPI_INFO_GET_VALUELEN')
    value = repeat('#', len(value))
    call MPI_INFO_GET(info, 'rma_tour_key', len(value), value, flag, ierr)
    call check(flag .and. value == 'a value', 'MPI_INFO_GET')
    call MPI_INFO_GET(info, 'rma_tour_key', 2, short, flag, ierr)
    call check(flag .and. short == 'a', 'MPI_INFO_GET with VALUELEN 2')
    call MPI_INFO_GET(info, 'no_such_key', len(value), value, flag, ierr)
    call check(ierr == MPI_SUCCESS .and. .not. flag, 'MPI_INFO_GET of a missing key')
    call MPI_INFO_DUP(info, twin, ierr)
    call MPI_INFO_DELETE(info, 'rma_tour_key', ierr)
    call MPI_INFO_GET_NKEYS(info, n, ierr)
    call check(n == 0, 'MPI_INFO_DELETE')
    call MPI_INFO_GET_NKEYS(twin, n, ierr)
    call check(n == 1, 'MPI_INFO_DUP')
    call MPI_INFO_FREE(twin, ierr)
    call MPI_INFO_FREE(info, ierr)
    call check(info == MPI_INFO_NULL .and. twin == MPI_INFO_NULL, 'MPI_INFO_FREE')
  end subroutine infos

  ! fences over MPI_ALLOC_MEM memory; a put from MPI_BOTTOM; a vector target
  subroutine fences_and_bottom(left, right)
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    integer, intent(in) :: left, right
    integer, parameter :: n = 12
    integer :: ierr, win, i, t, abst, every4
    integer, pointer, contiguous :: mem(:)
    integer, target :: src(3)
    type(c_ptr) :: cp
    integer(kind=MPI_ADDRESS_KIND) :: addr(1)

    call MPI_ALLOC_MEM(int(4 * n, MPI_ADDRESS_KIND), MPI_INFO_NULL, cp, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_ALLOC_MEM')
    call c_f_pointer(cp, mem, [n])
    mem = -1
    call MPI_WIN_CREATE(mem, int(4 * n, MPI_ADDRESS_KIND), 4, MPI_INFO_NULL, &
                        MPI_COMM_WORLD, win, ierr)
    call MPI_WIN_FENCE(MPI_MODE_NOPRECEDE, win, ierr)
    ! entries 0, 4, 8 of the right neighbour
    call MPI_TYPE_VECTOR(3, 1, 4, MPI_INTEGER, every4, ierr)
    call MPI_TYPE_COMMIT(every4, ierr)
    src = [(100 * me + i, i = 1, 3)]
    call MPI_PUT(src, 3, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, 1, every4, win, ierr)
    ! entries 1 to 3 from MPI_BOTTOM and src's absolute address
    call MPI_GET_ADDRESS(src, addr(1), ierr)
    call MPI_TYPE_CREATE_HINDEXED(1, [3], addr, MPI_INTEGER, abst, ierr)
    call MPI_TYPE_COMMIT(abst, ierr)
    call MPI_PUT(MPI_BOTTOM, 1, abst, right, 1_MPI_ADDRESS_KIND, 3, MPI_INTEGER, &
                 win, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_PUT from MPI_BOTTOM')
    call MPI_WIN_FENCE(MPI_MODE_NOSUCCEED, win, ierr)
    call MPI_F_SYNC_REG(mem)
    call check(all(mem([1, 5, 9]) == [(100 * left + i, i = 1, 3)]), &
               'MPI_PUT to a vector type')
    call check(all(mem(2:4) == [(100 * left + i, i = 1, 3)]), &
               'MPI_PUT from MPI_BOTTOM arrived')
    call check(all(mem([6, 7, 8, 10, 11, 12]) == -1), 'MPI_PUT touched nothing else')
    call MPI_WIN_FREE(win, ierr)
    call check(win == MPI_WIN_NULL, 'MPI_WIN_FREE')
    t = every4
    call MPI_TYPE_FREE(t, ierr)
    call MPI_TYPE_FREE(abst, ierr)
    call MPI_FREE_MEM(mem, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_FREE_MEM')
  end subroutine fences_and_bottom

  ! post/start/complete/wait and MPI_WIN_TEST, over MPI_WIN_ALLOCATE memory
  subroutine active_target(left, right)
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    integer, intent(in) :: left, right
    integer :: ierr, win, wg, tog, fromg, i, one(4)
    integer, pointer, contiguous :: mem(:)
    type(c_ptr) :: cp
    integer(kind=MPI_ADDRESS_KIND) :: base
    logical :: done

    call MPI_WIN_ALLOCATE(16_MPI_ADDRESS_KIND, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &
                          cp, win, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_WIN_ALLOCATE with TYPE(C_PTR)')
    call c_f_pointer(cp, mem, [4])
    mem = 0
    call MPI_WIN_GET_GROUP(win, wg, ierr)
    call MPI_GROUP_INCL(wg, 1, [right], tog, ierr)
    call MPI_GROUP_INCL(wg, 1, [left], fromg, ierr)

    ! my left neighbour adds into me; I add into my right neighbour (twice)
    one = [(i, i = 1, 4)]
    do i = 1, 2
      call MPI_WIN_POST(fromg, 0, win, ierr)
      call MPI_WIN_START(tog, 0, win, ierr)
      call MPI_ACCUMULATE(one, 4, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, 4, &
                          MPI_INTEGER, MPI_SUM, win, ierr)
      call MPI_WIN_COMPLETE(win, ierr)
      if (i == 1) then
        call MPI_WIN_WAIT(win, ierr)
      else
        done = .false.
        do while (.not. done)
          call MPI_WIN_TEST(win, done, ierr)
        end do
      end if
    end do
    call MPI_F_SYNC_REG(mem)
    call check(all(mem == 2 * [(i, i = 1, 4)]), 'post/start/complete/wait/test')
    call MPI_GROUP_FREE(tog, ierr)
    call MPI_GROUP_FREE(fromg, ierr)
    call MPI_GROUP_FREE(wg, ierr)
    call MPI_WIN_FREE(win, ierr)

    ! the address-integer form
    base = 0
    call MPI_WIN_ALLOCATE(16_MPI_ADDRESS_KIND, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &
                          base, win, ierr)
    call check(ierr == MPI_SUCCESS .and. base /= 0, &
               'MPI_WIN_ALLOCATE with INTEGER(KIND=MPI_ADDRESS_KIND)')
    call MPI_WIN_FREE(win, ierr)
  end subroutine active_target

  ! locks, flushes and the atomic calls, on a counter window at rank 0
  subroutine passive_target(left, right, nprocs)
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    integer, intent(in) :: left, right, nprocs
    integer :: ierr, win, got, mine, old, cmp, swap, val(2), res(2), info, used
    integer, pointer, contiguous :: mem(:)
    type(c_ptr) :: cp
    logical :: flag
    character(len=16) :: v

    call MPI_INFO_CREATE(info, ierr)
    call MPI_INFO_SET(info, 'no_locks', 'false', ierr)
    call MPI_WIN_ALLOCATE(16_MPI_ADDRESS_KIND, 4, info, MPI_COMM_WORLD, cp, win, ierr)
    call MPI_INFO_FREE(info, ierr)
    call c_f_pointer(cp, mem, [4])
    mem = 0
    call MPI_WIN_GET_INFO(win, used, ierr)
    call check(ierr == MPI_SUCCESS .and. used /= MPI_INFO_NULL, 'MPI_WIN_GET_INFO')
    call MPI_INFO_GET(used, 'no_locks', len(v), v, flag, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_INFO_GET on the window''s info')
    call MPI_INFO_FREE(used, ierr)
    call MPI_WIN_SET_INFO(win, MPI_INFO_NULL, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_WIN_SET_INFO')
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)

    ! a ticket from rank 0's counter (entry 0): every value once
    call MPI_WIN_LOCK_ALL(0, win, ierr)
    mine = 1
    call MPI_FETCH_AND_OP(mine, got, MPI_INTEGER, 0, 0_MPI_ADDRESS_KIND, MPI_SUM, &
                          win, ierr)
    call MPI_WIN_FLUSH(0, win, ierr)
    ! one winner of the swap at rank 0's entry 1
    cmp = 0
    swap = me + 1
    call MPI_COMPARE_AND_SWAP(swap, cmp, old, MPI_INTEGER, 0, 1_MPI_ADDRESS_KIND, &
                              win, ierr)
    call MPI_WIN_FLUSH_LOCAL(0, win, ierr)
    ! entries 2 and 3 of the right neighbour: add, fetching what was there
    val = [me + 1, 10 * (me + 1)]
    call MPI_GET_ACCUMULATE(val, 2, MPI_INTEGER, res, 2, MPI_INTEGER, right, &
                            2_MPI_ADDRESS_KIND, 2, MPI_INTEGER, MPI_SUM, win, ierr)
    call MPI_WIN_FLUSH_ALL(win, ierr)
    call MPI_WIN_FLUSH_LOCAL_ALL(win, ierr)
    call check(all(res == 0), 'MPI_GET_ACCUMULATE fetched the old values')
    call MPI_WIN_UNLOCK_ALL(win, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)

    call MPI_ALLREDUCE(MPI_IN_PLACE, got, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(got == nprocs * (nprocs - 1) / 2, 'MPI_FETCH_AND_OP tickets')
    if (old == 0) then
      old = 1
    else
      old = 0
    end if
    call MPI_ALLREDUCE(MPI_IN_PLACE, old, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(old == 1, 'one MPI_COMPARE_AND_SWAP won')

    ! read back under an exclusive lock, then a shared one; MPI_NO_OP reads
    call MPI_WIN_LOCK(MPI_LOCK_EXCLUSIVE, 0, 0, win, ierr)
    call MPI_GET(val, 2, MPI_INTEGER, 0, 0_MPI_ADDRESS_KIND, 2, MPI_INTEGER, win, ierr)
    call MPI_WIN_UNLOCK(0, win, ierr)
    call check(val(1) == nprocs .and. val(2) >= 1 .and. val(2) <= nprocs, &
               'the counter and the swapped entry')
    call MPI_WIN_LOCK(MPI_LOCK_SHARED, right, 0, win, ierr)
    call MPI_GET_ACCUMULATE(val, 2, MPI_INTEGER, res, 2, MPI_INTEGER, right, &
                            2_MPI_ADDRESS_KIND, 2, MPI_INTEGER, MPI_NO_OP, win, ierr)
    call MPI_WIN_UNLOCK(right, win, ierr)
    call check(all(res == [me + 1, 10 * (me + 1)]), 'MPI_GET_ACCUMULATE with MPI_NO_OP')
    ! my own memory, as my left neighbour left it
    call MPI_WIN_LOCK(MPI_LOCK_SHARED, me, 0, win, ierr)
    call MPI_WIN_SYNC(win, ierr)
    call MPI_F_SYNC_REG(mem)
    call check(all(mem(3:4) == [left + 1, 10 * (left + 1)]), 'my entries 2 and 3')
    call MPI_WIN_UNLOCK(me, win, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_WIN_FREE(win, ierr)
  end subroutine passive_target

  ! the request-based calls, waited for every way
  subroutine requests(left, right)
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    integer, intent(in) :: left, right
    integer :: ierr, win, reqs(3), req, i
    integer :: a, b, c, got, res
    integer, pointer, contiguous :: mem(:)
    type(c_ptr) :: cp
    logical :: done

    call MPI_WIN_ALLOCATE(16_MPI_ADDRESS_KIND, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &
                          cp, win, ierr)
    call c_f_pointer(cp, mem, [4])
    mem = 0
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_WIN_LOCK_ALL(MPI_MODE_NOCHECK, win, ierr)
    a = 1000 + me
    b = 7
    c = 5
    call MPI_RPUT(a, 1, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win, &
                  reqs(1), ierr)
    call MPI_RACCUMULATE(b, 1, MPI_INTEGER, right, 1_MPI_ADDRESS_KIND, 1, MPI_INTEGER, &
                         MPI_SUM, win, reqs(2), ierr)
    call MPI_RGET_ACCUMULATE(c, 1, MPI_INTEGER, res, 1, MPI_INTEGER, right, &
                             2_MPI_ADDRESS_KIND, 1, MPI_INTEGER, MPI_SUM, win, &
                             reqs(3), ierr)
    call MPI_WAIT(reqs(1), MPI_STATUS_IGNORE, ierr)
    call MPI_WAITALL(2, reqs(2:3), MPI_STATUSES_IGNORE, ierr)
    call check(all(reqs == MPI_REQUEST_NULL), 'MPI_WAIT and MPI_WAITALL')
    call check(all(MPI_STATUSES_IGNORE == 0), 'MPI_STATUSES_IGNORE left alone')
    call check(res == 0, 'MPI_RGET_ACCUMULATE fetched the old value')
    call MPI_WIN_FLUSH(right, win, ierr)
    call MPI_WIN_UNLOCK_ALL(win, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)

    call MPI_WIN_LOCK_ALL(0, win, ierr)
    got = -1
    call MPI_RGET(got, 1, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win, &
                  req, ierr)
    done = .false.
    do i = 1, 100000000
      call MPI_TEST(req, done, MPI_STATUS_IGNORE, ierr)
      if (done) exit
    end do
    call check(done .and. req == MPI_REQUEST_NULL, 'MPI_TEST of an MPI_RGET')
    call MPI_WIN_UNLOCK_ALL(win, ierr)
    call check(got == 1000 + me, 'MPI_RGET read an MPI_RPUT''s value')
    call MPI_WIN_LOCK(MPI_LOCK_SHARED, me, 0, win, ierr)
    call MPI_WIN_SYNC(win, ierr)
    call MPI_F_SYNC_REG(mem)
    call check(mem(1) == 1000 + left .and. mem(2) == 7 .and. mem(3) == 5, &
               'what the request-based calls left')
    call MPI_WIN_UNLOCK(me, win, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_WIN_FREE(win, ierr)
  end subroutine requests

  ! loads and stores through MPI_WIN_ALLOCATE_SHARED and MPI_WIN_SHARED_QUERY
  subroutine shared_memory(nprocs)
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    integer, intent(in) :: nprocs
    integer, parameter :: n = 6
    integer :: ierr, node, win, nme, nsize, nright, du, i
    real(kind=8), pointer, contiguous :: mine(:), theirs(:)
    type(c_ptr) :: cp, qp
    integer(kind=MPI_ADDRESS_KIND) :: qsize, qaddr

    call MPI_COMM_SPLIT_TYPE(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &
                             node, ierr)
    call MPI_COMM_RANK(node, nme, ierr)
    call MPI_COMM_SIZE(node, nsize, ierr)
    call check(nsize == nprocs, 'all ranks share a node under rmarun')
    nright = mod(nme + 1, nsize)
    call MPI_WIN_ALLOCATE_SHARED(int(8 * n, MPI_ADDRESS_KIND), 8, MPI_INFO_NULL, node, &
                                 cp, win, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_WIN_ALLOCATE_SHARED')
    call c_f_pointer(cp, mine, [n])
    call MPI_WIN_SHARED_QUERY(win, nright, qsize, du, qp, ierr)
    call check(ierr == MPI_SUCCESS .and. qsize == 8 * n .and. du == 8, &
               'MPI_WIN_SHARED_QUERY with TYPE(C_PTR)')
    call MPI_WIN_SHARED_QUERY(win, nright, qsize, du, qaddr, ierr)
    call check(qaddr == transfer(qp, qaddr), 'both forms of MPI_WIN_SHARED_QUERY agree')
    call c_f_pointer(qp, theirs, [n])

    call MPI_WIN_LOCK_ALL(MPI_MODE_NOCHECK, win, ierr)
    mine = [(dble(nme) + dble(i) / 8d0, i = 1, n)]
    call MPI_WIN_SYNC(win, ierr)
    call MPI_BARRIER(node, ierr)
    call MPI_WIN_SYNC(win, ierr)
    call check(all(theirs == [(dble(nright) + dble(i) / 8d0, i = 1, n)]), &
               'loads from the neighbour''s shared memory')
    call MPI_BARRIER(node, ierr)
    call MPI_WIN_UNLOCK_ALL(win, ierr)
    call MPI_WIN_FREE(win, ierr)
    call MPI_COMM_FREE(node, ierr)
  end subroutine shared_memory

  ! memory attached to a dynamic window, reached by its address
  subroutine dynamic_windows(left, right, nprocs)
    integer, intent(in) :: left, right, nprocs
    integer :: ierr, win, i
    integer, target :: slot(5)
    integer :: vals(5)
    integer(kind=MPI_ADDRESS_KIND) :: here, where(nprocs)

    call MPI_WIN_CREATE_DYNAMIC(MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_WIN_CREATE_DYNAMIC')
    slot = 0
    call MPI_WIN_ATTACH(win, slot, int(4 * size(slot), MPI_ADDRESS_KIND), ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_WIN_ATTACH')
    call MPI_GET_ADDRESS(slot, here, ierr)
    call MPI_ALLGATHER(here, 1, MPI_AINT, where, 1, MPI_AINT, MPI_COMM_WORLD, ierr)

    vals = [(me * 10 + i, i = 1, 5)]
    call MPI_WIN_LOCK(MPI_LOCK_EXCLUSIVE, right, 0, win, ierr)
    call MPI_PUT(vals, 5, MPI_INTEGER, right, where(right + 1), 5, MPI_INTEGER, win, ierr)
    call MPI_WIN_UNLOCK(right, win, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_WIN_LOCK(MPI_LOCK_SHARED, me, 0, win, ierr)
    call MPI_WIN_SYNC(win, ierr)
    call MPI_F_SYNC_REG(slot)
    call check(all(slot == [(left * 10 + i, i = 1, 5)]), 'a put to attached memory')
    call MPI_WIN_UNLOCK(me, win, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_WIN_DETACH(win, slot, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_WIN_DETACH')
    call MPI_WIN_FREE(win, ierr)
  end subroutine dynamic_windows

  ! MPI_ERRORS_RETURN: erroneous calls give their error class back
  subroutine errors_returned(nprocs)
    use, intrinsic :: iso_c_binding, only: c_ptr
    integer, intent(in) :: nprocs
    integer :: ierr, win, eh, cls, x, rc
    type(c_ptr) :: cp

    call MPI_WIN_ALLOCATE(4_MPI_ADDRESS_KIND, 4, MPI_INFO_NULL, MPI_COMM_WORLD, cp, &
                          win, ierr)
    call MPI_WIN_SET_ERRHANDLER(win, MPI_ERRORS_RETURN, ierr)
    call MPI_WIN_GET_ERRHANDLER(win, eh, ierr)
    call check(eh == MPI_ERRORS_RETURN, 'MPI_WIN_GET_ERRHANDLER')
    x = 1
    call MPI_WIN_LOCK_ALL(0, win, ierr)
    call MPI_PUT(x, 1, MPI_INTEGER, nprocs, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win, rc)
    call MPI_ERROR_CLASS(rc, cls, ierr)
    call check(rc /= MPI_SUCCESS .and. cls == MPI_ERR_RANK, 'MPI_PUT to no rank')
    call MPI_WIN_UNLOCK_ALL(win, ierr)
    call MPI_WIN_FREE(win, ierr)

    call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    call MPI_COMM_GET_ERRHANDLER(MPI_COMM_WORLD, eh, ierr)
    call check(eh == MPI_ERRORS_RETURN, 'MPI_COMM_GET_ERRHANDLER')
    call MPI_SEND(x, 1, MPI_INTEGER, nprocs + 5, 0, MPI_COMM_WORLD, rc)
    call MPI_ERROR_CLASS(rc, cls, ierr)
    call check(cls == MPI_ERR_RANK, 'MPI_SEND to no rank')
    call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
  end subroutine errors_returned

end program tour
