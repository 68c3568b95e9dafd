! After Example 11.3 of the MPI standard's one-sided chapter (the calls it
! makes, in a program of our own): B(j) = the sum of A(i) over every i with
! where(i) = j, where A, where and B are spread M entries per rank; each
! rank adds its entries of A into the owners of the entries of B with one
! MPI_ACCUMULATE (MPI_SUM) each, between two fences.
!
! Every rank computes the sums it should hold from all ranks' (known) A and
! where, and compares exactly; rank 0 prints "No Errors" when all ranks
! agree, and the program stops with a failure status otherwise.
program ex11_3_sum_accumulate
  use mpi
  implicit none
  integer, parameter :: m = 8
  real :: a(m), b(m), expect(m)
  integer :: wanted(m)
  integer :: me, nprocs, ierr, i, s, g, bad

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)

  do i = 1, m
    a(i) = value_at(me, i)
    wanted(i) = target_of(me, i, m, nprocs)
    b(i) = 0.0
  end do

  call add_mapped(a, b, wanted, m, MPI_COMM_WORLD)

  ! what this rank's part of B must hold
  expect = 0.0
  do s = 0, nprocs - 1
    do i = 1, m
      g = target_of(s, i, m, nprocs)
      if (g / m == me) expect(mod(g, m) + 1) = expect(mod(g, m) + 1) + value_at(s, i)
    end do
  end do
  bad = 0
  do i = 1, m
    if (b(i) /= expect(i)) then
      bad = bad + 1
      print '(a,i0,a,i0,a,f10.1,a,f10.1)', 'rank ', me, ': B(', i, ') is ', b(i), &
        ', not ', expect(i)
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

  real function value_at(rank, i)
    integer, intent(in) :: rank, i
    value_at = real(10 * rank + i)
  end function value_at

  ! many-to-one: the global entry rank s's i-th value goes to
  integer function target_of(s, i, m, nprocs)
    integer, intent(in) :: s, i, m, nprocs
    target_of = mod(3 * (s * m + i) * (s + 1), m * nprocs)
  end function target_of

  subroutine add_mapped(src, dst, where, m, comm)
    integer, intent(in) :: m, comm
    real :: src(m), dst(m)
    integer, intent(in) :: where(m)
    integer :: win, ierr, i, owner
    integer(kind=MPI_ADDRESS_KIND) :: lb, realsize, offset

    call MPI_TYPE_GET_EXTENT(MPI_REAL, lb, realsize, ierr)
    call MPI_WIN_CREATE(dst, m * realsize, int(realsize), MPI_INFO_NULL, comm, &
                        win, ierr)
    call MPI_WIN_FENCE(0, win, ierr)
    do i = 1, m
      owner = where(i) / m
      offset = mod(where(i), m)
      call MPI_ACCUMULATE(src(i), 1, MPI_REAL, owner, offset, 1, MPI_REAL, &
                          MPI_SUM, win, ierr)
    end do
    call MPI_WIN_FENCE(0, win, ierr)
    ! other ranks' accumulates changed dst behind the compiler's back
    call MPI_F_SYNC_REG(dst)
    call MPI_WIN_FREE(win, ierr)
  end subroutine add_mapped

end program ex11_3_sum_accumulate
