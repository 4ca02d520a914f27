// The test-side DatagramHandler of every datagram transport's tests: keeps a
// copy of each datagram delivered to it, in order, and counts the batches
// they came in; and datagrams that carry their number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "transport/datagram.h"

namespace mccl::transport::test {

struct Collector : DatagramHandler {
  std::vector<std::vector<std::byte>> got;
  std::size_t batches = 0;
  void on_datagrams(DatagramBatch batch) override {
    ++batches;
    for (const auto& d : batch) got.emplace_back(d.begin(), d.end());
  }
};

// A datagram whose first four bytes number it, padded to `size` bytes.
inline std::vector<std::byte> numbered_datagram(std::uint32_t index, std::size_t size = 64) {
  std::vector<std::byte> b(size < 4 ? 4 : size, std::byte{0x5a});
  std::memcpy(b.data(), &index, 4);
  return b;
}

inline std::uint32_t number_of_datagram(std::span<const std::byte> b) {
  std::uint32_t index = 0;
  std::memcpy(&index, b.data(), 4);
  return index;
}

}  // namespace mccl::transport::test
