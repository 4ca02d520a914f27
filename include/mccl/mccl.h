/*
 * MCCL's C API: the C++ communicator behind opaque handles, for MPI
 * libraries and foreign-function interfaces. Plain C99; includes no C++.
 *
 * Errors: every function returns an mccl_result_t. MCCL_OK means success;
 * any other value means nothing was returned through the out-pointers, and
 * mccl_last_error() gives a message for people (which call failed, the rank,
 * the argument or peer involved). No function lets an exception or a signal
 * escape; a NULL handle or out-pointer gives MCCL_INVALID_ARGUMENT naming
 * the argument.
 *
 * Threading: a communicator and its requests are used from one thread at a
 * time (like MPI_THREAD_SERIALIZED); different communicators may be used
 * from different threads at once, under every progress engine. Collectives are called in the same
 * order on every rank, as in MPI.
 *
 * Buffers: the caller owns every buffer. A buffer given to a nonblocking
 * call must stay valid and untouched until its request has completed
 * (mccl_test reported done, or mccl_wait returned MCCL_OK).
 *
 * Ownership: every handle returned through an out-pointer belongs to the
 * caller and is released with the matching destroy/free function exactly
 * once. Release order: requests, then communicators, then worlds and
 * bootstraps (a world, bootstrap or progress-thread handle may also be
 * destroyed first; what it names then lives until the last communicator
 * created with it is destroyed).
 *
 * Options structs start with `struct_size`, which the caller sets to
 * sizeof(the struct) (the MCCL_*_INIT macros do), so that programs built
 * against an older header keep working with a newer library. Every other
 * field is optional: 0 means "unset", and an unset field falls back to the
 * matching MCCL_* environment variable, then to the built-in default.
 */
#ifndef MCCL_MCCL_H_
#define MCCL_MCCL_H_

#include <stddef.h>
#include <stdint.h>

/* Exported from the library, which is built with hidden visibility. Same
 * definition as mccl/export.h (for the C++ API), which this C header does
 * not include. */
#ifndef MCCL_API
#if defined(__GNUC__) || defined(__clang__)
#define MCCL_API __attribute__((visibility("default")))
#else
#define MCCL_API
#endif
#endif

/* MCCL_VERSION_MAJOR/MINOR/PATCH, generated from the build's project version. */
#include "mccl/version_number.h"

/* Initialiser of an options struct: struct_size set, everything else 0.
 * Designated where the language has it, so -Wextra stays quiet. */
#if defined(__cplusplus) && __cplusplus < 202002L
#define MCCL_STRUCT_INIT_(type) \
  { sizeof(type) }
#else
#define MCCL_STRUCT_INIT_(type) \
  { .struct_size = sizeof(type) }
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */

/* Values equal mccl::ErrorCode's and never change. */
typedef enum mccl_result_t {
  MCCL_OK = 0,
  MCCL_INVALID_ARGUMENT = 1, /* bad input on this rank; nothing was started */
  MCCL_TIMEOUT = 2,          /* a deadline passed; the message says what was awaited */
  MCCL_PEER_FAILURE = 3,     /* a peer died or stopped answering */
  MCCL_TRANSPORT_ERROR = 4,  /* the network layer failed */
  MCCL_MISMATCH = 5,         /* ranks called a collective with disagreeing arguments */
  MCCL_INTERNAL = 6,         /* a bug in MCCL (or out of memory): please report it */
  MCCL_UNAVAILABLE = 7       /* a requested feature or transport is absent here */
} mccl_result_t;

/* Stable lower-case name of a code, e.g. "invalid argument"; a fixed text
 * for values outside the enum. Never NULL; static storage. */
MCCL_API const char* mccl_result_string(mccl_result_t result);

/* The message of the last failed MCCL call on the calling thread, or "" if
 * none failed yet. Successful calls leave it alone. Never NULL; valid until
 * the next failing MCCL call on this thread. */
MCCL_API const char* mccl_last_error(void);

