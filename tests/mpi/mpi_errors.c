/* mpi_errors: how a collective that fails inside libmccl_mpi reaches the
 * program. Run only with libmccl_mpi preloaded (it calls MPI erroneously,
 * which MPI itself need not detect).
 *
 * On a dup of MPI_COMM_WORLD whose error handler counts its calls, the
 * ranks call MPI_Bcast with counts that disagree (rank 1 expects 8 bytes
 * more than the root sends), both far above MCCL_MPI_MIN_BYTES. Rank 1
 * must get an error code back, through its handler. Every other rank
 * either gets the same (its handler run) or, when it had finished before
 * the mismatch was found, success with the root's data: never a silent
 * wrong result. MPI_COMM_WORLD must still work afterwards.
 *
 * Prints "RESULT: PASS|FAIL" from rank 0 and "rank R finalizing". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int handler_calls = 0;
static int handler_code = MPI_SUCCESS;

static void count_errors(MPI_Comm* comm, int* code, ...) {
  (void)comm;
  ++handler_calls;
  handler_code = *code;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(count_errors, &eh);
  MPI_Comm_set_errhandler(dup, eh);

  const int n = 200000;
  char* buf = calloc((size_t)n + 8, 1);
  /* A good call first: MCCL state is created on `dup`. */
  int rc_good = MPI_Bcast(buf, n, MPI_BYTE, 0, dup);
  /* A mismatch fails every collective still running on the communicator:
   * without this barrier a rank done with the good broadcast could reach
   * the bad one while the root still waits to complete the good one. */
  PMPI_Barrier(dup);
  const int mine = rank == 1 ? n + 8 : n;
  for (int i = 0; i < n; ++i) buf[i] = rank == 0 ? (char)(i * 7 + 1) : 0;
  int rc_bad = MPI_Bcast(buf, mine, MPI_BYTE, 0, dup);
  int failed = 0;
  if (rc_good != MPI_SUCCESS) {
    printf("rank %d: FAIL: the matching MPI_Bcast returned %d\n", rank, rc_good);
    failed = 1;
  }
  if ((rc_bad == MPI_SUCCESS) != (handler_calls == 0) || (rank == 1 && rc_bad == MPI_SUCCESS)) {
    printf("rank %d: FAIL: the mismatched MPI_Bcast returned %d, handler called %d times\n", rank,
           rc_bad, handler_calls);
    failed = 1;
  } else if (rc_bad == MPI_SUCCESS) {
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += buf[i] != (char)(i * 7 + 1);
    printf("rank %d: the mismatched MPI_Bcast succeeded here with %s data\n", rank,
           wrong ? "WRONG" : "the root's");
    failed = wrong != 0;
  } else {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0, cls = 0;
    MPI_Error_class(rc_bad, &cls);
    MPI_Error_string(rc_bad, text, &len);
    printf(
        "rank %d: mismatched MPI_Bcast returned %d (class %d, %s); handler called %d times with "
        "%d\n",
        rank, rc_bad, cls, text, handler_calls, handler_code);
  }
  MPI_Comm_free(&dup);

  /* The same through MPI_Ibcast, completed by MPI_Waitall beside an MPI
   * request: MPI_ERR_IN_STATUS, the failed request's status says why. */
  MPI_Comm dup2;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup2);
  MPI_Comm_set_errhandler(dup2, eh);
  handler_calls = 0;
  if (MPI_Bcast(buf, n, MPI_BYTE, 0, dup2) != MPI_SUCCESS) {
    printf("rank %d: FAIL: the matching MPI_Bcast on the second dup failed\n", rank);
    failed = 1;
  }
  PMPI_Barrier(dup2); /* as above: the good broadcast completes everywhere first */
  MPI_Request reqs[3];
  MPI_Status st[3];
  int token = rank, got = -1;
  MPI_Ibcast(buf, mine, MPI_BYTE, 0, dup2, &reqs[0]);
  MPI_Irecv(&got, 1, MPI_INT, (rank + size - 1) % size, 5, MPI_COMM_WORLD, &reqs[1]);
  MPI_Isend(&token, 1, MPI_INT, (rank + 1) % size, 5, MPI_COMM_WORLD, &reqs[2]);
  const int rc_wait = MPI_Waitall(3, reqs, st);
  if (rc_wait == MPI_SUCCESS) {
    if (rank == 1 || handler_calls != 0) {
      printf("rank %d: FAIL: MPI_Waitall of the mismatched MPI_Ibcast succeeded (handler %d)\n",
             rank, handler_calls);
      failed = 1;
    }
  } else if (rc_wait != MPI_ERR_IN_STATUS || st[0].MPI_ERROR == MPI_SUCCESS ||
             st[1].MPI_ERROR != MPI_SUCCESS || handler_calls == 0) {
    printf("rank %d: FAIL: MPI_Waitall returned %d, statuses %d %d, handler called %d times\n",
           rank, rc_wait, st[0].MPI_ERROR, st[1].MPI_ERROR, handler_calls);
    failed = 1;
  } else {
    printf("rank %d: MPI_Waitall of the mismatched MPI_Ibcast: MPI_ERR_IN_STATUS, status %d\n",
           rank, st[0].MPI_ERROR);
  }
  if (got != (rank + size - 1) % size) {
    printf("rank %d: FAIL: the point-to-point request beside it got %d\n", rank, got);
    failed = 1;
  }
  MPI_Comm_free(&dup2);
  MPI_Errhandler_free(&eh);

  /* The world communicator is untouched. */
  memset(buf, rank == 0 ? 7 : 0, (size_t)n);
  if (MPI_Bcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS || buf[n - 1] != 7) {
    printf("rank %d: FAIL: MPI_Bcast on MPI_COMM_WORLD after the failure\n", rank);
    failed = 1;
  }
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("RESULT: %s\n", any ? "FAIL" : "PASS");
  printf("rank %d finalizing\n", rank);
  fflush(stdout);
  free(buf);
  MPI_Finalize();
  return any ? 1 : 0;
}
