#include "offload/daemon/staged_blocks.h"

#include <string>
#include <utility>

#include "offload/daemon/client_io.h"

namespace mccl::offload::daemon {

StagedBlocks::StagedBlocks(pid_t pid, std::byte* local, std::uint64_t remote,
                           std::vector<std::size_t> counts, std::vector<std::size_t> displs,
                           int rank, bool in_client)
    : pid_(pid),
      local_(local),
      remote_(remote),
      counts_(std::move(counts)),
      displs_(std::move(displs)),
      written_(counts_.size(), 0),
      rank_(rank),
      in_client_(in_client) {}

common::Status StagedBlocks::fill(std::uint64_t begin, std::uint64_t end) {
  const auto me = static_cast<std::size_t>(rank_);
  if (!in_client_ || begin > end || end > counts_[me]) {
    return common::internal_error("offload daemon: a staged fill of bytes [" +
                                  std::to_string(begin) + ", " + std::to_string(end) +
                                  ") lies outside this rank's block");
  }
  const std::size_t at = displs_[me] + begin;
  return client_io(pid_, false, remote_ + at, local_ + at, end - begin);
}

common::Status StagedBlocks::arrived(int root, std::uint64_t bytes) {
  const auto r = static_cast<std::size_t>(root);
  if (root == rank_ || r >= counts_.size()) return common::Status::ok();
  if (bytes < counts_[r] && bytes - written_[r] < kStepBytes) return common::Status::ok();
  return write_back(r, bytes);
}

common::Status StagedBlocks::deliver_rest() {
  for (std::size_t r = 0; r < counts_.size(); ++r) {
    if (static_cast<int>(r) == rank_ && in_client_) continue;
    auto st = write_back(r, counts_[r]);
    if (!st) return st;
  }
  return common::Status::ok();
}

common::Status StagedBlocks::write_back(std::size_t r, std::uint64_t to) {
  if (to <= written_[r]) return common::Status::ok();
  const std::size_t at = displs_[r] + written_[r];
  auto st = client_io(pid_, true, remote_ + at, local_ + at, to - written_[r]);
  if (st) written_[r] = to;
  return st;
}

coll::StagingHooks StagedBlocks::hooks(const std::shared_ptr<StagedBlocks>& blocks) {
  coll::StagingHooks h;
  h.fill = [blocks](std::uint64_t begin, std::uint64_t end) { return blocks->fill(begin, end); };
  h.arrived = [blocks](int root, std::uint64_t bytes) { return blocks->arrived(root, bytes); };
  return h;
}

}  // namespace mccl::offload::daemon