/* "MAJOR.MINOR.PATCH": the version of the library actually loaded, which may differ
 * from MCCL_VERSION_* of the header compiled against. Static storage. */
MCCL_API const char* mccl_version(void);

/* --------------------------------------------------------------- handles */

typedef struct mccl_world_s* mccl_world_t;     /* an in-process world */
typedef struct mccl_comm_s* mccl_comm_t;       /* a communicator (one rank) */
typedef struct mccl_request_s* mccl_request_t; /* a nonblocking collective */
/* a host progress thread that communicators share (mccl/mccl_progress.h) */
typedef struct mccl_progress_thread_s* mccl_progress_thread_t;
/* Handles are checked before use: one already destroyed (or freed), or one
 * MCCL never made, gives MCCL_INVALID_ARGUMENT, never a crash. Destroying a
 * handle while another thread still uses it remains the caller's race. */

/* Pass as the send buffer of allgather(v) or allreduce to mean "my data is
 * already in place in the receive buffer" (MPI_IN_PLACE). Equals
 * mccl::kInPlace. */
#define MCCL_IN_PLACE ((const void*)1)

/* -------------------------------------------------------- in-process world
 *
 * Ranks as threads of one process over MCCL's in-memory fabric, for tests,
 * demos and experiments. Faults are drawn per datagram and receiver from a
 * generator seeded with `seed`, so a run can be reproduced. */

typedef struct mccl_sim_options_t {
  size_t struct_size;     /* sizeof(mccl_sim_options_t) */
  double loss;            /* probability a datagram is lost */
  double duplicate;       /* ... delivered twice */
  double reorder;         /* ... held back behind later ones */
  double corrupt;         /* ... has one byte flipped */
  int64_t latency_ns;     /* one-way delay of every datagram */
  double link_gbit_per_s; /* injection rate per rank; 0: unlimited */
  size_t mtu;             /* largest datagram, header included; 0: 1500 */
  size_t receive_depth;   /* datagrams queued per receiver; 0: default */
  uint64_t seed;          /* 0: the default seed (1) */
} mccl_sim_options_t;

#define MCCL_SIM_OPTIONS_INIT MCCL_STRUCT_INIT_(mccl_sim_options_t)

/* Creates a world of `size` ranks. `options` may be NULL (a perfect
 * network). Not blocking. On success *out is a new handle. */
MCCL_API mccl_result_t mccl_world_create(int size, const mccl_sim_options_t* options,
                                         mccl_world_t* out);

/* Releases the caller's handle. Communicators created from the world keep
 * it alive until they are destroyed. Not blocking. */
MCCL_API mccl_result_t mccl_world_destroy(mccl_world_t world);

/* Simulates the death of `rank`: its peers report it as failed
 * (MCCL_PEER_FAILURE) and its datagrams stop. Not blocking. */
MCCL_API mccl_result_t mccl_world_kill_rank(mccl_world_t world, int rank);

/* ---------------------------------------------------------- communicator */

/* Values of mccl_comm_options_t's enumerated fields; 0 is always "unset". */
enum {
  MCCL_TRANSPORT_UNSET = 0,
  MCCL_TRANSPORT_AUTO = 1, /* the in-memory fabric for in-process worlds */
  MCCL_TRANSPORT_SIM = 2,
  MCCL_TRANSPORT_UDP = 3,
  MCCL_TRANSPORT_IB = 4
};
enum {
  MCCL_PROGRESS_UNSET = 0,
  MCCL_PROGRESS_INLINE = 1, /* the calling thread drives the protocol */
  MCCL_PROGRESS_THREAD = 2, /* a host thread per communicator */
  MCCL_PROGRESS_OFFLOAD = 3
};
enum {
  MCCL_ALLGATHER_ALGO_UNSET = 0,
  MCCL_ALLGATHER_ALGO_AUTO = 1,
  MCCL_ALLGATHER_ALGO_MULTICAST = 2,
  MCCL_ALLGATHER_ALGO_RING = 3,
  MCCL_ALLGATHER_ALGO_BRUCK = 4,
  MCCL_ALLGATHER_ALGO_STAR = 5 /* through rank 0 */
};
enum {
  MCCL_BCAST_ALGO_UNSET = 0,
  MCCL_BCAST_ALGO_AUTO = 1,
  MCCL_BCAST_ALGO_MULTICAST = 2,
  MCCL_BCAST_ALGO_CHAIN = 3,
  MCCL_BCAST_ALGO_BINOMIAL = 4,
  MCCL_BCAST_ALGO_FLAT = 5 /* the root sends to every rank */
};

