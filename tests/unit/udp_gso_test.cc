// The kernel's offloads of the UDP transport: generic segmentation on the
// send side (MCCL_UDP_GSO: runs of equal-size datagrams leave as one
// UDP_SEGMENT send) and coalesced reads on the receive side (MCCL_UDP_GRO:
// a run arrives whole in one read and is cut back at the segment size).
// Receivers with and without GRO on the same host get every datagram back,
// byte for byte, with the counters still counting datagrams. Every delivery
// test runs with GSO and GRO off, on and auto.
//
// Network: like udp_transport_test, the test moves itself into a private
// network namespace when root and uses lo; it skips, saying why, when
// multicast on lo does not work.
#include <dirent.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "transport/udp/udp_transport.h"
#include "udp_test_util.h"

namespace mccl::transport::udp {
namespace {

using namespace test;

using Bytes = std::vector<std::byte>;
using namespace std::chrono_literals;

UdpConfig config(std::uint32_t tag, const std::string& gso, const std::string& gro = "off") {
  UdpConfig c;
  c.iface = "lo";
  c.comm_tag = tag;
  c.job_salt = job_salt();
  c.rate_mbit = -1;
  c.rcvbuf_bytes = 8u << 20;
  c.max_datagram = 1472;  // what MTU 1500 gives, the size the benchmarks send
  c.test_drop_permille = 0;
  c.gso = gso;
  c.gro = gro;
  return c;
}

const auto* const g_env =
    ::testing::AddGlobalTestEnvironment(new LoopbackEnvironment(config(0xC0FFEE, "off")));

// Datagram `index` of `size` bytes: the index in the first four bytes (when
// it fits), then bytes that differ from datagram to datagram.
Bytes numbered(std::uint32_t index, std::size_t size) {
  Bytes b(size);
  for (std::size_t i = 0; i < size; ++i)
    b[i] = static_cast<std::byte>((index * 131 + i * 7) & 0xff);
  if (size >= 4) std::memcpy(b.data(), &index, 4);
  return b;
}

// Sends everything, retrying while busy. The header is the first
// `header` bytes, so every segment of a run is gathered from two pieces.
common::Status send_all(DatagramTransport& t, const std::vector<Bytes>& data, std::size_t header) {
  std::vector<OutDatagram> batch;
  for (const Bytes& d : data) {
    const std::size_t h = std::min(header, d.size());
    batch.push_back(OutDatagram{std::span(d).first(h), std::span(d).subspan(h)});
  }
  std::span<const OutDatagram> rest(batch);
  auto deadline = common::Deadline::after(5s);
  while (!rest.empty()) {
    std::size_t accepted = 0;
    if (auto s = t.send(rest, accepted); !s) return s;
    rest = rest.subspan(accepted);
    if (deadline.expired()) return common::transport_error("datagrams still refused after 5 s");
    if (accepted == 0) std::this_thread::yield();
  }
  return common::Status::ok();
}

// Datagram sizes of one batch, and whether GSO should have grouped any.
struct Shape {
  const char* name;
  std::vector<std::size_t> sizes;
};

std::vector<std::size_t> repeat(std::size_t n, std::size_t size) {
  return std::vector<std::size_t>(n, size);
}

std::vector<Shape> shapes() {
  std::vector<Shape> v;
  v.push_back({"one", {1472}});
  v.push_back({"one_small", {17}});
  auto short_last = repeat(40, 1472);
  short_last.push_back(611);
  v.push_back({"short_last", short_last});
  v.push_back({"more_than_64", repeat(150, 1472)});
  v.push_back({"more_than_a_call", repeat(700, 1400)});
  // Runs broken by a shorter datagram, a longer one, an empty one and a
  // one-byte one; sizes that cross the 64 KB limit of one send.
  std::vector<std::size_t> mixed = repeat(10, 1000);
  mixed.push_back(999);
  mixed.push_back(1000);
  mixed.push_back(1472);
  mixed.push_back(0);
  mixed.push_back(1);
  mixed.push_back(1);
  for (std::size_t s : repeat(50, 1300)) mixed.push_back(s);
  mixed.push_back(4);
  v.push_back({"mixed", mixed});
  return v;
}

class UdpGsoDelivery : public ::testing::TestWithParam<std::string> {};

TEST_P(UdpGsoDelivery, EveryShapeArrivesByteExactAtTwoReceivers) {
  SKIP_WITHOUT_MULTICAST();
  const std::string mode = GetParam();
  std::uint32_t tag = 900;
  for (const Shape& shape : shapes()) {
    SCOPED_TRACE(shape.name);
    ++tag;
    auto a = make(config(tag, mode));
    auto b = make(config(tag, "off", "off"));  // an ordinary receiver: the kernel cuts runs
    auto c = make(config(tag, mode, mode));    // a receiver that takes runs whole
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(as_udp(a.get())->info().gso, mode != "off");
    EXPECT_EQ(as_udp(c.get())->info().gro, mode != "off");

    std::vector<Bytes> data;
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < shape.sizes.size(); ++i) {
      data.push_back(numbered(static_cast<std::uint32_t>(i), shape.sizes[i]));
      bytes += shape.sizes[i];
    }
    ASSERT_TRUE(send_all(*a, data, 12).is_ok());

    for (DatagramTransport* r : {b.get(), c.get()}) {
      Collector got;
      drain_until(*r, got, data.size());
      // lo with an 8 MiB buffer loses nothing, and a run is cut in order.
      ASSERT_EQ(got.got.size(), data.size());
      for (std::size_t i = 0; i < data.size(); ++i)
        EXPECT_EQ(got.got[i], data[i]) << "datagram " << i;
      EXPECT_EQ(counters(*r).truncated, 0u);
      EXPECT_EQ(counters(*r).datagrams_received, data.size());
    }
    const UdpCounters k = counters(*a);
    EXPECT_EQ(k.datagrams_sent, data.size());  // every segment counts
    EXPECT_EQ(k.bytes_sent, bytes);
    EXPECT_FALSE(k.gso_off);
    if (mode == "off" || data.size() == 1) {
      EXPECT_EQ(k.gso_sends, 0u);
    } else {
      EXPECT_GT(k.gso_sends, 0u);
    }
    // Every run sent whole was read whole by the GRO receiver, and by
    // nobody else.
    EXPECT_EQ(counters(*b).coalesced_reads, 0u);
    EXPECT_EQ(counters(*c).coalesced_reads, k.gso_sends);
    EXPECT_EQ(counters(*b).reads, data.size());
    EXPECT_EQ(counters(*c).reads, k.messages_sent);
  }
}

// Runs cut by the test drop hook and sent out of order: a GRO receiver
// drops single segments of a coalesced read, keeps the rest byte-exact,
// and what it drops plus what it delivers is what was sent.
TEST(UdpGroTest, LossInsideCoalescedReadsAndReorderedRuns) {
  SKIP_WITHOUT_MULTICAST();
  UdpConfig rc = config(980, "off", "on");
  rc.test_drop_permille = 100;
  rc.test_drop_seed = 7;
  auto a = make(config(980, "on"));
  auto r = make(rc);
  ASSERT_TRUE(a && r);
  // 600 datagrams with distinct contents, sent as runs of 1400-byte
  // datagrams in a shuffled order of 20-datagram blocks (each block ends
  // with a shorter datagram, so runs end there).
  std::vector<Bytes> data;
  for (std::uint32_t i = 0; i < 600; ++i) data.push_back(numbered(i, i % 20 == 19 ? 333 : 1400));
  std::vector<std::size_t> blocks(30);
  for (std::size_t b = 0; b < blocks.size(); ++b) blocks[b] = b;
  std::shuffle(blocks.begin(), blocks.end(), std::mt19937(5));
  std::vector<Bytes> order;
  for (std::size_t b : blocks) {
    for (std::size_t i = 0; i < 20; ++i) order.push_back(data[b * 20 + i]);
  }
  ASSERT_TRUE(send_all(*a, order, 40).is_ok());
  Collector got;
  const auto deadline = common::Deadline::after(3s);
  while (got.got.size() + counters(*r).test_dropped < order.size() && !deadline.expired()) {
    drain_until(*r, got, order.size(), 50ms);
  }
  const UdpCounters k = counters(*r);
  EXPECT_GT(k.coalesced_reads, 0u);
  EXPECT_GT(k.test_dropped, 20u);
  EXPECT_EQ(got.got.size() + k.test_dropped, order.size());
  EXPECT_LT(got.batches, got.got.size() / 4) << "datagrams are handed over in batches";
  // What arrived came in the order sent, each byte-exact.
  std::size_t at = 0;
  for (const Bytes& d : got.got) {
    while (at < order.size() && order[at] != d) ++at;
    ASSERT_LT(at, order.size()) << "a delivered datagram was not sent, or not in order";
    ++at;
  }
}

// The config's mode (setup fills it from MCCL_UDP_GRO, tested in
// setup_transport_settings_test); "auto" is the default.
TEST(UdpGroTest, ModeIsTheConfigsAndChecked) {
  SKIP_WITHOUT_MULTICAST();
  UdpConfig c = config(990, "off", UdpConfig{}.gro);
  auto d = make(c);
  ASSERT_TRUE(d);
  EXPECT_TRUE(as_udp(d.get())->info().gro) << "auto by default, and this kernel takes it";
  c.gro = "off";
  auto off = make(c);
  ASSERT_TRUE(off);
  EXPECT_FALSE(as_udp(off.get())->info().gro);
  c.gro = "sometimes";
  std::unique_ptr<DatagramTransport> bad;
  common::Status s = create_udp_transport(c, bad);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("gro"), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(Modes, UdpGsoDelivery, ::testing::Values("off", "on", "auto"),
                         [](const auto& p) { return p.param; });

// The config's mode (setup fills it from MCCL_UDP_GSO, tested in
// setup_transport_settings_test); "auto" is the default.
TEST(UdpGsoTest, ModeIsTheConfigsAndChecked) {
  SKIP_WITHOUT_MULTICAST();
  UdpConfig c = config(950, UdpConfig{}.gso);
  auto d = make(c);
  ASSERT_TRUE(d);
  EXPECT_TRUE(as_udp(d.get())->info().gso) << "auto by default, and this kernel takes it";
  c.gso = "off";
  auto t = make(c);
  ASSERT_TRUE(t);
  EXPECT_FALSE(as_udp(t.get())->info().gso);
  c.gso = "sometimes";  // the settings table checks only the environment's value
  std::unique_ptr<DatagramTransport> bad;
  common::Status s = create_udp_transport(c, bad);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("gso"), std::string::npos) << s.message();
}

// The transport's send socket: the socket of this process bound to
// 127.0.0.1:port. Found through /proc/self/fd, so that the test can break
// it without a hook in the library.
int send_socket_of(std::uint16_t port) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* e = ::readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    if (fd <= 2) continue;
    sockaddr_in sa{};
    socklen_t len = sizeof sa;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0 &&
        sa.sin_family == AF_INET && ntohs(sa.sin_port) == port &&
        sa.sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
      found = fd;
    }
  }
  ::closedir(dir);
  return found;
}

