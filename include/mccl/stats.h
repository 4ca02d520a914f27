// Per-communicator counters, readable at any time through
// Communicator::stats(). Counts are cumulative since creation.
#pragma once

#include <cstdint>

namespace mccl {

// When the last multicast collective (broadcast, allgather) completed on
// this rank passed each step, in nanoseconds of the monotonic clock
// (CLOCK_MONOTONIC, one clock for every process and network namespace of a
// host); 0 where the step did not happen here (a root receives nothing of
// its own stream, a rank whose right neighbour pulls nothing is released by
// nobody). Written once, when the collective completes: a benchmark reads
// it after the call returned to decompose the call's time across ranks
// (bench/osu --timeline). Arrival times are those of the progress call that
// read the datagrams, not the kernel's.
struct McastTimeline {
  std::uint64_t started_ns = 0;        // the collective started on this rank
  std::uint64_t first_sent_ns = 0;     // first datagram of this rank's own stream sent
  std::uint64_t last_sent_ns = 0;      // and its last
  std::uint64_t first_arrival_ns = 0;  // first multicast datagram placed
  std::uint64_t last_arrival_ns = 0;   // last multicast datagram placed
  std::uint64_t held_ns = 0;           // every byte held (repairs included)
  std::uint64_t released_ns = 0;       // the right neighbour's release arrived
  std::uint64_t completed_ns = 0;      // the collective completed
};

struct Stats {
  // Multicast data path.
  std::uint64_t mcast_datagrams_sent = 0;
  std::uint64_t mcast_bytes_sent = 0;          // payload bytes, headers excluded
  std::uint64_t mcast_datagrams_received = 0;  // accepted and placed
  std::uint64_t mcast_bytes_received = 0;
  // Loss recovery over the reliable transport.
  std::uint64_t repairs_requested = 0;  // chunks this rank asked for
  std::uint64_t repair_bytes_requested = 0;
  std::uint64_t repairs_served = 0;  // chunks this rank sent to a peer
  std::uint64_t repair_bytes_served = 0;
  // Small protocol messages (have, release, abort, repair requests).
  std::uint64_t control_messages_sent = 0;
  // Point-to-point payload moved by fallback algorithms (ring, chain).
  std::uint64_t p2p_bytes_sent = 0;
  // Datagrams dropped before touching memory.
  std::uint64_t dropped_invalid = 0;         // malformed, foreign, corrupt, out of bounds
  std::uint64_t dropped_stale = 0;           // for a collective already finished
  std::uint64_t dropped_duplicate = 0;       // chunk already held
  std::uint64_t early_arrivals_stored = 0;   // kept for a collective not yet started
  std::uint64_t early_arrivals_dropped = 0;  // early store full; repaired later
  std::uint64_t collectives_completed = 0;
  // Small collectives that completed as soon as this rank held everything,
  // before its right neighbour released it: a copy served that neighbour
  // (MCCL_PROTO_EAGER_BYTES).
  std::uint64_t eager_completions = 0;
  // Where the link rate is unknown (an interface that reports no speed and
  // no MCCL_UDP_RATE_MBIT), the roots' rate is estimated from loss
  // (MCCL_PROTO_RATE_ADAPT): loss reports this rank sent to roots, how
  // often its own estimate was cut, and the estimate now (Mbit/s of the
  // whole link; each of k roots injecting at once sends 1/k of it). All 0
  // where the rate is known.
  std::uint64_t loss_reports_sent = 0;
  std::uint64_t rate_decreases = 0;
  std::uint64_t link_estimate_mbit = 0;
  // Compression (docs/compression.md): the bytes of this rank's own data
  // that compressed collectives encoded, before and after encoding; how
  // many of those encodings were sent raw because the data did not
  // compress (or was not floating point); and the largest absolute error
  // bound in force (MCCL_COLL_COMPRESS=bound), 0 when none was.
  std::uint64_t compress_bytes_in = 0;
  std::uint64_t compress_bytes_out = 0;
  std::uint64_t compress_raw_fallbacks = 0;
  double compress_max_bound = 0.0;
  // Broadcasts and allgathers served point to point (binomial tree, Bruck,
  // chain, ring) rather than by multicast: below the algorithm table's
  // crossover, or as the user pinned them (docs/algorithms.md).
  std::uint64_t p2p_collectives = 0;
  // Payload bytes of accepted multicast datagrams that were copied after
  // the kernel delivered them. Where the transport lands payloads in place
  // (UDP: the chunks a stream expects next go straight from the socket to
  // their place in the buffer) most are not; elsewhere every byte is. The
  // copies per byte received are 1 + mcast_bytes_copied /
  // mcast_bytes_received (the kernel's copy, then these).
  std::uint64_t mcast_bytes_copied = 0;
  // Collectives asked to compress that ran exact because the link (the
  // slowest any rank knows) is faster than the codec pays for, by the rule
  // of docs/compression.md ("When compression pays") or
  // Compression::max_link_mbit.
  std::uint64_t compress_fast_link_skips = 0;
  // Multicast datagrams this rank sent as a root whose headers (and MACs or
  // CRCs) helper threads had sealed ahead of the send
  // (MCCL_PROTO_HELPER_THREADS); the root sealed the rest itself.
  std::uint64_t mcast_datagrams_sealed_ahead = 0;
  // Not a counter: the last multicast collective's steps on this rank.
  McastTimeline last_mcast;
};

// Every integer field of Stats, in order, as X(name, kind): kind is
// `counter` (cumulative since creation) or `gauge` (a value now). For code
// that copies or prints them all, inside MCCL (its counters, the C API, the
// benchmarks) and out. The other two fields, compress_max_bound and
// last_mcast, are not in it. A new statistic is a field of Stats, an entry
// here, and a field at the end of the C API's mccl_stats_t.
#define MCCL_STATS_FIELDS(X)           \
  X(mcast_datagrams_sent, counter)     \
  X(mcast_bytes_sent, counter)         \
  X(mcast_datagrams_received, counter) \
  X(mcast_bytes_received, counter)     \
  X(repairs_requested, counter)        \
  X(repair_bytes_requested, counter)   \
  X(repairs_served, counter)           \
  X(repair_bytes_served, counter)      \
  X(control_messages_sent, counter)    \
  X(p2p_bytes_sent, counter)           \
  X(dropped_invalid, counter)          \
  X(dropped_stale, counter)            \
  X(dropped_duplicate, counter)        \
  X(early_arrivals_stored, counter)    \
  X(early_arrivals_dropped, counter)   \
  X(collectives_completed, counter)    \
  X(eager_completions, counter)        \
  X(loss_reports_sent, counter)        \
  X(rate_decreases, counter)           \
  X(link_estimate_mbit, gauge)         \
  X(compress_bytes_in, counter)        \
  X(compress_bytes_out, counter)       \
  X(compress_raw_fallbacks, counter)   \
  X(p2p_collectives, counter)          \
  X(mcast_bytes_copied, counter)       \
  X(compress_fast_link_skips, counter) \
  X(mcast_datagrams_sealed_ahead, counter)

namespace stats_detail {
#define MCCL_STATS_COUNT_ONE_(name, kind) +1
inline constexpr int kFields = 0 MCCL_STATS_FIELDS(MCCL_STATS_COUNT_ONE_);
#undef MCCL_STATS_COUNT_ONE_
}  // namespace stats_detail

// The counters of MCCL_STATS_FIELDS by name, gauges left out (a sum or a
// difference of gauges means nothing): for code that sums, subtracts or
// prints them all, as libmccl_mpi's totals and the OSU benchmarks do.
struct StatCounter {
  const char* name;
  std::uint64_t Stats::*member;
};
#define MCCL_STAT_COUNTER_counter(name) StatCounter{#name, &Stats::name},
#define MCCL_STAT_COUNTER_gauge(name)
#define MCCL_STAT_COUNTER_(name, kind) MCCL_STAT_COUNTER_##kind(name)
inline constexpr StatCounter kStatCounters[] = {MCCL_STATS_FIELDS(MCCL_STAT_COUNTER_)};
#undef MCCL_STAT_COUNTER_
#undef MCCL_STAT_COUNTER_gauge
#undef MCCL_STAT_COUNTER_counter

// The list names every integer field: one left out would go uncopied.
static_assert(sizeof(Stats) == stats_detail::kFields * sizeof(std::uint64_t) + sizeof(double) +
                                   sizeof(McastTimeline),
              "MCCL_STATS_FIELDS must list every integer field of mccl::Stats");

}  // namespace mccl
