/* The bootstraps other than the environment's, from C: the caller's own
 * runtime (here: an existing MCCL communicator stands in for it, through
 * an allgather callback and through a broadcast-only one), failing
 * callbacks, an explicit TCP store, PMIx where there is no PMIx server,
 * and communicators sharing one progress thread. */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

static int allgather_over(const void* mine, void* all, size_t n, void* user) {
  /* The caller's runtime reports its own failure as a non-zero result. */
  return mccl_allgather((mccl_comm_t)user, mine, all, n) == MCCL_OK ? 0 : -1;
}

static int broadcast_over(void* buffer, size_t n, int root, void* user) {
  return mccl_broadcast((mccl_comm_t)user, buffer, n, root) == MCCL_OK ? 0 : -1;
}

static int failing_allgather(const void* mine, void* all, size_t n, void* user) {
  (void)mine, (void)all, (void)n;
  return *(const int*)user;
}

static void callbacks(mccl_comm_t runtime, int rank, int size) {
  mccl_bootstrap_callbacks_t cb = MCCL_BOOTSTRAP_CALLBACKS_INIT;
  mccl_bootstrap_t boot;
  mccl_comm_t comm;
  CHECK_ERR(mccl_bootstrap_create_callbacks(rank, size, &cb, &boot), MCCL_INVALID_ARGUMENT,
            "both NULL");
  cb.allgather = allgather_over;
  cb.user_data = runtime;
  CHECK_ERR(mccl_bootstrap_create_callbacks(size, size, &cb, &boot), MCCL_INVALID_ARGUMENT,
            "outside");
  for (int kind = 0; kind < 2; ++kind) {
    if (kind == 1) { /* broadcast only: MCCL makes each allgather of size broadcasts */
      cb.allgather = NULL;
      cb.broadcast = broadcast_over;
    }
    CHECK_OK(mccl_bootstrap_create_callbacks(rank, size, &cb, &boot));
    CHECK_OK(mccl_comm_create(boot, NULL, &comm));
    CHECK_OK(mccl_bootstrap_destroy(boot));
    check_allgather(comm, 3000, 20u + (unsigned)kind);
    CHECK_OK(mccl_comm_destroy(comm));
  }
  /* A failing callback ends the creation on every rank with an error. */
  int codes[2] = {42, MCCL_TIMEOUT};
  mccl_result_t want[2] = {MCCL_TRANSPORT_ERROR, MCCL_TIMEOUT};
  for (int i = 0; i < 2; ++i) {
    mccl_bootstrap_callbacks_t bad = MCCL_BOOTSTRAP_CALLBACKS_INIT;
    bad.allgather = failing_allgather;
    bad.user_data = &codes[i];
    CHECK_OK(mccl_bootstrap_create_callbacks(rank, size, &bad, &boot));
    CHECK_ERR(mccl_comm_create(boot, NULL, &comm), want[i], "callback returned");
    CHECK_OK(mccl_bootstrap_destroy(boot));
  }
}

/* A free loopback port picked by rank 0 and broadcast over `comm`. */
static int free_port(mccl_comm_t comm, int rank) {
  int32_t port = 0;
  if (rank == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT(bind(fd, (struct sockaddr*)&a, sizeof a) == 0);
    EXPECT(getsockname(fd, (struct sockaddr*)&a, &len) == 0);
    port = ntohs(a.sin_port);
    close(fd);
  }
  CHECK_OK(mccl_broadcast(comm, &port, sizeof port, 0));
  return port;
}

static void tcp_store(mccl_comm_t comm, int rank, int size) {
  mccl_bootstrap_t boot;
  mccl_comm_t tcp_comm;
  CHECK_ERR(mccl_bootstrap_create_tcp("127.0.0.1:1", size, size, NULL, &boot),
            MCCL_INVALID_ARGUMENT, "rank");
  mccl_tcp_options_t t = MCCL_TCP_OPTIONS_INIT;
  t.timeout_ms = -5;
  CHECK_ERR(mccl_bootstrap_create_tcp(NULL, rank, size, &t, &boot), MCCL_INVALID_ARGUMENT,
            "timeout_ms");
  char address[64];
  snprintf(address, sizeof address, "127.0.0.1:%d", free_port(comm, rank));
  t.timeout_ms = 30000;
  t.secret = "c-api-test-secret";
  CHECK_OK(mccl_bootstrap_create_tcp(address, rank, size, &t, &boot));
  mccl_comm_options_t o = MCCL_COMM_OPTIONS_INIT;
  o.allgather_algorithm = MCCL_ALLGATHER_ALGO_RING;
  CHECK_OK(mccl_comm_create(boot, &o, &tcp_comm));
  check_allgather(tcp_comm, 5000, 30);
  CHECK_OK(mccl_comm_destroy(tcp_comm));
  CHECK_OK(mccl_bootstrap_destroy(boot));
}

