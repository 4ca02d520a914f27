/* mpi_signatures: correct MPI programs that libmccl_mpi once hung or refused.
 *
 * 1. Matching type signatures, different datatypes: every rank describes
 *    the same ints with a datatype of its own (MPI_INT, a contiguous type,
 *    a vector of contiguous blocks with gaps, resized), in every role
 *    (root or not, sender or receiver), in place on some ranks only, for
 *    MPI_Bcast, MPI_Ibcast, MPI_Allgather, MPI_Iallgather, MPI_Allgatherv,
 *    MPI_Allreduce and MPI_Reduce_scatter_block. Each rank deciding by its
 *    own datatype whether MCCL serves the call made the ranks wait for one
 *    another in different libraries.
 * 2. Allgatherv layouts: zero counts anywhere (at repeated displacements,
 *    far outside every other block), blocks out of rank order, the shapes of
 *    MPICH's allgatherv4 test; then a real overlap of non-empty blocks, which
 *    MPI makes erroneous, must fail on every rank (MPI_ERRORS_RETURN) and
 *    leave the communicator usable.
 *
 *   mpi_signatures [--expect-overlap-error]
 *
 * Every received int is checked, and so is every int of a gap or outside the
 * blocks (untouched). Rank 0 prints "RESULT: PASS|FAIL" (tests/mpi/run_mpi.sh).
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

static int rank, size;

enum { kUnit = 64, kSentinel = -7 };

/* A "unit" is 64 ints of the type signature. Each style describes units
 * differently:
 *   0: MPI_INT, 64 elements per unit, units back to back;
 *   1: contiguous(64, MPI_INT), one element per unit (raw: no gaps);
 *   2: vector(2, 1, 2) of contiguous(32, MPI_INT), resized to 128 ints:
 *      32 ints, a gap of 32, 32 ints, a gap of 32 (packed by libmccl_mpi). */
typedef struct {
  MPI_Datatype type;
  int per_unit; /* elements of `type` per unit */
  int stride;   /* ints of memory per unit */
} style_t;

static style_t styles[3];

static void make_styles(void) {
  styles[0] = (style_t){MPI_INT, kUnit, kUnit};
  MPI_Type_contiguous(kUnit, MPI_INT, &styles[1].type);
  MPI_Type_commit(&styles[1].type);
  styles[1].per_unit = 1, styles[1].stride = kUnit;
  MPI_Datatype half, vec;
  MPI_Type_contiguous(kUnit / 2, MPI_INT, &half);
  MPI_Type_vector(2, 1, 2, half, &vec);
  MPI_Type_create_resized(vec, 0, (MPI_Aint)(2 * kUnit * sizeof(int)), &styles[2].type);
  MPI_Type_commit(&styles[2].type);
  MPI_Type_free(&half), MPI_Type_free(&vec);
  styles[2].per_unit = 1, styles[2].stride = 2 * kUnit;
}

/* The memory index of signature int i under a style. */
static size_t at(const style_t* s, size_t i) {
  const size_t unit = i / kUnit, in = i % kUnit;
  if (s->stride == kUnit) return i;
  return unit * (size_t)s->stride + (in / (kUnit / 2)) * kUnit + in % (kUnit / 2);
}

static int value(int tag, int owner, size_t i) { return tag * 100003 + owner * 7919 + (int)i; }

static int* ints(size_t n) {
  int* p = malloc((n ? n : 1) * sizeof(int));
  for (size_t i = 0; i < n; ++i) p[i] = kSentinel;
  return p;
}

/* Checks `units` units at `buf` (style s) hold value(tag, owner, first + i),
 * and the gaps between them still hold the sentinel. */
static void expect(const char* what, const style_t* s, const int* buf, size_t units, int tag,
                   int owner, size_t first) {
  const size_t n = units * kUnit, span = units * (size_t)s->stride;
  char* used = calloc(span ? span : 1, 1);
  for (size_t i = 0; i < n; ++i) {
    const size_t k = at(s, i);
    used[k] = 1;
    CHECK(buf[k] == value(tag, owner, first + i), "%s: int %zu (of rank %d) is %d, want %d", what,
          i, owner, buf[k], value(tag, owner, first + i));
  }
  for (size_t k = 0; k < span; ++k)
    CHECK(used[k] || buf[k] == kSentinel, "%s: gap int %zu was written (%d)", what, k, buf[k]);
  free(used);
}

