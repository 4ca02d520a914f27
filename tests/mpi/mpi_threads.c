/* mpi_threads: an MPI_THREAD_MULTIPLE program whose threads run collectives
 * at the same time, the way hybrid MPI+threads applications (and mpi4py's
 * default) do.
 *
 *   mpi_threads [--rounds N]
 *
 * - kWorkers threads, each on a communicator of its own (a dup of
 *   MPI_COMM_WORLD made before the threads start), run N rounds of MPI_Bcast,
 *   MPI_Allgather, MPI_Allreduce and a pair MPI_Ibcast + MPI_Iallgather whose
 *   requests another thread (the completer) waits for, all at once with the
 *   other workers; each worker frees its communicator when it is done, while
 *   the others still run.
 * - One more thread dups MPI_COMM_WORLD, broadcasts on the copy (its first
 *   collective, which creates MCCL's state for it) and frees it, over and
 *   over, while the workers run.
 * Every byte is checked. Rank 0 prints "RESULT: PASS|FAIL" (run_mpi.sh).
 */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

enum { kWorkers = 3, kInts = 4096 /* 16 KiB */ };

static int rank, size, rounds = 20;

static int value(int tag, int owner, int i) { return tag * 100003 + owner * 7919 + i; }

/* A worker hands its nonblocking requests to the completer through this. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  MPI_Request reqs[2];
  int posted; /* 1: the completer waits for reqs; 0: done (or nothing) */
  int quit;
} handoff;

static handoff slots[kWorkers];

static void* completer(void* arg) {
  (void)arg;
  for (;;) {
    int busy = 0, all_quit = 1;
    for (int w = 0; w < kWorkers; ++w) {
      handoff* h = &slots[w];
      pthread_mutex_lock(&h->mu);
      all_quit = all_quit && h->quit;
      if (h->posted) {
        busy = 1;
        MPI_Request reqs[2] = {h->reqs[0], h->reqs[1]};
        pthread_mutex_unlock(&h->mu);
        /* Waited for here, not on the thread that started them. */
        MPI_Status statuses[2];
        CHECK(MPI_Waitall(2, reqs, statuses) == MPI_SUCCESS, "MPI_Waitall (worker %d)", w);
        pthread_mutex_lock(&h->mu);
        h->posted = 0;
        pthread_cond_signal(&h->cv);
      }
      pthread_mutex_unlock(&h->mu);
    }
    if (all_quit) return NULL;
    if (!busy) sched_yield();
  }
}

typedef struct {
  int id;
  MPI_Comm comm;
} worker_arg;

