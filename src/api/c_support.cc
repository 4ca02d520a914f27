#include "api/c_support.h"

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/enum_names.h"

namespace mccl::capi {

namespace {

thread_local std::string t_last_error;

struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, HandleKind> live;
};

// Never destroyed: a handle freed from another static destructor at exit
// must still find it.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

constexpr common::EnumName<HandleKind> kTypeNames[] = {
    {HandleKind::kWorld, "mccl_world_t"},
    {HandleKind::kComm, "mccl_comm_t"},
    {HandleKind::kRequest, "mccl_request_t"},
    {HandleKind::kProgressThread, "mccl_progress_thread_t"},
    {HandleKind::kBootstrap, "mccl_bootstrap_t"}};

const char* type_name(HandleKind kind) { return common::name_of(kind, kTypeNames, "handle"); }

// Under the registry's lock.
void check(const Registry& r, const void* handle, HandleKind kind, const char* name) {
  require(handle, name);
  auto it = r.live.find(handle);
  if (it == r.live.end() || it->second != kind) {
    invalid(std::string("argument '") + name + "' is not a live " + type_name(kind) +
            ": it was already destroyed or freed, or never created by MCCL");
  }
}

}  // namespace

void set_last_error(const char* fn, const char* what) noexcept {
  try {
    t_last_error.assign(fn).append(": ").append(what);
  } catch (...) {
    // Out of memory while reporting: keep whatever fits.
    t_last_error.clear();
  }
}

const char* last_error() noexcept { return t_last_error.c_str(); }

void register_handle(const void* handle, HandleKind kind) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.live[handle] = kind;
}

void require_live(const void* handle, HandleKind kind, const char* name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  check(r, handle, kind, name);
}

void unregister_handle(const void* handle, HandleKind kind, const char* name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  check(r, handle, kind, name);
  r.live.erase(handle);
}

mccl::SimFabricOptions to_cpp(const mccl_sim_options_t& c) {
  mccl::SimFabricOptions o;
  o.loss = c.loss;
  o.duplicate = c.duplicate;
  o.reorder = c.reorder;
  o.corrupt = c.corrupt;
  if (c.latency_ns < 0) invalid("options->latency_ns is negative");
  o.latency = std::chrono::nanoseconds(c.latency_ns);
  o.link_gbit_per_s = c.link_gbit_per_s;
  if (c.mtu != 0) o.mtu = c.mtu;
  if (c.receive_depth != 0) o.receive_depth = c.receive_depth;
  if (c.seed != 0) o.seed = c.seed;
  return o;
}

// Maps a 1-based C enumerator to the C++ enumerator at index value - 1.
namespace {
template <typename E, std::size_t N>
std::optional<E> enum_field(std::int32_t value, const E (&values)[N], const char* name) {
  if (value == 0) return std::nullopt;
  if (value < 0 || static_cast<std::size_t>(value) > N) {
    invalid(std::string("options->") + name + " is " + std::to_string(value) +
            ", not one of its MCCL_* values");
  }
  return values[value - 1];
}
// mccl_comm_options_t's compress fields; nullopt when compress is unset.
std::optional<mccl::Compression> compression_of(const mccl_comm_options_t& c) {
  static constexpr mccl::CompressMode kCompress[] = {
      mccl::CompressMode::kOff, mccl::CompressMode::kBf16, mccl::CompressMode::kBound,
      mccl::CompressMode::kZfp};
  const auto mode = enum_field(c.compress, kCompress, "compress");
  if (!mode) {
    if (c.compress_max_link_mbit != 0) {
      invalid("options->compress_max_link_mbit is set but options->compress is not");
    }
    return std::nullopt;
  }
  if (c.compress_max_link_mbit < -1) {
    invalid("options->compress_max_link_mbit is " + std::to_string(c.compress_max_link_mbit) +
            "; expected -1 (any rate), 0 (the measured rule) or a rate in Mbit/s");
  }
  if (*mode == mccl::CompressMode::kBound && !(c.compress_bound > 0 && c.compress_bound <= 1e300)) {
    invalid("options->compress is MCCL_COMPRESS_BOUND but compress_bound is " +
            std::to_string(c.compress_bound) + "; expected a positive bound");
  }
  return mccl::Compression{*mode, c.compress_bound,
                           c.compress_zfp_rate == 0 ? 16.0 : c.compress_zfp_rate,
                           c.compress_max_link_mbit};
}
}  // namespace

