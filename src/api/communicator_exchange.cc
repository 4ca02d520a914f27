// The Communicator's exchanges that do not multicast: alltoall(v) and
// point-to-point send and receive (communicator.h).
#include <cstdint>
#include <string>
#include <vector>

#include "api/backend.h"
#include "api/boundary.h"
#include "api/comm_checks.h"
#include "coll/validate.h"
#include "mccl/communicator.h"
#include "progress/engine.h"

namespace mccl {

using detail::check_usable;

Request Communicator::ialltoallv(const void* send, std::span<const std::size_t> send_counts,
                                 std::span<const std::size_t> send_displs, void* recv,
                                 std::span<const std::size_t> recv_counts,
                                 std::span<const std::size_t> recv_displs) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "alltoallv", [&] {
    common::Status why = coll::validate_alltoallv(state_->rank, state_->size, send, send_counts,
                                                  send_displs, recv, recv_counts, recv_displs);
    if (!why.is_ok()) {
      // Collective: the peers hear why (Backend::refuse), as for the others.
      state_->backend->refuse(why);
      detail::throw_if_error(why);
    }
    return Request(state_, state_->backend->alltoallv(send, send_counts, send_displs, recv,
                                                      recv_counts, recv_displs));
  });
}

void Communicator::alltoallv(const void* send, std::span<const std::size_t> send_counts,
                             std::span<const std::size_t> send_displs, void* recv,
                             std::span<const std::size_t> recv_counts,
                             std::span<const std::size_t> recv_displs) {
  const progress::CallerWaits caller_waits;
  ialltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs).wait();
}

Request Communicator::ialltoall(const void* send, void* recv, std::size_t bytes_per_rank) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "alltoall", [&] {
    const auto n = static_cast<std::size_t>(state_->size);
    if (bytes_per_rank > 0 && n > SIZE_MAX / bytes_per_rank) {
      common::Status why =
          common::invalid_argument("rank " + std::to_string(state_->rank) +
                                   ": alltoall: bytes_per_rank " + std::to_string(bytes_per_rank) +
                                   " times " + std::to_string(n) + " ranks overflows a size_t");
      state_->backend->refuse(why);
      detail::throw_if_error(why);
    }
    std::vector<std::size_t> counts(n, bytes_per_rank), displs(n);
    for (std::size_t r = 0; r < n; ++r) displs[r] = r * bytes_per_rank;
    return ialltoallv(send, counts, displs, recv, counts, displs);
  });
}

void Communicator::alltoall(const void* send, void* recv, std::size_t bytes_per_rank) {
  const progress::CallerWaits caller_waits;
  ialltoall(send, recv, bytes_per_rank).wait();
}

// Point-to-point calls are not collective: a refused one takes no sequence
// number and tells nobody (Backend::refuse is for collectives).
Request Communicator::isend(const void* buffer, std::size_t bytes, int peer, int tag) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "send", [&] {
    detail::throw_if_error(coll::validate_point_to_point(state_->rank, state_->size, "send", buffer,
                                                         bytes, peer, tag, false));
    return Request(state_, state_->backend->send(buffer, bytes, peer, tag));
  });
}

void Communicator::send(const void* buffer, std::size_t bytes, int peer, int tag) {
  const progress::CallerWaits caller_waits;
  isend(buffer, bytes, peer, tag).wait();
}

Request Communicator::irecv(void* buffer, std::size_t bytes, int source, int tag) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "recv", [&] {
    detail::throw_if_error(coll::validate_point_to_point(state_->rank, state_->size, "recv", buffer,
                                                         bytes, source, tag, true));
    return Request(state_, state_->backend->recv(buffer, bytes, source, tag));
  });
}

int Communicator::recv(void* buffer, std::size_t bytes, int source, int tag) {
  const progress::CallerWaits caller_waits;
  Request r = irecv(buffer, bytes, source, tag);
  r.wait();
  return r.source();
}

}  // namespace mccl
