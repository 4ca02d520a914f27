#include "common/kept_buffers.h"

#include <algorithm>

namespace mccl::common {

KeptBuffers::Buffer KeptBuffers::take(std::size_t n) {
  auto fits =
      std::find_if(kept_.begin(), kept_.end(), [n](const Buffer& k) { return k.capacity >= n; });
  if (fits == kept_.end()) return {};
  Buffer b = std::move(*fits);
  kept_.erase(fits);
  return b;
}

void KeptBuffers::give_back(Buffer b) {
  if (b.bytes == nullptr || b.capacity == 0 || b.capacity > most_bytes_) return;
  auto at = std::upper_bound(kept_.begin(), kept_.end(), b.capacity,
                             [](std::size_t cap, const Buffer& k) { return cap < k.capacity; });
  kept_.insert(at, std::move(b));
  while (kept_.size() > most_buffers_ || bytes() > most_bytes_) kept_.erase(kept_.begin());
}

std::size_t KeptBuffers::bytes() const {
  std::size_t total = 0;
  for (const Buffer& k : kept_) total += k.capacity;
  return total;
}

}  // namespace mccl::common