enum {
  MCCL_ALLREDUCE_ALGO_UNSET = 0,
  MCCL_ALLREDUCE_ALGO_AUTO = 1,     /* recursive doubling if small, else RS_MCAST */
  MCCL_ALLREDUCE_ALGO_RS_MCAST = 2, /* ring reduce-scatter + multicast allgather */
  MCCL_ALLREDUCE_ALGO_RING = 3,     /* point-to-point ring reduce-scatter + allgather */
  MCCL_ALLREDUCE_ALGO_RECURSIVE_DOUBLING = 4
};
/* Lossy compression of float data inside the collectives
 * (docs/compression.md); every rank must choose alike. */
enum {
  MCCL_COMPRESS_UNSET = 0, /* MCCL_COLL_COMPRESS decides */
  MCCL_COMPRESS_OFF = 1,
  MCCL_COMPRESS_BF16 = 2,  /* float32 rounded to bfloat16 */
  MCCL_COMPRESS_BOUND = 3, /* every element within compress_bound */
  MCCL_COMPRESS_ZFP = 4    /* ZFP at compress_zfp_rate bits per value; no bound */
};
enum {
  MCCL_AUTH_UNSET = 0,
  MCCL_AUTH_ON = 1, /* MCCL_UNAVAILABLE at creation in a build without authentication */
  MCCL_AUTH_OFF = 2
};

typedef struct mccl_comm_options_t {
  size_t struct_size; /* sizeof(mccl_comm_options_t) */
  /* MCCL_TRANSPORT_* (overrides MCCL_TRANSPORT) */
  int32_t transport;
  /* MCCL_PROGRESS_* (MCCL_PROGRESS) */
  int32_t progress;
  /* > 0: deadline of every blocking wait inside a collective, and the
   * default of mccl_wait, in milliseconds (MCCL_COLL_TIMEOUT_MS); INT64_MAX
   * (any value past the clock's ~292-year range) means no deadline */
  int64_t timeout_ms;
  /* > 0: that many roots of an allgather inject at once; -1: as many as
   * the incast budget allows, all of them where it is 0
   * (MCCL_COLL_ALLGATHER_ROOTS=0, MCCL_PROTO_INCAST_BYTES) */
  int32_t allgather_concurrent_roots;
  /* MCCL_ALLGATHER_ALGO_* (MCCL_COLL_ALLGATHER_ALGO) */
  int32_t allgather_algorithm;
  /* MCCL_BCAST_ALGO_* (MCCL_COLL_BCAST_ALGO) */
  int32_t broadcast_algorithm;
  int32_t reserved; /* must be 0 */
  /* MCCL_ALLREDUCE_ALGO_* (MCCL_COLL_ALLREDUCE_ALGO) */
  int32_t allreduce_algorithm;
  int32_t reserved2; /* must be 0 */
  /* (0, 1]: share of the sending a reduce-scatter's ring gets against the
   * multicast collectives beside it; 0: unset (MCCL_COLL_RS_SHARE);
   * anything else is MCCL_INVALID_ARGUMENT at creation */
  double reduce_scatter_send_share;
  /* New fields are only ever appended below (struct_size tells the
   * library which of them a caller knows). */
  /* MCCL_AUTH_*: authenticate every multicast datagram with a MAC under a
   * key agreed at creation (docs/security.md); every rank must choose
   * alike (MCCL_PROTO_AUTH) */
  int32_t authenticate;
  int32_t reserved3; /* must be 0 */
  /* Drive this communicator from a progress thread shared with others
   * (mccl/mccl_progress.h) instead of an engine of its own; NULL: unset.
   * `progress` must then be unset or MCCL_PROGRESS_THREAD. The
   * communicator keeps the thread running: the handle may be destroyed
   * before it. */
  mccl_progress_thread_t progress_thread;
  /* > 0: how long creation waits for the reliable mesh to connect and for
   * every rank to hear the multicast group, in milliseconds; then every
   * rank fails with MCCL_UNAVAILABLE naming the unreachable ranks. Also
   * under MCCL_PROGRESS_OFFLOAD. (MCCL_TRANSPORT_SETUP_TIMEOUT_MS) */
  int64_t setup_timeout_ms;
  /* MCCL_COMPRESS_*: compression of the typed broadcast and allgather(v)
   * (mccl_broadcast_typed, mccl_allgather_typed) and of float sums
   * (MCCL_COLL_COMPRESS); with compress_bound (> 0, for MCCL_COMPRESS_BOUND;
   * MCCL_COLL_COMPRESS_BOUND) and compress_zfp_rate (bits per value, 0:
   * 16; MCCL_COLL_COMPRESS_ZFP_RATE). */
  int32_t compress;
  /* With compress: on links faster than this many Mbit/s the collectives
   * run exact; 0: the measured rule (docs/compression.md, "When compression
   * pays"); -1: compress at any link rate. Must be 0 without compress.
   * (MCCL_COLL_COMPRESS_MAX_MBIT) */
  int32_t compress_max_link_mbit;
  double compress_bound;
  double compress_zfp_rate;
} mccl_comm_options_t;

