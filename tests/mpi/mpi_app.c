/* mpi_app: an ordinary MPI program (nothing of MCCL in it) that checks
 * MPI_Bcast, MPI_Allgather(v), their nonblocking twins, MPI_Allreduce and
 * MPI_Reduce_scatter_block against PMPI_ on MPI_COMM_WORLD, a dup of it, a
 * split of it (ranks in reverse order) and short-lived dups.
 *
 *   mpi_app [--iters N] [--seed S] [--max-bytes B] [--thread-multiple]
 *
 * Prints "rank R digest D checks C failures F" on every rank, "RESULT: PASS"
 * or "RESULT: FAIL" on rank 0 and "rank R finalizing" on every rank before
 * MPI_Finalize (tests/mpi/run_mpi.sh reads those). Exit 0 on pass, 1 on a
 * failed check, 2 on bad arguments. */
#include "mpi_app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

app_state g_app;

void rng_seed(app_rng* r, uint64_t seed) { r->s = seed * 0x9e3779b97f4a7c15ull + 1; }

uint64_t rng_next(app_rng* r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int rng_below(app_rng* r, int n) { return (int)(rng_next(r) % (uint64_t)n); }

int rng_count(app_rng* r, int esize, int max_bytes) {
  const int threshold = 8192 / esize; /* the MCCL_MPI_MIN_BYTES its tests set */
  const int most = max_bytes / esize;
  switch (rng_below(r, 10)) {
    case 0:
      return 0;
    case 1:
      return 1;
    case 2:
    case 3:
      return 2 * rng_below(r, 32) + 1;
    case 4:
    case 5:
      return threshold - 1 + rng_below(r, 3);
    default:
      return (most / 4 + rng_below(r, most - most / 4)) | 1;
  }
}

unsigned char pattern(uint32_t tag, int rank, size_t i) {
  uint32_t x = tag * 2654435761u ^ (uint32_t)rank * 40503u ^ (uint32_t)i * 2246822519u;
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  return (unsigned char)(x >> 24);
}

void fill(void* buf, size_t bytes, uint32_t tag, int rank) {
  unsigned char* p = buf;
  for (size_t i = 0; i < bytes; ++i) p[i] = pattern(tag, rank, i);
}

void digest(const void* buf, size_t bytes) {
  const unsigned char* p = buf;
  for (size_t i = 0; i < bytes; ++i) {
    g_app.digest ^= p[i];
    g_app.digest *= 0x100000001b3ull;
  }
}

static void failure(const char* what, const char* comm, const char* detail) {
  if (++g_app.failures <= 10) {
    printf("rank %d: FAIL %s on %s: %s\n", g_app.world_rank, what, comm, detail);
    fflush(stdout);
  }
}

void same(const char* what, const char* comm, const void* got, const void* want, size_t bytes) {
  ++g_app.checks;
  if (bytes == 0 || memcmp(got, want, bytes) == 0) return;
  const unsigned char *a = got, *b = want;
  size_t i = 0;
  while (a[i] == b[i]) ++i;
  char detail[160];
  snprintf(detail, sizeof detail, "byte %zu of %zu is 0x%02x, expected 0x%02x", i, bytes, a[i],
           b[i]);
  failure(what, comm, detail);
}

void ok_rc(const char* what, const char* comm, int rc) {
  ++g_app.checks;
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, text, &len);
  char detail[MPI_MAX_ERROR_STRING + 32];
  snprintf(detail, sizeof detail, "returned %d (%s)", rc, text);
  failure(what, comm, detail);
}

app_comm app_comm_of(MPI_Comm comm, const char* name) {
  app_comm c = {comm, name, 0, 1};
  MPI_Comm_rank(comm, &c.rank);
  MPI_Comm_size(comm, &c.size);
  /* Failures must come back as codes, so that a check can name them. */
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return c;
}

static int arg_int(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], name) == 0) return atoi(argv[i + 1]);
  }
  return fallback;
}

