// The UDP multicast transport on the loopback interface: group derivation,
// delivery between two and three endpoints, isolation of communicators,
// the MTU limit, non-blocking poll, pacing, batches, foreign datagrams and
// the test drop hook.
//
// Network: all traffic stays on lo. Run as root, the test first moves
// itself into a private network namespace (unshare(CLONE_NEWNET), then lo
// is brought up with SIOCSIFFLAGS), so it neither sees nor disturbs other
// jobs' groups. Multicast on lo needs nothing more on Linux: no MULTICAST
// flag, no 224.0.0.0/4 route, because the transport names the interface
// with IP_MULTICAST_IF. Without root it runs in the current namespace, and
// every test skips, saying why, when multicast on lo does not work there.
#include "transport/udp/udp_transport.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
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
#include "common/settings.h"
#include "transport/udp/pacer.h"
#include "udp_test_util.h"

namespace mccl::transport::udp {
namespace {

using namespace test;

using Bytes = std::vector<std::byte>;
using namespace std::chrono_literals;

// ---- where the test runs ------------------------------------------------

bool g_private_netns = false;
std::string g_skip_reason;  // non-empty: multicast on lo does not work here

UdpConfig config(std::uint32_t tag) {
  UdpConfig c;
  c.iface = "lo";
  c.comm_tag = tag;
  c.job_salt = job_salt();
  c.rate_mbit = -1;  // unpaced whatever MCCL_UDP_RATE_MBIT says
  c.rcvbuf_bytes = 8u << 20;
  c.max_datagram = 8972;
  c.test_drop_permille = 0;
  return c;
}

class LoopbackEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    // gtest has started no thread yet, so the whole process moves.
    if (::geteuid() == 0 && ::unshare(CLONE_NEWNET) == 0) {
      g_private_netns = set_lo_flags(true);
      if (!g_private_netns) {
        g_skip_reason = "could not bring lo up in the private network namespace";
        return;
      }
    }
    std::unique_ptr<DatagramTransport> probe;
    common::Status s = create_udp_transport(config(0xC0FFEE), probe);
    if (!s) {
      g_skip_reason = std::string("multicast on lo is not usable in ") +
                      (g_private_netns ? "a private" : "this") +
                      " network namespace (run as root for a private one): " + s.message();
    }
  }
};

const auto* const g_env = ::testing::AddGlobalTestEnvironment(new LoopbackEnvironment);

#define SKIP_WITHOUT_MULTICAST() \
  if (!g_skip_reason.empty()) GTEST_SKIP() << g_skip_reason

// ---- helpers -------------------------------------------------------------

// A datagram whose first four bytes number it, padded to `size` bytes.
Bytes numbered(std::uint32_t index, std::size_t size = 64) {
  Bytes b(std::max<std::size_t>(size, 4), std::byte{0x5a});
  std::memcpy(b.data(), &index, 4);
  return b;
}

std::uint32_t number_of(const Bytes& b) {
  std::uint32_t index = 0;
  std::memcpy(&index, b.data(), 4);
  return index;
}

// Polls for `period` and returns how many datagrams came.
std::size_t quiet_for(DatagramTransport& t, common::Duration period = 50ms) {
  Collector c;
  drain_until(t, c, SIZE_MAX, period);
  return c.got.size();
}

// Sends everything, retrying while busy; fails the test after 5 s.
void send_all(DatagramTransport& t, std::span<const OutDatagram> batch) {
  auto deadline = common::Deadline::after(5s);
  while (!batch.empty()) {
    std::size_t accepted = 0;
    common::Status s = t.send(batch, accepted);
    ASSERT_TRUE(s.is_ok()) << s.message();
    batch = batch.subspan(accepted);
    ASSERT_FALSE(deadline.expired()) << batch.size() << " datagrams still refused";
    if (accepted == 0) std::this_thread::yield();
  }
}

void send_bytes(DatagramTransport& t, const std::vector<Bytes>& datagrams) {
  std::vector<OutDatagram> batch;
  for (const Bytes& d : datagrams) batch.push_back(OutDatagram{{}, d});
  send_all(t, batch);
}

// A plain UDP socket on lo, as any other program would open one.
int plain_lo_socket() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  in_addr lo{htonl(INADDR_LOOPBACK)};
  ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo);  // never the default route
  int ttl = 1;
  ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);
  return fd;
}

// ---- group derivation and the pacer: no network ---------------------------

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
  if (!g_private_netns) GTEST_SKIP() << "needs a private network namespace (root) to take lo down";
  ASSERT_TRUE(set_lo_flags(false));
  std::unique_ptr<DatagramTransport> t;
  common::Status s = create_udp_transport(config(4), t);
  ASSERT_TRUE(set_lo_flags(true));
  EXPECT_EQ(s.code(), ErrorCode::kUnavailable) << s.message();
  EXPECT_NE(s.message().find("ip link set lo up"), std::string::npos) << s.message();
}

