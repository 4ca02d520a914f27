/* Every collective of the C API, blocking and nonblocking, on a
 * communicator over real processes; every result is checked byte by byte. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static const size_t kSizes[] = {0, 1, 1471, 70001};
#define NSIZES (sizeof kSizes / sizeof kSizes[0])

static void* xmalloc(size_t n) {
  void* p = malloc(n == 0 ? 1 : n);
  EXPECT(p != NULL);
  return p;
}

/* Waits for `r` by polling mccl_test (with a deadline), advancing the
 * protocol with mccl_comm_progress between tests as an application that
 * computes meanwhile would, then frees it. */
static void poll_and_free(mccl_comm_t comm, mccl_request_t r) {
  const time_t deadline = time(NULL) + 60;
  int done = 0;
  while (!done) {
    CHECK_OK(mccl_comm_progress(comm));
    CHECK_OK(mccl_test(r, &done));
    EXPECT(done || time(NULL) < deadline);
  }
  CHECK_OK(mccl_test(r, &done)); /* once done, it stays done */
  EXPECT(done == 1);
  CHECK_OK(mccl_wait(r, 0));
  CHECK_OK(mccl_request_free(r));
}

void check_allgather(mccl_comm_t comm, size_t bytes, unsigned salt) {
  int rank, size;
  CHECK_OK(mccl_comm_rank(comm, &rank));
  CHECK_OK(mccl_comm_size(comm, &size));
  unsigned char* send = xmalloc(bytes);
  unsigned char* recv = xmalloc(bytes * (size_t)size);
  for (size_t i = 0; i < bytes; ++i) send[i] = pattern(rank, i, salt);
  CHECK_OK(mccl_allgather(comm, send, recv, bytes));
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < bytes; ++i) EXPECT(recv[(size_t)r * bytes + i] == pattern(r, i, salt));
  free(send);
  free(recv);
}

static void broadcasts(mccl_comm_t comm, int rank, int size, size_t n) {
  unsigned char* buf = xmalloc(n);
  for (int root = 0; root < size; ++root) {
    for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
      const unsigned salt = (unsigned)(root * 2 + nonblocking);
      for (size_t i = 0; i < n; ++i) buf[i] = rank == root ? pattern(root, i, salt) : 0;
      if (nonblocking) {
        mccl_request_t r;
        CHECK_OK(mccl_ibroadcast(comm, buf, n, root, &r));
        CHECK_OK(mccl_wait(r, -1));
        CHECK_OK(mccl_request_free(r));
      } else {
        CHECK_OK(mccl_broadcast(comm, buf, n, root));
      }
      for (size_t i = 0; i < n; ++i) EXPECT(buf[i] == pattern(root, i, salt));
    }
  }
  free(buf);
}

static void allgathers(mccl_comm_t comm, int rank, int size, size_t n) {
  check_allgather(comm, n, 3);
  /* In place, nonblocking. */
  unsigned char* recv = xmalloc(n * (size_t)size);
  memset(recv, 0, n * (size_t)size);
  for (size_t i = 0; i < n; ++i) recv[(size_t)rank * n + i] = pattern(rank, i, 4);
  mccl_request_t r;
  CHECK_OK(mccl_iallgather(comm, MCCL_IN_PLACE, recv, n, &r));
  poll_and_free(comm, r);
  for (int q = 0; q < size; ++q)
    for (size_t i = 0; i < n; ++i) EXPECT(recv[(size_t)q * n + i] == pattern(q, i, 4));
  free(recv);
}

/* Rank r sends n + 3r bytes; blocks land in reverse rank order with a gap
 * of 5 bytes before each, which must stay untouched. */
static void allgathervs(mccl_comm_t comm, int rank, int size, size_t n) {
  size_t* counts = xmalloc(sizeof(size_t) * (size_t)size);
  size_t* displs = xmalloc(sizeof(size_t) * (size_t)size);
  size_t total = 0;
  for (int q = size - 1; q >= 0; --q) {
    counts[q] = n + 3u * (size_t)q;
    displs[q] = total + 5;
    total += 5 + counts[q];
  }
  unsigned char* send = xmalloc(counts[rank]);
  unsigned char* recv = xmalloc(total);
  for (size_t i = 0; i < counts[rank]; ++i) send[i] = pattern(rank, i, 5);
  for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
    memset(recv, 0xEE, total);
    if (nonblocking) {
      mccl_request_t r;
      size_t* c2 = xmalloc(sizeof(size_t) * (size_t)size);
      size_t* d2 = xmalloc(sizeof(size_t) * (size_t)size);
      memcpy(c2, counts, sizeof(size_t) * (size_t)size);
      memcpy(d2, displs, sizeof(size_t) * (size_t)size);
      CHECK_OK(mccl_iallgatherv(comm, send, recv, c2, d2, &r));
      free(c2); /* the call copied them */
      free(d2);
      CHECK_OK(mccl_wait(r, 60000));
      CHECK_OK(mccl_request_free(r));
    } else {
      CHECK_OK(mccl_allgatherv(comm, send, recv, counts, displs));
    }
    for (int q = 0; q < size; ++q) {
      for (size_t i = 0; i < 5; ++i) EXPECT(recv[displs[q] - 5 + i] == 0xEE);
      for (size_t i = 0; i < counts[q]; ++i) EXPECT(recv[displs[q] + i] == pattern(q, i, 5));
    }
  }
  free(send);
  free(recv);
  free(counts);
  free(displs);
}

