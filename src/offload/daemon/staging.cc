#include "offload/daemon/staging.h"

namespace mccl::offload::daemon {

StagingBuffer StagingPool::take(std::size_t n) {
  StagingBuffer b;
  if (n == 0) return b;
  common::KeptBuffers::Buffer k = kept_.take(n);
  if (k.bytes == nullptr) {
    b.allocate(n);
    return b;
  }
  b.bytes_ = std::move(k.bytes);
  b.capacity_ = k.capacity;
  b.size_ = n;
  return b;
}

void StagingPool::give_back(StagingBuffer&& b, common::TimePoint now) {
  last_given_ = now;
  kept_.give_back({std::move(b.bytes_), b.capacity_});
  b.size_ = b.capacity_ = 0;
}

void StagingPool::release_if_idle(common::TimePoint now) {
  if (kept_.count() > 0 && now - last_given_ >= kIdleRelease) kept_.clear();
}

}  // namespace mccl::offload::daemon
