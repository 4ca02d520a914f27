// Broadcast and allgather with ranks on threads of this process over UDP
// loopback multicast (TCP repairs), with the kernel's offloads in every
// combination: GSO on the send side and GRO on the receive side, each off
// and on. Datagrams are the size MTU 1500 gives (1472 bytes, 1432 of
// payload), so a GSO run holds 44 of them. The sizes end inside a datagram,
// at its end, inside a run and at a run's end; each receiver drops 5% of the
// datagrams it reads (single datagrams cut out of coalesced reads too),
// which the ranks repair. Every byte is checked, with datagrams
// authenticated (MCCL_PROTO_AUTH: a 16-byte MAC takes payload room, so a
// run holds 44 datagrams of 1416 payload bytes) and not.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "harness.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

using Param = std::tuple<bool, bool, bool>;  // GSO, GRO, authenticated
class UdpOffload : public ::testing::TestWithParam<Param> {};

TEST_P(UdpOffload, BroadcastAndAllgatherAreByteExactUnderLoss) {
  const auto [gso, gro, auth] = GetParam();
  if (auth && !MCCL_TEST_HAVE_AUTH)
    GTEST_SKIP() << "built without authentication: auth cannot be on";
  const std::size_t kChunk = 1472 - (auth ? 56 : 40);  // payload of a full datagram
  const std::size_t kRun = 44 * kChunk;                // payload of a full GSO run (64 KB)
  ScopedEnv env;
  env.set("MCCL_PROTO_AUTH", auth ? "on" : "off");
  env.set("MCCL_UDP_GSO", gso ? "on" : "off");
  env.set("MCCL_UDP_GRO", gro ? "on" : "off");
  env.set("MCCL_UDP_MAX_DATAGRAM", "1472");
  env.set("MCCL_UDP_TEST_DROP_PERMILLE", "50");
  env.set("MCCL_RELIABLE", "tcp");
  constexpr int n = 3;
  InProcessWorld world(n);
  auto comms = create_communicators(
      world, {.transport = TransportKind::kUdp, .progress = ProgressKind::kInline, .timeout = 60s});
  std::vector<Communicator*> every;
  for (auto& c : comms) every.push_back(&c);

  std::uint64_t salt = 7000 + (gso ? 10 : 0) + (gro ? 1 : 0) + (auth ? 100 : 0);
  for (std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, kChunk - 1, kChunk, kChunk + 1, kRun - 1, kRun, kRun + 1,
        3 * kRun + kChunk / 2, std::size_t{1} << 20}) {
    ++salt;
    SCOPED_TRACE("gso=" + std::to_string(gso) + " gro=" + std::to_string(gro) +
                 " auth=" + std::to_string(auth) + " bytes=" + std::to_string(bytes));
    const int root = static_cast<int>(bytes % n);
    std::vector<std::vector<std::byte>> bcast(n, std::vector<std::byte>(bytes));
    fill(bcast[root].data(), bytes, root, salt);
    std::vector<std::vector<std::byte>> send(n, std::vector<std::byte>(bytes));
    std::vector<std::vector<std::byte>> recv(n, std::vector<std::byte>(n * bytes));
    std::vector<Request> reqs;
    for (int r = 0; r < n; ++r) {
      fill(send[r].data(), bytes, r, salt + 1);
      reqs.push_back(comms[r].ibroadcast(bcast[r].data(), bytes, root));
      reqs.push_back(comms[r].iallgather(send[r].data(), recv[r].data(), bytes));
    }
    drive(reqs, 60s, every);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(first_mismatch(bcast[r].data(), bytes, root, salt), bytes)
          << "broadcast, rank " << r;
      for (int s = 0; s < n; ++s) {
        ASSERT_EQ(first_mismatch(recv[r].data() + s * bytes, bytes, s, salt + 1), bytes)
            << "allgather, rank " << r << ", block of rank " << s;
      }
    }
  }
  std::uint64_t repairs = 0;
  for (auto& c : comms) repairs += c.stats().repairs_requested;
  EXPECT_GT(repairs, 0u) << "5% of the datagrams were dropped, yet nothing was repaired";
}

INSTANTIATE_TEST_SUITE_P(Offloads, UdpOffload,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                                            ::testing::Bool()),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param) ? "gso" : "nogso") + "_" +
                                  (std::get<1>(p.param) ? "gro" : "nogro") + "_" +
                                  (std::get<2>(p.param) ? "auth" : "noauth");
                         });

}  // namespace
}  // namespace mccl::testing
