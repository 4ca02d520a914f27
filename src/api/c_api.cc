// The C API (mccl/mccl.h) over the C++ one. Each entry point checks its
// handles and out-pointers, runs the C++ call inside `guard`, and turns any
// exception into a result code plus a thread-local message: nothing thrown
// ever crosses the C boundary.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <span>
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

// MCCL_VERSION_* come from the generated mccl/version_number.h.
#define MCCL_STR_(x) #x
#define MCCL_XSTR_(x) MCCL_STR_(x)
#define MCCL_VERSION_STRING_     \
  MCCL_XSTR_(MCCL_VERSION_MAJOR) \
  "." MCCL_XSTR_(MCCL_VERSION_MINOR) "." MCCL_XSTR_(MCCL_VERSION_PATCH)

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

// Options structs grow only by appending, and must have no tail padding: an
// older caller's padding bytes (possibly garbage) would otherwise be read
// as the first field added later.
static_assert(sizeof(mccl_comm_options_t) ==
              offsetof(mccl_comm_options_t, reduce_scatter_send_share) + sizeof(double));
static_assert(offsetof(mccl_comm_options_t, reduce_scatter_send_share) ==
                  offsetof(mccl_comm_options_t, reserved2) + sizeof(std::int32_t),
              "no padding before the double");
static_assert(sizeof(mccl_sim_options_t) ==
              offsetof(mccl_sim_options_t, seed) + sizeof(std::uint64_t));

namespace {

using namespace mccl::capi;
using mccl::Error;
using mccl::ErrorCode;

thread_local std::string t_last_error;

void set_last_error(const char* fn, const char* what) noexcept {
  try {
    t_last_error.assign(fn).append(": ").append(what);
  } catch (...) {
    // Out of memory while reporting: keep whatever fits.
    t_last_error.clear();
  }
}

// Runs `body` and converts every exception into a code and a message.
template <typename F>
mccl_result_t guard(const char* fn, F&& body) noexcept {
  try {
    body();
    return MCCL_OK;
  } catch (const Error& e) {
    set_last_error(fn, e.what());
    const int code = static_cast<int>(e.code());
    // An error without a failure code is itself a bug.
    if (code <= MCCL_OK || code > MCCL_UNAVAILABLE) return MCCL_INTERNAL;
    return static_cast<mccl_result_t>(code);
  } catch (const std::bad_alloc&) {
    set_last_error(fn, "out of memory");
    return MCCL_INTERNAL;
  } catch (const std::exception& e) {
    set_last_error(fn, e.what());
    return MCCL_INTERNAL;
  } catch (...) {
    set_last_error(fn, "unknown exception");
    return MCCL_INTERNAL;
  }
}

const void* to_send(const void* send) { return send == MCCL_IN_PLACE ? mccl::kInPlace : send; }

// Any value converts (both C++ enums are int-based): the communicator
// rejects those outside the enum with a message naming them.
// A C caller may pass any int where the header says an enum (C enums are
// ints), but in C++ reading an enum that holds a value outside its
// enumerators' range is undefined (UBSan: "not a valid value"): copy the
// bits out instead (by reference: passing one by value loads it), and let
// the checks behind reject unknown values.
template <typename E>
int raw_value(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}
mccl::DataType to_cpp(const mccl_datatype_t& t) {
  return static_cast<mccl::DataType>(raw_value(t));
}
mccl::ReduceOp to_cpp(const mccl_reduce_op_t& op) {
  return static_cast<mccl::ReduceOp>(raw_value(op));
}

// Wraps a started C++ request in a new handle owned by the caller.
template <typename Start>
void start_request(mccl_comm_s* comm, mccl_request_t* out, Start&& start) {
  auto r = std::make_unique<mccl_request_s>();
  r->owner = comm;
  start(*r);
  comm->live_requests.fetch_add(1, std::memory_order_relaxed);
  register_handle(r.get(), HandleKind::kRequest);
  *out = r.release();
}

void check_allgatherv(mccl_comm_s* comm, const void* send, const void* recv,
                      const std::size_t* counts, const std::size_t* displs) {
  require(counts, "counts");
  require(displs, "displs");
  const int size = comm->comm.size();
  const int rank = comm->comm.rank();
  std::size_t total = 0;
  for (int r = 0; r < size; ++r) total += counts[r];
  if (send != MCCL_IN_PLACE) require_buffer(send, counts[rank], "send");
  require_buffer(recv, total, "recv");
}

}  // namespace

// --------------------------------------------------------- entry points

extern "C" {

const char* mccl_result_string(mccl_result_t result) {
  const int code = raw_value(result);
  if (code < MCCL_OK || code > MCCL_UNAVAILABLE) return "unknown result code";
  return mccl::to_string(static_cast<ErrorCode>(code));
}

const char* mccl_last_error(void) { return t_last_error.c_str(); }

const char* mccl_version(void) { return MCCL_VERSION_STRING_; }

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
    const int size = world->world->size();
    if (rank < 0 || rank >= size) {
      invalid("rank " + std::to_string(rank) + " is outside the world of " + std::to_string(size));
    }
    world->world->kill_rank(rank);
  });
}