#define MCCL_COMM_OPTIONS_INIT MCCL_STRUCT_INIT_(mccl_comm_options_t)

/* Communicators over a real network (ranks found from the environment, a
 * TCP store, PMIx or the caller's own collective runtime) are created by
 * mccl_comm_create of mccl/mccl_bootstrap.h, included at the end of this
 * file. */

/* Creates the communicator of `rank` in `world`. Blocking and collective:
 * every rank of the world calls it, each from its own thread, and it
 * returns once all have arrived (MCCL_TIMEOUT naming the missing ranks
 * otherwise). `options` may be NULL. On success *out is a new handle. */
MCCL_API mccl_result_t mccl_comm_create_inprocess(mccl_world_t world, int rank,
                                                  const mccl_comm_options_t* options,
                                                  mccl_comm_t* out);

/* Not collective, not blocking, and needs no barrier before it. Every
 * request of the communicator must be freed first (MCCL_INVALID_ARGUMENT
 * otherwise, and nothing is destroyed). Blocks of mccl_comm_allocate not
 * yet deallocated are released with it. */
MCCL_API mccl_result_t mccl_comm_destroy(mccl_comm_t comm);

MCCL_API mccl_result_t mccl_comm_rank(mccl_comm_t comm, int* rank);
MCCL_API mccl_result_t mccl_comm_size(mccl_comm_t comm, int* size);

/* Advances the protocol without blocking (needed with MCCL_PROGRESS_INLINE
 * to overlap computation with a request in flight; harmless otherwise). */
MCCL_API mccl_result_t mccl_comm_progress(mccl_comm_t comm);

/* Elastic membership (docs/elastic.md).
 *
 * mccl_comm_revoke: every collective in flight and every later one on
 * `comm` fails with MCCL_PEER_FAILURE ("revoked by rank R"), here and on
 * every rank this one still reaches. Not collective; does not block for
 * long.
 *
 * mccl_comm_shrink: collective over the ranks of `comm` still alive, each
 * of which calls it (typically after a call failed with
 * MCCL_PEER_FAILURE); blocking. Revokes `comm`, agrees with every survivor
 * on the ranks that failed and creates the survivors' communicator: *out
 * is a new handle, the survivors keep their order (a new rank is the old
 * rank minus the failed ranks below it). No rank coordinates, rank 0 may
 * be among the dead, and a survivor that dies meanwhile is agreed on
 * again. The failed ranks (ranks of `comm`, ascending, the same on every
 * survivor) go to `failed`, at most `failed_capacity` of them (`failed`
 * may be NULL when the capacity is 0), and their number to *failed_count
 * when it is not NULL. MCCL_TIMEOUT (after the communicator's timeout)
 * naming a rank that neither answers nor fails. Under
 * MCCL_PROGRESS_OFFLOAD the daemon runs it. `comm` stays revoked and must
 * still be destroyed (its requests freed first). */
