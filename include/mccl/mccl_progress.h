/*
 * MCCL's C API, part 3: a host progress thread that several communicators
 * share. Included by mccl/mccl.h; the conventions stated there hold here.
 *
 *   mccl_progress_thread_t engine;
 *   mccl_progress_thread_create(NULL, &engine);
 *   mccl_comm_options_t o = MCCL_COMM_OPTIONS_INIT;
 *   o.progress_thread = engine;            // for every communicator it drives
 *   mccl_comm_create(boot, &o, &dp);
 *   mccl_comm_create(boot, &o, &shard);
 *   mccl_progress_thread_destroy(engine);  // the communicators keep it alive
 *
 * One thread then drives every communicator created with it: their
 * collectives are in flight at once and complete independently, without a
 * spinning thread each on a machine with few cores. Requests wait by
 * sleeping.
 */
#ifndef MCCL_MCCL_PROGRESS_H_
#define MCCL_MCCL_PROGRESS_H_

#include "mccl/mccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mccl_progress_thread_options_t {
  size_t struct_size; /* sizeof(mccl_progress_thread_options_t) */
  int32_t pin;        /* non-zero: pin the thread to CPU `cpu` */
  int32_t cpu;        /* read only when `pin` is set; a CPU that cannot be bound is logged */
  /* > 0: spin this many microseconds after the last event, then sleep;
   * -1: sleep at once; 0: unset (50 us) */
  int64_t spin_us;
} mccl_progress_thread_options_t;

#define MCCL_PROGRESS_THREAD_OPTIONS_INIT MCCL_STRUCT_INIT_(mccl_progress_thread_options_t)

/* Starts the thread. `options` may be NULL. Not blocking. On success *out
 * is a new handle; MCCL_INVALID_ARGUMENT for a negative CPU or a spin
 * below -1. */
MCCL_API mccl_result_t mccl_progress_thread_create(const mccl_progress_thread_options_t* options,
                                                   mccl_progress_thread_t* out);

/* Releases the caller's handle. The thread runs on until the last
 * communicator created with it is destroyed, then stops; it is never
 * stopped under a communicator. Not blocking while communicators remain;
 * otherwise joins the thread. */
MCCL_API mccl_result_t mccl_progress_thread_destroy(mccl_progress_thread_t thread);

/* How many communicators the thread drives now. Not blocking. */
MCCL_API mccl_result_t mccl_progress_thread_communicators(mccl_progress_thread_t thread,
                                                          int* count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MCCL_MCCL_PROGRESS_H_ */
