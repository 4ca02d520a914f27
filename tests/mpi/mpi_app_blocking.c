/* Blocking MPI_Bcast, MPI_Allgather and MPI_Allgatherv, each compared with
 * the same call through PMPI_ and with the data every rank knows it must
 * receive. */
#include <stdlib.h>
#include <string.h>

#include "mpi_app.h"

static const MPI_Datatype* pick_type(app_rng* r, int* esize) {
  static MPI_Datatype types[5];
  types[0] = MPI_BYTE, types[1] = MPI_INT, types[2] = MPI_DOUBLE, types[3] = MPI_CHAR;
  types[4] = MPI_SHORT;
  const MPI_Datatype* t = &types[rng_below(r, 5)];
  MPI_Type_size(*t, esize);
  return t;
}

static void* zalloc(size_t bytes) { return calloc(bytes ? bytes : 1, 1); }

/* Every root in turn; a derived type (packed around MCCL) once per round. */
static void bcasts(const app_comm* c, app_rng* r, uint32_t* tag, int max_bytes) {
  for (int root = 0; root < c->size; ++root) {
    int es = 0;
    const MPI_Datatype type = *pick_type(r, &es);
    const int n = rng_count(r, es, max_bytes);
    const size_t bytes = (size_t)n * (size_t)es;
    unsigned char *a = zalloc(bytes), *b = zalloc(bytes), *want = zalloc(bytes);
    fill(want, bytes, ++*tag, root);
    if (c->rank == root) memcpy(a, want, bytes), memcpy(b, want, bytes);
    ok_rc("MPI_Bcast", c->name, MPI_Bcast(a, n, type, root, c->comm));
    ok_rc("PMPI_Bcast", c->name, PMPI_Bcast(b, n, type, root, c->comm));
    same("MPI_Bcast vs PMPI_Bcast", c->name, a, b, bytes);
    same("MPI_Bcast vs the root's data", c->name, a, want, bytes);
    digest(a, bytes);
    free(a), free(b), free(want);
  }
  MPI_Datatype triple; /* contiguous, yet derived: MCCL moves the buffer as it is */
  MPI_Type_contiguous(3, MPI_INT, &triple);
  MPI_Type_commit(&triple);
  const int n = 1000 + rng_below(r, 1000), root = rng_below(r, c->size);
  const size_t bytes = (size_t)n * 12;
  unsigned char *a = zalloc(bytes), *want = zalloc(bytes);
  fill(want, bytes, ++*tag, root);
  if (c->rank == root) memcpy(a, want, bytes);
  ok_rc("MPI_Bcast (derived type)", c->name, MPI_Bcast(a, n, triple, root, c->comm));
  same("MPI_Bcast (derived type)", c->name, a, want, bytes);
  digest(a, bytes);
  free(a), free(want);
  MPI_Type_free(&triple);
}

