// How a communicator's collectives run: the algorithms, their pipelining
// and the crossovers, resolved once at creation (api/options.cc: options
// over settings over defaults) and carried end to end: to the collectives
// (coll/collectives.h), and whole to the offload daemon inside the client's
// hello (offload/wire.h), which is why it lives in common, the layer both
// see. Trivially copyable, fixed-width where the wire needs it. A new
// collective option is a field here, a CommOptions field, a setting, and
// its line in resolve_options.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mccl/options.h"

namespace mccl::common {

// Where multicast takes over from the point-to-point algorithms (bytes);
// -1: the measured crossovers (coll/algorithm.h).
struct MulticastFrom {
  std::int64_t broadcast = -1;
  std::int64_t allgather = -1;
};

// Where a communicator's ranks run, as they agreed at creation
// (setup::Agreement; the offload daemon agrees its own): picks the
// crossover table (coll/tuning.h), so every rank must hold the same.
struct Placement {
  // The fewest cores any rank has to itself, rounded down; 0 unknown.
  std::int32_t cores_per_rank = 0;
  // Every rank multicasts over a loopback interface: one host, one network
  // namespace. A datagram then costs each receiver a copy, as a TCP message
  // does, and multicast saves no wire.
  bool one_host = false;
  // Some machine runs more ranks than it has cores (known cores only): a
  // rank's message may wait for its receiver to be scheduled.
  bool ranks_share_cores = false;
};

struct CollConfig {
  AllgatherAlgorithm allgather = AllgatherAlgorithm::kAuto;
  BroadcastAlgorithm broadcast = BroadcastAlgorithm::kAuto;
  std::int32_t concurrent_roots = 0;  // 0: as the incast budget allows
  BarrierAlgorithm barrier = BarrierAlgorithm::kAuto;
  std::uint64_t segment_bytes = 128 << 10;  // point-to-point pipelining
  bool multicast = true;                    // the datagram transport can multicast
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::kAuto;
  std::uint64_t reduce_segment_bytes = 64 << 10;   // ring reduce-scatter, recursive doubling
  std::uint64_t allreduce_small_bytes = 16 << 10;  // auto: recursive doubling below
  double rs_share = 0.5;                           // (0, 1]: see coll::rs_send_budget
  MulticastFrom multicast_from;                    // auto: the crossovers
  Placement placement;                             // not an option: agreed at creation
};

}  // namespace mccl::common