// The kernel refuses UDP_SEGMENT on a socket that sends without UDP
// checksums (EINVAL) but still sends single datagrams: the one way to
// make it refuse GSO at send time on lo.
void refuse_gso(DatagramTransport& t) {
  const int fd = send_socket_of(as_udp(&t)->info().send_port);
  ASSERT_GE(fd, 0);
  const int one = 1;
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof one), 0);
}

TEST(UdpGsoTest, AutoFallsBackForGoodWhenASendIsRefused) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(960, "auto"));
  auto b = make(config(960, "off"));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(as_udp(a.get())->info().gso);
  refuse_gso(*a);
  std::vector<Bytes> data;
  for (std::uint32_t i = 0; i < 100; ++i) data.push_back(numbered(i, i == 99 ? 100 : 1472));
  ASSERT_TRUE(send_all(*a, data, 12).is_ok());
  ASSERT_TRUE(send_all(*a, data, 12).is_ok());
  Collector got;
  drain_until(*b, got, 2 * data.size());
  ASSERT_EQ(got.got.size(), 2 * data.size());
  for (std::size_t i = 0; i < got.got.size(); ++i) EXPECT_EQ(got.got[i], data[i % data.size()]);
  const UdpCounters k = counters(*a);
  EXPECT_TRUE(k.gso_off);
  EXPECT_EQ(k.gso_sends, 0u);
  EXPECT_EQ(k.datagrams_sent, 2 * data.size());
}

TEST(UdpGsoTest, OnReportsARefusedSend) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(config(970, "on"));
  ASSERT_TRUE(a);
  refuse_gso(*a);
  std::vector<Bytes> data;
  for (std::uint32_t i = 0; i < 10; ++i) data.push_back(numbered(i, 1472));
  common::Status s = send_all(*a, data, 12);
  EXPECT_EQ(s.code(), ErrorCode::kTransportError);
  EXPECT_NE(s.message().find("MCCL_UDP_GSO"), std::string::npos) << s.message();
  EXPECT_FALSE(counters(*a).gso_off);
  EXPECT_EQ(counters(*a).datagrams_sent, 0u);
}

}  // namespace
}  // namespace mccl::transport::udp