MCCL_API mccl_result_t mccl_comm_revoke(mccl_comm_t comm);
/* The membership epoch, the same on every rank: 0 for a communicator
 * created from scratch, the old one's plus 1 for one that
 * mccl_comm_shrink or mccl_comm_grow (mccl/mccl_bootstrap.h) returned. */
MCCL_API mccl_result_t mccl_comm_epoch(mccl_comm_t comm, uint32_t* epoch);
MCCL_API mccl_result_t mccl_comm_shrink(mccl_comm_t comm, int* failed, int failed_capacity,
                                        int* failed_count, mccl_comm_t* out);

/* Memory for collective buffers. Under MCCL_PROGRESS_OFFLOAD it is shared
 * with the mccl_offloadd daemon, which then runs collectives whose buffers
 * lie wholly inside such blocks in place (zero copy); under the other
 * engines it is ordinary memory, 64-byte aligned. Not blocking. On success
 * *ptr is a new block of `bytes` bytes (0 gives a valid, distinct
 * pointer), owned by the caller until mccl_comm_deallocate on the same
 * communicator; MCCL_UNAVAILABLE when memory runs out. */
MCCL_API mccl_result_t mccl_comm_allocate(mccl_comm_t comm, size_t bytes, void** ptr);
/* Releases a block of mccl_comm_allocate once no collective uses it. NULL
 * is accepted and does nothing; a pointer that is not a live block of this
 * communicator is MCCL_INVALID_ARGUMENT (and nothing is released). */
MCCL_API mccl_result_t mccl_comm_deallocate(mccl_comm_t comm, void* ptr);

/* ----------------------------------------------------------- collectives
 *
 * The blocking forms return when this rank's part is complete. The i-forms
 * start the collective and return a request in *request (freed with
 * mccl_request_free). A NULL buffer is accepted only where it would be
 * given no bytes. A collective that ranks called with disagreeing
 * arguments fails with MCCL_MISMATCH, and the communicator is then broken:
 * every later call on it fails with the same error. */

/* `bytes` bytes of `buffer` from `root` to every rank. */
MCCL_API mccl_result_t mccl_broadcast(mccl_comm_t comm, void* buffer, size_t bytes, int root);
MCCL_API mccl_result_t mccl_ibroadcast(mccl_comm_t comm, void* buffer, size_t bytes, int root,
                                       mccl_request_t* request);

/* Every rank contributes `bytes_per_rank` bytes; rank r's block lands at
 * recv + r * bytes_per_rank on every rank. `send` may be MCCL_IN_PLACE. */
MCCL_API mccl_result_t mccl_allgather(mccl_comm_t comm, const void* send, void* recv,
                                      size_t bytes_per_rank);
MCCL_API mccl_result_t mccl_iallgather(mccl_comm_t comm, const void* send, void* recv,
                                       size_t bytes_per_rank, mccl_request_t* request);

/* counts[r] bytes from rank r land at recv + displs[r]; both arrays have
 * one entry per rank and are equal on every rank (checked). The i-form
 * copies them: they need not outlive the call. `send` may be MCCL_IN_PLACE
 * (this rank's block already at recv + displs[rank]). */
MCCL_API mccl_result_t mccl_allgatherv(mccl_comm_t comm, const void* send, void* recv,
                                       const size_t* counts, const size_t* displs);
