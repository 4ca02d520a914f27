// The UDP multicast transport on the loopback interface (udp_loopback.h
// says where it runs): the datagram-transport conformance suite
// (datagram_conformance.h), then what is UDP's own: creation and its config,
// the own-datagram filter, groups that share a port, the MTU counting
// header and payload, pacing, sendmmsg/recvmmsg batches, foreign datagrams
// and the test drop hook. The group derivation and the pacer's arithmetic
// are udp_pacer_test.cc's.
#include "transport/udp/udp_transport.h"

#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "datagram_conformance.h"
#include "udp_loopback.h"

namespace mccl::transport::udp {
namespace {

using namespace test;

struct UdpTraits {
  static std::string skip_reason() { return loopback_skip_reason(); }
  std::unique_ptr<DatagramTransport> join(std::uint32_t group) { return make(config(group)); }
};

}  // namespace
}  // namespace mccl::transport::udp

namespace mccl::transport::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Udp, DatagramConformance, udp::UdpTraits);
}  // namespace mccl::transport::test

namespace mccl::transport::udp {
namespace {

using namespace test;

// ---- creation and configuration ------------------------------------------

TEST(UdpTransportTest, CapsAndInfo) {
  SKIP_WITHOUT_MULTICAST();
  auto t = make(config(1));
  ASSERT_TRUE(t);
  DatagramCaps caps = t->caps();
  EXPECT_EQ(caps.name, "udp");
  EXPECT_FALSE(caps.loopback) << "own datagrams are filtered out";
  EXPECT_GE(caps.max_in_flight, 1u);
  EXPECT_GE(t->wait_fd(), 0);
  const UdpInfo& info = as_udp(t.get())->info();
  EXPECT_EQ(info.iface_name, "lo");
  EXPECT_EQ(info.iface_addr, "127.0.0.1");
  EXPECT_EQ(info.group.ip, derive_group(1, job_salt()).ip);
  EXPECT_EQ(info.group.port, derive_group(1, job_salt()).port);
  EXPECT_EQ(caps.mtu, std::min<std::size_t>(8972, static_cast<std::size_t>(info.iface_mtu) - 28));
  EXPECT_GT(info.send_port, 0);
  EXPECT_EQ(info.rcvbuf_requested, 8u << 20);
  EXPECT_GT(info.rcvbuf_effective, 0u);
  if (::geteuid() == 0) {
    EXPECT_TRUE(info.rcvbuf_forced);
    EXPECT_GE(info.rcvbuf_effective, 8u << 20);
  }
  EXPECT_EQ(as_udp(static_cast<const DatagramTransport*>(t.get())), as_udp(t.get()));

  UdpConfig small = config(2);
  small.max_datagram = 1400;
  auto t2 = make(small);
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->caps().mtu, 1400u);
}

TEST(UdpTransportTest, InterfaceByAddressAndUnknownInterface) {
  SKIP_WITHOUT_MULTICAST();
  UdpConfig by_addr = config(3);
  by_addr.iface = "127.0.0.1";
  auto t = make(by_addr);
  ASSERT_TRUE(t);
  EXPECT_EQ(as_udp(t.get())->info().iface_name, "lo");

  UdpConfig bad = config(3);
  bad.iface = "nosuchif0";
  std::unique_ptr<DatagramTransport> none;
  common::Status s = create_udp_transport(bad, none);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("nosuchif0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("lo (127.0.0.1)"), std::string::npos) << s.message();
  EXPECT_FALSE(none);
}

TEST(UdpTransportTest, InterfaceDownIsUnavailableAndNamesTheFix) {
  SKIP_WITHOUT_MULTICAST();
  if (!in_private_netns())
    GTEST_SKIP() << "needs a private network namespace (root) to take lo down";
  ASSERT_TRUE(set_lo_flags(false));
  std::unique_ptr<DatagramTransport> t;
  common::Status s = create_udp_transport(config(4), t);
  ASSERT_TRUE(set_lo_flags(true));
  EXPECT_EQ(s.code(), ErrorCode::kUnavailable) << s.message();
  EXPECT_NE(s.message().find("ip link set lo up"), std::string::npos) << s.message();
}

// The interface is a config's own, resolved before: the transport reads no
// MCCL_UDP_IFACE (setup fills every field from the settings, tested in
// setup_transport_settings_test) and cannot agree on "auto" alone.
TEST(UdpTransportTest, TheInterfaceIsNamed) {
  SKIP_WITHOUT_MULTICAST();
  for (const char* unnamed : {"", "auto"}) {
    UdpConfig c = config(5);
    c.iface = unnamed;
    std::unique_ptr<DatagramTransport> none;
    common::Status s = create_udp_transport(c, none);
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << unnamed;
    EXPECT_NE(s.message().find("no interface named"), std::string::npos) << s.message();
    EXPECT_FALSE(none);
  }
}

// ---- delivery --------------------------------------------------------------

TEST(UdpTransportTest, LoneEndpointDoesNotHearItself) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(10));
  ASSERT_TRUE(a);
  send_bytes(*a, {numbered_datagram(1), numbered_datagram(2)});
  EXPECT_EQ(quiet_for(*a, 100ms), 0u);
  EXPECT_EQ(counters(*a).datagrams_sent, 2u);
  // The kernel filter drops them before they take buffer space.
  EXPECT_TRUE(as_udp(a.get())->info().kernel_self_filter);
  EXPECT_EQ(counters(*a).own_dropped, 0u);
}

