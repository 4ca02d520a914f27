/*
 * MCCL's C API, part 4: a communicator's counters. Included by
 * mccl/mccl.h; the conventions stated there hold here.
 */
#ifndef MCCL_MCCL_STATS_H_
#define MCCL_MCCL_STATS_H_

#include "mccl/mccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* When the last multicast collective completed on this rank passed each
 * step: nanoseconds of CLOCK_MONOTONIC, 0 where the step did not happen
 * here; mirrors mccl::McastTimeline (mccl/stats.h says what each means). */
typedef struct mccl_mcast_timeline_t {
  uint64_t started_ns;
  uint64_t first_sent_ns;
  uint64_t last_sent_ns;
  uint64_t first_arrival_ns;
  uint64_t last_arrival_ns;
  uint64_t held_ns;
  uint64_t released_ns;
  uint64_t completed_ns;
} mccl_mcast_timeline_t;

/* Cumulative counters of one communicator, mirroring mccl::Stats. */
typedef struct mccl_stats_t {
  size_t struct_size; /* set by the caller: sizeof(mccl_stats_t) */
  /* Multicast data path. */
  uint64_t mcast_datagrams_sent;
  uint64_t mcast_bytes_sent; /* payload bytes, headers excluded */
  uint64_t mcast_datagrams_received;
  uint64_t mcast_bytes_received;
  /* Loss recovery over the reliable transport. */
  uint64_t repairs_requested;
  uint64_t repair_bytes_requested;
  uint64_t repairs_served;
  uint64_t repair_bytes_served;
  /* Small protocol messages (have, release, abort, repair requests). */
  uint64_t control_messages_sent;
  /* Point-to-point payload moved by fallback algorithms (ring, chain). */
  uint64_t p2p_bytes_sent;
  /* Datagrams dropped before touching memory. */
  uint64_t dropped_invalid;
  uint64_t dropped_stale;
  uint64_t dropped_duplicate;
  uint64_t early_arrivals_stored;
  uint64_t early_arrivals_dropped;
  uint64_t collectives_completed;
  /* Small collectives that completed before the right neighbour's release,
   * serving it from a copy (MCCL_PROTO_EAGER_BYTES). */
  uint64_t eager_completions;
  /* Where the link rate is unknown, the roots' rate estimated from loss
   * (MCCL_PROTO_RATE_ADAPT): loss reports sent, cuts of this rank's
   * estimate, and the estimate now in Mbit/s (0 where the rate is known). */
  uint64_t loss_reports_sent;
  uint64_t rate_decreases;
  uint64_t link_estimate_mbit;
  /* Not a counter: the last multicast collective's steps on this rank. */
  mccl_mcast_timeline_t last_mcast;
  /* Compression (docs/compression.md): bytes of this rank's own data that
   * compressed collectives encoded, before and after; encodings sent raw
   * because the data did not compress; the largest absolute error bound
   * in force (0: none). */
  uint64_t compress_bytes_in;
  uint64_t compress_bytes_out;
  uint64_t compress_raw_fallbacks;
  double compress_max_bound;
  /* Broadcasts and allgathers served point to point (binomial tree, Bruck,
   * chain, ring) rather than by multicast (docs/algorithms.md). */
  uint64_t p2p_collectives;
  /* Payload bytes of accepted multicast datagrams copied after the kernel
   * delivered them (not landed in place); copies per byte received are
   * 1 + mcast_bytes_copied / mcast_bytes_received. */
  uint64_t mcast_bytes_copied;
  /* Collectives asked to compress that ran exact because the link is
   * faster than the codec pays for (docs/compression.md). */
  uint64_t compress_fast_link_skips;
  /* Multicast datagrams sent as a root whose headers helper threads had
   * sealed ahead (MCCL_PROTO_HELPER_THREADS). */
  uint64_t mcast_datagrams_sealed_ahead;
} mccl_stats_t;

#define MCCL_STATS_INIT MCCL_STRUCT_INIT_(mccl_stats_t)

/* Fills the fields of *stats that fit in stats->struct_size (which the
 * caller sets; it is left unchanged). Not blocking. */
MCCL_API mccl_result_t mccl_comm_stats(mccl_comm_t comm, mccl_stats_t* stats);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MCCL_MCCL_STATS_H_ */