MCCL_API mccl_result_t mccl_iallgatherv(mccl_comm_t comm, const void* send, void* recv,
                                        const size_t* counts, const size_t* displs,
                                        mccl_request_t* request);

MCCL_API mccl_result_t mccl_barrier(mccl_comm_t comm);
MCCL_API mccl_result_t mccl_ibarrier(mccl_comm_t comm, mccl_request_t* request);

/* ------------------------------------------------------------ reductions
 *
 * Counts are in elements. Every rank passes the same counts, datatype and
 * op (MCCL_MISMATCH on every rank otherwise); an unknown datatype or op is
 * MCCL_INVALID_ARGUMENT. float16 and bfloat16 are reduced in float32 and
 * rounded to nearest even at every step; integers wrap around. Every
 * element is reduced in one fixed order, the same on every rank and run,
 * so results are bitwise reproducible (and identical on every rank for
 * allreduce). */

/* Values equal mccl::DataType's and mccl::ReduceOp's and never change. */
typedef enum mccl_datatype_t {
  MCCL_FLOAT32 = 0,
  MCCL_FLOAT64 = 1,
  MCCL_BFLOAT16 = 2,
  MCCL_FLOAT16 = 3, /* IEEE binary16 */
  MCCL_INT32 = 4,
  MCCL_INT64 = 5,
  MCCL_UINT8 = 6
} mccl_datatype_t;

typedef enum mccl_reduce_op_t {
  MCCL_SUM = 0,
  MCCL_PROD = 1,
  MCCL_MIN = 2,
  MCCL_MAX = 3
} mccl_reduce_op_t;

/* As mccl_broadcast and mccl_allgather with counts in elements of
 * `datatype`: float data travel compressed where the communicator's
 * compression says so (mccl_comm_options_t::compress, MCCL_COLL_COMPRESS;
 * docs/compression.md), every rank (the root too) ending with the same
 * bits; other datatypes move exactly. Blocking. */
MCCL_API mccl_result_t mccl_broadcast_typed(mccl_comm_t comm, void* buffer, size_t count,
                                            mccl_datatype_t datatype, int root);
MCCL_API mccl_result_t mccl_allgather_typed(mccl_comm_t comm, const void* send, void* recv,
                                            size_t count_per_rank, mccl_datatype_t datatype);

/* `send` holds one block of `count_per_rank` elements per rank, block r for
 * rank r; the reduction of every rank's block for this rank lands in
 * `recv`. Not in place (MCCL_IN_PLACE is MCCL_INVALID_ARGUMENT). */
MCCL_API mccl_result_t mccl_reduce_scatter(mccl_comm_t comm, const void* send, void* recv,
                                           size_t count_per_rank, mccl_datatype_t datatype,
                                           mccl_reduce_op_t op);
MCCL_API mccl_result_t mccl_ireduce_scatter(mccl_comm_t comm, const void* send, void* recv,
                                            size_t count_per_rank, mccl_datatype_t datatype,
                                            mccl_reduce_op_t op, mccl_request_t* request);

/* Block r of `send` has counts[r] elements, blocks back to back; `recv`
 * receives counts[rank]. `counts` has one entry per rank; the i-form
 * copies it. */
MCCL_API mccl_result_t mccl_reduce_scatterv(mccl_comm_t comm, const void* send, void* recv,
                                            const size_t* counts, mccl_datatype_t datatype,
                                            mccl_reduce_op_t op);
MCCL_API mccl_result_t mccl_ireduce_scatterv(mccl_comm_t comm, const void* send, void* recv,
                                             const size_t* counts, mccl_datatype_t datatype,
                                             mccl_reduce_op_t op, mccl_request_t* request);

/* The reduction of every rank's `count` elements lands in `recv` on every
 * rank. `send` may be MCCL_IN_PLACE (the vector is already in `recv`). */
MCCL_API mccl_result_t mccl_allreduce(mccl_comm_t comm, const void* send, void* recv, size_t count,
                                      mccl_datatype_t datatype, mccl_reduce_op_t op);
