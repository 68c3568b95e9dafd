/* MPI_Abort(MPI_COMM_WORLD, code) on the last rank, code from argv[1], while the
 * other ranks sleep outside MPI: the job must end at once with the aborting rank's
 * exit status the code (its low 8 bits). With argv[2] "held", the aborting rank calls
 * MPI_Abort while another of its threads waits inside MPI (a collective the others
 * never join), at MPI_THREAD_MULTIPLE. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *stuck(void *arg) {
    MPI_Comm c;
    (void)arg;
    MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &c); /* no other rank joins */
    return NULL;
}

int main(int argc, char **argv) {
    int rank, size, provided;
    int held = argc > 2 && !strcmp(argv[2], "held");
    MPI_Init_thread(&argc, &argv, held ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int code = argc > 1 ? atoi(argv[1]) : 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        if (held) {
            pthread_t t;
            pthread_create(&t, NULL, stuck, NULL);
            usleep(200 * 1000);
        }
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    sleep(60);
    printf("rank %d was not ended by MPI_Abort\n", rank);
    MPI_Finalize();
    return 3;
}
