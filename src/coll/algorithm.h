// The algorithm table: which algorithm serves a collective, by what the
// user asked for and what the transport can do.
#pragma once

#include <cstddef>

#include "mccl/options.h"

namespace mccl::coll {

// Multicast whenever the transport multicasts, unless the user pinned one.
inline BroadcastAlgorithm choose_broadcast(BroadcastAlgorithm asked, bool multicast) {
  if (asked != BroadcastAlgorithm::kAuto) return asked;
  return multicast ? BroadcastAlgorithm::kMulticast : BroadcastAlgorithm::kChain;
}

inline AllgatherAlgorithm choose_allgather(AllgatherAlgorithm asked, bool multicast) {
  if (asked != AllgatherAlgorithm::kAuto) return asked;
  return multicast ? AllgatherAlgorithm::kMulticast : AllgatherAlgorithm::kRing;
}

// Recursive doubling for small vectors (latency: log2 N rounds); above the
// threshold the ring reduce-scatter and the multicast allgather, which
// inject S bytes per rank in all against the ring allreduce's 2(N-1)/N S.
// The choice depends only on arguments and settings every rank shares (the
// algorithm is part of the signature, so ranks that differ find out).
inline AllreduceAlgorithm choose_allreduce(AllreduceAlgorithm asked, bool multicast, int ranks,
                                           std::size_t bytes, std::size_t small_bytes) {
  if (asked != AllreduceAlgorithm::kAuto) return asked;
  if (ranks == 1 || bytes < small_bytes) return AllreduceAlgorithm::kRecursiveDoubling;
  return multicast ? AllreduceAlgorithm::kRsMulticast : AllreduceAlgorithm::kRing;
}

}  // namespace mccl::coll
