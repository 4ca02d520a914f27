// The algorithm table: which algorithm serves a collective, by what the
// user asked for, what the transport can do, the team size and the size.
//
// Small broadcasts and allgathers go point to point (a binomial tree,
// Bruck's allgather): a multicast collective pays for its completion
// exchange and its per-collective state whatever its size, and a message
// of a few KiB costs the same on one link as on many. From a crossover up
// multicast wins, because the root injects each byte once. The crossovers
// are measured (tuning.h); the choice depends only on arguments and
// settings every rank shares, and the algorithm is part of the signature,
// so ranks that differ find out at their first exchange.
#pragma once

#include <cstddef>
#include <cstdint>

#include "coll/tuning.h"
#include "common/coll_config.h"
#include "mccl/options.h"

namespace mccl::coll {

using MulticastFrom = common::MulticastFrom;  // common/coll_config.h

// `where`: as the ranks agreed (common::CollConfig::placement), which picks
// the table.
inline std::size_t broadcast_multicast_from(const MulticastFrom& from, int ranks,
                                            const Placement& where) {
  return from.broadcast >= 0 ? static_cast<std::size_t>(from.broadcast)
                             : measured_crossover(ranks, where).broadcast;
}

inline std::size_t allgather_multicast_from(const MulticastFrom& from, int ranks,
                                            const Placement& where) {
  return from.allgather >= 0 ? static_cast<std::size_t>(from.allgather)
                             : measured_crossover(ranks, where).allgather;
}

// Below the crossover a tree: flat where ranks share cores and the team is
// small (tuning.h: a forwarding rank would wait for a core), else binomial
// (log2 N hops; at 2 ranks both trees are the one send). Without multicast, the pipelined chain
// above it (each rank sends the message once).
inline BroadcastAlgorithm choose_broadcast(BroadcastAlgorithm asked, bool multicast, int ranks,
                                           std::size_t bytes, const MulticastFrom& from,
                                           const Placement& where) {
  if (asked != BroadcastAlgorithm::kAuto) return asked;
  if (bytes < broadcast_multicast_from(from, ranks, where)) {
    return where.cores_per_rank < kSpareCoresPerRank && ranks > 2 &&
                   ranks <= kSharedCoresFlatMaxRanks && bytes < kSharedCoresFlatBelowBytes
               ? BroadcastAlgorithm::kFlat
               : BroadcastAlgorithm::kBinomial;
  }
  return multicast ? BroadcastAlgorithm::kMulticast : BroadcastAlgorithm::kChain;
}

// `block_bytes`: the largest block of the allgather(v). Below the crossover
// Bruck's exchange; the star where ranks share cores, the team is small and
// the blocks are (each of Bruck's rounds waits for its receiver to be
// scheduled; through rank 0 a rank runs twice).
inline AllgatherAlgorithm choose_allgather(AllgatherAlgorithm asked, bool multicast, int ranks,
                                           std::size_t block_bytes, const MulticastFrom& from,
                                           const Placement& where) {
  if (asked != AllgatherAlgorithm::kAuto) return asked;
  if (block_bytes < allgather_multicast_from(from, ranks, where)) {
    return where.ranks_share_cores && ranks > 2 && ranks <= kSharedCoresStarMaxRanks &&
                   block_bytes < kSharedCoresStarAllgatherBelowBytes
               ? AllgatherAlgorithm::kStar
               : AllgatherAlgorithm::kBruck;
  }
  return multicast ? AllgatherAlgorithm::kMulticast : AllgatherAlgorithm::kRing;
}

// The star where ranks share cores and there are 3 to
// kSharedCoresStarMaxRanks of them (a
// dissemination round waits for its receiver to be scheduled, and every rank
// runs in each of ceil(log2 N) rounds; in the star a rank other than 0 runs
// twice). Else dissemination: with a core each, its log2 N rounds beat rank
// 0 taking N - 1 signals one after another. At 2 ranks both barriers are one
// message each way, and dissemination's go at once.
inline BarrierAlgorithm choose_barrier(BarrierAlgorithm asked, int ranks, const Placement& where) {
  if (asked != BarrierAlgorithm::kAuto) return asked;
  return where.ranks_share_cores && ranks > 2 && ranks <= kSharedCoresStarMaxRanks
             ? BarrierAlgorithm::kStar
             : BarrierAlgorithm::kDissemination;
}

// Recursive doubling for small vectors (latency: log2 N rounds); above the
// threshold the ring reduce-scatter and the multicast allgather, which
// inject S bytes per rank in all against the ring allreduce's 2(N-1)/N S.
inline AllreduceAlgorithm choose_allreduce(AllreduceAlgorithm asked, bool multicast, int ranks,
                                           std::size_t bytes, std::size_t small_bytes) {
  if (asked != AllreduceAlgorithm::kAuto) return asked;
  if (ranks == 1 || bytes < small_bytes) return AllreduceAlgorithm::kRecursiveDoubling;
  return multicast ? AllreduceAlgorithm::kRsMulticast : AllreduceAlgorithm::kRing;
}

const char* algorithm_name(BroadcastAlgorithm a);
const char* algorithm_name(AllgatherAlgorithm a);
const char* algorithm_name(AllreduceAlgorithm a);
const char* algorithm_name(BarrierAlgorithm a);

}  // namespace mccl::coll
