// The C API (mccl/mccl.h) over the C++ one: error reporting, versions,
// in-process worlds and the communicator's own calls. Each entry point
// checks its handles and out-pointers and runs the C++ call inside `guard`
// (c_support.h), so nothing thrown ever crosses the C boundary. The
// collectives are in c_api_coll.cc, the network constructors in
// c_api_bootstrap.cc, the shared progress thread in c_api_progress.cc.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/c_support.h"
#include "mccl/communicator.h"
#include "mccl/error.h"
#include "mccl/inprocess.h"
#include "mccl/mccl.h"
#include "mccl/options.h"
#include "mccl/stats.h"
#include "mccl/types.h"
#include "mccl/version.h"

// ------------------------------------------------- ABI agreement, checked

#define MCCL_SAME_CODE(c, cpp) \
  static_assert(static_cast<int>(c) == static_cast<int>(mccl::ErrorCode::cpp))
MCCL_SAME_CODE(MCCL_OK, kOk);
MCCL_SAME_CODE(MCCL_INVALID_ARGUMENT, kInvalidArgument);
MCCL_SAME_CODE(MCCL_TIMEOUT, kTimeout);
MCCL_SAME_CODE(MCCL_PEER_FAILURE, kPeerFailure);
MCCL_SAME_CODE(MCCL_TRANSPORT_ERROR, kTransportError);
MCCL_SAME_CODE(MCCL_MISMATCH, kMismatch);
MCCL_SAME_CODE(MCCL_INTERNAL, kInternal);
MCCL_SAME_CODE(MCCL_UNAVAILABLE, kUnavailable);
#undef MCCL_SAME_CODE

// The reductions' enums mirror the C++ ones value for value.
#define MCCL_SAME_TYPE(c, cpp) \
  static_assert(static_cast<int>(c) == static_cast<int>(mccl::DataType::cpp))
MCCL_SAME_TYPE(MCCL_FLOAT32, kFloat32);
MCCL_SAME_TYPE(MCCL_FLOAT64, kFloat64);
MCCL_SAME_TYPE(MCCL_BFLOAT16, kBFloat16);
MCCL_SAME_TYPE(MCCL_FLOAT16, kFloat16);
MCCL_SAME_TYPE(MCCL_INT32, kInt32);
MCCL_SAME_TYPE(MCCL_INT64, kInt64);
MCCL_SAME_TYPE(MCCL_UINT8, kUInt8);
#undef MCCL_SAME_TYPE
#define MCCL_SAME_OP(c, cpp) \
  static_assert(static_cast<int>(c) == static_cast<int>(mccl::ReduceOp::cpp))
MCCL_SAME_OP(MCCL_SUM, kSum);
MCCL_SAME_OP(MCCL_PROD, kProd);
MCCL_SAME_OP(MCCL_MIN, kMin);
MCCL_SAME_OP(MCCL_MAX, kMax);
#undef MCCL_SAME_OP

// A new mccl::Stats field needs its twin in mccl_stats_t and a line in
// mccl_comm_stats.
static_assert(sizeof(mccl_stats_t) == sizeof(std::size_t) + sizeof(mccl::Stats),
              "mccl_stats_t no longer mirrors mccl::Stats");
static_assert(sizeof(mccl_mcast_timeline_t) == sizeof(mccl::McastTimeline),
              "mccl_mcast_timeline_t no longer mirrors mccl::McastTimeline");

// Options structs grow only by appending, and must have no tail padding: an
// older caller's padding bytes (possibly garbage) would otherwise be read
// as the first field added later.
static_assert(sizeof(mccl_comm_options_t) ==
              offsetof(mccl_comm_options_t, compress_zfp_rate) + sizeof(double));
static_assert(offsetof(mccl_comm_options_t, compress) ==
                  offsetof(mccl_comm_options_t, setup_timeout_ms) + sizeof(std::int64_t),
              "no padding before compress");
static_assert(offsetof(mccl_comm_options_t, setup_timeout_ms) ==
                  offsetof(mccl_comm_options_t, progress_thread) + sizeof(mccl_progress_thread_t),
              "mccl_comm_options_t: setup_timeout_ms follows progress_thread without padding");
