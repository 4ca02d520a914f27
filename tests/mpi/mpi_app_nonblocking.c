/* Many MPI_Ibcast / MPI_Iallgather / MPI_Iallgatherv in flight at once,
 * beside point-to-point requests in the same array, completed through one
 * of MPI_Waitall, Waitany, Waitsome, Testall, Test, Testany, Testsome; then
 * each result compared with the blocking PMPI_ call on the same inputs. */
#include <stdlib.h>
#include <string.h>

#include "mpi_app.h"

enum { kMaxOps = 8 };

typedef struct {
  int kind; /* 0 Ibcast, 1 Iallgather, 2 Iallgatherv */
  int root, n, in_place;
  uint32_t tag;
  size_t bytes; /* of the receive buffer */
  unsigned char *a, *b, *send;
  int *counts, *displs;
} op;

static void post(const app_comm* c, app_rng* r, op* o, uint32_t tag, int max_bytes,
                 MPI_Request* req) {
  memset(o, 0, sizeof *o);
  o->kind = rng_below(r, 3);
  o->tag = tag;
  o->in_place = rng_below(r, 2);
  if (o->kind == 0) {
    o->root = rng_below(r, c->size);
    o->n = rng_count(r, 1, max_bytes);
    o->bytes = (size_t)o->n;
    o->a = calloc(o->bytes + 1, 1), o->b = calloc(o->bytes + 1, 1);
    if (c->rank == o->root) fill(o->a, o->bytes, tag, o->root), fill(o->b, o->bytes, tag, o->root);
    ok_rc("MPI_Ibcast", c->name, MPI_Ibcast(o->a, o->n, MPI_BYTE, o->root, c->comm, req));
    return;
  }
  o->counts = calloc((size_t)c->size, sizeof(int));
  o->displs = calloc((size_t)c->size, sizeof(int));
  const int uniform = rng_count(r, 4, max_bytes / c->size);
  int at = 0;
  for (int q = 0; q < c->size; ++q) {
    o->counts[q] = o->kind == 1 ? uniform : rng_count(r, 4, max_bytes / c->size);
    o->displs[q] = at;
    at += o->counts[q] + (o->kind == 1 ? 0 : 1); /* allgatherv: one-int gaps */
  }
  o->n = o->counts[c->rank];
  o->bytes = (size_t)at * 4;
  o->a = calloc(o->bytes + 1, 1), o->b = calloc(o->bytes + 1, 1);
  o->send = calloc((size_t)o->n * 4 + 1, 1);
  fill(o->send, (size_t)o->n * 4, tag, c->rank);
  memset(o->a, 0xEE, o->bytes);
  if (o->in_place) memcpy(o->a + (size_t)o->displs[c->rank] * 4, o->send, (size_t)o->n * 4);
  memcpy(o->b, o->a, o->bytes);
  const void* s = o->in_place ? MPI_IN_PLACE : o->send;
  if (o->kind == 1) {
    ok_rc("MPI_Iallgather", c->name,
          MPI_Iallgather(s, o->n, MPI_INT, o->a, o->n, MPI_INT, c->comm, req));
  } else {
    ok_rc("MPI_Iallgatherv", c->name,
          MPI_Iallgatherv(s, o->n, MPI_INT, o->a, o->counts, o->displs, MPI_INT, c->comm, req));
  }
}

/* The reference, after every request completed, through blocking PMPI_. */
static void check(const app_comm* c, op* o) {
  static const char* names[] = {"MPI_Ibcast", "MPI_Iallgather", "MPI_Iallgatherv"};
  const void* s = o->in_place ? MPI_IN_PLACE : o->send;
  int rc;
  if (o->kind == 0) {
    rc = PMPI_Bcast(o->b, o->n, MPI_BYTE, o->root, c->comm);
  } else if (o->kind == 1) {
    rc = PMPI_Allgather(s, o->n, MPI_INT, o->b, o->n, MPI_INT, c->comm);
  } else {
    rc = PMPI_Allgatherv(s, o->n, MPI_INT, o->b, o->counts, o->displs, MPI_INT, c->comm);
  }
  ok_rc("the PMPI_ reference", c->name, rc);
  same(names[o->kind], c->name, o->a, o->b, o->bytes);
  digest(o->a, o->bytes);
  free(o->a), free(o->b), free(o->send), free(o->counts), free(o->displs);
}