// Should a kernel refuse the BPF filter, poll() still drops own datagrams:
// detach the filter behind the transport's back to see it.
TEST(UdpTransportTest, OwnDatagramsAreDroppedEvenWithoutTheKernelFilter) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(14));
  auto b = make(config(14));
  ASSERT_TRUE(a && b);
  int unused = 0;
  ASSERT_EQ(::setsockopt(a->wait_fd(), SOL_SOCKET, SO_DETACH_FILTER, &unused, sizeof unused), 0);
  send_bytes(*a, {numbered_datagram(1), numbered_datagram(2), numbered_datagram(3)});
  send_bytes(*b, {numbered_datagram(4)});
  Collector c;
  drain_until(*a, c, 1);
  EXPECT_EQ(quiet_for(*a), 0u);
  ASSERT_EQ(c.got.size(), 1u);
  EXPECT_EQ(number_of_datagram(c.got[0]), 4u);
  EXPECT_EQ(counters(*a).own_dropped, 3u);
  EXPECT_EQ(counters(*a).datagrams_received, 1u);
}

TEST(UdpTransportTest, TwoEndpointsExchangeDatagrams) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(11));
  auto b = make(config(11));
  ASSERT_TRUE(a && b);
  std::vector<Bytes> from_a, from_b;
  for (std::uint32_t i = 0; i < 10; ++i) from_a.push_back(numbered_datagram(i, 100 + i));
  for (std::uint32_t i = 100; i < 105; ++i) from_b.push_back(numbered_datagram(i, 1000));
  send_bytes(*a, from_a);
  send_bytes(*b, from_b);

  Collector at_a, at_b;
  drain_until(*b, at_b, from_a.size());
  drain_until(*a, at_a, from_b.size());
  EXPECT_EQ(at_b.got, from_a) << "lo keeps one sender's order";
  EXPECT_EQ(at_a.got, from_b);
  EXPECT_EQ(quiet_for(*a), 0u);
  EXPECT_EQ(quiet_for(*b), 0u);
  EXPECT_EQ(counters(*a).datagrams_sent, 10u);
  EXPECT_EQ(counters(*a).datagrams_received, 5u);
  EXPECT_EQ(counters(*b).datagrams_received, 10u);
  EXPECT_EQ(counters(*b).bytes_received, 10u * 100 + 45);
}

// ---- isolation -------------------------------------------------------------

void expect_isolated(std::uint32_t tag1, std::uint32_t tag2) {
  auto a1 = make(config(tag1));
  auto b1 = make(config(tag1));
  auto a2 = make(config(tag2));
  ASSERT_TRUE(a1 && b1 && a2);
  send_bytes(*a2, {numbered_datagram(2)});
  send_bytes(*a1, {numbered_datagram(1)});
  Collector c;
  drain_until(*b1, c, 1);
  ASSERT_EQ(c.got.size(), 1u);
  EXPECT_EQ(number_of_datagram(c.got[0]), 1u)
      << "tag " << tag1 << " received tag " << tag2 << "'s datagram";
  EXPECT_EQ(quiet_for(*b1), 0u);
  EXPECT_EQ(quiet_for(*a2), 0u) << "tag " << tag2 << " received tag " << tag1 << "'s datagram";
}

// Two groups that share a port: only binding to the group address (and
// IP_MULTICAST_ALL off) keeps them apart.
TEST(UdpTransportTest, TwoGroupsOnOnePortDoNotSeeEachOther) {
  SKIP_WITHOUT_MULTICAST();
  const std::uint16_t port = derive_group_port(30, job_salt());
  std::uint32_t other = 31;
  while (derive_group_port(other, job_salt()) != port ||
         derive_group_addr(other, job_salt()) == derive_group_addr(30, job_salt())) {
    ++other;
    ASSERT_LT(other, 10000000u) << "no tag shares port " << port;
  }
  expect_isolated(30, other);
}

// ---- limits and non-blocking behaviour ----------------------------------

