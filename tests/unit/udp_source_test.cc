// The UDP transport's source filter (UdpTransport::accept_only_from): where
// the members' addresses differ, a datagram from any other address is
// dropped before the handler sees it, counted in foreign_dropped and
// reported through on_foreign_datagrams; where they share one address (one
// host) nothing is filtered. On lo (a private network namespace when
// root): the members send from 127.0.0.1, the stranger from 127.0.0.2,
// which lo owns as part of 127.0.0.0/8.
#include <arpa/inet.h>
#include <net/if.h>
#include <sched.h>

#include "udp_test_util.h"

namespace mccl::transport::udp::test {
namespace {

UdpConfig config() {
  UdpConfig c;
  c.iface = "lo";
  c.comm_tag = 0x50A4CE;
  c.job_salt = job_salt();
  c.rate_mbit = -1;
  c.rcvbuf_bytes = 4u << 20;
  c.max_datagram = 1472;
  c.test_drop_permille = 0;
  return c;
}

const auto* const g_env = ::testing::AddGlobalTestEnvironment(new LoopbackEnvironment(config()));

// Counts what the transport reports as foreign besides what it delivers.
struct Receiver : Collector {
  std::size_t foreign = 0;
  void on_foreign_datagrams(std::size_t count) override { foreign += count; }
};

// A plain socket on lo bound to `source`: what another host (or a process
// that binds another loopback address) puts on the group.
class Stranger {
 public:
  Stranger(const char* source, const GroupAddress& g) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &from.sin_addr);
    bound_ = ::bind(fd_, reinterpret_cast<const sockaddr*>(&from), sizeof from) == 0;
    ip_mreqn via{};
    via.imr_ifindex = static_cast<int>(::if_nametoindex("lo"));
    bound_ = bound_ && ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_IF, &via, sizeof via) == 0;
    to_.sin_family = AF_INET;
    to_.sin_port = htons(g.port);
    ::inet_pton(AF_INET, g.ip.c_str(), &to_.sin_addr);
  }
  ~Stranger() { ::close(fd_); }
  Stranger(const Stranger&) = delete;
  Stranger& operator=(const Stranger&) = delete;
  bool ready() const { return bound_; }
  void send(std::size_t n) {
    const std::vector<std::byte> d(100, std::byte{0x5A});
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(
          ::sendto(fd_, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to_), sizeof to_),
          static_cast<ssize_t>(d.size()));
    }
  }

 private:
  int fd_ = -1;
  bool bound_ = false;
  sockaddr_in to_{};
};

void send_from_member(DatagramTransport& t, std::size_t n) {
  const std::vector<std::byte> header(8, std::byte{0x11}), payload(64, std::byte{0x22});
  std::vector<OutDatagram> batch(n, OutDatagram{header, payload});
  std::size_t accepted = 0;
  ASSERT_TRUE(t.send(batch, accepted).is_ok());
  ASSERT_EQ(accepted, n);
}

// Polls until the receiver has `delivered` datagrams and `foreign` drops,
// or 5 s passed (a generous deadline: loopback delivers in microseconds).
void drain(DatagramTransport& t, Receiver& r, std::size_t delivered, std::size_t foreign) {
  const auto deadline = common::Deadline::after(std::chrono::seconds(5));
  while ((r.got.size() < delivered || r.foreign < foreign) && !deadline.expired()) {
    std::size_t n = 0;
    ASSERT_TRUE(t.poll(r, 64, n).is_ok());
    if (n == 0) {
      pollfd p{t.wait_fd(), POLLIN, 0};
      ::poll(&p, 1, 5);
    }
  }
}

TEST(UdpSourceFilter, StrangersAreDroppedWhereMembersDiffer) {
  SKIP_WITHOUT_MULTICAST();
  auto member = make(config());
  auto receiver = make(config());
  ASSERT_TRUE(member && receiver);
  // Two members' addresses that differ: this host's and another host's.
  ASSERT_TRUE(as_udp(receiver.get())->accept_only_from({"127.0.0.1", "192.0.2.7"}).is_ok());
  Stranger stranger("127.0.0.2", as_udp(receiver.get())->info().group);
  ASSERT_TRUE(stranger.ready());
  stranger.send(5);
  send_from_member(*member, 3);
  Receiver r;
  drain(*receiver, r, 3, 5);
  EXPECT_EQ(r.got.size(), 3u);  // the member's, and nothing of the stranger's
  for (const auto& d : r.got) EXPECT_EQ(d.size(), 72u);
  EXPECT_EQ(r.foreign, 5u);
  EXPECT_EQ(counters(*receiver).foreign_dropped, 5u);
}

TEST(UdpSourceFilter, NoFilterWhereMembersShareAnAddress) {
  SKIP_WITHOUT_MULTICAST();
  auto receiver = make(config());
  ASSERT_TRUE(receiver);
  // One host: every member sends from 127.0.0.1, which the stranger could
  // use as well; authentication, not the address, keeps it out.
  ASSERT_TRUE(as_udp(receiver.get())->accept_only_from({"127.0.0.1", "127.0.0.1"}).is_ok());
  Stranger stranger("127.0.0.2", as_udp(receiver.get())->info().group);
  ASSERT_TRUE(stranger.ready());
  stranger.send(4);
  Receiver r;
  drain(*receiver, r, 4, 0);
  EXPECT_EQ(r.got.size(), 4u);
  EXPECT_EQ(r.foreign, 0u);
  EXPECT_EQ(counters(*receiver).foreign_dropped, 0u);
}

TEST(UdpSourceFilter, RefusesAnAddressThatIsNotIpv4) {
  SKIP_WITHOUT_MULTICAST();
  auto receiver = make(config());
  ASSERT_TRUE(receiver);
  const common::Status s = as_udp(receiver.get())->accept_only_from({"127.0.0.1", "fe80::1"});
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.message();
}

}  // namespace
}  // namespace mccl::transport::udp::test