static void pmix(void) {
  mccl_bootstrap_t boot;
  /* mccl_run runs no PMIx server: unavailable, with or without PMIx built in. */
  CHECK_ERR(mccl_bootstrap_create_pmix(2000, &boot), MCCL_UNAVAILABLE, "PMIx");
  CHECK_ERR(mccl_bootstrap_create_pmix(-1, &boot), MCCL_INVALID_ARGUMENT, "timeout_ms");
}

/* Two communicators from one bootstrap, driven by one progress thread,
 * with a collective in flight on each at once. */
static void shared_progress_thread(mccl_bootstrap_t boot, int rank, int size) {
  mccl_progress_thread_options_t po = MCCL_PROGRESS_THREAD_OPTIONS_INIT;
  mccl_progress_thread_t engine;
  po.spin_us = -2;
  CHECK_ERR(mccl_progress_thread_create(&po, &engine), MCCL_INVALID_ARGUMENT, "spin_us");
  po.spin_us = 20;
  CHECK_OK(mccl_progress_thread_create(&po, &engine));
  mccl_comm_options_t o = MCCL_COMM_OPTIONS_INIT;
  o.progress_thread = engine;
  o.progress = MCCL_PROGRESS_THREAD;
  o.timeout_ms = 60000;
  mccl_comm_t a, b;
  CHECK_OK(mccl_comm_create(boot, &o, &a));
  /* Authentication on, where the build has it; every rank's build agrees. */
  o.authenticate = MCCL_AUTH_ON;
  mccl_result_t rc = mccl_comm_create(boot, &o, &b);
  if (rc == MCCL_UNAVAILABLE) {
    o.authenticate = MCCL_AUTH_UNSET;
    CHECK_OK(mccl_comm_create(boot, &o, &b));
  } else {
    CHECK_OK(rc);
  }
  int count = 0;
  CHECK_OK(mccl_progress_thread_communicators(engine, &count));
  EXPECT(count == 2);
  CHECK_OK(mccl_progress_thread_destroy(engine)); /* the communicators keep it running */
  CHECK_ERR(mccl_progress_thread_communicators(engine, &count), MCCL_INVALID_ARGUMENT,
            "not a live mccl_progress_thread_t");

  const size_t n = 20000;
  unsigned char* send = malloc(n);
  unsigned char* recv = malloc(n * (size_t)size);
  int32_t* sum = malloc(sizeof(int32_t) * n);
  EXPECT(send && recv && sum);
  for (size_t i = 0; i < n; ++i) {
    send[i] = pattern(rank, i, 40);
    sum[i] = rank + (int32_t)i;
  }
  mccl_request_t ra, rb;
  CHECK_OK(mccl_iallgather(a, send, recv, n, &ra));
  CHECK_OK(mccl_iallreduce(b, MCCL_IN_PLACE, sum, n, MCCL_INT32, MCCL_SUM, &rb));
  CHECK_OK(mccl_wait(rb, -1));
  CHECK_OK(mccl_wait(ra, -1));
  CHECK_OK(mccl_request_free(ra));
  CHECK_OK(mccl_request_free(rb));
  for (int q = 0; q < size; ++q)
    for (size_t i = 0; i < n; ++i) EXPECT(recv[(size_t)q * n + i] == pattern(q, i, 40));
  for (size_t i = 0; i < n; ++i) EXPECT(sum[i] == size * (size - 1) / 2 + size * (int32_t)i);
  free(send);
  free(recv);
  free(sum);
  CHECK_OK(mccl_comm_destroy(a));
  CHECK_OK(mccl_comm_destroy(b));
}

void run_bootstraps(mccl_comm_t comm, mccl_bootstrap_t env_boot) {
  int rank, size;
  CHECK_OK(mccl_comm_rank(comm, &rank));
  CHECK_OK(mccl_comm_size(comm, &size));
  callbacks(comm, rank, size);
  tcp_store(comm, rank, size);
  pmix();
  shared_progress_thread(env_boot, rank, size);
}