TEST(UdpTransportTest, SettingsAreRegisteredAndRead) {
  SKIP_WITHOUT_MULTICAST();
  namespace st = common::settings;
  for (const common::Setting* s : {&st::kUdpIface, &st::kUdpRateMbit, &st::kUdpRcvbuf,
                                   &st::kUdpMaxDatagram, &st::kUdpTestDropPermille}) {
    EXPECT_NE(std::find(common::all_settings().begin(), common::all_settings().end(), s),
              common::all_settings().end())
        << s->name();
  }
  UdpConfig c = config(5);
  c.iface = "";  // MCCL_UDP_IFACE
  c.max_datagram = 0;
  ::setenv("MCCL_UDP_IFACE", "lo", 1);
  ::setenv("MCCL_UDP_MAX_DATAGRAM", "1200", 1);
  auto t = make(c);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->caps().mtu, 1200u);
  ::setenv("MCCL_UDP_MAX_DATAGRAM", "big", 1);
  std::unique_ptr<DatagramTransport> none;
  common::Status s = create_udp_transport(c, none);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("MCCL_UDP_MAX_DATAGRAM"), std::string::npos) << s.message();
  ::unsetenv("MCCL_UDP_MAX_DATAGRAM");
  ::unsetenv("MCCL_UDP_IFACE");
}

// ---- delivery --------------------------------------------------------------

TEST(UdpTransportTest, LoneEndpointDoesNotHearItself) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(10));
  ASSERT_TRUE(a);
  send_bytes(*a, {numbered(1), numbered(2)});
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
  send_bytes(*a, {numbered(1), numbered(2), numbered(3)});
  send_bytes(*b, {numbered(4)});
  Collector c;
  drain_until(*a, c, 1);
  EXPECT_EQ(quiet_for(*a), 0u);
  ASSERT_EQ(c.got.size(), 1u);
  EXPECT_EQ(number_of(c.got[0]), 4u);
  EXPECT_EQ(counters(*a).own_dropped, 3u);
  EXPECT_EQ(counters(*a).datagrams_received, 1u);
}

TEST(UdpTransportTest, TwoEndpointsExchangeDatagrams) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(11));
  auto b = make(config(11));
  ASSERT_TRUE(a && b);
  std::vector<Bytes> from_a, from_b;
  for (std::uint32_t i = 0; i < 10; ++i) from_a.push_back(numbered(i, 100 + i));
  for (std::uint32_t i = 100; i < 105; ++i) from_b.push_back(numbered(i, 1000));
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

TEST(UdpTransportTest, ThreeEndpointsEachHearTheOtherTwo) {
  SKIP_WITHOUT_MULTICAST();
  std::vector<std::unique_ptr<DatagramTransport>> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back(make(config(12)));
  for (auto& t : ranks) ASSERT_TRUE(t);
  for (std::uint32_t r = 0; r < 3; ++r) {
    std::vector<Bytes> mine;
    for (std::uint32_t i = 0; i < 7; ++i) mine.push_back(numbered(r * 1000 + i));
    send_bytes(*ranks[r], mine);
  }
  for (std::uint32_t r = 0; r < 3; ++r) {
    Collector c;
    drain_until(*ranks[r], c, 14);
    EXPECT_EQ(quiet_for(*ranks[r]), 0u);
    ASSERT_EQ(c.got.size(), 14u) << "rank " << r;
    std::multiset<std::uint32_t> senders;
    for (const Bytes& d : c.got) senders.insert(number_of(d) / 1000);
    EXPECT_EQ(senders.count(r), 0u) << "rank " << r << " heard itself";
    for (std::uint32_t o = 0; o < 3; ++o) {
      if (o == r) continue;
      EXPECT_EQ(senders.count(o), 7u) << "rank " << r << " from " << o;
    }
  }
}

TEST(UdpTransportTest, HeaderAndPayloadAreGathered) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(13));
  auto b = make(config(13));
  ASSERT_TRUE(a && b);
  const std::size_t mtu = a->caps().mtu;
  Bytes header(24), payload(mtu - 24);
  for (std::size_t i = 0; i < header.size(); ++i) header[i] = std::byte(0xA0 + i);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(i * 7 + 3);
  std::span<const std::byte> h(header), p(payload);
  const std::vector<OutDatagram> batch = {
      {h, p.first(100)},  // both pieces
      {h, {}},            // header only
      {{}, p.first(33)},  // payload only
      {{}, {}},           // empty datagram
      {h, p},             // exactly the MTU
      {h.first(1), p.last(1)},
  };
  send_all(*a, batch);
  Collector c;
  drain_until(*b, c, batch.size());
  ASSERT_EQ(c.got.size(), batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    Bytes want(batch[i].header.begin(), batch[i].header.end());
    want.insert(want.end(), batch[i].payload.begin(), batch[i].payload.end());
    EXPECT_EQ(c.got[i], want) << "datagram " << i;
  }
  EXPECT_EQ(c.got[4].size(), mtu);
}

// ---- isolation -------------------------------------------------------------

