// What every datagram transport (transport/datagram.h) must do, as one
// typed suite: a datagram reaches every other member of its group and not
// its sender, header and payload are gathered into one, the MTU is
// enforced datagram by datagram, poll() takes no datagram on a zero budget
// and never sleeps, and two groups never see each other's traffic.
//
// A transport's test instantiates it with a traits type whose object the
// fixture holds for the test (it may own a fabric):
//   struct Traits {
//     static std::string skip_reason();  // non-empty: the suite skips here
//     std::unique_ptr<DatagramTransport> join(std::uint32_t group);
//   };
//   INSTANTIATE_TYPED_TEST_SUITE_P(Udp, DatagramConformance, Traits);
// Members of one group must exist before anything is sent to it. What only
// one transport does (fault models, pacing, GSO, verbs queues) stays in that
// transport's own tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "datagram_collector.h"
#include "mccl/error.h"
#include "sleep_count.h"
#include "transport/datagram.h"

namespace mccl::transport::test {

template <typename Traits>
class DatagramConformance : public ::testing::Test {
 protected:
  using Bytes = std::vector<std::byte>;

  void SetUp() override {
    if (const std::string why = Traits::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }

  std::unique_ptr<DatagramTransport> join(std::uint32_t group) {
    auto t = traits_.join(group);
    EXPECT_NE(t, nullptr);
    return t;
  }

  // Polls (with a budget of `max` a call) until `want` datagrams came or
  // 3 s passed; then, for a real network's stragglers, a little longer so
  // that one too many shows.
  static void receive(DatagramTransport& t, Collector& c, std::size_t want,
                      std::size_t max = 1u << 16) {
    auto deadline = common::Deadline::after(std::chrono::seconds(3));
    bool settled = false;
    for (;;) {
      std::size_t delivered = 0;
      ASSERT_TRUE(t.poll(c, max, delivered).is_ok());
      if (deadline.expired()) return;
      if (c.got.size() >= want && !settled) {
        deadline = common::Deadline::after(std::chrono::milliseconds(50));
        settled = true;
      }
    }
  }

  Traits traits_;
};

TYPED_TEST_SUITE_P(DatagramConformance);

TYPED_TEST_P(DatagramConformance, DeliversToEveryOtherMemberButNotTheSender) {
  std::vector<std::unique_ptr<DatagramTransport>> members;
  for (int r = 0; r < 3; ++r) members.push_back(this->join(11));
  for (const auto& m : members) ASSERT_NE(m, nullptr);
  EXPECT_FALSE(members[0]->caps().loopback);
  EXPECT_GT(members[0]->caps().mtu, 0u);
  for (std::uint32_t r = 0; r < 3; ++r) {
    std::vector<typename TestFixture::Bytes> mine;
    for (std::uint32_t i = 0; i < 7; ++i) mine.push_back(numbered_datagram(r * 1000 + i, 100 + i));
    std::vector<OutDatagram> batch;
    for (const auto& d : mine) batch.push_back(OutDatagram{d, {}});
    send_all_datagrams(*members[r], batch);
  }
  for (std::uint32_t r = 0; r < 3; ++r) {
    Collector c;
    this->receive(*members[r], c, 14);
    ASSERT_EQ(c.got.size(), 14u) << "member " << r;
    // Each sender's datagrams whole and in its order; none of its own.
    std::vector<std::uint32_t> next(3, 0);
    for (const auto& d : c.got) {
      const std::uint32_t n = number_of_datagram(d);
      const std::uint32_t from = n / 1000;
      ASSERT_LT(from, 3u);
      EXPECT_NE(from, r) << "member " << r << " heard itself";
      EXPECT_EQ(n % 1000, next[from]++) << "member " << r << " from " << from;
      EXPECT_EQ(d, numbered_datagram(n, 100 + n % 1000));
    }
  }
}

TYPED_TEST_P(DatagramConformance, HeaderAndPayloadAreGathered) {
  auto a = this->join(13);
  auto b = this->join(13);
  ASSERT_TRUE(a && b);
  const std::size_t mtu = a->caps().mtu;
  ASSERT_GT(mtu, 40u);
  typename TestFixture::Bytes header(40), payload(mtu - 40);
  for (std::size_t i = 0; i < header.size(); ++i) header[i] = std::byte(0xA0 + i);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(i * 7 + 3);
  std::span<const std::byte> h(header), p(payload);
  const std::vector<OutDatagram> batch = {
      {h, p.first(100)},  // both pieces
      {h, {}},            // header only
      {{}, p.first(33)},  // payload only
      {h, p},             // exactly the MTU
      {h.first(1), p.last(1)},
  };
  send_all_datagrams(*a, batch);
  Collector c;
  this->receive(*b, c, batch.size());
  ASSERT_EQ(c.got.size(), batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    typename TestFixture::Bytes want(batch[i].header.begin(), batch[i].header.end());
    want.insert(want.end(), batch[i].payload.begin(), batch[i].payload.end());
    EXPECT_EQ(c.got[i], want) << "datagram " << i;
  }
  EXPECT_EQ(c.got[3].size(), mtu);
}

TYPED_TEST_P(DatagramConformance, DatagramOverTheMtuIsRejectedAndTheOthersGo) {
  auto a = this->join(17);
  auto b = this->join(17);
  ASSERT_TRUE(a && b);
  const std::size_t mtu = a->caps().mtu;
  const typename TestFixture::Bytes ok(mtu), over(mtu + 1);
  const std::vector<OutDatagram> batch = {{ok, {}}, {over, {}}, {ok, {}}};
  std::size_t accepted = 99;
  common::Status s = a->send(batch, accepted);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.message();
  EXPECT_EQ(accepted, 1u) << "the datagrams before the bad one went";
  Collector c;
  this->receive(*b, c, 1);
  EXPECT_EQ(c.got.size(), 1u);
  send_all_datagrams(*a, std::span(batch).first(1));  // the transport still works
  this->receive(*b, c, 2);
  EXPECT_EQ(c.got.size(), 2u);
}

// A budget of 0 delivers nothing, whatever waits; a small one delivers
// everything over several calls, in the sender's order. (A transport may
// go past a nonzero budget by the rest of a coalesced read: datagram.h.)
TYPED_TEST_P(DatagramConformance, PollHonoursAZeroBudgetAndKeepsOrder) {
  auto tx = this->join(19);
  auto rx = this->join(19);
  ASSERT_TRUE(tx && rx);
  std::vector<typename TestFixture::Bytes> data;
  for (std::uint32_t i = 0; i < 100; ++i) data.push_back(numbered_datagram(i));
  std::vector<OutDatagram> batch;
  for (const auto& d : data) batch.push_back(OutDatagram{d, {}});
  send_all_datagrams(*tx, batch);
  Collector c;
  std::size_t delivered = 7;
  ASSERT_TRUE(rx->poll(c, 0, delivered).is_ok());
  EXPECT_EQ(delivered, 0u);
  EXPECT_TRUE(c.got.empty());
  this->receive(*rx, c, data.size(), 37);
  ASSERT_EQ(c.got.size(), data.size());
  for (std::uint32_t i = 0; i < 100; ++i) EXPECT_EQ(number_of_datagram(c.got[i]), i);
}

TYPED_TEST_P(DatagramConformance, IdlePollNeverSleeps) {
  auto a = this->join(23);
  ASSERT_TRUE(a);
  Collector c;
  const long sleeps_before = voluntary_sleeps();
  for (int i = 0; i < 1000; ++i) {
    std::size_t delivered = 7;
    ASSERT_TRUE(a->poll(c, 64, delivered).is_ok());
    EXPECT_EQ(delivered, 0u);
  }
  // A poll that waited would put this thread to sleep about once a call.
  EXPECT_LT(voluntary_sleeps() - sleeps_before, 100);
  EXPECT_TRUE(c.got.empty());
  std::size_t accepted = 7;
  EXPECT_TRUE(a->send({}, accepted).is_ok()) << "an empty batch is a no-op";
  EXPECT_EQ(accepted, 0u);
}

TYPED_TEST_P(DatagramConformance, TwoGroupsDoNotSeeEachOther) {
  auto a1 = this->join(29);
  auto b1 = this->join(29);
  auto a2 = this->join(31);
  ASSERT_TRUE(a1 && b1 && a2);
  const auto two = numbered_datagram(2), one = numbered_datagram(1);
  const OutDatagram d2{two, {}}, d1{one, {}};
  send_all_datagrams(*a2, std::span(&d2, 1));
  send_all_datagrams(*a1, std::span(&d1, 1));
  Collector c, other;
  this->receive(*b1, c, 1);
  ASSERT_EQ(c.got.size(), 1u);
  EXPECT_EQ(number_of_datagram(c.got[0]), 1u) << "group 29 received group 31's datagram";
  this->receive(*a2, other, 0);
  EXPECT_TRUE(other.got.empty()) << "group 31 received group 29's datagram";
}

REGISTER_TYPED_TEST_SUITE_P(DatagramConformance, DeliversToEveryOtherMemberButNotTheSender,
                            HeaderAndPayloadAreGathered, DatagramOverTheMtuIsRejectedAndTheOthersGo,
                            PollHonoursAZeroBudgetAndKeepsOrder, IdlePollNeverSleeps,
                            TwoGroupsDoNotSeeEachOther);

}  // namespace mccl::transport::test
