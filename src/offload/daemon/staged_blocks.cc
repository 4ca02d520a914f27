#include "offload/daemon/staged_blocks.h"

#include <algorithm>
#include <string>
#include <utility>

#include "offload/daemon/client_io.h"

namespace mccl::offload::daemon {

StagedBlocks::StagedBlocks(pid_t pid, std::byte* local, std::uint64_t remote,
                           std::vector<std::size_t> counts, std::vector<std::size_t> displs,
                           int rank, bool in_client, std::uint64_t source)
    : pid_(pid),
      local_(local),
      remote_(remote),
      counts_(std::move(counts)),
      displs_(std::move(displs)),
      held_(counts_.size(), 0),
      written_(counts_.size(), 0),
      rank_(rank),
      in_client_(in_client),
      source_(source) {}

common::Status StagedBlocks::fill(std::uint64_t begin, std::uint64_t end) {
  const auto me = static_cast<std::size_t>(rank_);
  if (source_ == 0 || begin > end || end > counts_[me]) {
    return common::internal_error("offload daemon: a staged fill of bytes [" +
                                  std::to_string(begin) + ", " + std::to_string(end) +
                                  ") lies outside this rank's block");
  }
  return client_io(pid_, false, source_ + begin, local_ + displs_[me] + begin, end - begin);
}

void StagedBlocks::arrived(int root, std::uint64_t bytes) {
  const auto r = static_cast<std::size_t>(root);
  if (r < held_.size()) held_[r] = std::max<std::uint64_t>(held_[r], std::min(bytes, counts_[r]));
}

bool StagedBlocks::write_held() {
  if (!failed_.is_ok()) return false;
  std::uint64_t budget = kMostPerCall;
  bool wrote = false;
  for (std::size_t r = 0; r < counts_.size() && budget > 0; ++r) {
    if (static_cast<int>(r) == rank_) continue;  // the injection's, written at the end
    if (held_[r] <= written_[r]) continue;
    const std::uint64_t ready = held_[r] - written_[r];
    if (ready < kStepBytes && held_[r] < counts_[r]) continue;
    const std::uint64_t n = std::min(ready, budget);
    failed_ = write_back(r, written_[r] + n);
    if (!failed_.is_ok()) return wrote;
    budget -= n;
    wrote = true;
  }
  return wrote;
}

common::Status StagedBlocks::deliver_rest() {
  if (!failed_.is_ok()) return failed_;
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
  h.arrived = [blocks](int root, std::uint64_t bytes) {
    blocks->arrived(root, bytes);
    return common::Status::ok();
  };
  return h;
}

}  // namespace mccl::offload::daemon
