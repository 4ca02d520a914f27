// Authenticated datagrams over real UDP multicast on lo (a private network
// namespace when root): three protocol contexts, each with its own UDP
// transport (GSO and GRO off and on), repairs over the in-memory mesh, and
// a forger: a plain socket of this process that sends to the group and
// port (what `ss` shows any local user) datagrams with the right tag, seq,
// root and layout and a valid CRC, or a MAC under a key of its own.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <optional>
#include <string>
#include <tuple>

#include "protocol/auth.h"
#include "protocol_rig.h"
#include "udp_test_util.h"

namespace mccl::protocol::test {
namespace {

using transport::udp::as_udp;
using transport::udp::create_udp_transport;
using transport::udp::UdpConfig;
using transport::udp::test::job_salt;
using transport::udp::test::set_lo_flags;

constexpr std::size_t kDatagram = 1472;  // what MTU 1500 gives

UdpConfig config(std::uint32_t tag, bool gso, bool gro) {
  UdpConfig c;
  c.iface = "lo";
  c.comm_tag = tag;
  c.job_salt = job_salt();
  c.rate_mbit = -1;
  c.rcvbuf_bytes = 8u << 20;
  c.max_datagram = kDatagram;
  c.test_drop_permille = 0;
  c.gso = gso ? "on" : "off";
  c.gro = gro ? "on" : "off";
  return c;
}

const auto* const g_env = ::testing::AddGlobalTestEnvironment(
    new transport::udp::test::LoopbackEnvironment(config(0xC0FFEE, false, false)));

// Sends datagrams to the group as any local process could.
class Forger {
 public:
  explicit Forger(const transport::udp::GroupAddress& g) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    in_addr lo{};
    lo.s_addr = htonl(INADDR_LOOPBACK);
    ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo);
    to_.sin_family = AF_INET;
    to_.sin_port = htons(g.port);
    ::inet_pton(AF_INET, g.ip.c_str(), &to_.sin_addr);
  }
  ~Forger() { ::close(fd_); }
  Forger(const Forger&) = delete;
  Forger& operator=(const Forger&) = delete;
  void send(const Bytes& d) {
    ASSERT_EQ(
        ::sendto(fd_, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to_), sizeof to_),
        static_cast<ssize_t>(d.size()));
  }

 private:
  int fd_ = -1;
  sockaddr_in to_{};
};

// Chunk `index` of the first collective's stream of root 0, filled with
// 0xEE, with a valid CRC (mac null) or a MAC under `mac`'s key.
Bytes forged(const DatagramMac* mac, std::uint32_t chunk_bytes, std::uint64_t total,
             std::uint32_t index) {
  DataHeader h;
  h.comm_tag = kTag;
  h.seq = 1;
  h.root = 0;
  h.chunk_index = index;
  h.chunk_bytes = chunk_bytes;
  h.total_bytes = total;
  h.payload_len = static_cast<std::uint16_t>(chunk_length(total, chunk_bytes, index));
  Bytes payload(h.payload_len, std::byte{0xEE});
  const std::size_t hb = data_header_bytes(mac != nullptr);
  Bytes d(hb + payload.size());
  encode_data_header(h, payload, true, DataAuth{mac, 1, 1}, d.data());
  std::copy(payload.begin(), payload.end(), d.begin() + static_cast<std::ptrdiff_t>(hb));
  return d;
}

using Param = std::tuple<bool, bool, bool>;  // auth, GSO, GRO
class UdpAuth : public ::testing::TestWithParam<Param> {};

// Without auth the forged chunk is placed and the root's own is then a
// duplicate: the defect. With auth it is dropped and every byte is the root's.
TEST_P(UdpAuth, ForgedDatagramsOnTheGroup) {
  SKIP_WITHOUT_MULTICAST();
  // Plain variables, not a structured binding: Clang 14 cannot capture one.
  const auto auth = std::get<0>(GetParam());
  const auto gso = std::get<1>(GetParam());
  const auto gro = std::get<2>(GetParam());
  if (auth && !auth_available()) GTEST_SKIP() << "built without authentication";
  ProtocolConfig pc = patient();
  pc.chunk_bytes = static_cast<std::uint32_t>(kDatagram - kDataHeaderBytes);
  const AuthKey key = random_auth_key();
  if (auth) enable_auth(pc, key);
  const std::uint32_t chunk = pc.chunk_bytes;
  transport::udp::GroupAddress group;
  Rig rig(3, clean(), pc, [&](std::unique_ptr<transport::DatagramTransport>, int) {
    std::unique_ptr<transport::DatagramTransport> t;
    common::Status s = create_udp_transport(config(kTag, gso, gro), t);
    EXPECT_TRUE(s.is_ok()) << s.message();
    group = as_udp(t.get())->info().group;
    return t;
  });
  // Several GSO runs' worth, ending inside a datagram.
  const std::size_t bytes = 100 * chunk + 17;
  Broadcast b(rig, bytes, 0, /*seed=*/77);
  for (int r = 1; r < 3; ++r) b.start(rig, r);

  Forger forger(group);
  // A MAC under a key of the forger's own; only where MACs exist (a build
  // without authentication aborts on constructing one).
  std::optional<DatagramMac> guess;
  if (auth) guess.emplace(random_auth_key());
  std::vector<Bytes> lies;
  for (std::uint32_t i : {0u, 1u, 50u, 100u}) {
    lies.push_back(forged(nullptr, chunk, bytes, i));
    if (auth) lies.push_back(forged(&*guess, chunk, bytes, i));
  }
  for (const auto& d : lies) forger.send(d);
  // The receivers read the lies before the root sends anything.
  auto seen = [&](int r) {
    Stats s = rig.stats(r);
    return s.dropped_invalid + s.mcast_datagrams_received + s.early_arrivals_stored;
  };
  auto deadline = common::Deadline::after(kDeadline);
  while ((seen(1) < lies.size() || seen(2) < lies.size()) && !deadline.expired()) {
    rig.progress_all();
  }
  b.start(rig, 0);
  ASSERT_TRUE(rig.run(b.ops));
  for (int r = 1; r < 3; ++r) {
    Stats s = rig.stats(r);
    if (auth) {
      EXPECT_EQ(s.dropped_invalid, lies.size()) << "rank " << r;
    } else {
      EXPECT_EQ(b.bufs[r][0], std::byte{0xEE}) << "rank " << r << ": the lie was not placed";
    }
  }
  if (auth) b.expect_exact();
}

INSTANTIATE_TEST_SUITE_P(Loopback, UdpAuth,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                                            ::testing::Bool()),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param) ? "auth" : "noauth") + "_" +
                                  (std::get<1>(p.param) ? "gso" : "nogso") + "_" +
                                  (std::get<2>(p.param) ? "gro" : "nogro");
                         });

}  // namespace
}  // namespace mccl::protocol::test
