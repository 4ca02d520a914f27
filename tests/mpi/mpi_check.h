/* CHECK(cond, fmt, ...) for the MPI test programs: a failed condition is
 * counted (from any thread) and the first 20 are printed on stderr with the
 * rank. The program sets check_rank and reads check_failed() at the end. */
#ifndef MCCL_TESTS_MPI_CHECK_H
#define MCCL_TESTS_MPI_CHECK_H

#include <stdatomic.h>
#include <stdio.h>

static int check_rank;
static atomic_int check_failures;

static inline int check_failed(void) { return atomic_load(&check_failures); }

#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (!(cond) && atomic_fetch_add(&check_failures, 1) < 20) { \
      fprintf(stderr, "rank %d: FAIL: ", check_rank);           \
      fprintf(stderr, __VA_ARGS__);                             \
      fputc('\n', stderr);                                      \
    }                                                           \
  } while (0)

#endif
