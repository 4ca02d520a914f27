// The ibud transport on a real HCA: what the fake verbs cannot prove. Each
// test skips, with the reason, when this node has no usable InfiniBand
// port (setup::ib_usable). Several transports in one process join the same group
// on the same port, so every datagram crosses the HCA and (for multicast
// loopback) the switch's replication back to the port.
//
// Environment: the MCCL_IB_* settings apply as in production (the configs
// come from setup::ib_config_from_settings); MCCL_LOG_LEVEL=info shows the resolved QPN, Q_Key,
// MGID.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <iostream>
#include <tuple>

#include "datagram_collector.h"
#include "ibud_rig.h"
#include "setup/transport_settings.h"
#include "setup/transports.h"

namespace mccl::testing::ibud {
namespace {

using namespace std::chrono_literals;
using transport::ibud::IbConfig;

constexpr auto kLimit = 60s;

// The tag differs per process so that concurrent runs on one fabric do not
// share a group.
std::uint32_t tag() { return 0x1B000000u ^ static_cast<std::uint32_t>(::getpid()); }

#define SKIP_WITHOUT_HCA()                           \
  do {                                               \
    std::string why;                                 \
    if (!setup::ib_usable(why)) GTEST_SKIP() << why; \
  } while (0)

DgramFactory real_ib(std::uint32_t comm_tag) {
  return [comm_tag](int rank) -> std::unique_ptr<transport::DatagramTransport> {
    IbConfig c = setup::ib_config_from_settings();
    c.comm_tag = comm_tag;
    c.rank = rank;
    std::unique_ptr<transport::DatagramTransport> t;
    auto st = transport::ibud::create_ib_transport(c, t);
    EXPECT_TRUE(st.is_ok()) << "rank " << rank << ": " << st.message();
    return t;
  };
}

using Collect = transport::test::Collector;

TEST(IbHardware, DescribeDevices) {
  SKIP_WITHOUT_HCA();
  const std::string text = transport::ibud::describe_ib_devices();
  std::cout << text;
  EXPECT_NE(text.find("multicast join: ok"), std::string::npos) << text;
}

// Datagrams cross the HCA, arrive whole, and the sender's own copy (looped
// back by the HCA to its own attached QP) is filtered.
TEST(IbHardware, TwoTransportsOnOnePort) {
  SKIP_WITHOUT_HCA();
  auto make = real_ib(tag());
  auto a = make(0), b = make(1);
  ASSERT_TRUE(a && b);
  const std::size_t mtu = a->caps().mtu;
  std::vector<Bytes> payloads;
  std::vector<transport::OutDatagram> batch;
  const Bytes header(40, std::byte{7});
  for (std::size_t i = 0; i < 100; ++i)
    payloads.emplace_back(i % 2 ? mtu - 40 : 1 + i, std::byte(i));
  for (const auto& p : payloads) batch.push_back({header, p});
  std::size_t sent = 0;
  Collect at_b, at_a;
  auto deadline = common::Deadline::after(5s);
  while ((sent < batch.size() || at_b.got.size() < batch.size()) && !deadline.expired()) {
    std::size_t accepted = 0, n = 0;
    ASSERT_TRUE(a->send(std::span(batch).subspan(sent), accepted).is_ok());
    sent += accepted;
    ASSERT_TRUE(b->poll(at_b, 1000, n).is_ok());
    ASSERT_TRUE(a->poll(at_a, 1000, n).is_ok());
  }
  ASSERT_EQ(at_b.got.size(), batch.size()) << "datagrams lost on an idle port";
  for (std::size_t i = 0; i < batch.size(); ++i) {
    ASSERT_EQ(at_b.got[i].size(), 40 + payloads[i].size());
    EXPECT_EQ(at_b.got[i].back(), std::byte(i));
  }
  EXPECT_TRUE(at_a.got.empty()) << "own datagrams must be filtered";
  EXPECT_GT(transport::ibud::as_ib(a.get())->counters().own_dropped, 0u) << "no loopback seen";
}

// wait_fd() turns readable when a datagram arrives for a poll() that armed it.
TEST(IbHardware, CompletionChannelWakesASleeper) {
  SKIP_WITHOUT_HCA();
  auto make = real_ib(tag() ^ 1);
  auto a = make(0), b = make(1);
  ASSERT_TRUE(a && b);
  Collect got;
  std::size_t n = 0;
  ASSERT_TRUE(b->poll(got, 100, n).is_ok());  // empty: arms
  const Bytes header(40), payload(10);
  transport::OutDatagram d{header, payload};
  ASSERT_TRUE(a->send(std::span(&d, 1), n).is_ok());
  pollfd p{b->wait_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1) << "no completion event within 2 s";
  ASSERT_TRUE(b->poll(got, 100, n).is_ok());
  EXPECT_EQ(got.got.size(), 1u);
}

class IbHardwareSweep : public ::testing::TestWithParam<std::tuple<int, int>> {};

// The sweep of tests/unit/ibud_protocol_test.cc on the real port. Size
// kinds: 0, 1, MTU-1, MTU, MTU+1 (MTU = the port's datagram payload),
// 64 KiB, 1 MiB.
TEST_P(IbHardwareSweep, BroadcastAndAllgatherAreByteExact) {
  SKIP_WITHOUT_HCA();
  const auto [n, kind] = GetParam();
  const std::uint32_t comm_tag = tag() ^ static_cast<std::uint32_t>(n * 16 + kind + 2);
  ContextRig rig(n, comm_tag, real_ib(comm_tag));
  ASSERT_TRUE(rig.ok());
  const std::size_t c = rig.chunk();
  const std::size_t sizes[] = {0, 1, c - 1, c, c + 1, 64 << 10, 1 << 20};
  const std::size_t bytes = sizes[kind];
  const std::uint64_t seed = static_cast<std::uint64_t>(n) * 7919 + bytes;
  SCOPED_TRACE("ranks=" + std::to_string(n) + " bytes=" + std::to_string(bytes));
  rig.broadcast(bytes, 0, seed, kLimit);
  if (n > 1) rig.broadcast(bytes, n - 1, seed + 1, kLimit);
  rig.allgather(bytes, seed + 2, kLimit);
}

INSTANTIATE_TEST_SUITE_P(RanksBySize, IbHardwareSweep,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8),
                                            ::testing::Range(0, 7)));

}  // namespace
}  // namespace mccl::testing::ibud
