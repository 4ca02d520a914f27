// The in-memory fabric's fault model, each fault with its seed so that a
// failure reproduces, and its latency and bandwidth models.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "sim_test_util.h"
#include "transport/sim/sim_transport.h"

namespace mccl::transport::sim {
namespace {

using namespace test;

// Which of 20000 numbered datagrams reached the receiver.
std::set<std::uint32_t> received_with_loss(std::uint64_t seed, FabricCounters* counters) {
  Fabric fabric(FabricConfig{.loss = 0.1, .receive_depth = 1u << 16, .seed = seed});
  auto tx = fabric.join_datagram(3, 0);
  auto rx = fabric.join_datagram(3, 1);
  send_numbered(*tx, 0, 20000);
  Collector c;
  drain(*rx, c);
  std::set<std::uint32_t> got;
  for (const auto& d : c.got) got.insert(number_of_datagram(d));
  if (counters) *counters = fabric.counters();
  return got;
}

TEST(SimFabric, LossRateMatchesConfigAndIsReproducible) {
  FabricCounters n;
  auto first = received_with_loss(42, &n);
  std::size_t lost = 20000 - first.size();
  // 10% of 20000 has a standard deviation of about 42; allow five of them.
  EXPECT_NEAR(static_cast<double>(lost), 2000.0, 220.0);
  EXPECT_EQ(n.lost, lost);
  EXPECT_EQ(n.delivered, first.size());
  EXPECT_EQ(received_with_loss(42, nullptr), first);  // same seed, same losses
  EXPECT_NE(received_with_loss(43, nullptr), first);
}

TEST(SimFabric, DuplicatesDeliverTwice) {
  Fabric fabric(FabricConfig{.duplicate = 0.2, .seed = 5});
  auto tx = fabric.join_datagram(3, 0);
  auto rx = fabric.join_datagram(3, 1);
  send_numbered(*tx, 0, 1000);
  Collector c;
  drain(*rx, c);
  std::map<std::uint32_t, int> times;
  for (const auto& d : c.got) ++times[number_of_datagram(d)];
  EXPECT_EQ(times.size(), 1000u);
  std::size_t twice = 0;
  for (auto [index, count] : times) {
    EXPECT_LE(count, 2) << index;
    twice += count == 2;
  }
  EXPECT_EQ(fabric.counters().duplicated, twice);
  EXPECT_GT(twice, 120u);
  EXPECT_LT(twice, 280u);
}

TEST(SimFabric, CorruptionFlipsExactlyOneByteInAPrivateCopy) {
  Fabric fabric(FabricConfig{.corrupt = 0.5, .seed = 9});
  auto tx = fabric.join_datagram(3, 0);
  auto rx1 = fabric.join_datagram(3, 1);
  auto rx2 = fabric.join_datagram(3, 2);
  send_numbered(*tx, 0, 500);
  std::size_t damaged = 0;
  for (auto* rx : {rx1.get(), rx2.get()}) {
    Collector c;
    drain(*rx, c);
    ASSERT_EQ(c.got.size(), 500u);
    for (std::uint32_t i = 0; i < 500; ++i) {
      // The number itself may be hit, so compare against the i-th original.
      Bytes want = numbered_datagram(i);
      std::size_t diff = 0;
      for (std::size_t k = 0; k < want.size(); ++k) diff += c.got[i][k] != want[k];
      EXPECT_LE(diff, 1u) << "datagram " << i;
      damaged += diff;
    }
  }
  // Damage to one receiver's copy never leaks into the other's.
  EXPECT_EQ(fabric.counters().corrupted, damaged);
  EXPECT_GT(damaged, 400u);
  EXPECT_LT(damaged, 600u);
}

TEST(SimFabric, ReorderReordersButDeliversEverything) {
  Fabric fabric(FabricConfig{.reorder = 0.3, .seed = 11});
  auto tx = fabric.join_datagram(3, 0);
  auto rx = fabric.join_datagram(3, 1);
  send_numbered(*tx, 0, 200);
  Collector c;
  drain_until(*rx, c, 200);
  std::vector<std::uint32_t> order;
  for (const auto& d : c.got) order.push_back(number_of_datagram(d));
  ASSERT_EQ(order.size(), 200u);
  EXPECT_FALSE(std::is_sorted(order.begin(), order.end()));
  std::sort(order.begin(), order.end());
  for (std::uint32_t i = 0; i < 200; ++i) EXPECT_EQ(order[i], i);
  EXPECT_GT(fabric.counters().reordered, 0u);
}

TEST(SimFabric, FullReceiveQueueCountsOverrun) {
  Fabric fabric(FabricConfig{.receive_depth = 8});
  auto tx = fabric.join_datagram(3, 0);
  auto rx = fabric.join_datagram(3, 1);
  send_numbered(*tx, 0, 20);
  Collector c;
  EXPECT_EQ(drain(*rx, c), 8u);
  for (std::uint32_t i = 0; i < 8; ++i) EXPECT_EQ(number_of_datagram(c.got[i]), i);
  EXPECT_EQ(fabric.counters().overrun, 12u);
}

TEST(SimFabric, PollHonoursMax) {
  Fabric fabric(FabricConfig{});
  auto tx = fabric.join_datagram(3, 0);
  auto rx = fabric.join_datagram(3, 1);
  send_numbered(*tx, 0, 100);
  Collector c;
  EXPECT_EQ(drain(*rx, c, 0), 0u);
  EXPECT_EQ(drain(*rx, c, 37), 37u);
  EXPECT_EQ(drain(*rx, c), 63u);
  for (std::uint32_t i = 0; i < 100; ++i) EXPECT_EQ(number_of_datagram(c.got[i]), i);
}

TEST(SimFabric, DatagramIsInvisibleUntilTheLatencyHasPassed) {
  constexpr auto kLatency = 20ms;
  Fabric fabric(FabricConfig{.latency = kLatency});
  auto tx = fabric.join_datagram(3, 0);
  auto rx = fabric.join_datagram(3, 1);
  auto sent_at = common::now();
  ASSERT_TRUE(send_one(*tx, numbered_datagram(1)).is_ok());
  Collector c;
  std::size_t empty_polls = 0;
  while (c.got.empty() && common::now() - sent_at < 1s) {
    std::size_t n = drain(*rx, c);
    // The poll read the clock somewhere before this point, so a poll that
    // ends before the latency has passed certainly looked too early.
    auto after = common::now();
    if (n > 0) {
      EXPECT_GE(common::to_us(after - sent_at), common::to_us(kLatency));
    } else {
      ++empty_polls;
    }
  }
  ASSERT_EQ(c.got.size(), 1u);
  EXPECT_GT(empty_polls, 0u);
}

TEST(SimFabric, BandwidthModelMakesSendBusy) {
  // 10 Mbit/s: a 1500-byte datagram occupies the link for 1.2 ms, so the
  // bounds below hold however slowly (sanitizers, loaded CI) the test runs.
  constexpr double kWireUs = 1200.0;
  Fabric fabric(FabricConfig{.link_gbit_per_s = 0.01});
  auto tx = fabric.join_datagram(3, 0);
  auto rx = fabric.join_datagram(3, 1);
  std::size_t depth = tx->caps().max_in_flight;
  Bytes full(1500);
  std::vector<OutDatagram> batch(2 * depth, OutDatagram{full, {}});
  auto started = common::now();
  auto wire_slots_since_start = [&] {
    return static_cast<double>(common::to_us(common::now() - started)) / kWireUs;
  };
  // One send books the link from one instant: it takes a backlog's worth.
  std::size_t accepted = 0;
  ASSERT_TRUE(tx->send(batch, accepted).is_ok());
  EXPECT_GE(accepted, depth);
  EXPECT_LE(accepted, depth + 2);
  // A second send gets only what the link has drained meanwhile.
  std::size_t more = 0;
  ASSERT_TRUE(tx->send(batch, more).is_ok());
  EXPECT_LE(static_cast<double>(more), wire_slots_since_start() + 1);

  // Datagrams reach the receiver one wire time apart, not all at once.
  Collector c;
  drain_until(*rx, c, 3);
  ASSERT_GE(c.got.size(), 3u);
  for (int i = 0; i < 10; ++i) {
    drain(*rx, c);
    EXPECT_LE(static_cast<double>(c.got.size()), wire_slots_since_start());
  }
  EXPECT_EQ(fabric.counters().sent, accepted + more);
}

}  // namespace
}  // namespace mccl::transport::sim
