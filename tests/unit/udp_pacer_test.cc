// The UDP transport's pieces that need no network: the group and port a
// communicator derives, and the pacer's token bucket on a clock the test
// sets.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>

#include "common/clock.h"
#include "transport/udp/group.h"
#include "transport/udp/pacer.h"

namespace mccl::transport::udp {
namespace {

using namespace std::chrono_literals;

TEST(UdpGroupTest, DerivationIsStableAdministrativelyScopedAndSpread) {
  EXPECT_EQ(derive_group(7, 42).ip, derive_group(7, 42).ip);
  EXPECT_EQ(derive_group(7, 42).port, derive_group(7, 42).port);
  EXPECT_NE(derive_group(7, 42).ip, derive_group(7, 43).ip) << "the salt must matter";
  std::set<std::string> groups;
  std::set<std::uint16_t> ports;
  for (std::uint32_t tag = 0; tag < 2000; ++tag) {
    GroupAddress g = derive_group(tag, 99);
    in_addr a{};
    ASSERT_EQ(::inet_pton(AF_INET, g.ip.c_str(), &a), 1) << g.ip;
    const std::uint32_t h = ntohl(a.s_addr);
    EXPECT_EQ(h >> 24, 239u) << g.ip;
    const std::uint32_t o2 = (h >> 16) & 0xff;
    EXPECT_NE(o2, 0u) << g.ip;
    EXPECT_NE(o2, 128u) << g.ip;
    EXPECT_NE(o2, 255u) << g.ip;
    EXPECT_GE(g.port, kPortMin);
    EXPECT_LE(g.port, kPortMax);
    EXPECT_EQ(derive_group_addr(tag, 99), h);
    groups.insert(g.ip);
    ports.insert(g.port);
  }
  EXPECT_GE(groups.size(), 1990u);
  EXPECT_GE(ports.size(), 1900u);
}

TEST(UdpPacerTest, TokenBucketOnAGivenClock) {
  const common::TimePoint t0{};
  Pacer unpaced;
  EXPECT_FALSE(unpaced.enabled());
  EXPECT_TRUE(unpaced.try_take(1u << 30, t0));

  Pacer p(1000.0, 100, t0);  // 1000 B/s, bucket of 100 B, starts full
  EXPECT_TRUE(p.enabled());
  EXPECT_TRUE(p.try_take(60, t0));
  EXPECT_TRUE(p.try_take(40, t0));
  EXPECT_FALSE(p.try_take(1, t0));
  EXPECT_FALSE(p.try_take(50, t0 + 49ms));  // 49 tokens
  EXPECT_TRUE(p.try_take(50, t0 + 50ms));
  p.refund(30);
  EXPECT_TRUE(p.try_take(30, t0 + 50ms));
  EXPECT_FALSE(p.try_take(1, t0 + 50ms));
  // The bucket never holds more than its size, however long the pause.
  EXPECT_TRUE(p.try_take(100, t0 + 10s));
  EXPECT_FALSE(p.try_take(1, t0 + 10s));
  // A datagram larger than the bucket goes once the bucket is full.
  EXPECT_FALSE(p.try_take(500, t0 + 10s + 50ms));
  EXPECT_TRUE(p.try_take(500, t0 + 10s + 100ms));
  EXPECT_FALSE(p.try_take(1, t0 + 10s + 100ms));
}

// share_link() changes a pacer's rate from a given time on: what the bucket
// earned at the old rate stays, the new rate applies after.
TEST(UdpPacerTest, NewRateFromAGivenTime) {
  const common::TimePoint t0{};
  Pacer p(1000.0, 100, t0);
  EXPECT_TRUE(p.try_take(100, t0));
  p.set_rate(250.0, 100, t0 + 40ms);  // 40 tokens earned at 1000 B/s
  EXPECT_DOUBLE_EQ(p.bytes_per_s(), 250.0);
  EXPECT_TRUE(p.try_take(40, t0 + 40ms));
  EXPECT_FALSE(p.try_take(10, t0 + 79ms));  // 9.75 tokens at 250 B/s
  EXPECT_TRUE(p.try_take(10, t0 + 80ms));
  Pacer unpaced;
  unpaced.set_rate(250.0, 100, t0);
  EXPECT_FALSE(unpaced.enabled()) << "an unpaced sender stays unpaced";
}

}  // namespace
}  // namespace mccl::transport::udp
