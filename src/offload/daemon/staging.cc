#include "offload/daemon/staging.h"

#include <algorithm>

namespace mccl::offload::daemon {

StagingBuffer StagingPool::take(std::size_t n) {
  StagingBuffer b;
  if (n == 0) return b;
  auto fits = std::find_if(kept_.begin(), kept_.end(),
                           [n](const StagingBuffer& k) { return k.capacity_ >= n; });
  if (fits == kept_.end()) {
    b.allocate(n);
    return b;
  }
  b = std::move(*fits);
  kept_.erase(fits);
  b.size_ = n;
  return b;
}

void StagingPool::give_back(StagingBuffer&& b, common::TimePoint now) {
  last_given_ = now;
  if (b.capacity_ == 0 || b.capacity_ > kMostBytes) return;  // freed with `b`
  b.size_ = 0;
  auto at =
      std::upper_bound(kept_.begin(), kept_.end(), b.capacity_,
                       [](std::size_t cap, const StagingBuffer& k) { return cap < k.capacity_; });
  kept_.insert(at, std::move(b));
  while (kept_.size() > kMostBuffers || kept_bytes() > kMostBytes) kept_.erase(kept_.begin());
}

void StagingPool::release_if_idle(common::TimePoint now) {
  if (!kept_.empty() && now - last_given_ >= kIdleRelease) kept_.clear();
}

std::size_t StagingPool::kept_bytes() const {
  std::size_t total = 0;
  for (const StagingBuffer& k : kept_) total += k.capacity_;
  return total;
}

}  // namespace mccl::offload::daemon
