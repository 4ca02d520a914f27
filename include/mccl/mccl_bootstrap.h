/*
 * MCCL's C API, part 2: communicators over a real network, one process per
 * rank (UDP multicast and TCP, chosen by MCCL_TRANSPORT and the options).
 * Included by mccl/mccl.h; the conventions stated there hold here too
 * (results, mccl_last_error(), struct_size, ownership of handles).
 *
 * A bootstrap is how the ranks find each other: from the environment (what
 * `mccl_run` and the common launchers set), a TCP store, PMIx, or the
 * caller's own collective runtime. It is used only while communicators are
 * created, never on the data path, and one bootstrap can create several
 * communicators over the same ranks (every rank creating them in the same
 * order):
 *
 *   mccl_bootstrap_t boot;
 *   mccl_comm_t comm;
 *   mccl_bootstrap_create_from_env(&boot);
 *   mccl_comm_create(boot, NULL, &comm);
 *   mccl_bootstrap_destroy(boot);  // the communicator keeps what it needs
 *
 * Creating a bootstrap is blocking and collective: every rank of the job
 * calls the same function, and it returns once the ranks have found each
 * other, or fails within its deadline with an error naming the missing
 * ranks (MCCL_TIMEOUT) or what else went wrong. On success *out is a new
 * handle, released with mccl_bootstrap_destroy.
 *
 * Threading: one thread at a time may use a bootstrap (create
 * communicators from it).
 */
#ifndef MCCL_MCCL_BOOTSTRAP_H_
#define MCCL_MCCL_BOOTSTRAP_H_

#include "mccl/mccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mccl_bootstrap_s* mccl_bootstrap_t;

/* The bootstrap this process was launched for, from its environment
 * (docs/bootstrap.md has the whole decision):
 *  - under a PMIx launcher (Open MPI's mpirun, srun --mpi=pmix) with none
 *    of the variables below set, in a build with PMIx: the PMIx server;
 *  - otherwise the TCP store at MCCL_BOOTSTRAP_ADDR (host:port of rank 0),
 *    with the rank and size from MCCL_RANK and MCCL_WORLD_SIZE when set,
 *    else from the launcher (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE).
 * `mccl_run -n 4 ./app` sets all three. MCCL_INVALID_ARGUMENT (naming the
 * variable) when the environment does not say who this process is;
 * MCCL_TIMEOUT when ranks do not arrive within MCCL_BOOTSTRAP_TIMEOUT_MS;
 * otherwise as mccl_bootstrap_create_tcp. */
MCCL_API mccl_result_t mccl_bootstrap_create_from_env(mccl_bootstrap_t* out);

/* The TCP store, configured explicitly. Rank 0 serves it on `address`
 * ("host:port", host a name or an IPv4 address of rank 0's host) and every
 * rank connects to it, retrying until the timeout. */
typedef struct mccl_tcp_options_t {
  size_t struct_size; /* sizeof(mccl_tcp_options_t) */
  /* > 0: how long every rank may take to reach the store, in
   * milliseconds; 0: MCCL_BOOTSTRAP_TIMEOUT_MS (default 30 s) */
  int64_t timeout_ms;
  /* The job secret, a NUL-terminated string of at most 256 bytes, the same
   * on every rank: only processes that know it join the store. NULL or "":
   * MCCL_BOOTSTRAP_SECRET, else one derived from the user id, the port and
   * the launcher's job id (docs/security.md). Read only during the call. */
  const char* secret;
} mccl_tcp_options_t;

#define MCCL_TCP_OPTIONS_INIT MCCL_STRUCT_INIT_(mccl_tcp_options_t)

/* `address` NULL or "": MCCL_BOOTSTRAP_ADDR; `rank` and `size` -1:
 * MCCL_RANK and MCCL_WORLD_SIZE. `tcp` may be NULL. MCCL_INVALID_ARGUMENT
 * for a malformed address or a rank outside [0, size); MCCL_TRANSPORT_ERROR
 * when rank 0 cannot bind the address (the port is taken: rank 0's
 * bootstrap holds it until it and every communicator created from it are
 * destroyed); MCCL_MISMATCH when ranks disagree on the size or the secret.
 * With size 1 no socket is opened. */
MCCL_API mccl_result_t mccl_bootstrap_create_tcp(const char* address, int rank, int size,
                                                 const mccl_tcp_options_t* tcp,
                                                 mccl_bootstrap_t* out);

/* The PMIx server of the launcher that started this process (Open MPI's
 * mpirun, srun --mpi=pmix); nothing to set. Does not wait for the other
 * ranks (mccl_comm_create does). `timeout_ms` bounds the start and each
 * exchange (0: MCCL_BOOTSTRAP_TIMEOUT_MS). MCCL_UNAVAILABLE when
 * MCCL was built without PMIx or the process was not launched under a PMIx
 * server (the message says which). */
MCCL_API mccl_result_t mccl_bootstrap_create_pmix(int64_t timeout_ms, mccl_bootstrap_t* out);

