/* mpi_nbloop: an ordinary MPI program that makes one kind of collective over
 * and over on MPI_COMM_WORLD, checks every result and finalizes: the shape
 * of an OSU latency loop, small enough to be run many times in a row.
 *
 *   mpi_nbloop ibcast|iallgather|bcast|allgather BYTES ITERS
 *
 * ibcast and iallgather start the call and complete it with MPI_Wait (the
 * root rotates for the broadcasts). BYTES is the broadcast's message, or
 * each rank's block of the allgather. Rank 0 prints "nbloop KIND bytes=B
 * iters=I us_per_call=T" (the mean of the slowest rank, after a first
 * untimed call that sets up whatever is set up lazily) and
 * "RESULT: PASS|FAIL"; every rank prints "rank R finalizing" just before
 * MPI_Finalize (tests/mpi/run_mpi.sh reads both). Exit 0 on pass, 1 on
 * wrong data, 2 on bad arguments. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char byte_of(int root, int iter, size_t i) {
  return (unsigned char)(root * 53 + iter * 7 + i * 13 + (i >> 10));
}

enum kind { IBCAST, IALLGATHER, BCAST, ALLGATHER };

/* One call of `k` at iteration `iter`; returns the wrong bytes seen. */
static long one_call(enum kind k, int iter, int rank, int size, long m, unsigned char* send,
                     unsigned char* recv) {
  MPI_Request req = MPI_REQUEST_NULL;
  long wrong = 0;
  if (k == IBCAST || k == BCAST) {
    const int root = iter % size;
    for (long i = 0; i < m; ++i) recv[i] = rank == root ? byte_of(root, iter, (size_t)i) : 0;
    if (k == IBCAST) {
      MPI_Ibcast(recv, (int)m, MPI_BYTE, root, MPI_COMM_WORLD, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      MPI_Bcast(recv, (int)m, MPI_BYTE, root, MPI_COMM_WORLD);
    }
    for (long i = 0; i < m; ++i) wrong += recv[i] != byte_of(root, iter, (size_t)i);
    return wrong;
  }
  for (long i = 0; i < m; ++i) send[i] = byte_of(rank, iter, (size_t)i);
  memset(recv, 0, (size_t)m * (size_t)size);
  if (k == IALLGATHER) {
    MPI_Iallgather(send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    MPI_Allgather(send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, MPI_COMM_WORLD);
  }
  for (int r = 0; r < size; ++r) {
    for (long i = 0; i < m; ++i)
      wrong += recv[(size_t)r * (size_t)m + (size_t)i] != byte_of(r, iter, (size_t)i);
  }
  return wrong;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static const char* names[] = {"ibcast", "iallgather", "bcast", "allgather"};
  int k = -1;
  for (int i = 0; argc == 4 && i < 4; ++i) {
    if (strcmp(argv[1], names[i]) == 0) k = i;
  }
  const long m = argc == 4 ? atol(argv[2]) : -1;
  const int iters = argc == 4 ? atoi(argv[3]) : -1;
  if (k < 0 || m <= 0 || m > (1L << 28) || iters <= 0) {
    if (rank == 0)
      fprintf(stderr, "usage: mpi_nbloop ibcast|iallgather|bcast|allgather BYTES ITERS\n");
    MPI_Finalize();
    return 2;
  }
  unsigned char* send = malloc((size_t)m);
  unsigned char* recv = malloc((size_t)m * (size_t)size);

  long wrong = one_call((enum kind)k, 0, rank, size, m, send, recv);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int it = 1; it <= iters; ++it)
    wrong += one_call((enum kind)k, it, rank, size, m, send, recv);
  double us = (MPI_Wtime() - t0) * 1e6 / iters, max_us = 0;
  MPI_Reduce(&us, &max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  long all_wrong = 0;
  MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("nbloop %s bytes=%ld iters=%d us_per_call=%.1f\n", names[k], m, iters, max_us);
    printf("RESULT: %s\n", all_wrong == 0 ? "PASS" : "FAIL");
  }
  printf("rank %d finalizing\n", rank);
  fflush(stdout);
  free(send);
  free(recv);
  MPI_Finalize();
  return all_wrong == 0 ? 0 : 1;
}