/* MPI_Allgather, in place or not, and once with a strided send type. */
static void allgathers(const app_comm* c, app_rng* r, uint32_t* tag, int max_bytes) {
  int es = 0;
  const MPI_Datatype type = *pick_type(r, &es);
  const int n = rng_count(r, es, max_bytes / c->size);
  const int in_place = rng_below(r, 2);
  const size_t block = (size_t)n * (size_t)es, all = block * (size_t)c->size;
  unsigned char *send = zalloc(block), *a = zalloc(all), *b = zalloc(all), *want = zalloc(all);
  ++*tag;
  for (int q = 0; q < c->size; ++q) fill(want + block * (size_t)q, block, *tag, q);
  memset(a, 0xEE, all);
  memcpy(send, want + block * (size_t)c->rank, block);
  if (in_place) memcpy(a + block * (size_t)c->rank, send, block);
  memcpy(b, a, all);
  const void* sbuf = in_place ? MPI_IN_PLACE : send;
  ok_rc("MPI_Allgather", c->name, MPI_Allgather(sbuf, n, type, a, n, type, c->comm));
  ok_rc("PMPI_Allgather", c->name, PMPI_Allgather(sbuf, n, type, b, n, type, c->comm));
  same("MPI_Allgather vs PMPI_Allgather", c->name, a, b, all);
  same("MPI_Allgather vs every rank's data", c->name, a, want, all);
  digest(a, all);
  free(send), free(a), free(b), free(want);

  /* Every other int of `strided` is this rank's block: MPI packs it, MCCL
   * moves the result. */
  const int m = 2 * (3000 + rng_below(r, 2000)) + 1;
  int* strided = calloc((size_t)m * 2, sizeof(int));
  int* got = calloc((size_t)m * (size_t)c->size, sizeof(int));
  int* ref = calloc((size_t)m * (size_t)c->size, sizeof(int));
  ++*tag;
  for (int i = 0; i < m; ++i)
    strided[2 * i] = (int)(*tag * 100003u + (uint32_t)c->rank * 7919u + (uint32_t)i);
  MPI_Datatype every_other;
  MPI_Type_vector(m, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  ok_rc("MPI_Allgather (strided send)", c->name,
        MPI_Allgather(strided, 1, every_other, got, m, MPI_INT, c->comm));
  ok_rc("PMPI_Allgather (strided send)", c->name,
        PMPI_Allgather(strided, 1, every_other, ref, m, MPI_INT, c->comm));
  same("MPI_Allgather (strided send)", c->name, got, ref,
       (size_t)m * (size_t)c->size * sizeof(int));
  digest(got, (size_t)m * (size_t)c->size * sizeof(int));
  MPI_Type_free(&every_other);
  free(strided), free(got), free(ref);
}

/* MPI_Allgatherv: random counts (some 0), blocks in a random order with
 * gaps that differ between ranks (displacements are each rank's own). */
static void allgathervs(const app_comm* c, app_rng* r, uint32_t* tag, int max_bytes) {
  int es = 0;
  const MPI_Datatype type = *pick_type(r, &es);
  int* counts = calloc((size_t)c->size, sizeof(int));
  int* displs = calloc((size_t)c->size, sizeof(int));
  int* order = calloc((size_t)c->size, sizeof(int));
  for (int q = 0; q < c->size; ++q) counts[q] = rng_count(r, es, max_bytes / c->size), order[q] = q;
  for (int q = c->size - 1; q > 0; --q) { /* a shared shuffle */
    const int j = rng_below(r, q + 1), t = order[q];
    order[q] = order[j], order[j] = t;
  }
  int at = 0;
  for (int k = 0; k < c->size; ++k) {
    displs[order[k]] = at + (c->rank % 3);
    at += counts[order[k]] + (c->rank % 3) + rng_below(r, 3);
  }
  const int in_place = rng_below(r, 2);
  const size_t all = (size_t)at * (size_t)es;
  unsigned char *a = zalloc(all), *b = zalloc(all), *want = zalloc(all);
  unsigned char* send = zalloc((size_t)counts[c->rank] * (size_t)es);
  ++*tag;
  memset(want, 0xEE, all);
  for (int q = 0; q < c->size; ++q)
    fill(want + (size_t)displs[q] * (size_t)es, (size_t)counts[q] * (size_t)es, *tag, q);
  memset(a, 0xEE, all);
  const size_t own = (size_t)displs[c->rank] * (size_t)es,
               own_bytes = (size_t)counts[c->rank] * (size_t)es;
  memcpy(send, want + own, own_bytes);
  if (in_place) memcpy(a + own, send, own_bytes);
  memcpy(b, a, all);
  const void* sbuf = in_place ? MPI_IN_PLACE : send;
  const int sn = counts[c->rank];
  ok_rc("MPI_Allgatherv", c->name,
        MPI_Allgatherv(sbuf, sn, type, a, counts, displs, type, c->comm));
  ok_rc("PMPI_Allgatherv", c->name,
        PMPI_Allgatherv(sbuf, sn, type, b, counts, displs, type, c->comm));
  same("MPI_Allgatherv vs PMPI_Allgatherv", c->name, a, b, all);
  same("MPI_Allgatherv vs every rank's data", c->name, a, want, all);
  digest(a, all);
  free(a), free(b), free(want), free(send), free(counts), free(displs), free(order);
}

void run_blocking(const app_comm* c, app_rng* r, int iters, int max_bytes) {
  uint32_t tag = 1000;
  for (int it = 0; it < iters; ++it) {
    bcasts(c, r, &tag, max_bytes);
    allgathers(c, r, &tag, max_bytes);
    allgathervs(c, r, &tag, max_bytes);
  }
}
