/* mpi_txbytes: an ordinary MPI program that measures what one MPI_Allgather
 * of M bytes per rank puts on this host's link, read from a byte counter
 * file (in a namespace of tests/fabric/cluster.sh:
 * /sys/class/net/veth0/statistics/tx_bytes, this host's own).
 *
 *   mpi_txbytes BYTES COUNTER_FILE
 *
 * Prints "txbytes rank=R bytes=D barrier=B m=M", where D is the counter's
 * growth over the allgather and one MPI_Barrier and B what one barrier alone
 * added; checks the data gathered; "RESULT: PASS|FAIL" from rank 0. Exit 0
 * on pass, 1 on wrong data, 2 on bad arguments or an unreadable counter. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long counter(const char* path) {
  FILE* f = fopen(path, "r");
  long long v = -1;
  if (f == NULL || fscanf(f, "%lld", &v) != 1) v = -1;
  if (f != NULL) fclose(f);
  return v;
}

static unsigned char byte_of(int rank, size_t i) {
  return (unsigned char)(rank * 37 + i * 11 + (i >> 9));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long m = argc == 3 ? atol(argv[1]) : -1;
  if (m <= 0 || m > (1L << 30) || counter(argv[2]) < 0) {
    if (rank == 0) fprintf(stderr, "usage: mpi_txbytes BYTES COUNTER_FILE (a readable counter)\n");
    MPI_Finalize();
    return 2;
  }
  unsigned char* send = malloc((size_t)m);
  unsigned char* recv = malloc((size_t)m * (size_t)size);
  for (long i = 0; i < m; ++i) send[i] = byte_of(rank, (size_t)i);

  /* A first allgather sets up whatever the library sets up lazily. */
  MPI_Allgather(send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const long long b0 = counter(argv[2]);
  MPI_Barrier(MPI_COMM_WORLD);
  const long long b1 = counter(argv[2]);
  MPI_Barrier(MPI_COMM_WORLD);
  memset(recv, 0, (size_t)m * (size_t)size);
  const long long t0 = counter(argv[2]);
  const double s0 = MPI_Wtime();
  MPI_Allgather(send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, MPI_COMM_WORLD);
  const double s1 = MPI_Wtime();
  MPI_Barrier(MPI_COMM_WORLD);
  const long long t1 = counter(argv[2]);

  long wrong = 0;
  for (int r = 0; r < size; ++r) {
    for (long i = 0; i < m; ++i)
      wrong += recv[(size_t)r * (size_t)m + (size_t)i] != byte_of(r, (size_t)i);
  }
  printf("txbytes rank=%d bytes=%lld barrier=%lld m=%ld seconds=%.4f wrong=%ld\n", rank, t1 - t0,
         b1 - b0, m, s1 - s0, wrong);
  fflush(stdout);
  long all_wrong = 0;
  MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("RESULT: %s\n", all_wrong == 0 ? "PASS" : "FAIL");
  printf("rank %d finalizing\n", rank);
  fflush(stdout);
  free(send);
  free(recv);
  MPI_Finalize();
  return all_wrong == 0 ? 0 : 1;
}