TEST(UdpTransportTest, OversizeDatagramIsRejected) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(40));
  auto b = make(config(40));
  ASSERT_TRUE(a && b);
  const std::size_t mtu = a->caps().mtu;
  Bytes fits(mtu), over(mtu + 1);
  std::size_t accepted = 99;
  const OutDatagram alone[] = {{{}, over}};
  EXPECT_EQ(a->send(alone, accepted).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(accepted, 0u);
  // Header and payload together count.
  const OutDatagram split[] = {{std::span<const std::byte>(fits).first(1), fits}};
  EXPECT_EQ(a->send(split, accepted).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(accepted, 0u);
  // The datagrams before the oversize one go; those after it do not.
  const OutDatagram mixed[] = {{{}, fits}, {{}, over}, {{}, fits}};
  common::Status s = a->send(mixed, accepted);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find(std::to_string(mtu + 1)), std::string::npos) << s.message();
  EXPECT_EQ(accepted, 1u);
  Collector c;
  drain_until(*b, c, 1);
  EXPECT_EQ(c.got.size(), 1u);
  EXPECT_EQ(quiet_for(*b), 0u);
}

TEST(UdpTransportTest, PacingLimitsTheRate) {
  SKIP_WITHOUT_MULTICAST();
  UdpConfig paced = config(42);
  // 2 MB/s on the link (1.98 paced): the bucket holds four 64 KB GSO runs,
  // about 250 datagrams of 1000 bytes and their Ethernet frames. The rate itself is UdpPacerTest's
  // (on a clock the test sets); here the transport must hold back what the bucket does not cover:
  // sending ten bucketfuls back to back is refused part-way (in the few milliseconds that takes the
  // bucket refills by a few datagrams, not by thousands), and every refusal is counted.
  paced.rate_mbit = 16;
  auto a = make(paced);
  ASSERT_TRUE(a);
  EXPECT_DOUBLE_EQ(as_udp(a.get())->info().rate_mbit, 16.0);
  Bytes payload(972);  // 1000 IP bytes per datagram
  const std::vector<OutDatagram> batch(64, OutDatagram{{}, payload});
  constexpr int kBatches = 40;  // 2560 datagrams, ten times the bucket
  std::uint64_t datagrams = 0;
  int short_batches = 0;
  for (int i = 0; i < kBatches; ++i) {
    std::size_t accepted = 0;
    ASSERT_TRUE(a->send(batch, accepted).is_ok());
    datagrams += accepted;
    short_batches += accepted < batch.size();
  }
  EXPECT_GT(short_batches, 0) << "the pacer never held a datagram back";
  EXPECT_LT(datagrams, std::uint64_t{kBatches} * batch.size());
  EXPECT_GT(datagrams, 0u);
  const UdpCounters k = counters(*a);
  EXPECT_EQ(k.datagrams_sent, datagrams);
  EXPECT_GT(k.pacer_busy, 0u);
  EXPECT_LE(k.pacer_busy, k.send_busy);
}

// The pacer charges each datagram what it occupies on the link: its IP
// packet and its frame's overhead (link_cost.h). Charging IP bytes alone
// overran an Ethernet link by 2.5% at MTU 1500.
TEST(UdpTransportTest, EachDatagramCostsItsFrameOnTheLink) {
  SKIP_WITHOUT_MULTICAST();
  for (const std::size_t overhead : {std::size_t{0}, kEthernetFrameOverhead, std::size_t{1000}}) {
    SCOPED_TRACE("frame overhead " + std::to_string(overhead));
    UdpConfig c = config(44);
    c.frame_overhead = overhead;
    auto a = make(c);
    ASSERT_TRUE(a);
    EXPECT_EQ(as_udp(a.get())->info().frame_overhead, overhead);
    Bytes payload(972);
    const std::vector<OutDatagram> batch(20, OutDatagram{{}, payload});
    std::size_t accepted = 0;
    ASSERT_TRUE(a->send(batch, accepted).is_ok());
    ASSERT_GT(accepted, 0u);
    const UdpCounters k = counters(*a);
    EXPECT_EQ(k.bytes_sent, accepted * 972);
    EXPECT_EQ(k.link_bytes_sent, accepted * (972 + kIpUdpHeader + overhead));
  }
}

TEST(UdpLinkCost, TheSendersNeverOfferALinkMoreFramesThanItCarries) {
  // 1 Gbit/s Ethernet at MTU 1500: 1e9 / 8 / 1538 = 81,274 frames a second.
  const std::size_t frame = link_bytes(1472, kEthernetFrameOverhead);
  EXPECT_EQ(frame, 1538u);
  const double paced_frames = paced_bytes_per_s(1000) / static_cast<double>(frame);
  EXPECT_LT(paced_frames, 1e9 / 8 / 1538);
  EXPECT_GT(paced_frames, 0.98 * 1e9 / 8 / 1538) << "no more headroom than the 1% it states";
  EXPECT_EQ(paced_bytes_per_s(0), 0) << "unpaced stays unpaced";
}

