// Receiving side helpers shared by the UDP transport's unit tests.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <vector>

#include "common/clock.h"
#include "transport/datagram.h"

namespace mccl::transport::udp::test {

// Keeps a copy of every datagram delivered to it, in order.
struct Collector : DatagramHandler {
  std::vector<std::vector<std::byte>> got;
  void on_datagram(std::span<const std::byte> d) override { got.emplace_back(d.begin(), d.end()); }
};

// Polls until `want` datagrams arrived or `limit` passed, sleeping on
// wait_fd() between empty polls.
inline void drain_until(DatagramTransport& t, Collector& c, std::size_t want,
                        common::Duration limit = std::chrono::seconds(3)) {
  auto deadline = common::Deadline::after(limit);
  while (c.got.size() < want && !deadline.expired()) {
    std::size_t delivered = 0;
    common::Status s = t.poll(c, 64, delivered);
    ASSERT_TRUE(s.is_ok()) << s.message();
    if (delivered == 0) {
      pollfd p{t.wait_fd(), POLLIN, 0};
      ::poll(&p, 1, 5);
    }
  }
}

}  // namespace mccl::transport::udp::test
