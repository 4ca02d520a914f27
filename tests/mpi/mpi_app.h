/* The pieces of mpi_app (an ordinary MPI program, built with mpicc, that
 * libmccl_mpi must serve without a change): shared random choices, data
 * patterns, result checks and the communicators it runs on.
 *
 * Every collective the program makes through MPI_ is made again through
 * PMPI_ on the same inputs, and the two receive buffers (gaps included) must
 * be identical; where the answer is known locally (broadcast, allgather) it
 * is checked against that too. Without libmccl_mpi both calls are MPI's own,
 * so the run checks itself; the digest of all MPI_ results lets a script
 * compare a run with the preload against one without. */
#ifndef MCCL_TESTS_MPI_APP_H
#define MCCL_TESTS_MPI_APP_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Random choices every rank of a communicator makes alike: all ranks seed it
 * the same and draw the same number of values. */
typedef struct {
  uint64_t s;
} app_rng;
void rng_seed(app_rng* r, uint64_t seed);
uint64_t rng_next(app_rng* r);
int rng_below(app_rng* r, int n); /* in [0, n) */
/* An element count for `esize`-byte elements: 0, 1, small odd, around
 * MCCL_MPI_MIN_BYTES, or large and odd (up to `max_bytes`). */
int rng_count(app_rng* r, int esize, int max_bytes);

/* Byte i of the data `rank` contributes to collective `tag`. */
unsigned char pattern(uint32_t tag, int rank, size_t i);
void fill(void* buf, size_t bytes, uint32_t tag, int rank);

/* Results and failures of this rank. */
typedef struct {
  int world_rank;
  long checks;
  long failures;
  uint64_t digest; /* FNV-1a over every MPI_ result */
} app_state;
extern app_state g_app;

void digest(const void* buf, size_t bytes);
/* Counts a failure and prints it (the first few) when a and b differ. */
void same(const char* what, const char* comm, const void* got, const void* want, size_t bytes);
/* Counts a failure and prints it when rc is not MPI_SUCCESS. */
void ok_rc(const char* what, const char* comm, int rc);

/* A communicator under test: its handle, a name for messages, rank, size. */
typedef struct {
  MPI_Comm comm;
  const char* name;
  int rank;
  int size;
} app_comm;
app_comm app_comm_of(MPI_Comm comm, const char* name);

/* The test groups (mpi_app_blocking.c, mpi_app_nonblocking.c,
 * mpi_app_reduce.c); each runs `iters` rounds on `c`. */
void run_blocking(const app_comm* c, app_rng* r, int iters, int max_bytes);
void run_nonblocking(const app_comm* c, app_rng* r, int iters, int max_bytes);
void run_reductions(const app_comm* c, app_rng* r, int iters, int max_bytes);

#endif