mccl_result_t mccl_comm_create_inprocess(mccl_world_t world, int rank,
                                         const mccl_comm_options_t* options, mccl_comm_t* out) {
  return guard(__func__, [&] {
    require_world(world);
    require(out, "out");
    const int size = world->world->size();
    if (rank < 0 || rank >= size) {
      invalid("rank " + std::to_string(rank) + " is outside the world of " + std::to_string(size));
    }
    mccl::CommOptions cpp;
    if (options != nullptr) cpp = to_cpp(read_versioned(options, "options"));
    auto c = std::make_unique<mccl_comm_s>(world->world, rank, cpp);
    register_handle(c.get(), HandleKind::kComm);
    *out = c.release();
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
    delete comm;
  });
}

mccl_result_t mccl_comm_rank(mccl_comm_t comm, int* rank) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(rank, "rank");
    *rank = comm->comm.rank();
  });
}

mccl_result_t mccl_comm_size(mccl_comm_t comm, int* size) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(size, "size");
    *size = comm->comm.size();
  });
}

mccl_result_t mccl_comm_progress(mccl_comm_t comm) {
  return guard(__func__, [&] {
    require_comm(comm);
    comm->comm.progress();
  });
}

mccl_result_t mccl_broadcast(mccl_comm_t comm, void* buffer, size_t bytes, int root) {
  return guard(__func__, [&] {
    require_comm(comm);
    require_buffer(buffer, bytes, "buffer");
    comm->comm.broadcast(buffer, bytes, root);
  });
}

mccl_result_t mccl_ibroadcast(mccl_comm_t comm, void* buffer, size_t bytes, int root,
                              mccl_request_t* request) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(request, "request");
    require_buffer(buffer, bytes, "buffer");
    start_request(comm, request, [&](mccl_request_s& r) {
      r.request = comm->comm.ibroadcast(buffer, bytes, root);
    });
  });
}

mccl_result_t mccl_allgather(mccl_comm_t comm, const void* send, void* recv,
                             size_t bytes_per_rank) {
  return guard(__func__, [&] {
    require_comm(comm);
    require_buffer(send, bytes_per_rank, "send");
    require_buffer(recv, bytes_per_rank, "recv");
    comm->comm.allgather(to_send(send), recv, bytes_per_rank);
  });
}

mccl_result_t mccl_iallgather(mccl_comm_t comm, const void* send, void* recv, size_t bytes_per_rank,
                              mccl_request_t* request) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(request, "request");
    require_buffer(send, bytes_per_rank, "send");
    require_buffer(recv, bytes_per_rank, "recv");
    start_request(comm, request, [&](mccl_request_s& r) {
      r.request = comm->comm.iallgather(to_send(send), recv, bytes_per_rank);
    });
  });
}

mccl_result_t mccl_allgatherv(mccl_comm_t comm, const void* send, void* recv, const size_t* counts,
                              const size_t* displs) {
  return guard(__func__, [&] {
    require_comm(comm);
    check_allgatherv(comm, send, recv, counts, displs);
    const auto n = static_cast<std::size_t>(comm->comm.size());
    comm->comm.allgatherv(to_send(send), recv, std::span<const std::size_t>(counts, n),
                          std::span<const std::size_t>(displs, n));
  });
}

mccl_result_t mccl_iallgatherv(mccl_comm_t comm, const void* send, void* recv, const size_t* counts,
                               const size_t* displs, mccl_request_t* request) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(request, "request");
    check_allgatherv(comm, send, recv, counts, displs);
    const auto n = static_cast<std::size_t>(comm->comm.size());
    start_request(comm, request, [&](mccl_request_s& r) {
      r.counts.assign(counts, counts + n);
      r.displs.assign(displs, displs + n);
      r.request = comm->comm.iallgatherv(to_send(send), recv, r.counts, r.displs);
    });
  });
}

mccl_result_t mccl_barrier(mccl_comm_t comm) {
  return guard(__func__, [&] {
    require_comm(comm);
    comm->comm.barrier();
  });
}

mccl_result_t mccl_ibarrier(mccl_comm_t comm, mccl_request_t* request) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(request, "request");
    start_request(comm, request, [&](mccl_request_s& r) { r.request = comm->comm.ibarrier(); });
  });
}

mccl_result_t mccl_reduce_scatter(mccl_comm_t comm, const void* send, void* recv,
                                  size_t count_per_rank, mccl_datatype_t datatype,
                                  mccl_reduce_op_t op) {
  return guard(__func__, [&] {
    require_comm(comm);
    comm->comm.reduce_scatter(to_send(send), recv, count_per_rank, to_cpp(datatype), to_cpp(op));
  });
}