/* Short-lived communicators: created, used by a served blocking and a
 * nonblocking call, and freed while that nonblocking call is still
 * pending (MPI frees it once the call completes). */
static void run_short_lived(const app_comm* world, app_rng* r, int iters) {
  for (int it = 0; it < iters; ++it) {
    MPI_Comm dup;
    MPI_Comm_dup(world->comm, &dup);
    app_comm c = app_comm_of(dup, "short-lived dup");
    const size_t n = 20000 + 2 * (size_t)rng_below(r, 1000) + 1;
    const size_t all = n * (size_t)c.size;
    unsigned char* a = malloc(all);
    unsigned char* want = malloc(all);
    if (c.rank == 0) fill(a, n, 900 + (uint32_t)it, 0);
    ok_rc("MPI_Bcast", c.name, MPI_Bcast(a, (int)n, MPI_BYTE, 0, c.comm));
    fill(want, n, 900 + (uint32_t)it, 0);
    same("MPI_Bcast", c.name, a, want, n);
    digest(a, n);

    memset(a, 0xEE, all);
    fill(a + n * (size_t)c.rank, n, 950 + (uint32_t)it, c.rank);
    MPI_Request req;
    ok_rc("MPI_Iallgather", c.name,
          MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, (int)n, MPI_BYTE, c.comm, &req));
    MPI_Comm_free(&dup);
    ok_rc("MPI_Wait", c.name, MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int q = 0; q < c.size; ++q) fill(want + n * (size_t)q, n, 950 + (uint32_t)it, q);
    same("MPI_Iallgather then MPI_Comm_free", c.name, a, want, all);
    digest(a, all);
    free(a);
    free(want);
  }
}

int main(int argc, char** argv) {
  int provided = 0;
  int multiple = 0; /* --thread-multiple: ask for MPI_THREAD_MULTIPLE */
  for (int i = 1; i < argc; ++i) multiple |= strcmp(argv[i], "--thread-multiple") == 0;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_app.world_rank);
  g_app.digest = 0xcbf29ce484222325ull;
  const int iters = arg_int(argc, argv, "--iters", 3);
  const int seed = arg_int(argc, argv, "--seed", 1);
  const int max_bytes = arg_int(argc, argv, "--max-bytes", 1 << 18);
  if (iters < 1 || max_bytes < 64) {
    if (g_app.world_rank == 0) fprintf(stderr, "mpi_app: bad --iters or --max-bytes\n");
    MPI_Finalize();
    return 2;
  }

  app_comm world = app_comm_of(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  MPI_Comm dup, split;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, world.rank % 2, world.size - world.rank, &split);
  app_comm comms[3] = {world, app_comm_of(dup, "dup of MPI_COMM_WORLD"),
                       app_comm_of(split, world.rank % 2 ? "split (odd ranks, reversed)"
                                                         : "split (even ranks, reversed)")};
  for (int k = 0; k < 3; ++k) {
    app_rng r; /* the same on every rank of comms[k] */
    rng_seed(&r,
             (uint64_t)seed * 1000 + (uint64_t)k * 10 + (uint64_t)(k == 2 ? world.rank % 2 : 0));
    run_blocking(&comms[k], &r, iters, max_bytes);
    run_nonblocking(&comms[k], &r, iters, max_bytes);
    run_reductions(&comms[k], &r, iters, max_bytes);
  }
  app_rng r;
  rng_seed(&r, (uint64_t)seed * 1000 + 99);
  run_short_lived(&world, &r, iters);
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);

  long failures = 0;
  PMPI_Allreduce(&g_app.failures, &failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d digest %016llx checks %ld failures %ld\n", g_app.world_rank,
         (unsigned long long)g_app.digest, g_app.checks, g_app.failures);
  fflush(stdout);
  PMPI_Barrier(MPI_COMM_WORLD);
  if (g_app.world_rank == 0) printf("RESULT: %s\n", failures == 0 ? "PASS" : "FAIL");
  printf("rank %d finalizing\n", g_app.world_rank);
  fflush(stdout);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
