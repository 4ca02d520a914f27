/* MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Reduce_scatter (uneven
 * counts, zeros among them) on integer-valued data (so
 * that every summation order gives the same bits), in place or not,
 * compared with PMPI_. Some (type, op) pairs are ones MCCL has no kernel
 * for: those must reach MPI unchanged. */
#include <stdlib.h>
#include <string.h>

#include "mpi_app.h"

typedef struct {
  MPI_Datatype type;
  MPI_Op op;
  const char* name;
} case_t;

static case_t pick(app_rng* r) {
  const case_t cases[] = {
      {MPI_INT, MPI_SUM, "int sum"},       {MPI_INT, MPI_MAX, "int max"},
      {MPI_INT, MPI_MIN, "int min"},       {MPI_INT, MPI_PROD, "int prod"},
      {MPI_DOUBLE, MPI_SUM, "double sum"}, {MPI_FLOAT, MPI_MAX, "float max"},
      {MPI_LONG, MPI_SUM, "long sum"},     {MPI_UNSIGNED_CHAR, MPI_SUM, "uchar sum"},
      {MPI_SHORT, MPI_SUM, "short sum"},   {MPI_INT, MPI_BAND, "int band"},
      {MPI_DOUBLE, MPI_MIN, "double min"},
  };
  return cases[rng_below(r, (int)(sizeof cases / sizeof cases[0]))];
}

/* Small integers (1..3 for products), stored as `type`. */
static void values(void* buf, MPI_Datatype type, MPI_Op op, size_t n, uint32_t tag, int rank) {
  for (size_t i = 0; i < n; ++i) {
    const int p = pattern(tag, rank, i);
    const int v = op == MPI_PROD ? 1 + p % 3 : p - 100;
    if (type == MPI_INT)
      ((int*)buf)[i] = v;
    else if (type == MPI_DOUBLE)
      ((double*)buf)[i] = v;
    else if (type == MPI_FLOAT)
      ((float*)buf)[i] = (float)v;
    else if (type == MPI_LONG)
      ((long*)buf)[i] = (long)v * 100000007L;
    /* Small enough that no sum of up to 8 ranks wraps: Open MPI 4.1's
     * vectorised 8-bit sum saturates where MPI (and MCCL) wrap around. */
    else if (type == MPI_UNSIGNED_CHAR)
      ((unsigned char*)buf)[i] = (unsigned char)(p % 32);
    else if (type == MPI_SHORT)
      ((short*)buf)[i] = (short)v;
  }
}

static void allreduce(const app_comm* c, app_rng* r, uint32_t tag, int max_bytes) {
  const case_t k = pick(r);
  int es = 0;
  MPI_Type_size(k.type, &es);
  const int n = rng_count(r, es, max_bytes);
  const int in_place = rng_below(r, 2);
  const size_t bytes = (size_t)n * (size_t)es;
  void *send = calloc(bytes + 1, 1), *a = calloc(bytes + 1, 1), *b = calloc(bytes + 1, 1);
  values(send, k.type, k.op, (size_t)n, tag, c->rank);
  if (in_place) memcpy(a, send, bytes), memcpy(b, send, bytes);
  const void* s = in_place ? MPI_IN_PLACE : send;
  ok_rc("MPI_Allreduce", c->name, MPI_Allreduce(s, a, n, k.type, k.op, c->comm));
  ok_rc("PMPI_Allreduce", c->name, PMPI_Allreduce(s, b, n, k.type, k.op, c->comm));
  same(in_place ? "MPI_Allreduce in place" : "MPI_Allreduce", c->name, a, b, bytes);
  digest(a, bytes);
  free(send), free(a), free(b);
}

static void reduce_scatter(const app_comm* c, app_rng* r, uint32_t tag, int max_bytes) {
  const case_t k = pick(r);
  int es = 0;
  MPI_Type_size(k.type, &es);
  const int n = rng_count(r, es, max_bytes / c->size);
  const int in_place = rng_below(r, 2);
  const size_t block = (size_t)n * (size_t)es, all = block * (size_t)c->size;
  void *send = calloc(all + 1, 1), *a = calloc(all + 1, 1), *b = calloc(all + 1, 1);
  values(send, k.type, k.op, (size_t)n * (size_t)c->size, tag, c->rank);
  if (in_place) memcpy(a, send, all), memcpy(b, send, all);
  const void* s = in_place ? MPI_IN_PLACE : send;
  ok_rc("MPI_Reduce_scatter_block", c->name,
        MPI_Reduce_scatter_block(s, a, n, k.type, k.op, c->comm));
  ok_rc("PMPI_Reduce_scatter_block", c->name,
        PMPI_Reduce_scatter_block(s, b, n, k.type, k.op, c->comm));
  /* In place, only the first block is the result; the rest is undefined. */
  same(in_place ? "MPI_Reduce_scatter_block in place" : "MPI_Reduce_scatter_block", c->name, a, b,
       block);
  digest(a, block);
  free(send), free(a), free(b);
}

/* Counts of up to `n` elements per rank, some zero; every rank draws the
 * same (the generator is shared). */
static void reduce_scatter_v(const app_comm* c, app_rng* r, uint32_t tag, int max_bytes) {
  const case_t k = pick(r);
  int es = 0;
  MPI_Type_size(k.type, &es);
  const int n = rng_count(r, es, max_bytes / c->size);
  int* counts = calloc((size_t)c->size, sizeof(int));
  size_t total = 0;
  for (int i = 0; i < c->size; ++i) {
    counts[i] = rng_below(r, 4) == 0 ? 0 : rng_below(r, n + 1);
    total += (size_t)counts[i];
  }
  const int in_place = rng_below(r, 2);
  const size_t all = total * (size_t)es, mine = (size_t)counts[c->rank] * (size_t)es;
  void *send = calloc(all + 1, 1), *a = calloc(all + 1, 1), *b = calloc(all + 1, 1);
  values(send, k.type, k.op, total, tag, c->rank);
  if (in_place) memcpy(a, send, all), memcpy(b, send, all);
  const void* s = in_place ? MPI_IN_PLACE : send;
  ok_rc("MPI_Reduce_scatter", c->name, MPI_Reduce_scatter(s, a, counts, k.type, k.op, c->comm));
  ok_rc("PMPI_Reduce_scatter", c->name, PMPI_Reduce_scatter(s, b, counts, k.type, k.op, c->comm));
  same(in_place ? "MPI_Reduce_scatter in place" : "MPI_Reduce_scatter", c->name, a, b, mine);
  digest(a, mine);
  free(counts), free(send), free(a), free(b);
}

void run_reductions(const app_comm* c, app_rng* r, int iters, int max_bytes) {
  uint32_t tag = 9000;
  for (int it = 0; it < iters; ++it) {
    for (int j = 0; j < 3; ++j) allreduce(c, r, ++tag, max_bytes);
    for (int j = 0; j < 2; ++j) reduce_scatter(c, r, ++tag, max_bytes);
    reduce_scatter_v(c, r, ++tag, max_bytes);
  }
}