mccl_result_t mccl_ireduce_scatter(mccl_comm_t comm, const void* send, void* recv,
                                   size_t count_per_rank, mccl_datatype_t datatype,
                                   mccl_reduce_op_t op, mccl_request_t* request) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(request, "request");
    start_request(comm, request, [&](mccl_request_s& r) {
      r.request = comm->comm.ireduce_scatter(to_send(send), recv, count_per_rank, to_cpp(datatype),
                                             to_cpp(op));
    });
  });
}

mccl_result_t mccl_reduce_scatterv(mccl_comm_t comm, const void* send, void* recv,
                                   const size_t* counts, mccl_datatype_t datatype,
                                   mccl_reduce_op_t op) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(counts, "counts");
    const auto n = static_cast<std::size_t>(comm->comm.size());
    comm->comm.reduce_scatterv(to_send(send), recv, std::span<const std::size_t>(counts, n),
                               to_cpp(datatype), to_cpp(op));
  });
}

mccl_result_t mccl_ireduce_scatterv(mccl_comm_t comm, const void* send, void* recv,
                                    const size_t* counts, mccl_datatype_t datatype,
                                    mccl_reduce_op_t op, mccl_request_t* request) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(request, "request");
    require(counts, "counts");
    const auto n = static_cast<std::size_t>(comm->comm.size());
    start_request(comm, request, [&](mccl_request_s& r) {
      r.counts.assign(counts, counts + n);
      r.request =
          comm->comm.ireduce_scatterv(to_send(send), recv, r.counts, to_cpp(datatype), to_cpp(op));
    });
  });
}

mccl_result_t mccl_allreduce(mccl_comm_t comm, const void* send, void* recv, size_t count,
                             mccl_datatype_t datatype, mccl_reduce_op_t op) {
  return guard(__func__, [&] {
    require_comm(comm);
    comm->comm.allreduce(to_send(send), recv, count, to_cpp(datatype), to_cpp(op));
  });
}

mccl_result_t mccl_iallreduce(mccl_comm_t comm, const void* send, void* recv, size_t count,
                              mccl_datatype_t datatype, mccl_reduce_op_t op,
                              mccl_request_t* request) {
  return guard(__func__, [&] {
    require_comm(comm);
    require(request, "request");
    start_request(comm, request, [&](mccl_request_s& r) {
      r.request = comm->comm.iallreduce(to_send(send), recv, count, to_cpp(datatype), to_cpp(op));
    });
  });
}

mccl_result_t mccl_test(mccl_request_t request, int* done) {
  return guard(__func__, [&] {
    require_request(request);
    require(done, "done");
    *done = 0;
    if (!request->done) request->done = request->request.test();
    *done = request->done ? 1 : 0;
  });
}

mccl_result_t mccl_wait(mccl_request_t request, int64_t timeout_ms) {
  return guard(__func__, [&] {
    require_request(request);
    if (request->done) return;
    if (timeout_ms == 0) {
      request->done = request->request.test();
      if (!request->done) throw Error(ErrorCode::kTimeout, "the collective is still in flight");
      return;
    }
    if (timeout_ms < 0) {
      request->request.wait();
    } else {
      request->request.wait(std::chrono::milliseconds(timeout_ms));
    }
    request->done = true;
  });
}

mccl_result_t mccl_request_free(mccl_request_t request) {
  return guard(__func__, [&] {
    unregister_handle(request, HandleKind::kRequest, "request");
    mccl_comm_s* owner = request->owner;
    delete request;  // ~Request waits for a collective still in flight
    owner->live_requests.fetch_sub(1, std::memory_order_relaxed);
  });
}

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
    c.mcast_datagrams_sent = s.mcast_datagrams_sent;
    c.mcast_bytes_sent = s.mcast_bytes_sent;
    c.mcast_datagrams_received = s.mcast_datagrams_received;
    c.mcast_bytes_received = s.mcast_bytes_received;
    c.repairs_requested = s.repairs_requested;
    c.repair_bytes_requested = s.repair_bytes_requested;
    c.repairs_served = s.repairs_served;
    c.repair_bytes_served = s.repair_bytes_served;
    c.control_messages_sent = s.control_messages_sent;
    c.p2p_bytes_sent = s.p2p_bytes_sent;
    c.dropped_invalid = s.dropped_invalid;
    c.dropped_stale = s.dropped_stale;
    c.dropped_duplicate = s.dropped_duplicate;
    c.early_arrivals_stored = s.early_arrivals_stored;
    c.early_arrivals_dropped = s.early_arrivals_dropped;
    c.collectives_completed = s.collectives_completed;
    c.eager_completions = s.eager_completions;
    // A caller built against an older header has a shorter struct.
    std::memcpy(static_cast<void*>(stats), &c, std::min(size, sizeof c));
  });
}

}  // extern "C"