static void* worker(void* p) {
  worker_arg* a = p;
  MPI_Comm comm = a->comm;
  int* buf = malloc(sizeof(int) * kInts);
  int* all = malloc(sizeof(int) * kInts * (size_t)size);
  int* nb = malloc(sizeof(int) * kInts);
  int* nball = malloc(sizeof(int) * kInts * (size_t)size);
  const int block = kInts / size;
  for (int round = 0; round < rounds; ++round) {
    const int tag = (a->id + 1) * 1000 + round, root = (round + a->id) % size;
    /* Blocking broadcast. */
    for (int i = 0; i < kInts; ++i) buf[i] = rank == root ? value(tag, root, i) : -1;
    CHECK(MPI_Bcast(buf, kInts, MPI_INT, root, comm) == MPI_SUCCESS, "MPI_Bcast");
    for (int i = 0; i < kInts; ++i)
      CHECK(buf[i] == value(tag, root, i), "MPI_Bcast worker %d round %d int %d", a->id, round, i);
    /* Blocking allgather, in place on odd rounds. */
    for (int i = 0; i < kInts * size; ++i) all[i] = -1;
    for (int i = 0; i < block; ++i) buf[i] = value(tag, rank, i);
    if (round % 2) memcpy(all + block * rank, buf, sizeof(int) * (size_t)block);
    CHECK(MPI_Allgather(round % 2 ? MPI_IN_PLACE : buf, block, MPI_INT, all, block, MPI_INT,
                        comm) == MPI_SUCCESS,
          "MPI_Allgather");
    for (int q = 0; q < size; ++q)
      for (int i = 0; i < block; ++i)
        CHECK(all[q * block + i] == value(tag, q, i), "MPI_Allgather worker %d round %d", a->id,
              round);
    /* Allreduce of small ints. */
    for (int i = 0; i < kInts; ++i) buf[i] = (rank + 1) * (i % 100);
    CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, kInts, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS,
          "MPI_Allreduce");
    for (int i = 0; i < kInts; ++i)
      CHECK(buf[i] == size * (size + 1) / 2 * (i % 100), "MPI_Allreduce worker %d round %d", a->id,
            round);
    /* A nonblocking pair, completed by the completer thread. */
    for (int i = 0; i < kInts; ++i) nb[i] = rank == root ? value(tag + 7, root, i) : -1;
    for (int i = 0; i < kInts * size; ++i) nball[i] = -1;
    int* mine = malloc(sizeof(int) * (size_t)block);
    for (int i = 0; i < block; ++i) mine[i] = value(tag + 9, rank, i);
    handoff* h = &slots[a->id];
    MPI_Request reqs[2];
    CHECK(MPI_Ibcast(nb, kInts, MPI_INT, root, comm, &reqs[0]) == MPI_SUCCESS, "MPI_Ibcast");
    CHECK(
        MPI_Iallgather(mine, block, MPI_INT, nball, block, MPI_INT, comm, &reqs[1]) == MPI_SUCCESS,
        "MPI_Iallgather");
    pthread_mutex_lock(&h->mu);
    h->reqs[0] = reqs[0], h->reqs[1] = reqs[1];
    h->posted = 1;
    while (h->posted) pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    for (int i = 0; i < kInts; ++i)
      CHECK(nb[i] == value(tag + 7, root, i), "MPI_Ibcast worker %d round %d", a->id, round);
    for (int q = 0; q < size; ++q)
      for (int i = 0; i < block; ++i)
        CHECK(nball[q * block + i] == value(tag + 9, q, i), "MPI_Iallgather worker %d round %d",
              a->id, round);
    free(mine);
  }
  /* Freed while other workers may still run collectives on theirs. */
  CHECK(MPI_Comm_free(&a->comm) == MPI_SUCCESS, "MPI_Comm_free (worker %d)", a->id);
  handoff* h = &slots[a->id];
  pthread_mutex_lock(&h->mu);
  h->quit = 1;
  pthread_mutex_unlock(&h->mu);
  free(buf), free(all), free(nb), free(nball);
  return NULL;
}

/* Communicators come and go on MPI_COMM_WORLD's copies meanwhile. */
static void* churn(void* arg) {
  (void)arg;
  int* buf = malloc(sizeof(int) * kInts);
  for (int cycle = 0; cycle < rounds / 2 + 1; ++cycle) {
    MPI_Comm c;
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c) == MPI_SUCCESS, "MPI_Comm_dup");
    const int root = cycle % size;
    for (int i = 0; i < kInts; ++i) buf[i] = rank == root ? value(77000 + cycle, root, i) : -1;
    CHECK(MPI_Bcast(buf, kInts, MPI_INT, root, c) == MPI_SUCCESS, "MPI_Bcast (churn)");
    for (int i = 0; i < kInts; ++i)
      CHECK(buf[i] == value(77000 + cycle, root, i), "MPI_Bcast (churn %d) int %d", cycle, i);
    CHECK(MPI_Comm_free(&c) == MPI_SUCCESS, "MPI_Comm_free (churn)");
  }
  free(buf);
  return NULL;
}

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  check_rank = rank;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided != MPI_THREAD_MULTIPLE) {
    if (rank == 0) printf("mpi_threads: this MPI provides thread level %d only\n", provided);
    atomic_fetch_add(&check_failures, 1);
  } else {
    worker_arg args[kWorkers];
    pthread_t workers[kWorkers], done, dups;
    for (int w = 0; w < kWorkers; ++w) {
      args[w].id = w;
      MPI_Comm_dup(MPI_COMM_WORLD, &args[w].comm);
      pthread_mutex_init(&slots[w].mu, NULL);
      pthread_cond_init(&slots[w].cv, NULL);
    }
    pthread_create(&done, NULL, completer, NULL);
    pthread_create(&dups, NULL, churn, NULL);
    for (int w = 0; w < kWorkers; ++w) pthread_create(&workers[w], NULL, worker, &args[w]);
    for (int w = 0; w < kWorkers; ++w) pthread_join(workers[w], NULL);
    pthread_join(dups, NULL);
    pthread_join(done, NULL);
  }
  int mine = check_failed(), all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("RESULT: %s (%d failed checks)\n", all == 0 ? "PASS" : "FAIL", all);
  printf("rank %d finalizing\n", rank);
  fflush(stdout);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
