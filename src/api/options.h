// Resolves CommOptions against the MCCL_* registry: an explicit option
// wins, then the environment, then the default.
#pragma once

#include <chrono>
#include <memory>

#include "coll/algorithm.h"
#include "mccl/options.h"

namespace mccl::progress {
class SharedThread;
}

namespace mccl::detail {

struct ResolvedOptions {
  TransportKind transport = TransportKind::kAuto;
  ProgressKind progress = ProgressKind::kInline;
  std::chrono::milliseconds timeout{60000};
  int concurrent_roots = 0;
  AllgatherAlgorithm allgather = AllgatherAlgorithm::kAuto;
  BroadcastAlgorithm broadcast = BroadcastAlgorithm::kAuto;
  std::size_t segment_bytes = 128 << 10;
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::kAuto;
  std::size_t reduce_segment_bytes = 64 << 10;
  std::size_t allreduce_small_bytes = 16 << 10;
  coll::MulticastFrom multicast_from;  // -1: the measured crossovers
  double rs_share = 0.5;
  int progress_cpu = -1;
  std::chrono::microseconds progress_spin{50};
  bool progress_spin_set = false;                           // MCCL_PROGRESS_SPIN_US was given
  std::shared_ptr<progress::SharedThread> shared_progress;  // null: an engine of its own
  std::optional<bool> authenticate;  // unset: MCCL_PROTO_AUTH decides at creation
  std::chrono::milliseconds setup_timeout{5000};
  Compression compression;  // checked per call (codec::validate)
};

// Throws mccl::Error(kInvalidArgument) naming the option or variable.
ResolvedOptions resolve_options(const CommOptions& options, int rank);

}  // namespace mccl::detail
