// Resolves CommOptions against the MCCL_* registry: an explicit option
// wins, then the environment, then the default.
#pragma once

#include <chrono>
#include <memory>

#include "coll/algorithm.h"
#include "coll/collectives.h"
#include "mccl/options.h"

namespace mccl::progress {
class SharedThread;
}

namespace mccl::detail {

struct ResolvedOptions {
  TransportKind transport = TransportKind::kAuto;
  ProgressKind progress = ProgressKind::kInline;
  std::chrono::milliseconds timeout{60000};
  coll::CollConfig coll;  // carried whole to the collectives and the offload daemon
  int progress_cpu = -1;
  std::chrono::microseconds progress_spin{50};
  bool progress_spin_set = false;                           // MCCL_PROGRESS_SPIN_US was given
  std::chrono::microseconds progress_wait_spin{50};         // the thread engine's waiters
  bool progress_wait_spin_set = false;                      // MCCL_PROGRESS_WAIT_SPIN_US was given
  std::shared_ptr<progress::SharedThread> shared_progress;  // null: an engine of its own
  std::optional<bool> authenticate;  // unset: MCCL_PROTO_AUTH decides at creation
  std::chrono::milliseconds setup_timeout{5000};
  Compression compression;  // checked per call (codec::validate)
  // The membership epoch this rank proposes at creation: 0, or a grow's
  // members' plus 1 (docs/elastic.md). Not a user option.
  std::uint32_t epoch = 0;
};

// Throws mccl::Error(kInvalidArgument) naming the option or variable.
ResolvedOptions resolve_options(const CommOptions& options, int rank);

}  // namespace mccl::detail
