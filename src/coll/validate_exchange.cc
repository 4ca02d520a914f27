// Argument checks of the exchanges that are not multicast: alltoallv, and
// point-to-point send and receive (validate.h).
#include <cstdint>
#include <limits>
#include <string>

#include "coll/validate.h"

namespace mccl::coll {

using common::Status;

namespace {

std::string at(int rank) { return "rank " + std::to_string(rank) + ": "; }

// The extent [lowest displacement, highest end) of one side, or an error.
Status side_extent(int rank, int size, const char* side, const void* buffer,
                   std::span<const std::size_t> counts, std::span<const std::size_t> displs,
                   std::uintptr_t& lo, std::uintptr_t& hi) {
  const std::string what = at(rank) + "alltoallv: " + side;
  if (counts.size() != static_cast<std::size_t>(size) ||
      displs.size() != static_cast<std::size_t>(size)) {
    return common::invalid_argument(
        what + " counts and displacements need " + std::to_string(size) + " entries each, not " +
        std::to_string(counts.size()) + " and " + std::to_string(displs.size()));
  }
  lo = std::numeric_limits<std::uintptr_t>::max();
  hi = 0;
  for (int r = 0; r < size; ++r) {
    if (counts[r] == 0) continue;
    if (buffer == nullptr) {
      return common::invalid_argument(what + " buffer is null but its block for rank " +
                                      std::to_string(r) + " has " + std::to_string(counts[r]) +
                                      " bytes");
    }
    const auto base = reinterpret_cast<std::uintptr_t>(buffer);
    if (displs[r] > std::numeric_limits<std::uintptr_t>::max() - base - counts[r]) {
      return common::invalid_argument(what + " displacement " + std::to_string(displs[r]) +
                                      " + count " + std::to_string(counts[r]) + " of rank " +
                                      std::to_string(r) + " overflows the address space");
    }
    lo = std::min(lo, base + displs[r]);
    hi = std::max(hi, base + displs[r] + counts[r]);
  }
  return Status::ok();
}

}  // namespace

Status validate_alltoallv(int rank, int size, const void* send,
                          std::span<const std::size_t> send_counts,
                          std::span<const std::size_t> send_displs, const void* recv,
                          std::span<const std::size_t> recv_counts,
                          std::span<const std::size_t> recv_displs) {
  std::uintptr_t slo = 0, shi = 0, rlo = 0, rhi = 0;
  Status s = side_extent(rank, size, "send", send, send_counts, send_displs, slo, shi);
  if (s.is_ok()) s = side_extent(rank, size, "receive", recv, recv_counts, recv_displs, rlo, rhi);
  if (!s.is_ok()) return s;
  if (send_counts[rank] != recv_counts[rank]) {
    return common::invalid_argument(at(rank) + "alltoallv: this rank sends itself " +
                                    std::to_string(send_counts[rank]) + " bytes but receives " +
                                    std::to_string(recv_counts[rank]) + " from itself");
  }
  if (slo < shi && rlo < rhi && slo < rhi && rlo < shi) {
    return common::invalid_argument(at(rank) +
                                    "alltoallv: the send and receive buffers overlap (no in-place "
                                    "alltoall: give a separate receive buffer)");
  }
  return Status::ok();
}

Status validate_point_to_point(int rank, int size, const char* what, const void* buffer,
                               std::size_t bytes, int peer, int tag, bool any_source_ok) {
  const std::string head = at(rank) + what + ": ";
  if ((peer < 0 || peer >= size) && !(any_source_ok && peer == -1)) {
    return common::invalid_argument(head + "peer " + std::to_string(peer) +
                                    " is out of range [0, " + std::to_string(size) + ")" +
                                    (any_source_ok ? " (or kAnySource, -1)" : ""));
  }
  if (tag < 0) {
    return common::invalid_argument(head + "tag " + std::to_string(tag) + " is negative");
  }
  if (buffer == nullptr && bytes > 0) {
    return common::invalid_argument(head + "buffer is null but " + std::to_string(bytes) +
                                    " bytes were given");
  }
  return Status::ok();
}

}  // namespace mccl::coll
