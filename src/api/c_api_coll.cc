// The C API's collectives and requests (mccl/mccl.h) over the C++
// communicator; conventions as in c_api.cc.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "api/c_support.h"
#include "mccl/communicator.h"
#include "mccl/error.h"
#include "mccl/mccl.h"
#include "mccl/types.h"

namespace {

using namespace mccl::capi;
using mccl::Error;
using mccl::ErrorCode;

const void* to_send(const void* send) { return send == MCCL_IN_PLACE ? mccl::kInPlace : send; }

// mccl_recv's source passes through unchanged.
static_assert(MCCL_ANY_SOURCE == mccl::kAnySource);

// Any value converts (both C++ enums are int-based): the communicator
// rejects those outside the enum with a message naming them.
mccl::DataType to_cpp(const mccl_datatype_t& t) {
  return static_cast<mccl::DataType>(raw_value(t));
}
mccl::ReduceOp to_cpp(const mccl_reduce_op_t& op) {
  return static_cast<mccl::ReduceOp>(raw_value(op));
}

// Wraps a started C++ request in a new handle owned by the caller; checks
// `out` before anything starts.
template <typename Start>
void start_request(mccl_comm_s* comm, mccl_request_t* out, Start&& start) {
  require(out, "request");
  auto r = std::make_unique<mccl_request_s>();
  r->owner = comm;
  start(*r);
  register_handle(r.get(), HandleKind::kRequest);
  comm->live_requests.fetch_add(1, std::memory_order_relaxed);
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

// What allgather and alltoall check alike, blocking or not.
void require_exchange(mccl_comm_t comm, const void* send, const void* recv,
                      std::size_t bytes_per_rank) {
  require_comm(comm);
  require_buffer(send, bytes_per_rank, "send");
  require_buffer(recv, bytes_per_rank, "recv");
}

}  // namespace

extern "C" {

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
    require_buffer(buffer, bytes, "buffer");
    start_request(comm, request, [&](mccl_request_s& r) {
      r.request = comm->comm.ibroadcast(buffer, bytes, root);
    });
  });
}

mccl_result_t mccl_allgather(mccl_comm_t comm, const void* send, void* recv,
                             size_t bytes_per_rank) {
  return guard(__func__, [&] {
    require_exchange(comm, send, recv, bytes_per_rank);
    comm->comm.allgather(to_send(send), recv, bytes_per_rank);
  });
}

mccl_result_t mccl_iallgather(mccl_comm_t comm, const void* send, void* recv, size_t bytes_per_rank,
                              mccl_request_t* request) {
  return guard(__func__, [&] {
    require_exchange(comm, send, recv, bytes_per_rank);
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
    start_request(comm, request, [&](mccl_request_s& r) { r.request = comm->comm.ibarrier(); });
  });
}

mccl_result_t mccl_broadcast_typed(mccl_comm_t comm, void* buffer, size_t count,
                                   mccl_datatype_t datatype, int root) {
  return guard(__func__, [&] {
    require_comm(comm);
    comm->comm.broadcast(buffer, count, to_cpp(datatype), root);
  });
}

mccl_result_t mccl_allgather_typed(mccl_comm_t comm, const void* send, void* recv,
                                   size_t count_per_rank, mccl_datatype_t datatype) {
  return guard(__func__, [&] {
    require_comm(comm);
    comm->comm.allgather(to_send(send), recv, count_per_rank, to_cpp(datatype));
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
    start_request(comm, request, [&](mccl_request_s& r) {
      r.request = comm->comm.iallreduce(to_send(send), recv, count, to_cpp(datatype), to_cpp(op));
    });
  });
}

mccl_result_t mccl_alltoall(mccl_comm_t comm, const void* send, void* recv, size_t bytes_per_rank) {
  return guard(__func__, [&] {
    require_exchange(comm, send, recv, bytes_per_rank);
    comm->comm.alltoall(send, recv, bytes_per_rank);
  });
}

mccl_result_t mccl_ialltoall(mccl_comm_t comm, const void* send, void* recv, size_t bytes_per_rank,
                             mccl_request_t* request) {
  return guard(__func__, [&] {
    require_exchange(comm, send, recv, bytes_per_rank);
    start_request(comm, request, [&](mccl_request_s& r) {
      r.request = comm->comm.ialltoall(send, recv, bytes_per_rank);
    });
  });
}

mccl_result_t mccl_send(mccl_comm_t comm, const void* buffer, size_t bytes, int peer, int tag) {
  return guard(__func__, [&] {
    require_comm(comm);
    require_buffer(buffer, bytes, "buffer");
    comm->comm.send(buffer, bytes, peer, tag);
  });
}

mccl_result_t mccl_isend(mccl_comm_t comm, const void* buffer, size_t bytes, int peer, int tag,
                         mccl_request_t* request) {
  return guard(__func__, [&] {
    require_comm(comm);
    require_buffer(buffer, bytes, "buffer");
    start_request(comm, request, [&](mccl_request_s& r) {
      r.request = comm->comm.isend(buffer, bytes, peer, tag);
    });
  });
}

mccl_result_t mccl_recv(mccl_comm_t comm, void* buffer, size_t bytes, int source, int tag,
                        int* source_out) {
  return guard(__func__, [&] {
    require_comm(comm);
    require_buffer(buffer, bytes, "buffer");
    const int from = comm->comm.recv(buffer, bytes, source, tag);
    if (source_out != nullptr) *source_out = from;
  });
}

mccl_result_t mccl_irecv(mccl_comm_t comm, void* buffer, size_t bytes, int source, int tag,
                         mccl_request_t* request) {
  return guard(__func__, [&] {
    require_comm(comm);
    require_buffer(buffer, bytes, "buffer");
    start_request(comm, request, [&](mccl_request_s& r) {
      r.request = comm->comm.irecv(buffer, bytes, source, tag);
    });
  });
}

mccl_result_t mccl_request_source(mccl_request_t request, int* source) {
  return answer(__func__, source, "source", [&] {
    require_request(request);
    return request->done ? request->request.source() : -1;
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

}  // extern "C"
