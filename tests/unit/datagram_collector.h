// The test-side DatagramHandler of every datagram transport's tests: keeps a
// copy of each datagram delivered to it, in order, and counts the batches
// they came in.
#pragma once

#include <cstddef>
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

}  // namespace mccl::transport::test
