// The in-memory fabric: the datagram-transport conformance suite
// (datagram_conformance.h), delivery, the reliable mesh, rank death,
// injection, isolation and thread safety. Its fault, latency and bandwidth
// models are sim_faults_test.cc's.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "datagram_collector.h"
#include "datagram_conformance.h"
#include "sim_test_util.h"
#include "transport/sim/sim_transport.h"

namespace mccl::transport::sim {
namespace {

using namespace test;

// The datagram-transport conformance suite on a fault-free fabric.
struct SimTraits {
  static std::string skip_reason() { return {}; }
  std::unique_ptr<DatagramTransport> join(std::uint32_t group) {
    return fabric.join_datagram(group, next_rank[group]++);
  }
  Fabric fabric{FabricConfig{}};
  std::map<std::uint32_t, int> next_rank;
};

}  // namespace
}  // namespace mccl::transport::sim

namespace mccl::transport::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Sim, DatagramConformance, sim::SimTraits);
}  // namespace mccl::transport::test

namespace mccl::transport::sim {
namespace {

using namespace test;

TEST(SimFabric, DeliversToEveryOtherMemberButNotTheSender) {
  Fabric fabric(FabricConfig{});
  std::vector<std::unique_ptr<DatagramTransport>> eps;
  for (int r = 0; r < 4; ++r) eps.push_back(fabric.join_datagram(7, r));
  DatagramCaps caps = eps[0]->caps();
  EXPECT_EQ(caps.mtu, 1500u);
  EXPECT_EQ(caps.name, "sim");
  EXPECT_FALSE(caps.loopback);
  EXPECT_GT(caps.max_in_flight, 0u);

  ASSERT_TRUE(send_one(*eps[1], bytes_of("head:"), bytes_of("body")).is_ok());
  for (int r = 0; r < 4; ++r) {
    Collector c;
    drain(*eps[r], c);
    if (r == 1) {
      EXPECT_TRUE(c.got.empty());
    } else {
      ASSERT_EQ(c.got.size(), 1u) << "rank " << r;
      EXPECT_EQ(c.got[0], bytes_of("head:body"));
    }
  }
  FabricCounters n = fabric.counters();
  EXPECT_EQ(n.sent, 1u);
  EXPECT_EQ(n.delivered, 3u);
}

TEST(SimFabric, RejectsDatagramsOverTheMtu) {
  Fabric fabric(FabricConfig{.mtu = 100});
  auto a = fabric.join_datagram(1, 0);
  auto b = fabric.join_datagram(1, 1);
  Bytes exact(100), over(101), small(10);
  Bytes half(50);
  OutDatagram batch[] = {{exact, {}}, {half, half}, {over, {}}, {small, {}}};
  std::size_t accepted = 99;
  common::Status s = a->send(batch, accepted);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("101"), std::string::npos) << s.message();
  EXPECT_EQ(accepted, 2u);  // the datagrams before the bad one went
  Collector c;
  EXPECT_EQ(drain(*b, c), 2u);
}

struct MessageLog : ReliableHandler {
  std::vector<std::pair<int, Bytes>> messages;
  std::vector<std::pair<int, common::Status>> failures;
  void on_message(int peer, std::span<const std::byte> m) override {
    messages.emplace_back(peer, Bytes(m.begin(), m.end()));
  }
  void on_peer_failure(int peer, const common::Status& why) override {
    failures.emplace_back(peer, why);
  }
};

using test::drain;  // the datagram overload, beside this reliable one
std::size_t drain(ReliableTransport& t, MessageLog& in, std::size_t max = 1u << 20) {
  std::size_t delivered = 0;
  EXPECT_TRUE(t.poll(in, max, delivered).is_ok());
  return delivered;
}

TEST(SimFabric, ReliableKeepsEachSendersOrderAndConcatenatesParts) {
  Fabric fabric(FabricConfig{.loss = 1.0});  // loss applies to datagrams only
  auto r0 = fabric.join_reliable(5, 0, 3);
  auto r1 = fabric.join_reliable(5, 1, 3);
  auto r2 = fabric.join_reliable(5, 2, 3);
  EXPECT_EQ(r1->rank(), 1);
  EXPECT_EQ(r1->size(), 3);
  for (std::uint32_t i = 0; i < 100; ++i) {
    ASSERT_TRUE(r0->send(2, numbered_datagram(i, 8)).is_ok());
    ASSERT_TRUE(r1->send(2, numbered_datagram(1000 + i, 8)).is_ok());
  }
  Bytes a = bytes_of("ab"), b = bytes_of("cd"), empty;
  std::span<const std::byte> parts[] = {a, empty, b};
  ASSERT_TRUE(r0->send(2, std::span<const std::span<const std::byte>>(parts)).is_ok());

  MessageLog in;
  EXPECT_EQ(drain(*r2, in, 50), 50u);
  EXPECT_EQ(drain(*r2, in), 151u);
  std::uint32_t next[2] = {0, 1000};
  for (std::size_t i = 0; i + 1 < in.messages.size(); ++i) {
    auto& [peer, m] = in.messages[i];
    ASSERT_TRUE(peer == 0 || peer == 1);
    EXPECT_EQ(number_of_datagram(m), next[peer]++);
  }
  EXPECT_EQ(in.messages.back(), std::make_pair(0, bytes_of("abcd")));
  FabricCounters n = fabric.counters();
  EXPECT_EQ(n.reliable_messages, 201u);
  EXPECT_EQ(n.reliable_bytes, 200u * 8 + 4);
  MessageLog none;
  EXPECT_EQ(drain(*r0, none), 0u);
}

TEST(SimFabric, KilledRankFailsAndIsReportedOnce) {
  Fabric fabric(FabricConfig{});
  std::vector<std::unique_ptr<ReliableTransport>> rel;
  std::vector<std::unique_ptr<DatagramTransport>> dg;
  for (int r = 0; r < 3; ++r) {
    rel.push_back(fabric.join_reliable(8, r, 3));
    dg.push_back(fabric.join_datagram(8, r));
  }
  ASSERT_TRUE(rel[1]->send(0, bytes_of("last words")).is_ok());
  fabric.kill_rank(1);

  // The dead rank's own calls fail, naming it.
  common::Status s = rel[1]->send(0, bytes_of("x"));
  EXPECT_EQ(s.code(), ErrorCode::kPeerFailure);
  EXPECT_NE(s.message().find("rank 1 was killed"), std::string::npos) << s.message();
  MessageLog dead_in;
  std::size_t delivered = 0;
  EXPECT_EQ(rel[1]->poll(dead_in, 10, delivered).code(), ErrorCode::kPeerFailure);
  EXPECT_EQ(send_one(*dg[1], numbered_datagram(0)).code(), ErrorCode::kPeerFailure);
  Collector dead_c;
  EXPECT_EQ(dg[1]->poll(dead_c, 10, delivered).code(), ErrorCode::kPeerFailure);

  // Sends to it fail, naming it.
  s = rel[0]->send(1, bytes_of("x"));
  EXPECT_EQ(s.code(), ErrorCode::kPeerFailure);
  EXPECT_NE(s.message().find("peer rank 1 is dead"), std::string::npos) << s.message();

  // Every live member hears of it once, after what it sent before dying.
  for (int r : {0, 2}) {
    MessageLog in;
    for (int i = 0; i < 5; ++i) drain(*rel[r], in);
    ASSERT_EQ(in.failures.size(), 1u) << "rank " << r;
    EXPECT_EQ(in.failures[0].first, 1);
    EXPECT_EQ(in.failures[0].second.code(), ErrorCode::kPeerFailure);
    if (r == 0) {
      ASSERT_EQ(in.messages.size(), 1u);
      EXPECT_EQ(in.messages[0].second, bytes_of("last words"));
    }
  }
  // Datagrams between the living still flow.
  ASSERT_TRUE(send_one(*dg[0], numbered_datagram(3)).is_ok());
  Collector c;
  EXPECT_EQ(drain(*dg[2], c), 1u);
}

TEST(SimFabric, InjectReachesEveryMember) {
  Fabric fabric(FabricConfig{});
  auto a = fabric.join_datagram(4, 0);
  auto b = fabric.join_datagram(4, 1);
  auto other = fabric.join_datagram(5, 0);
  fabric.inject(4, bytes_of("stranger"));
  for (auto* t : {a.get(), b.get()}) {
    Collector c;
    drain(*t, c);
    ASSERT_EQ(c.got.size(), 1u);
    EXPECT_EQ(c.got[0], bytes_of("stranger"));
  }
  Collector c;
  EXPECT_EQ(drain(*other, c), 0u);
}

TEST(SimFabric, GroupsAreIsolated) {
  Fabric fabric(FabricConfig{});
  auto a0 = fabric.join_datagram(100, 0);
  auto a1 = fabric.join_datagram(100, 1);
  auto b0 = fabric.join_datagram(200, 0);
  auto b1 = fabric.join_datagram(200, 1);
  ASSERT_TRUE(send_one(*a0, bytes_of("for a")).is_ok());
  Collector c;
  EXPECT_EQ(drain(*b0, c), 0u);
  EXPECT_EQ(drain(*b1, c), 0u);
  EXPECT_EQ(drain(*a1, c), 1u);
  auto m0 = fabric.join_reliable(100, 0, 2);
  auto n1 = fabric.join_reliable(200, 1, 2);
  ASSERT_TRUE(m0->send(1, bytes_of("m")).is_ok());
  MessageLog in;
  EXPECT_EQ(drain(*n1, in), 0u);
}

TEST(SimFabric, ManyThreadsSendAndReceiveEverything) {
  constexpr int kRanks = 8;
  constexpr std::uint32_t kEach = 512;
  Fabric fabric(FabricConfig{.receive_depth = 1u << 16});
  std::vector<std::unique_ptr<DatagramTransport>> eps;
  std::vector<std::unique_ptr<ReliableTransport>> rel;
  for (int r = 0; r < kRanks; ++r) {
    eps.push_back(fabric.join_datagram(9, r));
    rel.push_back(fabric.join_reliable(9, r, kRanks));
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      auto first = static_cast<std::uint32_t>(r) * kEach;
      send_numbered(*eps[r], first, kEach);
      for (int peer = 0; peer < kRanks; ++peer) {
        for (std::uint32_t i = 0; i < 4; ++i) {
          if (peer != r && !rel[r]->send(peer, numbered_datagram(first + i, 8)).is_ok()) ++failures;
        }
      }
      Collector c;
      drain_until(*eps[r], c, (kRanks - 1) * kEach);
      std::set<std::uint32_t> got;
      for (const auto& d : c.got) got.insert(number_of_datagram(d));
      if (got.size() != (kRanks - 1) * kEach || c.got.size() != got.size()) ++failures;
      if (got.count(first)) ++failures;  // no loopback

      MessageLog in;
      auto deadline = common::Deadline::after(3s);
      while (in.messages.size() < 4 * (kRanks - 1) && !deadline.expired()) drain(*rel[r], in);
      std::vector<std::uint32_t> next(kRanks);
      for (const auto& [peer, m] : in.messages) {
        if (number_of_datagram(m) != static_cast<std::uint32_t>(peer) * kEach + next[peer]++)
          ++failures;
      }
      if (in.messages.size() != 4 * (kRanks - 1)) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fabric.counters().delivered, std::uint64_t{kRanks} * (kRanks - 1) * kEach);
}

TEST(SimFabric, EndpointsOutliveTheFabricObject) {
  std::unique_ptr<DatagramTransport> a, b;
  {
    Fabric fabric(FabricConfig{});
    a = fabric.join_datagram(1, 0);
    b = fabric.join_datagram(1, 1);
  }
  ASSERT_TRUE(send_one(*a, bytes_of("still here")).is_ok());
  Collector c;
  EXPECT_EQ(drain(*b, c), 1u);
}

}  // namespace
}  // namespace mccl::transport::sim
