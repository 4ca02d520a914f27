// The whole protocol over the ibud transport on the fake verbs: broadcast
// and allgather sweeps over ranks {1,2,3,5,8} and sizes {0, 1, MTU-1, MTU,
// MTU+1, 64 KiB, 1 MiB} (MTU = a datagram's payload: 4096 - 40), byte-exact,
// with the fake fabric losing datagrams two ways: seeded random loss, and
// the HCA dropping whatever arrives when a receiver's small ring of posted
// receives is used up (bursts from several roots at once). Repair runs
// over the sim fabric's reliable endpoints. Each case names its seed.
#include <gtest/gtest.h>

#include <tuple>

#include "ibud_rig.h"
#include "transport/ibud/fake_verbs.h"

namespace mccl::testing::ibud {
namespace {

using namespace std::chrono_literals;
using transport::ibud::FakeFabric;
using transport::ibud::FakeFabricConfig;
using transport::ibud::IbConfig;

constexpr std::uint32_t kTag = 0x1BD00001;
constexpr std::size_t kChunk = 4096 - protocol::kDataHeaderBytes;
constexpr auto kLimit = 60s;

DgramFactory fake_ib(FakeFabric& fabric, std::size_t rx_depth) {
  return [&fabric, rx_depth](int rank) -> std::unique_ptr<transport::DatagramTransport> {
    IbConfig c;
    c.comm_tag = kTag;
    c.rank = rank;
    c.rx_depth = rx_depth;
    c.signal_every = 16;
    c.verbs = fabric.add_host();
    std::unique_ptr<transport::DatagramTransport> t;
    auto st = transport::ibud::create_ib_transport(c, t);
    EXPECT_TRUE(st.is_ok()) << "rank " << rank << ": " << st.message();
    return t;
  };
}

class IbudSweep : public ::testing::TestWithParam<std::tuple<int, std::size_t>> {};

TEST_P(IbudSweep, BroadcastAndAllgatherAreByteExactUnderLoss) {
  const auto [n, bytes] = GetParam();
  const std::uint64_t seed = 0x5EED0000ull + static_cast<std::uint64_t>(n) * 1000003u + bytes;
  FakeFabricConfig fc;
  fc.loss = 0.02;
  fc.seed = seed;
  constexpr std::size_t kRxDepth = 128;  // bursts of several roots overflow it
  SCOPED_TRACE("ranks=" + std::to_string(n) + " bytes=" + std::to_string(bytes) +
               " loss=0.02 rx_depth=128 seed=" + std::to_string(seed));
  FakeFabric fabric(fc);
  ContextRig rig(n, kTag, fake_ib(fabric, kRxDepth));
  ASSERT_TRUE(rig.ok());
  ASSERT_EQ(rig.chunk(), kChunk);
  rig.broadcast(bytes, 0, seed, kLimit);
  if (n > 1) rig.broadcast(bytes, n - 1, seed + 1, kLimit);
  rig.allgather(bytes, seed + 2, kLimit);

  const auto c = fabric.counters();
  EXPECT_EQ(c.send_len_errors + c.recv_len_errors + c.prot_errors + c.destroy_errors, 0u);
  if (n == 8 && bytes == (1u << 20)) {
    // The largest case must have met both kinds of loss and repaired them.
    EXPECT_GT(c.lost, 0u);
    EXPECT_GT(c.no_recv_dropped, 0u);
    std::uint64_t repairs = 0;
    for (int r = 0; r < n; ++r) repairs += rig.stats(r).repairs_requested;
    EXPECT_GT(repairs, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    RanksBySize, IbudSweep,
    ::testing::Combine(::testing::Values(1, 2, 3, 5, 8),
                       ::testing::Values(std::size_t{0}, std::size_t{1}, kChunk - 1, kChunk,
                                         kChunk + 1, std::size_t{64} << 10, std::size_t{1} << 20)),
    [](const auto& param_info) {
      return "ranks" + std::to_string(std::get<0>(param_info.param)) + "_bytes" +
             std::to_string(std::get<1>(param_info.param));
    });

// Without loss and with the default ring depth nothing is dropped and
// nothing repaired: the datagram path alone carries the collective.
TEST(IbudProtocol, LosslessRunNeedsNoRepair) {
  FakeFabric fabric;
  // Loss timers far longer than any pause of the round-robin driver.
  protocol::ProtocolConfig patient;
  patient.stall_min = 50ms;
  patient.stall_max = 100ms;
  patient.first_timeout = 100ms;
  ContextRig rig(5, kTag, fake_ib(fabric, 4096), patient);
  ASSERT_TRUE(rig.ok());
  rig.allgather(256 << 10, 42, kLimit);
  rig.broadcast(1 << 20, 2, 43, kLimit);
  EXPECT_EQ(fabric.counters().no_recv_dropped, 0u);
  for (int r = 0; r < 5; ++r) EXPECT_EQ(rig.stats(r).repairs_requested, 0u) << "rank " << r;
}

// Several collectives back to back on one set of transports, with loss:
// the receive ring and the staging ring wrap many times.
TEST(IbudProtocol, ManyCollectivesOnOneCommunicator) {
  FakeFabricConfig fc;
  fc.loss = 0.01;
  fc.seed = 99;
  FakeFabric fabric(fc);
  ContextRig rig(3, kTag, fake_ib(fabric, 256));
  ASSERT_TRUE(rig.ok());
  for (int i = 0; i < 20; ++i) {
    rig.broadcast(40000 + static_cast<std::size_t>(i) * 997, i % 3, 1000u + i, kLimit);
    rig.allgather(10000 + static_cast<std::size_t>(i) * 331, 2000u + i, kLimit);
  }
}

}  // namespace
}  // namespace mccl::testing::ibud