mccl::CommOptions to_cpp(const mccl_comm_options_t& c) {
  using mccl::AllgatherAlgorithm;
  using mccl::AllreduceAlgorithm;
  using mccl::BroadcastAlgorithm;
  using mccl::ProgressKind;
  using mccl::TransportKind;
  static_assert(MCCL_TRANSPORT_IB == 4 && MCCL_PROGRESS_OFFLOAD == 3 &&
                MCCL_ALLGATHER_ALGO_STAR == 5 && MCCL_BCAST_ALGO_FLAT == 5 &&
                MCCL_ALLREDUCE_ALGO_RECURSIVE_DOUBLING == 4);
  static constexpr TransportKind kTransports[] = {TransportKind::kAuto, TransportKind::kSim,
                                                  TransportKind::kUdp, TransportKind::kIb};
  static constexpr ProgressKind kProgress[] = {ProgressKind::kInline, ProgressKind::kThread,
                                               ProgressKind::kOffload};
  static constexpr AllgatherAlgorithm kAllgather[] = {
      AllgatherAlgorithm::kAuto, AllgatherAlgorithm::kMulticast, AllgatherAlgorithm::kRing,
      AllgatherAlgorithm::kBruck, AllgatherAlgorithm::kStar};
  static constexpr BroadcastAlgorithm kBroadcast[] = {
      BroadcastAlgorithm::kAuto, BroadcastAlgorithm::kMulticast, BroadcastAlgorithm::kChain,
      BroadcastAlgorithm::kBinomial, BroadcastAlgorithm::kFlat};
  static constexpr AllreduceAlgorithm kAllreduce[] = {
      AllreduceAlgorithm::kAuto, AllreduceAlgorithm::kRsMulticast, AllreduceAlgorithm::kRing,
      AllreduceAlgorithm::kRecursiveDoubling};

  if (c.reserved != 0) invalid("options->reserved must be 0");
  if (c.reserved2 != 0) invalid("options->reserved2 must be 0");
  if (c.reserved3 != 0) invalid("options->reserved3 must be 0");
  mccl::CommOptions o;
  o.transport = enum_field(c.transport, kTransports, "transport");
  o.progress = enum_field(c.progress, kProgress, "progress");
  o.allgather_algorithm = enum_field(c.allgather_algorithm, kAllgather, "allgather_algorithm");
  o.broadcast_algorithm = enum_field(c.broadcast_algorithm, kBroadcast, "broadcast_algorithm");
  o.allreduce_algorithm = enum_field(c.allreduce_algorithm, kAllreduce, "allreduce_algorithm");
  if (c.reduce_scatter_send_share != 0) {
    if (!(c.reduce_scatter_send_share > 0 && c.reduce_scatter_send_share <= 1)) {
      invalid("options->reduce_scatter_send_share is " +
              std::to_string(c.reduce_scatter_send_share) + "; expected (0, 1] or 0 (unset)");
    }
    o.reduce_scatter_send_share = c.reduce_scatter_send_share;
  }
  if (c.timeout_ms < 0) invalid("options->timeout_ms is negative; 0 means unset");
  if (c.timeout_ms > 0) o.timeout = std::chrono::milliseconds(c.timeout_ms);
  if (c.allgather_concurrent_roots < -1) {
    invalid("options->allgather_concurrent_roots is " +
            std::to_string(c.allgather_concurrent_roots) +
            "; expected > 0, -1 (as the incast budget allows) or 0 (unset)");
  }
  // The C++ option spells "as the incast budget allows" as 0; C keeps 0 for
  // "unset".
  if (c.allgather_concurrent_roots == -1) o.allgather_concurrent_roots = 0;
  if (c.allgather_concurrent_roots > 0) o.allgather_concurrent_roots = c.allgather_concurrent_roots;
  static constexpr bool kAuth[] = {true, false};
  static_assert(MCCL_AUTH_ON == 1 && MCCL_AUTH_OFF == 2);
  o.authenticate = enum_field(c.authenticate, kAuth, "authenticate");
  if (c.setup_timeout_ms < 0) invalid("options->setup_timeout_ms is negative; 0 means unset");
  if (c.setup_timeout_ms > 0) o.setup_timeout = std::chrono::milliseconds(c.setup_timeout_ms);
  o.compression = compression_of(c);
  if (c.progress_thread != nullptr) {
    require_progress_thread(c.progress_thread, "options->progress_thread");
    o.progress_thread = c.progress_thread->thread;
  }
  return o;
}

mccl::CommOptions comm_options(const mccl_comm_options_t* options) {
  if (options == nullptr) return {};
  return to_cpp(read_versioned(options, "options"));
}

void create_comm(std::shared_ptr<mccl::InProcessWorld> world,
                 std::shared_ptr<mccl::Bootstrap> bootstrap, const mccl::CommOptions& options,
                 mccl_comm_t* out) {
  auto c = std::make_unique<mccl_comm_s>(std::move(world), std::move(bootstrap), options);
  register_handle(c.get(), HandleKind::kComm);
  *out = c.release();
}

}  // namespace mccl::capi