static_assert(offsetof(mccl_comm_options_t, reduce_scatter_send_share) ==
                  offsetof(mccl_comm_options_t, reserved2) + sizeof(std::int32_t),
              "no padding before the double");
static_assert(offsetof(mccl_comm_options_t, progress_thread) ==
                  offsetof(mccl_comm_options_t, reserved3) + sizeof(std::int32_t),
              "no padding before the pointer");
static_assert(sizeof(mccl_tcp_options_t) == offsetof(mccl_tcp_options_t, secret) + sizeof(void*));
static_assert(sizeof(mccl_bootstrap_callbacks_t) ==
              offsetof(mccl_bootstrap_callbacks_t, user_data) + sizeof(void*));
static_assert(sizeof(mccl_progress_thread_options_t) ==
              offsetof(mccl_progress_thread_options_t, spin_us) + sizeof(std::int64_t));
static_assert(sizeof(mccl_sim_options_t) ==
              offsetof(mccl_sim_options_t, seed) + sizeof(std::uint64_t));

namespace {

using namespace mccl::capi;
using mccl::ErrorCode;

void require_rank_in_world(const mccl_world_s* world, int rank) {
  const int size = world->world->size();
  if (rank < 0 || rank >= size) {
    invalid("rank " + std::to_string(rank) + " is outside the world of " + std::to_string(size));
  }
}

}  // namespace

// --------------------------------------------------------- entry points

extern "C" {

const char* mccl_result_string(mccl_result_t result) {
  const int code = raw_value(result);
  if (code < MCCL_OK || code > MCCL_UNAVAILABLE) return "unknown result code";
  return mccl::to_string(static_cast<ErrorCode>(code));
}

const char* mccl_last_error(void) { return last_error(); }

const char* mccl_version(void) { return mccl::version_string(); }

mccl_result_t mccl_world_create(int size, const mccl_sim_options_t* options, mccl_world_t* out) {
  return guard(__func__, [&] {
    require(out, "out");
    if (size < 1) invalid("size is " + std::to_string(size) + "; a world needs at least 1 rank");
    mccl::SimFabricOptions fabric;
    if (options != nullptr) fabric = to_cpp(read_versioned(options, "options"));
    auto w = std::make_unique<mccl_world_s>();
    w->world = std::make_shared<mccl::InProcessWorld>(size, fabric);
    register_handle(w.get(), HandleKind::kWorld);
    *out = w.release();
  });
}

mccl_result_t mccl_world_destroy(mccl_world_t world) {
  return guard(__func__, [&] {
    unregister_handle(world, HandleKind::kWorld, "world");
    delete world;
  });
}

mccl_result_t mccl_world_kill_rank(mccl_world_t world, int rank) {
  return guard(__func__, [&] {
    require_world(world);
    require_rank_in_world(world, rank);
    world->world->kill_rank(rank);
  });
}

mccl_result_t mccl_comm_create_inprocess(mccl_world_t world, int rank,
                                         const mccl_comm_options_t* options, mccl_comm_t* out) {
  return guard(__func__, [&] {
    require_world(world);
    require(out, "out");
    require_rank_in_world(world, rank);
    const mccl::CommOptions cpp = comm_options(options);
    create_comm(world->world, world->world->bootstrap(rank), cpp, out);
  });
}

mccl_result_t mccl_comm_destroy(mccl_comm_t comm) {
  return guard(__func__, [&] {
    require_comm(comm);
    const int live = comm->live_requests.load(std::memory_order_relaxed);
    if (live != 0) {
      invalid(std::to_string(live) +
              " request(s) of this communicator are not freed; "
              "call mccl_request_free on them first");
    }
    unregister_handle(comm, HandleKind::kComm, "comm");
    for (void* p : comm->blocks) comm->comm.deallocate(p);
    delete comm;
  });
}

mccl_result_t mccl_comm_rank(mccl_comm_t comm, int* rank) {
  return answer(__func__, rank, "rank", [&] {
    require_comm(comm);
    return comm->comm.rank();
  });
}

mccl_result_t mccl_comm_size(mccl_comm_t comm, int* size) {
  return answer(__func__, size, "size", [&] {
    require_comm(comm);
    return comm->comm.size();
  });
}

mccl_result_t mccl_comm_progress(mccl_comm_t comm) {
  return guard(__func__, [&] {
    require_comm(comm);
    comm->comm.progress();
  });
}

mccl_result_t mccl_comm_revoke(mccl_comm_t comm) {
  return guard(__func__, [&] {
    require_comm(comm);
    comm->comm.revoke();
  });
}

mccl_result_t mccl_comm_shrink(mccl_comm_t comm, int* failed, int failed_capacity,
                               int* failed_count, mccl_comm_t* out) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(out, "out");
    if (failed_capacity < 0) invalid("failed_capacity is negative");
    if (failed_capacity > 0) require(failed, "failed");
    std::vector<int> gone;
    auto c = std::make_unique<mccl_comm_s>(*comm, comm->comm.shrink(&gone));
    const std::size_t shown = std::min(gone.size(), static_cast<std::size_t>(failed_capacity));
    std::copy_n(gone.begin(), shown, failed);
    if (failed_count != nullptr) *failed_count = static_cast<int>(gone.size());
    register_handle(c.get(), HandleKind::kComm);
    *out = c.release();
  });
}

