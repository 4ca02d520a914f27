// Datagrams that arrive for a collective this rank has not started yet.
// Receive resources are always posted, so a fast root may inject before a
// slow receiver calls the collective: rather than a barrier, the receiver
// keeps those datagrams here (bounded in bytes) and replays them when the
// collective starts. What does not fit is dropped and repaired later.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace mccl::protocol {

class EarlyStore {
 public:
  explicit EarlyStore(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // Keeps a copy; false when the store is full (the datagram is dropped).
  bool keep(std::uint32_t seq, std::span<const std::byte> datagram);
  // Removes and returns everything kept for `seq`, in arrival order.
  std::vector<std::vector<std::byte>> take(std::uint32_t seq);
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::map<std::uint32_t, std::vector<std::vector<std::byte>>> by_seq_;
};

}  // namespace mccl::protocol
