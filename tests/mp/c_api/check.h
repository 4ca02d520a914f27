/* Checks shared by the C API's multi-process test: a failure prints the
 * rank, the place and MCCL's message, and ends the process (exit 2: wrong
 * data; exit 3: an unexpected MCCL result). */
#ifndef MCCL_TESTS_MP_C_API_CHECK_H_
#define MCCL_TESTS_MP_C_API_CHECK_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mccl/mccl.h"

extern int g_rank;

#define CHECK_OK(call)                                                                       \
  do {                                                                                       \
    mccl_result_t rc_ = (call);                                                              \
    if (rc_ != MCCL_OK) {                                                                    \
      fprintf(stderr, "rank %d: %s:%d: %s gave %s: %s\n", g_rank, __FILE__, __LINE__, #call, \
              mccl_result_string(rc_), mccl_last_error());                                   \
      exit(3);                                                                               \
    }                                                                                        \
  } while (0)

/* `call` must fail with `code`, and mccl_last_error() must contain `needle`. */
#define CHECK_ERR(call, code, needle)                                                         \
  do {                                                                                        \
    mccl_result_t rc_ = (call);                                                               \
    if (rc_ != (code) || strstr(mccl_last_error(), (needle)) == NULL) {                       \
      fprintf(stderr, "rank %d: %s:%d: %s gave %s (\"%s\"), expected %s mentioning \"%s\"\n", \
              g_rank, __FILE__, __LINE__, #call, mccl_result_string(rc_), mccl_last_error(),  \
              mccl_result_string(code), (needle));                                            \
      exit(3);                                                                                \
    }                                                                                         \
  } while (0)

#define EXPECT(cond)                                                                       \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "rank %d: %s:%d: expected %s\n", g_rank, __FILE__, __LINE__, #cond); \
      exit(2);                                                                             \
    }                                                                                      \
  } while (0)

/* Byte i of rank r's contribution in test `salt`. */
static inline unsigned char pattern(int r, size_t i, unsigned salt) {
  return (unsigned char)(r * 37u + i * 11u + salt * 101u + 1u);
}

/* Collectives of every kind on `comm`, results checked byte by byte. */
void run_collectives(mccl_comm_t comm);
/* One allgather on `comm`, checked. */
void check_allgather(mccl_comm_t comm, size_t bytes, unsigned salt);
/* Bootstraps other than the environment's, and the shared progress thread. */
void run_bootstraps(mccl_comm_t comm, mccl_bootstrap_t env_boot);

#endif /* MCCL_TESTS_MP_C_API_CHECK_H_ */
