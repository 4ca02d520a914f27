#include "protocol/early_store.h"

namespace mccl::protocol {

bool EarlyStore::keep(std::uint32_t seq, std::span<const std::byte> datagram) {
  if (bytes_ + datagram.size() > max_bytes_) return false;
  by_seq_[seq].emplace_back(datagram.begin(), datagram.end());
  bytes_ += datagram.size();
  return true;
}

std::vector<std::vector<std::byte>> EarlyStore::take(std::uint32_t seq) {
  auto it = by_seq_.find(seq);
  if (it == by_seq_.end()) return {};
  auto out = std::move(it->second);
  by_seq_.erase(it);
  for (const auto& d : out) bytes_ -= d.size();
  return out;
}

}  // namespace mccl::protocol