mccl_result_t mccl_comm_epoch(mccl_comm_t comm, uint32_t* epoch) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(epoch, "epoch");
    *epoch = comm->comm.epoch();
  });
}

mccl_result_t mccl_comm_allocate(mccl_comm_t comm, size_t bytes, void** ptr) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(ptr, "ptr");
    comm->blocks.reserve(comm->blocks.size() + 1);  // so that insert cannot throw below
    void* p = comm->comm.allocate(bytes);
    comm->blocks.insert(p);
    *ptr = p;
  });
}

mccl_result_t mccl_comm_deallocate(mccl_comm_t comm, void* ptr) {
  return guard(__func__, [&] {
    require_comm(comm);
    if (ptr == nullptr) return;
    auto it = comm->blocks.find(ptr);
    if (it == comm->blocks.end()) {
      invalid(
          "argument 'ptr' is not a live block of this communicator's mccl_comm_allocate: "
          "it was already deallocated, or came from elsewhere");
    }
    comm->blocks.erase(it);
    comm->comm.deallocate(ptr);
  });
}

// The C struct mirrors mccl::Stats: every field of MCCL_STATS_FIELDS, the
// bound and the timeline after struct_size (the copy below names them).
static_assert(sizeof(mccl_stats_t) == sizeof(std::size_t) +
                                          mccl::stats_detail::kFields * sizeof(std::uint64_t) +
                                          sizeof(double) + sizeof(mccl_mcast_timeline_t),
              "mccl_stats_t must have a field for every entry of MCCL_STATS_FIELDS");

mccl_result_t mccl_comm_stats(mccl_comm_t comm, mccl_stats_t* stats) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(stats, "stats");
    const std::size_t size = stats->struct_size;
    if (size < sizeof(std::size_t)) {
      invalid("stats->struct_size is " + std::to_string(size) +
              "; set it to sizeof(mccl_stats_t) (MCCL_STATS_INIT does)");
    }
    const mccl::Stats s = comm->comm.stats();
    mccl_stats_t c{};
    c.struct_size = size;
#define MCCL_COPY_(name, kind) c.name = s.name;
    MCCL_STATS_FIELDS(MCCL_COPY_)
#undef MCCL_COPY_
    const mccl::McastTimeline& t = s.last_mcast;
    c.last_mcast = {t.started_ns,      t.first_sent_ns, t.last_sent_ns, t.first_arrival_ns,
                    t.last_arrival_ns, t.held_ns,       t.released_ns,  t.completed_ns};
    c.compress_max_bound = s.compress_max_bound;
    // A caller built against an older header has a shorter struct.
    std::memcpy(static_cast<void*>(stats), &c, std::min(size, sizeof c));
  });
}

}  // extern "C"