/* Values small enough that every sum is exact in every type used. */
static int32_t value(int r, size_t i) { return (int32_t)((r * 7 + (int)(i % 13)) % 17); }

static void reductions(mccl_comm_t comm, int rank, int size, size_t n) {
  /* reduce_scatter, int32 sum: block q of rank r holds value(r, q*n + i). */
  int32_t* send = xmalloc(sizeof(int32_t) * n * (size_t)size);
  int32_t* recv = xmalloc(sizeof(int32_t) * (n + (size_t)size * 3));
  for (size_t j = 0; j < n * (size_t)size; ++j) send[j] = value(rank, j);
  CHECK_OK(mccl_reduce_scatter(comm, send, recv, n, MCCL_INT32, MCCL_SUM));
  for (size_t i = 0; i < n; ++i) {
    int32_t want = 0;
    for (int r = 0; r < size; ++r) want += value(r, (size_t)rank * n + i);
    EXPECT(recv[i] == want);
  }
  mccl_request_t req;
  CHECK_OK(mccl_ireduce_scatter(comm, send, recv, n, MCCL_INT32, MCCL_MAX, &req));
  poll_and_free(comm, req);
  for (size_t i = 0; i < n; ++i) {
    int32_t want = 0;
    for (int r = 0; r < size; ++r)
      if (value(r, (size_t)rank * n + i) > want) want = value(r, (size_t)rank * n + i);
    EXPECT(recv[i] == want);
  }
  /* reduce_scatterv: block q has n + q elements (int32, sum). */
  size_t counts[64];
  EXPECT(size <= 64);
  size_t offset = 0, mine = 0;
  for (int q = 0; q < size; ++q) {
    counts[q] = n + (size_t)q;
    if (q == rank) mine = offset;
    offset += counts[q];
  }
  int32_t* vsend = xmalloc(sizeof(int32_t) * offset);
  for (size_t j = 0; j < offset; ++j) vsend[j] = value(rank, j);
  for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
    memset(recv, 0, sizeof(int32_t) * counts[rank]);
    if (nonblocking) {
      CHECK_OK(mccl_ireduce_scatterv(comm, vsend, recv, counts, MCCL_INT32, MCCL_SUM, &req));
      CHECK_OK(mccl_wait(req, -1));
      CHECK_OK(mccl_request_free(req));
    } else {
      CHECK_OK(mccl_reduce_scatterv(comm, vsend, recv, counts, MCCL_INT32, MCCL_SUM));
    }
    for (size_t i = 0; i < counts[rank]; ++i) {
      int32_t want = 0;
      for (int r = 0; r < size; ++r) want += value(r, mine + i);
      EXPECT(recv[i] == want);
    }
  }
  free(vsend);
  /* allreduce: float64 sum in place (blocking), int64 min (nonblocking). */
  double* d = xmalloc(sizeof(double) * n);
  int64_t* l = xmalloc(sizeof(int64_t) * n);
  int64_t* lout = xmalloc(sizeof(int64_t) * n);
  for (size_t i = 0; i < n; ++i) {
    d[i] = value(rank, i) + 0.5;
    l[i] = value(rank, i) - 8;
  }
  CHECK_OK(mccl_allreduce(comm, MCCL_IN_PLACE, d, n, MCCL_FLOAT64, MCCL_SUM));
  CHECK_OK(mccl_iallreduce(comm, l, lout, n, MCCL_INT64, MCCL_MIN, &req));
  CHECK_OK(mccl_wait(req, -1));
  CHECK_OK(mccl_request_free(req));
  for (size_t i = 0; i < n; ++i) {
    double dsum = 0;
    int64_t lmin = INT64_MAX;
    for (int r = 0; r < size; ++r) {
      dsum += value(r, i) + 0.5;
      if (value(r, i) - 8 < lmin) lmin = value(r, i) - 8;
    }
    EXPECT(d[i] == dsum);
    EXPECT(lout[i] == lmin);
  }
  free(d);
  free(l);
  free(lout);
  free(send);
  free(recv);
}

void run_collectives(mccl_comm_t comm) {
  int rank, size;
  CHECK_OK(mccl_comm_rank(comm, &rank));
  CHECK_OK(mccl_comm_size(comm, &size));
  for (size_t s = 0; s < NSIZES; ++s) {
    broadcasts(comm, rank, size, kSizes[s]);
    allgathers(comm, rank, size, kSizes[s]);
    allgathervs(comm, rank, size, kSizes[s]);
    reductions(comm, rank, size, kSizes[s]);
  }
  CHECK_OK(mccl_barrier(comm));
  mccl_request_t r;
  CHECK_OK(mccl_ibarrier(comm, &r));
  poll_and_free(comm, r);
}
