/* mpi_sizes: an ordinary MPI program that makes MPI_Bcast, MPI_Allgather,
 * MPI_Allreduce and MPI_Reduce_scatter_block at every power of two from 4
 * bytes to MAX_BYTES (a rank's block for the allgather and the
 * reduce-scatter), in that order of sizes, and checks every result.
 * min_bytes_test.sh runs it under libmccl_mpi's debug log to see from which
 * size MCCL serves each collective.
 *
 *   mpi_sizes MAX_BYTES
 *
 * "RESULT: PASS|FAIL" from rank 0; exit 0 on pass, 1 on a wrong result, 2 on
 * bad arguments. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

static unsigned char byte_of(int rank, size_t i) { return (unsigned char)(rank * 37 + i * 11); }

/* Small integers in float: sums are exact in any order. */
static float value_of(int rank, size_t i) { return (float)((rank * 5 + i * 3) % 64 + 1); }

static float sum_of(int size, size_t i) {
  float s = 0;
  for (int r = 0; r < size; ++r) s += value_of(r, i);
  return s;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  check_rank = rank;
  const long max = argc == 2 ? atol(argv[1]) : -1;
  if (max < 4 || max > (1L << 26)) {
    if (rank == 0) fprintf(stderr, "usage: mpi_sizes MAX_BYTES (4 B to 64 MiB)\n");
    MPI_Finalize();
    return 2;
  }
  const size_t most = (size_t)max * (size_t)size;
  unsigned char* bytes = malloc(most);
  float* in = malloc(most);
  float* out = malloc(most);
  for (size_t m = 4; m <= (size_t)max; m *= 2) {
    const size_t n = m / sizeof(float);
    for (size_t i = 0; i < m; ++i) bytes[i] = rank == 0 ? byte_of(0, i) : 0;
    MPI_Bcast(bytes, (int)m, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (size_t i = 0; i < m; ++i)
      CHECK(bytes[i] == byte_of(0, i), "MPI_Bcast %zu B: byte %zu", m, i);

    unsigned char* mine = (unsigned char*)in;
    for (size_t i = 0; i < m; ++i) mine[i] = byte_of(rank, i);
    MPI_Allgather(mine, (int)m, MPI_BYTE, bytes, (int)m, MPI_BYTE, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < m; ++i) {
        CHECK(bytes[(size_t)r * m + i] == byte_of(r, i), "MPI_Allgather %zu B: rank %d byte %zu", m,
              r, i);
      }
    }

    for (size_t i = 0; i < n; ++i) in[i] = value_of(rank, i);
    MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; ++i)
      CHECK(out[i] == sum_of(size, i), "MPI_Allreduce %zu B: %zu", m, i);

    for (size_t i = 0; i < n * (size_t)size; ++i) in[i] = value_of(rank, i);
    MPI_Reduce_scatter_block(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; ++i) {
      CHECK(out[i] == sum_of(size, (size_t)rank * n + i), "MPI_Reduce_scatter_block %zu B: %zu", m,
            i);
    }
  }
  int failed = check_failed(), any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("RESULT: %s\n", any ? "FAIL" : "PASS");
  printf("rank %d finalizing\n", rank);
  fflush(stdout);
  free(bytes);
  free(in);
  free(out);
  MPI_Finalize();
  return any ? 1 : 0;
}
