// The test-side DatagramHandler of every datagram transport's tests: keeps a
// copy of each datagram delivered to it, in order, and counts the batches
// they came in; datagrams that carry their number; and a sender that
// retries while the transport is busy.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

#include "common/clock.h"
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

// Sends the whole batch, retrying (and yielding) while the transport is
// busy; fails the test after 5 s.
inline void send_all_datagrams(DatagramTransport& t, std::span<const OutDatagram> batch) {
  const auto deadline = common::Deadline::after(std::chrono::seconds(5));
  while (!batch.empty()) {
    std::size_t accepted = 0;
    common::Status s = t.send(batch, accepted);
    ASSERT_TRUE(s.is_ok()) << s.message();
    batch = batch.subspan(accepted);
    ASSERT_FALSE(deadline.expired()) << batch.size() << " datagrams still refused";
    if (accepted == 0) std::this_thread::yield();
  }
}

}  // namespace mccl::transport::test
