C     A fixed-form program over INCLUDE 'mpif.h': the constants, the
C     sentinels (MPI_IN_PLACE, MPI_STATUS_IGNORE, MPI_BOTTOM) seen from
C     two program units that each include the header, the typed
C     function MPI_WTIME, and a window over a REAL array with fences,
C     MPI_PUT and MPI_ACCUMULATE; a distributed graph given
C     MPI_UNWEIGHTED, the typed functions MPI_AINT_ADD and
C     MPI_AINT_DIFF, and a reduction operation of the program's, named
C     by EXTERNAL.
C
C     Rank 0 prints "No Errors" when every rank's checks pass; the
C     program stops with a failure status otherwise.
      PROGRAM FIXED
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER N
      PARAMETER (N=4)
      INTEGER ME, NP, IERR, I, NBAD, LEFT, RIGHT, WIN, ITOT
      INTEGER IBUF(N)
      REAL WBUF(N), MINE(N)
      DOUBLE PRECISION T0, T1, DVAL
      INTEGER(KIND=MPI_ADDRESS_KIND) WSIZE, DISP
      COMMON /TALLY/ NBAD

      NBAD = 0
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, ME, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      T0 = MPI_WTIME()
      LEFT = MOD(ME + NP - 1, NP)
      RIGHT = MOD(ME + 1, NP)

C     in place: the sum of the ranks
      ITOT = ME
      CALL MPI_ALLREDUCE(MPI_IN_PLACE, ITOT, 1, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, IERR)
      CALL EXPECT(IERR .EQ. MPI_SUCCESS .AND. ITOT .EQ. NP*(NP-1)/2,
     &            'allreduce in place')

C     one routine given buffers of different types and ranks: without
C     explicit interfaces gfortran 10+ needs rmafort's
C     -fallow-argument-mismatch for this
      DVAL = 0D0
      IF (ME .EQ. 0) DVAL = 2.5D0
      CALL MPI_BCAST(DVAL, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD,
     &               IERR)
      CALL EXPECT(DVAL .EQ. 2.5D0, 'a broadcast DOUBLE PRECISION')
      DO 5 I = 1, N
         IBUF(I) = I*(ME + 1)
    5 CONTINUE
      CALL MPI_BCAST(IBUF, N, MPI_INTEGER, 0, MPI_COMM_WORLD, IERR)
      DO 6 I = 1, N
         CALL EXPECT(IBUF(I) .EQ. I, 'a broadcast INTEGER array')
    6 CONTINUE

C     a ring of messages, the status ignored (in another program unit)
      CALL RING(ME, LEFT, RIGHT)

C     MPI_BOTTOM: a message whose datatype holds IBUF's address
      CALL BOTTOM(ME, LEFT, RIGHT, IBUF, N)

C     the ring as a graph; a user operation
      CALL GRAPH(LEFT, RIGHT)
      CALL USEROP(ME)

C     a window over WBUF: everyone puts its row into its right
C     neighbour, then adds 1 to every entry of its left neighbour
      DO 10 I = 1, N
         WBUF(I) = -1.0
         MINE(I) = REAL(100*ME + I)
   10 CONTINUE
      WSIZE = 4*N
      CALL MPI_WIN_CREATE(WBUF, WSIZE, 4, MPI_INFO_NULL,
     &                    MPI_COMM_WORLD, WIN, IERR)
      CALL MPI_WIN_FENCE(MPI_MODE_NOPRECEDE, WIN, IERR)
      DISP = 0
      CALL MPI_PUT(MINE, N, MPI_REAL, RIGHT, DISP, N, MPI_REAL, WIN,
     &             IERR)
      CALL MPI_WIN_FENCE(0, WIN, IERR)
      DO 20 I = 1, N
         MINE(I) = 1.0
   20 CONTINUE
      CALL MPI_ACCUMULATE(MINE, N, MPI_REAL, LEFT, DISP, N, MPI_REAL,
     &                    MPI_SUM, WIN, IERR)
      CALL MPI_WIN_FENCE(MPI_MODE_NOSUCCEED, WIN, IERR)
      CALL MPI_F_SYNC_REG(WBUF)
      DO 30 I = 1, N
         CALL EXPECT(WBUF(I) .EQ. REAL(100*LEFT + I + 1),
     &               'put then accumulate')
   30 CONTINUE
      CALL MPI_WIN_FREE(WIN, IERR)
      CALL EXPECT(WIN .EQ. MPI_WIN_NULL, 'the freed window')

      T1 = MPI_WTIME()
      CALL EXPECT(T1 .GE. T0 .AND. MPI_WTICK() .GT. 0D0, 'MPI_WTIME')

      CALL MPI_ALLREDUCE(MPI_IN_PLACE, NBAD, 1, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, IERR)
      IF (ME .EQ. 0 .AND. NBAD .EQ. 0) PRINT '(A)', ' No Errors'
      IF (ME .EQ. 0 .AND. NBAD .NE. 0) PRINT *, 'Found', NBAD, 'errors'
      CALL MPI_FINALIZE(IERR)
      IF (NBAD .NE. 0) STOP 1
      END

      SUBROUTINE EXPECT(OK, WHAT)
      LOGICAL OK
      CHARACTER*(*) WHAT
      INTEGER NBAD
      COMMON /TALLY/ NBAD
      IF (.NOT. OK) THEN
         NBAD = NBAD + 1
         PRINT *, 'failed: ', WHAT
      END IF
      END

      SUBROUTINE RING(ME, LEFT, RIGHT)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER ME, LEFT, RIGHT, GOT, IERR, REQ
      INTEGER STATS(MPI_STATUS_SIZE, 1)
      CALL MPI_ISEND(ME, 1, MPI_INTEGER, RIGHT, 7, MPI_COMM_WORLD, REQ,
     &               IERR)
      GOT = -1
      CALL MPI_RECV(GOT, 1, MPI_INTEGER, LEFT, 7, MPI_COMM_WORLD,
     &              MPI_STATUS_IGNORE, IERR)
      CALL EXPECT(IERR .EQ. MPI_SUCCESS .AND. GOT .EQ. LEFT,
     &            'a message received with MPI_STATUS_IGNORE')
      CALL MPI_WAITALL(1, REQ, MPI_STATUSES_IGNORE, IERR)
      CALL EXPECT(REQ .EQ. MPI_REQUEST_NULL, 'MPI_WAITALL')
