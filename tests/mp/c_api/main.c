/* One rank of the C API's multi-process test, compiled as C: joins the job
 * that mccl_run started (MCCL_BOOTSTRAP_ADDR, MCCL_RANK, MCCL_WORLD_SIZE)
 * and exercises every call of mccl/mccl.h over UDP multicast and TCP:
 * every collective (collectives.c), every bootstrap and the shared
 * progress thread (bootstraps.c), zero-copy buffers, statistics, and the
 * error contract (codes, messages naming the argument, handles checked
 * before use). Prints "c_api rank=R ok"; exit 0 = all correct. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

int g_rank = -1;

/* Calls that fail on this rank alone, before any data moves. */
static void local_errors(mccl_comm_t comm) {
  char buf[8];
  mccl_request_t r;
  CHECK_ERR(mccl_broadcast(comm, NULL, 8, 0), MCCL_INVALID_ARGUMENT, "'buffer' is NULL");
  CHECK_ERR(mccl_allgather(comm, buf, NULL, 8), MCCL_INVALID_ARGUMENT, "'recv' is NULL");
  CHECK_ERR(mccl_ibarrier(comm, NULL), MCCL_INVALID_ARGUMENT, "'request' is NULL");
  CHECK_ERR(mccl_allgatherv(comm, buf, buf, NULL, NULL), MCCL_INVALID_ARGUMENT, "'counts'");
  CHECK_ERR(mccl_comm_rank(comm, NULL), MCCL_INVALID_ARGUMENT, "'rank' is NULL");
  CHECK_ERR(mccl_comm_rank((mccl_comm_t)buf, (int*)buf), MCCL_INVALID_ARGUMENT,
            "not a live mccl_comm_t");
  CHECK_ERR(mccl_test(NULL, NULL), MCCL_INVALID_ARGUMENT, "'request' is NULL");
  CHECK_ERR(mccl_comm_progress((mccl_comm_t)buf), MCCL_INVALID_ARGUMENT, "not a live mccl_comm_t");

  /* A request: freed once, then refused; the communicator refuses to go
   * while one is live. */
  CHECK_OK(mccl_ibarrier(comm, &r));
  CHECK_ERR(mccl_comm_destroy(comm), MCCL_INVALID_ARGUMENT, "not freed");
  CHECK_ERR(mccl_test(r, NULL), MCCL_INVALID_ARGUMENT, "'done' is NULL");
  CHECK_OK(mccl_wait(r, INT64_MAX));
  CHECK_OK(mccl_request_free(r));
  CHECK_ERR(mccl_request_free(r), MCCL_INVALID_ARGUMENT, "not a live mccl_request_t");
  CHECK_ERR(mccl_wait(r, 0), MCCL_INVALID_ARGUMENT, "not a live mccl_request_t");

  /* Options are checked before anything is exchanged. */
  mccl_comm_options_t o = MCCL_COMM_OPTIONS_INIT;
  mccl_comm_t bad = NULL;
  o.authenticate = 7;
  CHECK_ERR(mccl_comm_create(NULL, &o, &bad), MCCL_INVALID_ARGUMENT, "'bootstrap' is NULL");
  EXPECT(strcmp(mccl_result_string(MCCL_INVALID_ARGUMENT), "invalid argument") == 0);
}

/* Zero-copy buffers: used by a collective, refused when freed twice or
 * foreign; one is left for mccl_comm_destroy to release. */
