#include "coll/validate.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mccl::coll {

using common::Status;

namespace {
std::string at(int rank) { return "rank " + std::to_string(rank) + ": "; }

bool overlaps(std::uintptr_t a, std::size_t alen, std::uintptr_t b, std::size_t blen) {
  return alen > 0 && blen > 0 && a < b + blen && b < a + alen;
}
}  // namespace

Status validate_broadcast(int rank, int size, const void* buffer, std::size_t bytes, int root) {
  if (root < 0 || root >= size) {
    return common::invalid_argument(at(rank) + "broadcast: root " + std::to_string(root) +
                                    " is out of range [0, " + std::to_string(size) + ")");
  }
  if (buffer == nullptr && bytes > 0) {
    return common::invalid_argument(at(rank) + "broadcast: buffer is null but bytes is " +
                                    std::to_string(bytes));
  }
  return Status::ok();
}

Status validate_allgatherv(int rank, int size, const void* send, bool in_place, const void* recv,
                           std::span<const std::size_t> counts,
                           std::span<const std::size_t> displacements) {
  const std::string op = "allgather: ";
  if (counts.size() != static_cast<std::size_t>(size) ||
      displacements.size() != static_cast<std::size_t>(size)) {
    return common::invalid_argument(
        at(rank) + op + "counts and displacements need " + std::to_string(size) + " entries, got " +
        std::to_string(counts.size()) + " and " + std::to_string(displacements.size()));
  }
  std::size_t total = 0;
  for (auto c : counts) total += c;
  if (recv == nullptr && total > 0) {
    return common::invalid_argument(at(rank) + op + "receive buffer is null but " +
                                    std::to_string(total) + " bytes are to be received");
  }
  const std::size_t mine = counts[rank];
  if (!in_place && send == nullptr && mine > 0) {
    return common::invalid_argument(at(rank) + op + "send buffer is null but this rank sends " +
                                    std::to_string(mine) + " bytes");
  }
  // Blocks of different ranks must not overlap in the receive buffer, or
  // one root's data would silently overwrite another's.
  std::vector<std::pair<std::size_t, std::size_t>> blocks;
  for (int r = 0; r < size; ++r) {
    if (counts[r] > 0) blocks.emplace_back(displacements[r], counts[r]);
  }
  std::sort(blocks.begin(), blocks.end());
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    if (blocks[i - 1].first + blocks[i - 1].second > blocks[i].first) {
      return common::invalid_argument(at(rank) + op + "receive blocks overlap at displacement " +
                                      std::to_string(blocks[i].first));
    }
  }
  if (!in_place && mine > 0 && total > 0) {
    auto s = reinterpret_cast<std::uintptr_t>(send);
    auto r = reinterpret_cast<std::uintptr_t>(recv);
    bool same_as_own_block = s == r + displacements[rank];
    std::size_t extent = blocks.empty() ? 0 : blocks.back().first + blocks.back().second;
    if (!same_as_own_block && overlaps(s, mine, r, extent)) {
      return common::invalid_argument(
          at(rank) + op +
          "send and receive buffers overlap; pass mccl::kInPlace as the send "
          "buffer for an in-place allgather");
    }
  }
  return Status::ok();
}

}  // namespace mccl::coll