void expect_isolated(std::uint32_t tag1, std::uint32_t tag2) {
  auto a1 = make(config(tag1));
  auto b1 = make(config(tag1));
  auto a2 = make(config(tag2));
  ASSERT_TRUE(a1 && b1 && a2);
  send_bytes(*a2, {numbered(2)});
  send_bytes(*a1, {numbered(1)});
  Collector c;
  drain_until(*b1, c, 1);
  ASSERT_EQ(c.got.size(), 1u);
  EXPECT_EQ(number_of(c.got[0]), 1u) << "tag " << tag1 << " received tag " << tag2 << "'s datagram";
  EXPECT_EQ(quiet_for(*b1), 0u);
  EXPECT_EQ(quiet_for(*a2), 0u) << "tag " << tag2 << " received tag " << tag1 << "'s datagram";
}

TEST(UdpTransportTest, TwoTagsDoNotSeeEachOther) {
  SKIP_WITHOUT_MULTICAST();
  ASSERT_NE(derive_group(20, job_salt()).ip, derive_group(21, job_salt()).ip);
  expect_isolated(20, 21);
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

TEST(UdpTransportTest, PollNeverBlocks) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(41));
  ASSERT_TRUE(a);
  Collector c;
  const auto start = common::now();
  for (int i = 0; i < 1000; ++i) {
    std::size_t delivered = 7;
    ASSERT_TRUE(a->poll(c, 64, delivered).is_ok());
    EXPECT_EQ(delivered, 0u);
  }
  std::size_t delivered = 7;
  ASSERT_TRUE(a->poll(c, 0, delivered).is_ok());
  EXPECT_EQ(delivered, 0u);
  // 1001 empty polls are about 1001 system calls: far below a second
  // unless one of them slept.
  EXPECT_LT(common::now() - start, 1s);
  EXPECT_TRUE(c.got.empty());
  // An empty batch is a no-op.
  std::size_t accepted = 7;
  EXPECT_TRUE(a->send({}, accepted).is_ok());
  EXPECT_EQ(accepted, 0u);
}

TEST(UdpTransportTest, PacingLimitsTheRate) {
  SKIP_WITHOUT_MULTICAST();
  UdpConfig paced = config(42);
  // 2 MB/s of IP bytes. The bucket then holds four 64 KB GSO runs (about
  // 130 ms), so a sender descheduled on a busy host loses few tokens; over
  // the 500 ms measured that start adds at most a quarter to the rate.
  paced.rate_mbit = 16;
  auto a = make(paced);
  ASSERT_TRUE(a);
  EXPECT_DOUBLE_EQ(as_udp(a.get())->info().rate_mbit, 16.0);
  Bytes payload(972);  // 1000 IP bytes per datagram
  const std::vector<OutDatagram> batch(64, OutDatagram{{}, payload});
  const auto start = common::now();
  std::uint64_t datagrams = 0;
  while (common::now() - start < 500ms) {
    std::size_t accepted = 0;
    ASSERT_TRUE(a->send(batch, accepted).is_ok());
    datagrams += accepted;
    if (accepted < batch.size()) std::this_thread::sleep_for(200us);  // the caller may sleep
  }
  const double seconds = std::chrono::duration<double>(common::now() - start).count();
  const double ratio = static_cast<double>(datagrams) * 1000.0 / seconds / 2e6;
  EXPECT_GT(ratio, 0.5) << datagrams << " datagrams in " << seconds << " s";
  EXPECT_LT(ratio, 1.3) << datagrams << " datagrams in " << seconds << " s";
  const UdpCounters k = counters(*a);
  EXPECT_EQ(k.datagrams_sent, datagrams);
  EXPECT_GT(k.pacer_busy, 0u);
  EXPECT_LE(k.pacer_busy, k.send_busy);
}

TEST(UdpTransportTest, BatchOf256ArrivesThroughSendmmsgAndRecvmmsg) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(43));
  auto b = make(config(43));
  ASSERT_TRUE(a && b);
  std::vector<Bytes> data;
  for (std::uint32_t i = 0; i < 256; ++i) data.push_back(numbered(i, 1400));
  std::vector<OutDatagram> batch;
  for (const Bytes& d : data)
    batch.push_back(OutDatagram{std::span(d).first(4), std::span(d).subspan(4)});
  send_all(*a, batch);
  Collector c;
  drain_until(*b, c, 256);
  // No loss is expected on lo with an 8 MiB buffer, but a busy host may drop.
  EXPECT_GE(c.got.size(), 243u);
  EXPECT_LE(c.got.size(), 256u);
  std::set<std::uint32_t> seen;
  for (const Bytes& d : c.got) {
    ASSERT_EQ(d.size(), 1400u);
    EXPECT_EQ(d, data[number_of(d)]);
    EXPECT_TRUE(seen.insert(number_of(d)).second) << "duplicate " << number_of(d);
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
  for (std::uint32_t i = 0; i < kCount; ++i) data.push_back(numbered(i, 200));
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