MCCL_API mccl_result_t mccl_iallreduce(mccl_comm_t comm, const void* send, void* recv, size_t count,
                                       mccl_datatype_t datatype, mccl_reduce_op_t op,
                                       mccl_request_t* request);

/* ------------------------------------- exchanges and point-to-point
 *
 * Over the reliable transport (no multicast); under the offload engine
 * they fail with MCCL_UNAVAILABLE. */

/* Collective: blocks of `bytes_per_rank` bytes, block r of `send` to rank
 * r, and rank r's block for this rank at recv + r * bytes_per_rank. Not in
 * place (send and recv must not overlap). */
MCCL_API mccl_result_t mccl_alltoall(mccl_comm_t comm, const void* send, void* recv,
                                     size_t bytes_per_rank);
MCCL_API mccl_result_t mccl_ialltoall(mccl_comm_t comm, const void* send, void* recv,
                                      size_t bytes_per_rank, mccl_request_t* request);

/* Pass as mccl_recv's `source` to take a message from any rank. */
#define MCCL_ANY_SOURCE (-1)

/* Not collective: between this rank and `peer` only. A message goes to the
 * first receive posted on `peer` that names this rank (or MCCL_ANY_SOURCE)
 * and the same `tag` (>= 0); messages between two ranks with one tag are
 * taken in the order they were sent. A send is buffered: it returns once
 * its bytes are copied to the transport, whether or not a receive is
 * posted, so two ranks may send to each other and then receive. A
 * receive's `bytes` must equal the message's (MCCL_INVALID_ARGUMENT on the
 * receiver); one that no message matches within the communicator's
 * timeout fails with MCCL_TIMEOUT and the communicator stays usable. An
 * out-of-range peer or source, or a negative tag, is
 * MCCL_INVALID_ARGUMENT. mccl_recv's `source_out` (may be NULL) receives
 * the rank the message came from. */
MCCL_API mccl_result_t mccl_send(mccl_comm_t comm, const void* buffer, size_t bytes, int peer,
                                 int tag);
MCCL_API mccl_result_t mccl_isend(mccl_comm_t comm, const void* buffer, size_t bytes, int peer,
                                  int tag, mccl_request_t* request);
MCCL_API mccl_result_t mccl_recv(mccl_comm_t comm, void* buffer, size_t bytes, int source, int tag,
                                 int* source_out);
MCCL_API mccl_result_t mccl_irecv(mccl_comm_t comm, void* buffer, size_t bytes, int source, int tag,
                                  mccl_request_t* request);

/* -------------------------------------------------------------- requests */

/* Never blocks: advances progress once and sets *done to 1 when the
 * collective has completed, else to 0. A failed collective returns its
 * error (and leaves *done at 0). Once done, it stays done. */
MCCL_API mccl_result_t mccl_test(mccl_request_t request, int* done);

/* Blocks until the collective completes or `timeout_ms` milliseconds pass
 * (< 0: the communicator's timeout; 0: a single test; INT64_MAX: no
 * deadline). MCCL_TIMEOUT then
 * means the collective is still in flight: wait again or free the request.
 * Does not free the request. */
MCCL_API mccl_result_t mccl_wait(mccl_request_t request, int64_t timeout_ms);

/* For a completed mccl_irecv: the rank whose message it took (the answer to
 * MCCL_ANY_SOURCE); -1 for other requests and before completion. Never
 * blocks. */
MCCL_API mccl_result_t mccl_request_source(mccl_request_t request, int* source);

/* Releases a request. If the collective has not completed, first waits for
 * it (up to the communicator's timeout) so that its buffers are never
 * written after this returns; a failure there is logged, not returned. */
MCCL_API mccl_result_t mccl_request_free(mccl_request_t request);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The rest of the C API, split by topic; each also works included alone. */
#include "mccl/mccl_bootstrap.h"
#include "mccl/mccl_progress.h"
#include "mccl/mccl_stats.h"

#endif /* MCCL_MCCL_H_ */