/* ------------------------------------------- the caller's own runtime
 *
 * For a program that already has a collective runtime (an MPI
 * communicator, a key-value store of its framework, ...): MCCL asks it for
 * a few small exchanges while communicators are created, through one of
 * two callbacks the caller implements.
 *
 * Both return 0 on success. Any other value is a failure: an
 * mccl_result_t value (MCCL_TIMEOUT, MCCL_PEER_FAILURE, ...) becomes the
 * result of mccl_comm_create, any other non-zero value
 * MCCL_TRANSPORT_ERROR; the creation then stops on this rank (its peers
 * learn of it only through the caller's runtime), and the bootstrap is
 * broken: later creations from it fail with the same error. MCCL does not bound how long a callback
 * takes: the caller's runtime decides how long a missing rank is waited for.
 *
 * Threading: callbacks are called only from the thread inside
 * mccl_comm_create on this bootstrap, and only during that call;
 * `user_data` must stay valid while such calls may come, i.e. until the
 * bootstrap is destroyed. A callback may use other MCCL communicators. */

/* Every rank contributes `bytes_per_rank` bytes at `mine` and receives
 * size * bytes_per_rank bytes at `all`, rank r's block at
 * all + r * bytes_per_rank. bytes_per_rank is the same on every rank (MCCL
 * checks lengths with a first 8-byte exchange), so an MPI_Allgather of
 * MPI_BYTE is all it takes. */
typedef int (*mccl_allgather_fn)(const void* mine, void* all, size_t bytes_per_rank,
                                 void* user_data);
/* `bytes` bytes at `buffer` of rank `root` land at `buffer` on every rank
 * (the same `bytes` everywhere), like MPI_Bcast of MPI_BYTE or a store's
 * set on the root and get elsewhere. */
typedef int (*mccl_broadcast_fn)(void* buffer, size_t bytes, int root, void* user_data);

typedef struct mccl_bootstrap_callbacks_t {
  size_t struct_size; /* sizeof(mccl_bootstrap_callbacks_t) */
  /* Used when set. */
  mccl_allgather_fn allgather;
  /* Used only when allgather is NULL: MCCL then makes each allgather of
   * `size` broadcasts, every rank the root of one in rank order. */
  mccl_broadcast_fn broadcast;
  void* user_data; /* passed to every callback, never dereferenced by MCCL */
} mccl_bootstrap_callbacks_t;

#define MCCL_BOOTSTRAP_CALLBACKS_INIT MCCL_STRUCT_INIT_(mccl_bootstrap_callbacks_t)

/* Rank `rank` in [0, size) of the caller's runtime; communicators created
 * from it number their ranks as the runtime does. Never blocks and never
 * calls a callback itself (mccl_comm_create does). MCCL_INVALID_ARGUMENT
 * when size < 1, rank is out of range, or neither callback is set.
 * mccl_comm_create on it gives MCCL_MISMATCH naming the rank whose
 * contribution has another length. */
MCCL_API mccl_result_t mccl_bootstrap_create_callbacks(int rank, int size,
                                                       const mccl_bootstrap_callbacks_t* callbacks,
                                                       mccl_bootstrap_t* out);

/* ------------------------------------------------- use and release */

MCCL_API mccl_result_t mccl_bootstrap_rank(mccl_bootstrap_t bootstrap, int* rank);
MCCL_API mccl_result_t mccl_bootstrap_size(mccl_bootstrap_t bootstrap, int* size);

/* A communicator over the bootstrap's ranks. Blocking and collective:
 * every rank of the bootstrap calls it (the n-th call on one rank meets the
 * n-th on the others), and it returns once all have arrived and the
 * transports are set up; MCCL_TIMEOUT naming the missing ranks otherwise.
 * `options` may be NULL (read only during the call); an option out of
 * range is MCCL_INVALID_ARGUMENT naming the field, before anything is
 * exchanged. On success *out is a new handle. */
MCCL_API mccl_result_t mccl_comm_create(mccl_bootstrap_t bootstrap,
                                        const mccl_comm_options_t* options, mccl_comm_t* out);

/* Elastic membership (docs/elastic.md): `comm`'s ranks and the processes
 * that join them meet on `bootstrap`, a new rendezvous (for instance a TCP
 * store at an address the launcher gives the joiners); collective over all
 * of them and blocking. Members call this and keep their ranks (the
 * bootstrap must give each its rank in `comm`: MCCL_INVALID_ARGUMENT
 * otherwise); each joiner calls mccl_comm_create on the same bootstrap and
 * takes a rank after theirs. *out is the grown communicator, with `comm`'s
 * options; `comm` stays usable. A process that dies meanwhile fails it on
 * every rank (MCCL_PEER_FAILURE or MCCL_TIMEOUT, naming it). */
MCCL_API mccl_result_t mccl_comm_grow(mccl_comm_t comm, mccl_bootstrap_t bootstrap,
                                      mccl_comm_t* out);

/* Releases the caller's handle; communicators created from the bootstrap
 * keep it alive until they are destroyed (rank 0's TCP store then answers
 * until the last of them is gone). Not blocking while communicators
 * remain; otherwise rank 0's TCP bootstrap sends what is still queued, for
 * at most its timeout, and stops its store. */
MCCL_API mccl_result_t mccl_bootstrap_destroy(mccl_bootstrap_t bootstrap);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MCCL_MCCL_BOOTSTRAP_H_ */
