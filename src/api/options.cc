#include "api/options.h"

#include <cstdint>
#include <string>

#include "api/progress_thread_impl.h"
#include "common/option_names.h"
#include "common/settings.h"
#include "mccl/error.h"

namespace mccl::detail {

namespace s = common::settings;

namespace {
// check_settings() has held every value to its vocabulary, which the table
// spells, so a value always parses; `otherwise` is only the default's value.
template <typename E, std::size_t N>
E named_setting(const common::Setting& setting, const common::EnumName<E> (&names)[N],
                E otherwise) {
  return common::value_named(setting.get(), names).value_or(otherwise);
}

Compression compression_from_env(int rank) {
  Compression c;
  c.mode = named_setting(s::kCollCompress, common::kCompressNames, CompressMode::kOff);
  c.bound = s::kCollCompressBound.get_double();
  c.zfp_rate = s::kCollCompressZfpRate.get_double();
  c.max_link_mbit = s::kCollCompressMaxMbit.get_int();
  if (c.mode == CompressMode::kBound && !(c.bound > 0 && c.bound <= 1e300)) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(rank) +
                    ": MCCL_COLL_COMPRESS=bound needs MCCL_COLL_COMPRESS_BOUND, a positive "
                    "absolute error bound (e.g. 1e-3), not '" +
                    s::kCollCompressBound.raw() + "'");
  }
  return c;
}

// The algorithms and their sizes: options over settings over defaults.
void resolve_algorithms(const CommOptions& o, common::CollConfig& coll) {
  coll.allgather = o.allgather_algorithm.value_or(
      named_setting(s::kCollAllgatherAlgo, common::kAllgatherNames, AllgatherAlgorithm::kAuto));
  coll.broadcast = o.broadcast_algorithm.value_or(
      named_setting(s::kCollBcastAlgo, common::kBroadcastNames, BroadcastAlgorithm::kAuto));
  coll.segment_bytes = static_cast<std::size_t>(s::kCollChainSegmentBytes.get_int());
  coll.allreduce = o.allreduce_algorithm.value_or(
      named_setting(s::kCollAllreduceAlgo, common::kAllreduceNames, AllreduceAlgorithm::kAuto));
  coll.barrier = o.barrier_algorithm.value_or(
      named_setting(s::kCollBarrierAlgo, common::kBarrierNames, BarrierAlgorithm::kAuto));
  coll.reduce_segment_bytes = static_cast<std::size_t>(s::kCollReduceSegmentBytes.get_int());
  coll.allreduce_small_bytes = static_cast<std::size_t>(s::kCollAllreduceSmallBytes.get_int());
  coll.multicast_from.broadcast = s::kCollBcastMcastFromBytes.get_int();
  coll.multicast_from.allgather = s::kCollAllgatherMcastFromBytes.get_int();
}

}  // namespace

ResolvedOptions resolve_options(const CommOptions& o, int rank) {
  // Every MCCL_* variable is checked here, where creation begins, so that
  // the layers below read only values that parse (common/settings.h).
  if (common::Status st = common::check_settings(); !st) {
    throw Error(st.code(), "rank " + std::to_string(rank) + ": " + st.message());
  }
  ResolvedOptions r;
  r.transport = o.transport.value_or(
      named_setting(s::kTransport, common::kTransportNames, TransportKind::kAuto));
  r.progress = o.progress.value_or(
      named_setting(s::kProgress, common::kProgressNames, ProgressKind::kInline));
  r.timeout = o.timeout.value_or(std::chrono::milliseconds(s::kCollTimeoutMs.get_int()));
  if (r.timeout.count() <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(rank) + ": CommOptions::timeout must be positive");
  }
  r.coll.concurrent_roots =
      o.allgather_concurrent_roots.value_or(static_cast<int>(s::kCollAllgatherRoots.get_int()));
  if (r.coll.concurrent_roots < 0) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "rank " + std::to_string(rank) +
            ": CommOptions::allgather_concurrent_roots must be >= 0 (0: as the incast budget "
            "allows)");
  }
  resolve_algorithms(o, r.coll);
  if (o.reduce_scatter_send_share) {
    r.coll.rs_share = *o.reduce_scatter_send_share;
    if (!(r.coll.rs_share > 0.0 && r.coll.rs_share <= 1.0)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "rank " + std::to_string(rank) +
                      ": CommOptions::reduce_scatter_send_share must be in (0, 1], not " +
                      std::to_string(r.coll.rs_share));
    }
  } else {
    r.coll.rs_share = s::kCollRsShare.get_double();
    if (!(r.coll.rs_share > 0.0 && r.coll.rs_share <= 1.0)) {
      throw Error(ErrorCode::kInvalidArgument, "rank " + std::to_string(rank) +
                                                   ": MCCL_COLL_RS_SHARE must be in (0, 1], not " +
                                                   s::kCollRsShare.raw());
    }
  }
  r.compression = o.compression.value_or(compression_from_env(rank));
  r.authenticate = o.authenticate;
  r.setup_timeout =
      o.setup_timeout.value_or(std::chrono::milliseconds(s::kTransportSetupTimeoutMs.get_int()));
  if (r.setup_timeout.count() <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(rank) +
                    ": CommOptions::setup_timeout must be positive, not " +
                    std::to_string(r.setup_timeout.count()) + " ms");
  }
  if (o.progress_thread) {
    if (o.progress && *o.progress != ProgressKind::kThread) {
      throw Error(ErrorCode::kInvalidArgument,
                  "rank " + std::to_string(rank) +
                      ": CommOptions::progress_thread is set, so CommOptions::progress must be "
                      "unset or kThread");
    }
    r.progress = ProgressKind::kThread;
    r.shared_progress = ProgressThreadAccess::thread_of(*o.progress_thread);
  }
  r.progress_cpu = static_cast<int>(s::kProgressCpu.get_int());
  r.progress_spin = std::chrono::microseconds(s::kProgressSpinUs.get_int());
  r.progress_spin_set = s::kProgressSpinUs.from_env().has_value();
  r.progress_wait_spin = std::chrono::microseconds(s::kProgressWaitSpinUs.get_int());
  r.progress_wait_spin_set = s::kProgressWaitSpinUs.from_env().has_value();
  return r;
}

}  // namespace mccl::detail