static void buffers(mccl_comm_t comm, int rank, int size) {
  const size_t n = 4096;
  unsigned char *send, *recv, *left;
  CHECK_OK(mccl_comm_allocate(comm, n, (void**)&send));
  CHECK_OK(mccl_comm_allocate(comm, n * (size_t)size, (void**)&recv));
  CHECK_OK(mccl_comm_allocate(comm, 0, (void**)&left));
  EXPECT(((uintptr_t)send % 64) == 0 && left != NULL && left != send);
  for (size_t i = 0; i < n; ++i) send[i] = pattern(rank, i, 9);
  CHECK_OK(mccl_allgather(comm, send, recv, n));
  for (int q = 0; q < size; ++q)
    for (size_t i = 0; i < n; ++i) EXPECT(recv[(size_t)q * n + i] == pattern(q, i, 9));
  CHECK_OK(mccl_comm_deallocate(comm, send));
  CHECK_ERR(mccl_comm_deallocate(comm, send), MCCL_INVALID_ARGUMENT, "'ptr' is not a live block");
  unsigned char local[16];
  CHECK_ERR(mccl_comm_deallocate(comm, local), MCCL_INVALID_ARGUMENT, "'ptr'");
  CHECK_OK(mccl_comm_deallocate(comm, recv));
  CHECK_OK(mccl_comm_deallocate(comm, NULL));
}

static void statistics(mccl_comm_t comm) {
  mccl_stats_t s = MCCL_STATS_INIT;
  CHECK_OK(mccl_comm_stats(comm, &s));
  EXPECT(s.struct_size == sizeof s);
  EXPECT(s.collectives_completed > 0);
  EXPECT(s.mcast_bytes_sent > 0 || s.p2p_bytes_sent > 0);
  /* A caller built against an older, shorter struct: the tail is untouched. */
  mccl_stats_t old;
  memset(&old, 0xAB, sizeof old);
  old.struct_size = offsetof(mccl_stats_t, eager_completions);
  CHECK_OK(mccl_comm_stats(comm, &old));
  EXPECT(old.collectives_completed >= s.collectives_completed);
  EXPECT(old.eager_completions == UINT64_C(0xABABABABABABABAB));
  s.struct_size = 0;
  CHECK_ERR(mccl_comm_stats(comm, &s), MCCL_INVALID_ARGUMENT, "struct_size");
}

/* The library loaded is the one the header describes. */
static void version(void) {
  char expected[32];
  snprintf(expected, sizeof expected, "%d.%d.%d", MCCL_VERSION_MAJOR, MCCL_VERSION_MINOR,
           MCCL_VERSION_PATCH);
  EXPECT(mccl_version() != NULL && strcmp(mccl_version(), expected) == 0);
}

int main(void) {
  mccl_bootstrap_t boot;
  mccl_comm_t comm;
  int size;
  version();
  CHECK_ERR(mccl_bootstrap_create_from_env(NULL), MCCL_INVALID_ARGUMENT, "'out' is NULL");
  CHECK_OK(mccl_bootstrap_create_from_env(&boot));
  CHECK_OK(mccl_bootstrap_rank(boot, &g_rank));
  CHECK_OK(mccl_bootstrap_size(boot, &size));

  mccl_comm_options_t o = MCCL_COMM_OPTIONS_INIT;
  o.timeout_ms = 60000;
  o.reserved3 = 1;
  CHECK_ERR(mccl_comm_create(boot, &o, &comm), MCCL_INVALID_ARGUMENT, "reserved3");
  o.reserved3 = 0;
  o.authenticate = 3;
  CHECK_ERR(mccl_comm_create(boot, &o, &comm), MCCL_INVALID_ARGUMENT, "authenticate");
  o.authenticate = MCCL_AUTH_OFF;
  CHECK_OK(mccl_comm_create(boot, &o, &comm));

  local_errors(comm);
  run_collectives(comm);
  buffers(comm, g_rank, size);
  statistics(comm);
  run_bootstraps(comm, boot);

  CHECK_OK(mccl_bootstrap_destroy(boot)); /* before the communicator: it keeps it alive */
  CHECK_ERR(mccl_bootstrap_destroy(boot), MCCL_INVALID_ARGUMENT, "not a live mccl_bootstrap_t");
  check_allgather(comm, 100, 10);
  CHECK_OK(mccl_comm_destroy(comm));
  CHECK_ERR(mccl_comm_destroy(comm), MCCL_INVALID_ARGUMENT, "not a live mccl_comm_t");
  printf("c_api rank=%d ok\n", g_rank);
  return 0;
}
