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

}  // namespace mccl::coll