static void complete(const app_comm* c, int method, int n, MPI_Request* reqs) {
  MPI_Status st[kMaxOps + 2];
  int done = 0, flag = 0, index = 0, outcount = 0, indices[kMaxOps + 2];
  switch (method) {
    case 0:
      ok_rc("MPI_Waitall", c->name, MPI_Waitall(n, reqs, st));
      return;
    case 1:
      while (done < n) {
        ok_rc("MPI_Waitany", c->name, MPI_Waitany(n, reqs, &index, MPI_STATUS_IGNORE));
        ++done;
      }
      return;
    case 2:
      while (done < n) {
        ok_rc("MPI_Waitsome", c->name, MPI_Waitsome(n, reqs, &outcount, indices, st));
        done += outcount;
      }
      return;
    case 3:
      while (!flag) ok_rc("MPI_Testall", c->name, MPI_Testall(n, reqs, &flag, st));
      return;
    case 4:
      for (int i = 0; i < n; ++i) {
        for (flag = 0; !flag;) ok_rc("MPI_Test", c->name, MPI_Test(&reqs[i], &flag, &st[0]));
      }
      return;
    case 5:
      while (done < n) {
        ok_rc("MPI_Testany", c->name, MPI_Testany(n, reqs, &index, &flag, MPI_STATUS_IGNORE));
        done += flag && index != MPI_UNDEFINED;
      }
      return;
    default:
      while (done < n) {
        ok_rc("MPI_Testsome", c->name, MPI_Testsome(n, reqs, &outcount, indices, st));
        done += outcount;
      }
      return;
  }
}

/* A legal order that needs MCCL to progress while this rank sits in
 * another MPI call: even ranks enter a barrier before waiting for the
 * allgather, odd ranks wait for it first. */
static void wait_across_barrier(const app_comm* c, uint32_t tag) {
  const int n = 30001;
  unsigned char *a = calloc((size_t)n * (size_t)c->size, 1),
                *want = calloc((size_t)n * (size_t)c->size, 1);
  for (int q = 0; q < c->size; ++q) fill(want + (size_t)n * (size_t)q, (size_t)n, tag, q);
  MPI_Request req;
  ok_rc("MPI_Iallgather", c->name,
        MPI_Iallgather(want + (size_t)n * (size_t)c->rank, n, MPI_BYTE, a, n, MPI_BYTE, c->comm,
                       &req));
  if (c->rank % 2 == 0) ok_rc("MPI_Barrier", c->name, MPI_Barrier(c->comm));
  ok_rc("MPI_Wait", c->name, MPI_Wait(&req, MPI_STATUS_IGNORE));
  if (c->rank % 2 == 1) ok_rc("MPI_Barrier", c->name, MPI_Barrier(c->comm));
  same("MPI_Iallgather waited across a barrier", c->name, a, want, (size_t)n * (size_t)c->size);
  digest(a, (size_t)n * (size_t)c->size);
  free(a), free(want);
}

void run_nonblocking(const app_comm* c, app_rng* r, int iters, int max_bytes) {
  uint32_t tag = 5000;
  for (int it = 0; it < iters; ++it) {
    op ops[kMaxOps];
    MPI_Request reqs[kMaxOps + 2];
    const int k = 2 + rng_below(r, kMaxOps - 1);
    for (int i = 0; i < k; ++i) post(c, r, &ops[i], ++tag, max_bytes, &reqs[i]);
    /* A ring exchange in the same array: MPI's own requests. */
    int token = c->rank, got = -1;
    const int right = (c->rank + 1) % c->size, left = (c->rank + c->size - 1) % c->size;
    MPI_Irecv(&got, 1, MPI_INT, left, 7, c->comm, &reqs[k]);
    MPI_Isend(&token, 1, MPI_INT, right, 7, c->comm, &reqs[k + 1]);
    complete(c, rng_below(r, 7), k + 2, reqs);
    ++g_app.checks;
    if (got != left)
      same("the ring exchange beside the collectives", c->name, &got, &left, sizeof got);
    for (int i = 0; i < k; ++i) check(c, &ops[i]);
    wait_across_barrier(c, ++tag);
  }
}
