// The typed data-movement calls (broadcast, allgather(v) with a datatype),
// which may compress (docs/compression.md), and the backends' exact
// defaults for them.
#include <limits>
#include <string>
#include <vector>

#include "api/backend.h"
#include "api/boundary.h"
#include "api/comm_checks.h"
#include "mccl/communicator.h"
#include "progress/engine.h"

namespace mccl {

namespace detail {

namespace {

codec::Settings settings_of_compression(const Compression& c) {
  static_assert(static_cast<int>(CompressMode::kZfp) == static_cast<int>(codec::Mode::kZfp));
  return {static_cast<codec::Mode>(c.mode), c.bound, c.zfp_rate, c.max_link_mbit};
}

std::vector<std::size_t> to_bytes(std::span<const std::size_t> v, std::size_t es) {
  std::vector<std::size_t> out(v.begin(), v.end());
  for (auto& x : out) x *= es;
  return out;
}

}  // namespace

std::shared_ptr<InFlight> Backend::broadcast_typed(void* buffer, std::size_t count, DataType type,
                                                   int root, const codec::Settings&) {
  return broadcast(buffer, count * size_of(type), root);
}

std::shared_ptr<InFlight> Backend::allgatherv_typed(const void* send, bool in_place, void* recv,
                                                    std::span<const std::size_t> counts,
                                                    std::span<const std::size_t> displacements,
                                                    DataType type, const codec::Settings&) {
  const std::size_t es = size_of(type);
  return allgatherv(send, in_place, recv, to_bytes(counts, es), to_bytes(displacements, es));
}

codec::Settings compression_for(CommState& st, DataType type, const CollOptions& o) {
  const codec::Settings s = settings_of_compression(o.compression.value_or(st.options.compression));
  if (!codec::compressible(type) || s.mode == codec::Mode::kOff) return {};
  const std::string what =
      "rank " + std::to_string(st.rank) +
      (o.compression ? ": CollOptions::compression" : ": the communicator's compression");
  refuse_if_invalid(st, codec::validate(s, what));
  return s;
}

}  // namespace detail

namespace {

using detail::check_usable;
using detail::compression_for;
using detail::refuse_if_invalid;

// The type is known and every count's bytes fit a size_t (checked before
// anything multiplies them).
common::Status check_type_and_counts(int rank, DataType type, std::span<const std::size_t> counts,
                                     std::span<const std::size_t> displacements) {
  if (static_cast<unsigned>(type) > static_cast<unsigned>(DataType::kUInt8)) {
    return common::invalid_argument("rank " + std::to_string(rank) + ": unknown datatype value " +
                                    std::to_string(static_cast<int>(type)));
  }
  const std::size_t limit = std::numeric_limits<std::size_t>::max() / 2 / size_of(type);
  for (auto spans : {counts, displacements}) {
    for (std::size_t c : spans) {
      if (c > limit) {
        return common::invalid_argument("rank " + std::to_string(rank) + ": count " +
                                        std::to_string(c) + " of " + to_string(type) +
                                        " overflows the byte size");
      }
    }
  }
  return common::Status::ok();
}

// Bytes the largest stream of `count` elements takes on the wire.
std::size_t wire_bytes(const codec::Settings& s, DataType type, std::size_t count) {
  if (s.mode == codec::Mode::kOff) return count * size_of(type);
  return codec::max_encoded_bytes(s, type, count);
}

}  // namespace

Request Communicator::ibroadcast(void* buffer, std::size_t count, DataType type, int root,
                                 const CollOptions& options) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "broadcast", [&] {
    const std::size_t one[] = {count};
    refuse_if_invalid(*state_, check_type_and_counts(state_->rank, type, one, {}));
    const codec::Settings s = compression_for(*state_, type, options);
    refuse_if_invalid(
        *state_, coll::validate_broadcast(state_->rank, state_->size, buffer, count * size_of(type),
                                          root, state_->backend->max_bytes()));
    refuse_if_invalid(*state_, coll::validate_allgather_size(state_->rank, state_->size,
                                                             wire_bytes(s, type, count),
                                                             state_->backend->max_bytes()));
    return Request(state_, state_->backend->broadcast_typed(buffer, count, type, root, s));
  });
}

void Communicator::broadcast(void* buffer, std::size_t count, DataType type, int root,
                             const CollOptions& options) {
  const progress::CallerWaits caller_waits;
  ibroadcast(buffer, count, type, root, options).wait();
}

Request Communicator::iallgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                                  std::span<const std::size_t> displacements, DataType type,
                                  const CollOptions& options) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "allgatherv", [&] {
    refuse_if_invalid(*state_, check_type_and_counts(state_->rank, type, counts, displacements));
    const codec::Settings s = compression_for(*state_, type, options);
    const std::size_t es = size_of(type);
    const bool in_place = send == kInPlace;
    std::vector<std::size_t> bytes(counts.begin(), counts.end()),
        displs(displacements.begin(), displacements.end());
    for (auto& b : bytes) b *= es;
    for (auto& d : displs) d *= es;
    refuse_if_invalid(
        *state_, coll::validate_allgatherv(state_->rank, state_->size, send, in_place, recv, bytes,
                                           displs, state_->backend->max_bytes()));
    for (std::size_t c : counts) {
      refuse_if_invalid(
          *state_, coll::validate_allgather_size(state_->rank, state_->size, wire_bytes(s, type, c),
                                                 state_->backend->max_bytes()));
    }
    return Request(state_, state_->backend->allgatherv_typed(send, in_place, recv, counts,
                                                             displacements, type, s));
  });
}

void Communicator::allgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                              std::span<const std::size_t> displacements, DataType type,
                              const CollOptions& options) {
  const progress::CallerWaits caller_waits;
  iallgatherv(send, recv, counts, displacements, type, options).wait();
}

Request Communicator::iallgather(const void* send, void* recv, std::size_t count_per_rank,
                                 DataType type, const CollOptions& options) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "allgather", [&] {
    const std::size_t one[] = {count_per_rank * static_cast<std::size_t>(state_->size)};
    refuse_if_invalid(*state_, check_type_and_counts(state_->rank, type, one, {}));
    std::vector<std::size_t> counts(state_->size, count_per_rank), displs(state_->size);
    for (int r = 0; r < state_->size; ++r) displs[r] = static_cast<std::size_t>(r) * count_per_rank;
    return iallgatherv(send, recv, counts, displs, type, options);
  });
}

void Communicator::allgather(const void* send, void* recv, std::size_t count_per_rank,
                             DataType type, const CollOptions& options) {
  const progress::CallerWaits caller_waits;
  iallgather(send, recv, count_per_rank, type, options).wait();
}

}  // namespace mccl