C     and one with its status
      CALL MPI_SENDRECV(ME, 1, MPI_INTEGER, LEFT, 9, GOT, 1,
     &                  MPI_INTEGER, RIGHT, 9, MPI_COMM_WORLD, STATS,
     &                  IERR)
      CALL EXPECT(GOT .EQ. RIGHT .AND. STATS(MPI_SOURCE,1) .EQ. RIGHT
     &            .AND. STATS(MPI_TAG,1) .EQ. 9, 'a status')
      END

      SUBROUTINE BOTTOM(ME, LEFT, RIGHT, IBUF, N)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER ME, LEFT, RIGHT, N, IBUF(N), IERR, I, ABST
      INTEGER BLEN(1)
      INTEGER(KIND=MPI_ADDRESS_KIND) ADDR(1)
      DO 10 I = 1, N
         IBUF(I) = 10*ME + I
   10 CONTINUE
      BLEN(1) = N
      CALL MPI_GET_ADDRESS(IBUF, ADDR(1), IERR)
      CALL MPI_TYPE_CREATE_HINDEXED(1, BLEN, ADDR, MPI_INTEGER, ABST,
     &                              IERR)
      CALL MPI_TYPE_COMMIT(ABST, IERR)
      CALL MPI_SEND(MPI_BOTTOM, 1, ABST, RIGHT, 3, MPI_COMM_WORLD, IERR)
      CALL EXPECT(IERR .EQ. MPI_SUCCESS, 'a send from MPI_BOTTOM')
      CALL MPI_RECV(MPI_BOTTOM, 1, ABST, LEFT, 3, MPI_COMM_WORLD,
     &              MPI_STATUS_IGNORE, IERR)
      DO 20 I = 1, N
         CALL EXPECT(IBUF(I) .EQ. 10*LEFT + I,
     &               'a receive into MPI_BOTTOM')
   20 CONTINUE
      CALL MPI_TYPE_FREE(ABST, IERR)
      END

      SUBROUTINE GRAPH(LEFT, RIGHT)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER LEFT, RIGHT, IERR, G, INDEG, OUTDEG, SRCS(1), DSTS(1)
      LOGICAL WTD
      INTEGER(KIND=MPI_ADDRESS_KIND) A, B
      SRCS(1) = LEFT
      DSTS(1) = RIGHT
      CALL MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, SRCS,
     &     MPI_UNWEIGHTED, 1, DSTS, MPI_UNWEIGHTED, MPI_INFO_NULL,
     &     .FALSE., G, IERR)
      CALL MPI_DIST_GRAPH_NEIGHBORS_COUNT(G, INDEG, OUTDEG, WTD, IERR)
      CALL EXPECT(INDEG .EQ. 1 .AND. OUTDEG .EQ. 1 .AND. .NOT. WTD,
     &            'an unweighted graph')
      SRCS(1) = -1
      DSTS(1) = -1
      CALL MPI_DIST_GRAPH_NEIGHBORS(G, 1, SRCS, MPI_UNWEIGHTED, 1,
     &     DSTS, MPI_UNWEIGHTED, IERR)
      CALL EXPECT(SRCS(1) .EQ. LEFT .AND. DSTS(1) .EQ. RIGHT,
     &            'the graph''s neighbours')
      CALL MPI_COMM_FREE(G, IERR)
      A = 100
      B = MPI_AINT_ADD(A, A)
      CALL EXPECT(B .EQ. 200 .AND. MPI_AINT_DIFF(B, A) .EQ. 100,
     &            'MPI_AINT_ADD and MPI_AINT_DIFF')
      END

C     a x b = a: associative, not commutative; rank 0's values win
      SUBROUTINE FIRST(INVEC, INOUT, LEN, DTYPE)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER LEN, DTYPE, INVEC(LEN), INOUT(LEN), I
      IF (DTYPE .NE. MPI_INTEGER) RETURN
      DO 10 I = 1, LEN
         INOUT(I) = INVEC(I)
   10 CONTINUE
      END

      SUBROUTINE USEROP(ME)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER ME, OP, IERR, V(2), R(2)
      LOGICAL COMMUT
      EXTERNAL FIRST
      CALL MPI_OP_CREATE(FIRST, .FALSE., OP, IERR)
      CALL MPI_OP_COMMUTATIVE(OP, COMMUT, IERR)
      CALL EXPECT(.NOT. COMMUT, 'MPI_OP_COMMUTATIVE')
      V(1) = ME + 5
      V(2) = -ME
      CALL MPI_ALLREDUCE(V, R, 2, MPI_INTEGER, OP, MPI_COMM_WORLD, IERR)
      CALL EXPECT(R(1) .EQ. 5 .AND. R(2) .EQ. 0,
     &            'a user operation in rank order')
      CALL MPI_OP_FREE(OP, IERR)
      CALL EXPECT(OP .EQ. MPI_OP_NULL, 'MPI_OP_FREE')
      END
