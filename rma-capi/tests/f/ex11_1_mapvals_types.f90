! After Example 11.1 of the MPI standard's one-sided chapter (the calls it
! makes, in a program of our own): every rank holds M entries of a REAL
! array spread over all ranks, and fills its own array A with the entries
! of that spread array that its index array names: A(i) = B(where(i)),
! with B's global index g held by rank g/M at offset MOD(g, M). The entries
! wanted from one rank are fetched by one MPI_GET, through a pair of
! indexed-block datatypes (where they go in A, where they lie in B).
!
! Checks every fetched value exactly; rank 0 prints "No Errors" when all
! ranks agree, and the program stops with a failure status otherwise.
program ex11_1_mapvals_types
  use mpi
  implicit none
  integer, parameter :: m = 7
  real :: a(m), b(m)
  integer :: wanted(m)
  integer :: me, nprocs, ierr, i, g, bad

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)

  ! the spread array's entry g is 1000 * (its owner) + (its offset + 1)
  do i = 1, m
    b(i) = real(1000 * me + i)
    ! any global index; several ranks may want the same entry
    wanted(i) = mod(5 * (me * m + i) + 3 * me + 1, m * nprocs)
    a(i) = -1.0
  end do

  call fetch_by_owner(a, b, wanted, m, MPI_COMM_WORLD, nprocs)

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

  ! dst(i) = the spread array's entry where(i), one get per owning rank
  subroutine fetch_by_owner(dst, src, where, m, comm, nprocs)
    integer, intent(in) :: m, comm, nprocs
    real :: dst(m), src(m)
    integer, intent(in) :: where(m)
    integer :: per_owner(nprocs), start(nprocs), here(m), there(m)
    integer :: into(nprocs), from(nprocs)
    integer :: win, ierr, i, q
    integer(kind=MPI_ADDRESS_KIND) :: lb, realsize

    call MPI_TYPE_GET_EXTENT(MPI_REAL, lb, realsize, ierr)
    call MPI_WIN_CREATE(src, m * realsize, int(realsize), MPI_INFO_NULL, comm, &
                        win, ierr)

    ! sort the wanted entries by owner: here() lists places in dst, there()
    ! the matching offsets in the owner's part, owner by owner
    per_owner = 0
    do i = 1, m
      q = where(i) / m + 1
      per_owner(q) = per_owner(q) + 1
    end do
    start(1) = 0
    do q = 2, nprocs
      start(q) = start(q - 1) + per_owner(q - 1)
    end do
    per_owner = 0
    do i = 1, m
      q = where(i) / m + 1
      per_owner(q) = per_owner(q) + 1
      here(start(q) + per_owner(q)) = i - 1
      there(start(q) + per_owner(q)) = mod(where(i), m)
    end do

    do q = 1, nprocs
      call MPI_TYPE_CREATE_INDEXED_BLOCK(per_owner(q), 1, here(start(q) + 1:), &
                                         MPI_REAL, into(q), ierr)
      call MPI_TYPE_COMMIT(into(q), ierr)
      call MPI_TYPE_CREATE_INDEXED_BLOCK(per_owner(q), 1, there(start(q) + 1:), &
                                         MPI_REAL, from(q), ierr)
      call MPI_TYPE_COMMIT(from(q), ierr)
    end do

    call MPI_WIN_FENCE(0, win, ierr)
    do q = 1, nprocs
      call MPI_GET(dst, 1, into(q), q - 1, 0_MPI_ADDRESS_KIND, 1, from(q), win, ierr)
    end do
    call MPI_WIN_FENCE(0, win, ierr)
    ! the gets wrote dst behind the compiler's back
    call MPI_F_SYNC_REG(dst)

    call MPI_WIN_FREE(win, ierr)
    do q = 1, nprocs
      call MPI_TYPE_FREE(into(q), ierr)
      call MPI_TYPE_FREE(from(q), ierr)
    end do
  end subroutine fetch_by_owner

end program ex11_1_mapvals_types
