// What the in-memory fabric's tests share: datagrams from text, polling,
// and sending one or many numbered datagrams.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "datagram_collector.h"
#include "transport/sim/sim_transport.h"

namespace mccl::transport::sim::test {

using Bytes = std::vector<std::byte>;
using namespace std::chrono_literals;

inline Bytes bytes_of(const std::string& s) {
  Bytes b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

using transport::test::Collector;
using transport::test::number_of_datagram;
using transport::test::numbered_datagram;

inline std::size_t drain(DatagramTransport& t, Collector& c, std::size_t max = 1u << 20) {
  std::size_t delivered = 0;
  EXPECT_TRUE(t.poll(c, max, delivered).is_ok());
  return delivered;
}

// Polls until `want` datagrams arrived or a second passed.
inline void drain_until(DatagramTransport& t, Collector& c, std::size_t want) {
  auto deadline = common::Deadline::after(3s);  // only a failing test waits this long
  while (c.got.size() < want && !deadline.expired()) drain(t, c);
}

inline common::Status send_one(DatagramTransport& t, const Bytes& header,
                               const Bytes& payload = {}) {
  OutDatagram d{header, payload};
  std::size_t accepted = 0;
  return t.send(std::span<const OutDatagram>(&d, 1), accepted);
}

// Sends datagrams numbered [first, first + count) in batches of 64.
inline void send_numbered(DatagramTransport& t, std::uint32_t first, std::uint32_t count) {
  std::vector<Bytes> bufs;
  std::vector<OutDatagram> batch;
  for (std::uint32_t i = first; i < first + count; i += 64) {
    bufs.clear();
    batch.clear();
    for (std::uint32_t j = i; j < std::min(first + count, i + 64); ++j)
      bufs.push_back(numbered_datagram(j));
    for (const auto& b : bufs) batch.push_back(OutDatagram{b, {}});
    std::size_t accepted = 0;
    ASSERT_TRUE(t.send(batch, accepted).is_ok());
    ASSERT_EQ(accepted, batch.size());
  }
}

}  // namespace mccl::transport::sim::test