TEST(UdpTransportTest, BatchOf256ArrivesThroughSendmmsgAndRecvmmsg) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(43));
  auto b = make(config(43));
  ASSERT_TRUE(a && b);
  std::vector<Bytes> data;
  for (std::uint32_t i = 0; i < 256; ++i) data.push_back(numbered_datagram(i, 1400));
  std::vector<OutDatagram> batch;
  for (const Bytes& d : data)
    batch.push_back(OutDatagram{std::span(d).first(4), std::span(d).subspan(4)});
  send_all_datagrams(*a, batch);
  Collector c;
  drain_until(*b, c, 256);
  // No loss is expected on lo with an 8 MiB buffer, but a busy host may drop.
  EXPECT_GE(c.got.size(), 243u);
  EXPECT_LE(c.got.size(), 256u);
  std::set<std::uint32_t> seen;
  for (const Bytes& d : c.got) {
    ASSERT_EQ(d.size(), 1400u);
    EXPECT_EQ(d, data[number_of_datagram(d)]);
    EXPECT_TRUE(seen.insert(number_of_datagram(d)).second) << "duplicate " << number_of_datagram(d);
  }
  EXPECT_EQ(counters(*a).datagrams_sent, 256u);
}

// ---- foreign traffic and the drop hook ------------------------------------

TEST(UdpTransportTest, ForeignDatagramsAreDeliveredUnvalidated) {
  SKIP_WITHOUT_MULTICAST();
  auto b = make(config(50));
  ASSERT_TRUE(b);
  const std::size_t mtu = b->caps().mtu;
  const GroupAddress g = derive_group(50, job_salt());
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(g.port);
  ASSERT_EQ(::inet_pton(AF_INET, g.ip.c_str(), &dst.sin_addr), 1);
  int fd = plain_lo_socket();
  ASSERT_GE(fd, 0);
  std::mt19937 rng(50);  // seed 50
  Bytes garbage(37);
  for (auto& x : garbage) x = std::byte(rng());
  Bytes too_big(mtu + 100, std::byte{0xEE});
  auto send_to = [&](const Bytes& d) {
    return ::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&dst), sizeof dst);
  };
  EXPECT_EQ(send_to(garbage), 37);
  EXPECT_EQ(send_to(Bytes{}), 0);
  EXPECT_EQ(send_to(too_big), static_cast<ssize_t>(too_big.size()));
  EXPECT_EQ(send_to(garbage), 37);
  ::close(fd);

  Collector c;
  drain_until(*b, c, 3);
  EXPECT_EQ(quiet_for(*b), 0u);
  ASSERT_EQ(c.got.size(), 3u) << "the oversize one is dropped, the rest delivered as is";
  EXPECT_EQ(c.got[0], garbage);
  EXPECT_TRUE(c.got[1].empty());
  EXPECT_EQ(c.got[2], garbage);
  EXPECT_EQ(counters(*b).truncated, 1u);
}

TEST(UdpTransportTest, DropHookDropsAboutTheConfiguredShare) {
  SKIP_WITHOUT_MULTICAST();
  UdpConfig lossy = config(60);
  lossy.test_drop_permille = 300;
  lossy.test_drop_seed = 60;  // seed 60
  auto a = make(config(60));
  auto b = make(lossy);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(as_udp(b.get())->info().test_drop_permille, 300);
  constexpr std::uint32_t kCount = 2000;
  std::vector<Bytes> data;
  for (std::uint32_t i = 0; i < kCount; ++i) data.push_back(numbered_datagram(i, 200));
  send_bytes(*a, data);

  Collector c;
  auto deadline = common::Deadline::after(3s);
  while (!deadline.expired()) {
    const UdpCounters k = counters(*b);
    if (k.datagrams_received + k.test_dropped >= kCount) break;
    drain_until(*b, c, c.got.size() + 1, 20ms);
  }
  const UdpCounters k = counters(*b);
  EXPECT_EQ(k.datagrams_received, c.got.size());
  EXPECT_GE(k.datagrams_received + k.test_dropped, kCount * 95 / 100);
  const double share = static_cast<double>(k.test_dropped) /
                       static_cast<double>(k.datagrams_received + k.test_dropped);
  EXPECT_GT(share, 0.25);
  EXPECT_LT(share, 0.35);
  EXPECT_EQ(counters(*a).test_dropped, 0u) << "the hook is per endpoint";
}

}  // namespace
}  // namespace mccl::transport::udp
