! After Example 11.2 of the MPI standard's one-sided chapter (the calls it
! makes, in a program of our own): the same gather as Example 11.1,
! A(i) = B(where(i)) over a REAL array spread M entries per rank, done the
! simple way, one MPI_GET of one MPI_REAL per wanted entry.
!
! Checks every fetched value exactly; rank 0 prints "No Errors" when all
! ranks agree, and the program stops with a failure status otherwise.
program ex11_2_mapvals_gets
  use mpi
  implicit none
  integer, parameter :: m = 9
  real :: a(m), b(m)
  integer :: wanted(m)
  integer :: me, nprocs, ierr, i, g, bad

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)

  do i = 1, m
    b(i) = real(1000 * me + i)
    ! reversed order across the ranks, plus a shift
    wanted(i) = mod(m * nprocs - (me * m + i) + 2 * i, m * nprocs)
    a(i) = -1.0
  end do

  call fetch_one_by_one(a, b, wanted, m, MPI_COMM_WORLD)

  bad = 0
  do i = 1, m
    g = wanted(i)
    if (a(i) /= real(1000 * (g / m) + mod(g, m) + 1)) then
      bad = bad + 1
      print '(a,i0,a,i0,a,i0,a,f10.1)', 'rank ', me, ': A(', i, ') for entry ', &
        g, ' is ', a(i)
    end if
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (me == 0) then
    if (bad == 0) then
      print '(a)', ' No Errors'
    else
      print '(a,i0,a)', ' Found ', bad, ' errors'
    end if
  end if
  call MPI_FINALIZE(ierr)
  if (bad /= 0) error stop 1

contains

  subroutine fetch_one_by_one(dst, src, where, m, comm)
    integer, intent(in) :: m, comm
    real :: dst(m), src(m)
    integer, intent(in) :: where(m)
    integer :: win, ierr, i, owner
    integer(kind=MPI_ADDRESS_KIND) :: lb, realsize, offset

    call MPI_TYPE_GET_EXTENT(MPI_REAL, lb, realsize, ierr)
    call MPI_WIN_CREATE(src, m * realsize, int(realsize), MPI_INFO_NULL, comm, &
                        win, ierr)
    call MPI_WIN_FENCE(0, win, ierr)
    do i = 1, m
      owner = where(i) / m
      offset = mod(where(i), m)
      call MPI_GET(dst(i), 1, MPI_REAL, owner, offset, 1, MPI_REAL, win, ierr)
    end do
    call MPI_WIN_FENCE(0, win, ierr)
    call MPI_F_SYNC_REG(dst)
    call MPI_WIN_FREE(win, ierr)
  end subroutine fetch_one_by_one

end program ex11_2_mapvals_gets
