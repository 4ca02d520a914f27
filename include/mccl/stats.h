// Per-communicator counters, readable at any time through
// Communicator::stats(). Counts are cumulative since creation.
#pragma once

#include <cstdint>

namespace mccl {

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
};

}  // namespace mccl