static void put(const style_t* s, int* buf, size_t units, int tag, int owner, size_t first) {
  for (size_t i = 0; i < units * kUnit; ++i) buf[at(s, i)] = value(tag, owner, first + i);
}

static void bcasts(int tag) {
  const size_t units = 64; /* 16 KiB */
  for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
    for (int root = 0; root < size; ++root) {
      const style_t* s = &styles[(rank + root) % 3];
      int* buf = ints(units * (size_t)s->stride);
      if (rank == root) put(s, buf, units, tag, root, 0);
      const int count = (int)units * s->per_unit;
      if (nonblocking) {
        /* The program may free its datatype once the call has returned. */
        MPI_Datatype mine;
        MPI_Type_dup(s->type, &mine);
        MPI_Request req;
        CHECK(MPI_Ibcast(buf, count, mine, root, MPI_COMM_WORLD, &req) == MPI_SUCCESS,
              "MPI_Ibcast");
        MPI_Type_free(&mine);
        CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait of MPI_Ibcast");
      } else {
        CHECK(MPI_Bcast(buf, count, s->type, root, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Bcast");
      }
      expect(nonblocking ? "MPI_Ibcast" : "MPI_Bcast", s, buf, units, tag, root, 0);
      free(buf);
      ++tag;
    }
  }
}

/* Allgather: send style rank % 3, receive style (rank + 1) % 3, in place
 * on odd ranks. */
static void allgathers(int tag) {
  const size_t units = 16; /* 4 KiB per rank */
  for (int nonblocking = 0; nonblocking < 2; ++nonblocking, ++tag) {
    const style_t *ss = &styles[rank % 3], *rs = &styles[(rank + 1) % 3];
    const int in_place = rank % 2 == 1;
    int* send = ints(units * (size_t)ss->stride);
    int* recv = ints(units * (size_t)rs->stride * (size_t)size);
    put(ss, send, units, tag, rank, 0);
    if (in_place) put(rs, recv + units * (size_t)rs->stride * (size_t)rank, units, tag, rank, 0);
    const void* sbuf = in_place ? MPI_IN_PLACE : send;
    const int scount = (int)units * ss->per_unit, rcount = (int)units * rs->per_unit;
    if (nonblocking) {
      MPI_Request req;
      CHECK(MPI_Iallgather(sbuf, scount, ss->type, recv, rcount, rs->type, MPI_COMM_WORLD, &req) ==
                MPI_SUCCESS,
            "MPI_Iallgather");
      CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait of MPI_Iallgather");
    } else {
      CHECK(MPI_Allgather(sbuf, scount, ss->type, recv, rcount, rs->type, MPI_COMM_WORLD) ==
                MPI_SUCCESS,
            "MPI_Allgather");
    }
    for (int q = 0; q < size; ++q) {
      expect(nonblocking ? "MPI_Iallgather" : "MPI_Allgather", rs,
             recv + units * (size_t)rs->stride * (size_t)q, units, tag, q, 0);
    }
    free(send), free(recv);
  }
}

/* Allgatherv with receive and send types that differ between ranks and
 * between the two sides, all of one unit per element (Open MPI 4.1's own
 * allgatherv picks its algorithm from the send type's size times the
 * receive counts, and hangs where that differs between ranks): block q
 * holds 1, 2 or 0 units, in reverse rank order, empty blocks claiming
 * displacement 0. */
static void allgathervs(int tag) {
  const style_t *ss = &styles[1 + (rank + 1) % 2], *rs = &styles[1 + rank % 2];
  int* counts = malloc(sizeof(int) * (size_t)size);
  int* displs = malloc(sizeof(int) * (size_t)size);
  size_t total = 0;
  for (int q = size - 1; q >= 0; --q) {
    const int u = (q % 3) + 1 == 3 ? 0 : (q % 3) + 1;
    counts[q] = u * rs->per_unit;
    displs[q] =
        u == 0 ? 0 : (int)total * (rs->stride == kUnit && rs->per_unit == kUnit ? kUnit : 1);
    total += (size_t)u;
  }
  const int mine = counts[rank] / rs->per_unit;
  int* send = ints((size_t)mine * (size_t)ss->stride);
  int* recv = ints(total * (size_t)rs->stride);
  put(ss, send, (size_t)mine, tag, rank, 0);
  CHECK(MPI_Allgatherv(send, mine * ss->per_unit, ss->type, recv, counts, displs, rs->type,
                       MPI_COMM_WORLD) == MPI_SUCCESS,
        "MPI_Allgatherv");
  size_t off = 0;
  for (int q = size - 1; q >= 0; --q) {
    const size_t u = (size_t)(counts[q] / rs->per_unit);
    expect("MPI_Allgatherv (derived)", rs, recv + off * (size_t)rs->stride, u, tag, q, 0);
    off += u;
  }
  free(counts), free(displs), free(send), free(recv);
}

/* Allreduce and reduce-scatter: sums of ints, the result exact. */
static int sum_over_ranks(int tag, size_t i) {
  int s = 0;
  for (int q = 0; q < size; ++q) s += value(tag, q, i) % 1000;
  return s;
}

/* Allreduce and reduce-scatter: one datatype per call on each rank (MPI
 * gives the send and receive buffer the same one), another on the next
 * rank; in place on even ranks. Sums of small ints, exact. Neither MPI
 * takes MPI_SUM on a derived type by itself (MPICH 4.0 and Open MPI 4.1:
 * MPI_ERR_OP), so `derived` is for an MPI that does; without it every rank
 * uses MPI_INT and only in place differs between ranks. */
static void reductions(int tag, int derived) {
  const size_t units = 32; /* 8 KiB */
  const style_t* s = &styles[derived ? rank % 3 : 0];
  const int in_place = rank % 2 == 0;
  const int count = (int)units * s->per_unit;
  int* send = ints(units * (size_t)s->stride);
  int* recv = ints(units * (size_t)s->stride);
  for (size_t i = 0; i < units * kUnit; ++i)
    (in_place ? recv : send)[at(s, i)] = value(tag, rank, i) % 1000;
  CHECK(MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, s->type, MPI_SUM,
                      MPI_COMM_WORLD) == MPI_SUCCESS,
        "MPI_Allreduce");
  for (size_t i = 0; i < units * kUnit; ++i)
    CHECK(recv[at(s, i)] == sum_over_ranks(tag, i), "MPI_Allreduce: int %zu is %d, want %d", i,
          recv[at(s, i)], sum_over_ranks(tag, i));
  free(send), free(recv);

  ++tag;
  int* all = ints(units * (size_t)size * (size_t)s->stride);
  int* mine = ints(units * (size_t)s->stride);
  for (size_t i = 0; i < units * kUnit * (size_t)size; ++i)
    all[at(s, i)] = value(tag, rank, i) % 1000;
  CHECK(MPI_Reduce_scatter_block(all, mine, count, s->type, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
        "MPI_Reduce_scatter_block");
  for (size_t i = 0; i < units * kUnit; ++i) {
    const size_t g = (size_t)rank * units * kUnit + i;
    CHECK(mine[at(s, i)] == sum_over_ranks(tag, g),
          "MPI_Reduce_scatter_block: int %zu is %d, want %d", i, mine[at(s, i)],
          sum_over_ranks(tag, g));
  }
  free(all), free(mine);
}

/* Raw MPI_CHAR allgatherv layouts (MPICH's allgatherv4 shapes and more). */
enum { kRegular, kBcast, kSpike, kHalfFull, kLinearDecrease, kZerosEverywhere, kShapes };

static void layouts(int tag) {
  const int m = 12288;
  int* counts = malloc(sizeof(int) * (size_t)size);
  int* displs = malloc(sizeof(int) * (size_t)size);
  for (int shape = 0; shape < kShapes; ++shape, ++tag) {
    for (int q = 0; q < size; ++q) {
      switch (shape) {
        case kRegular:
          counts[q] = m;
          break;
        case kBcast:
          counts[q] = q == 0 ? m : 0;
          break;
        case kSpike:
          counts[q] = q == 0 ? m / 2 : m / (2 * (size - 1));
          break;
        case kHalfFull:
          counts[q] = q < (size + 1) / 2 ? 2 * m : 0;
          break;
        case kLinearDecrease:
          counts[q] = 2 * m * (size - 1 - q) / (size - 1);
          break;
        default:
          counts[q] = q % 2 == 0 ? m : 0;
          break;
      }
    }
    /* Non-empty blocks in reverse rank order with a gap of 5 between them;
     * empty ones at displacement 0 (repeated), or far outside every block
     * (kZerosEverywhere), where nothing may be written. */
    int end = 5;
    for (int q = size - 1; q >= 0; --q) {
      if (counts[q] == 0) {
        displs[q] = shape == kZerosEverywhere ? (q % 4 == 1 ? INT_MAX - 100 : -1000000) : 0;
        continue;
      }
      displs[q] = end;
      end += counts[q] + 5;
    }
    unsigned char* send = malloc((size_t)counts[rank] + 1);
    unsigned char* recv = malloc((size_t)end + 5);
    memset(recv, 0xAB, (size_t)end + 5);
    for (int i = 0; i < counts[rank]; ++i) send[i] = (unsigned char)value(tag, rank, (size_t)i);
    CHECK(MPI_Allgatherv(send, counts[rank], MPI_CHAR, recv, counts, displs, MPI_CHAR,
                         MPI_COMM_WORLD) == MPI_SUCCESS,
          "MPI_Allgatherv (shape %d)", shape);
    char* owned = calloc((size_t)end + 5, 1);
    for (int q = 0; q < size; ++q) {
      for (int i = 0; i < counts[q]; ++i) {
        owned[displs[q] + i] = 1;
        CHECK(recv[displs[q] + i] == (unsigned char)value(tag, q, (size_t)i),
              "MPI_Allgatherv (shape %d): byte %d of rank %d's block", shape, i, q);
      }
    }
    for (int k = 0; k < end + 5; ++k)
      CHECK(owned[k] || recv[k] == 0xAB,
            "MPI_Allgatherv (shape %d): byte %d outside every block "
            "was written",
            shape, k);
    free(send), free(recv), free(owned);
  }
  free(counts), free(displs);
}

/* Two non-empty blocks at the same displacement: erroneous in MPI, an error
 * on every rank under libmccl_mpi (--expect-overlap-error; MPI itself lets
 * the later block win), and the communicator goes on either way. */
static void overlap(int tag, int expect_error) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const int m = 16384;
  int* counts = malloc(sizeof(int) * (size_t)size);
  int* displs = malloc(sizeof(int) * (size_t)size);
  for (int q = 0; q < size; ++q) counts[q] = m, displs[q] = q == 1 ? 0 : q * m;
  unsigned char* send = calloc((size_t)m, 1);
  unsigned char* recv = calloc((size_t)m * (size_t)size, 1);
  const int rc = MPI_Allgatherv(send, m, MPI_CHAR, recv, counts, displs, MPI_CHAR, comm);
  if (expect_error)
    CHECK(rc != MPI_SUCCESS, "MPI_Allgatherv with overlapping non-empty blocks succeeded");
  /* The communicator is still in step. */
  for (int q = 0; q < size; ++q) displs[q] = q * m;
  for (int i = 0; i < m; ++i) send[i] = (unsigned char)value(tag, rank, (size_t)i);
  CHECK(MPI_Allgatherv(send, m, MPI_CHAR, recv, counts, displs, MPI_CHAR, comm) == MPI_SUCCESS,
        "MPI_Allgatherv after the overlap");
  for (int q = 0; q < size; ++q)
    for (int i = 0; i < m; ++i)
      CHECK(recv[q * m + i] == (unsigned char)value(tag, q, (size_t)i),
            "MPI_Allgatherv after the overlap: byte %d of rank %d", i, q);
  free(send), free(recv), free(counts), free(displs);
  MPI_Comm_free(&comm);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  check_rank = rank;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  make_styles();
  bcasts(1000);
  allgathers(2000);
  allgathervs(3000);
  reductions(4000, 0);
  layouts(5000);
  overlap(6000, argc > 1 && strcmp(argv[1], "--expect-overlap-error") == 0);
  int all = 0;
  int failures = check_failed();
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("RESULT: %s (%d failed checks)\n", all == 0 ? "PASS" : "FAIL", all);
  printf("rank %d finalizing\n", rank);
  fflush(stdout);
  MPI_Type_free(&styles[1].type), MPI_Type_free(&styles[2].type);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
