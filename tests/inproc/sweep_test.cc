// The byte-exactness sweep of the multicast protocol: broadcast and
// allgather(v) over ranks, sizes, roots and fault rates on the in-memory
// fabric, every rank driven round-robin from the test's thread, multicast
// at every size (algorithms_test.cc sweeps the point-to-point algorithms
// that the algorithm table picks for small sizes). Each case names its seed.
#include <gtest/gtest.h>

#include <tuple>

#include "harness.h"

namespace mccl::testing {
namespace {

constexpr std::size_t kMtu = 1500;
constexpr std::size_t kPayload = kMtu - 40;  // chunk payload: the "MTU" of a stream
constexpr auto kDeadline = std::chrono::seconds(60);

SimFabricOptions faults(double loss, std::uint64_t seed) {
  SimFabricOptions f;
  f.mtu = kMtu;
  f.loss = loss;
  // Wherever there is loss, there is also duplication and reordering.
  f.duplicate = loss > 0 ? loss / 4 : 0;
  f.reorder = loss > 0 ? loss / 2 : 0;
  f.seed = seed;
  return f;
}

void broadcast_case(int n, std::size_t bytes, double loss, std::vector<int> roots,
                    std::uint64_t seed) {
  SimFabricOptions f = faults(loss, seed);
  SCOPED_TRACE(describe(n, bytes, f));
  InProcessWorld world(n, f);
  auto comms = create_communicators(world, multicast_only());
  std::vector<std::vector<std::byte>> bufs(n, std::vector<std::byte>(bytes));
  for (int root : roots) {
    SCOPED_TRACE("root=" + std::to_string(root));
    for (int r = 0; r < n; ++r) {
      if (r == root) {
        fill(bufs[r].data(), bytes, root, seed);
      } else {
        std::fill(bufs[r].begin(), bufs[r].end(), std::byte{0});
      }
    }
    std::vector<Request> reqs;
    for (int r = 0; r < n; ++r) reqs.push_back(comms[r].ibroadcast(bufs[r].data(), bytes, root));
    drive(reqs, kDeadline);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(first_mismatch(bufs[r].data(), bytes, root, seed), bytes) << "rank " << r;
    }
  }
}

void allgather_case(int n, std::size_t m, double loss, std::uint64_t seed) {
  SimFabricOptions f = faults(loss, seed);
  SCOPED_TRACE(describe(n, m, f));
  InProcessWorld world(n, f);
  auto comms = create_communicators(world, multicast_only());
  std::vector<std::vector<std::byte>> send(n, std::vector<std::byte>(m));
  std::vector<std::vector<std::byte>> recv(n, std::vector<std::byte>(n * m));
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    fill(send[r].data(), m, r, seed);
    reqs.push_back(comms[r].iallgather(send[r].data(), recv[r].data(), m));
  }
  drive(reqs, kDeadline);
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(recv[r].data() + b * m, m, b, seed), m)
          << "rank " << r << " block " << b;
    }
  }
}

std::vector<int> all_roots(int n) {
  std::vector<int> v;
  for (int r = 0; r < n; ++r) v.push_back(r);
  return v;
}

// ---- broadcast: small teams, every root ------------------------------------

using BcastParam = std::tuple<int, std::size_t, double>;
class BroadcastSweep : public ::testing::TestWithParam<BcastParam> {};

TEST_P(BroadcastSweep, ByteExactFromEveryRoot) {
  auto [n, bytes, loss] = GetParam();
  broadcast_case(n, bytes, loss, all_roots(n), 1000 + n * 7 + bytes);
}

INSTANTIATE_TEST_SUITE_P(Small, BroadcastSweep,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8),
                                            ::testing::Values(0, 1, kPayload - 1, kPayload,
                                                              kPayload + 1, 64 << 10),
                                            ::testing::Values(0.0, 0.01, 0.1, 0.3)));

// ---- broadcast: larger teams and sizes, a few roots -------------------------

TEST(BroadcastLarge, Sixteen1MiBAllLossRates) {
  for (double loss : {0.0, 0.01, 0.1, 0.3}) broadcast_case(16, 1 << 20, loss, {0, 9, 15}, 16);
}

TEST(BroadcastLarge, SixtyFourRanks) {
  for (double loss : {0.0, 0.1}) broadcast_case(64, 64 << 10, loss, {0, 63}, 64);
}

TEST(BroadcastLarge, OneHundredTwentyEightRanks) {
  for (double loss : {0.0, 0.1}) broadcast_case(128, 64 << 10, loss, {5}, 128);
}

TEST(BroadcastLarge, SixtyFourMiB) { broadcast_case(3, 64 << 20, 0.01, {1}, 6464); }

// ---- allgather -------------------------------------------------------------

using AgParam = std::tuple<int, std::size_t, double>;
class AllgatherSweep : public ::testing::TestWithParam<AgParam> {};

TEST_P(AllgatherSweep, ByteExact) {
  auto [n, m, loss] = GetParam();
  allgather_case(n, m, loss, 2000 + n * 13 + m);
}

INSTANTIATE_TEST_SUITE_P(Small, AllgatherSweep,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8, 16),
                                            ::testing::Values(0, 1, kPayload - 1, kPayload,
                                                              kPayload + 1, 64 << 10),
                                            ::testing::Values(0.0, 0.01, 0.1, 0.3)));

TEST(AllgatherLarge, EightRanks1MiB) {
  for (double loss : {0.0, 0.1}) allgather_case(8, 1 << 20, loss, 81);
}

TEST(AllgatherLarge, SixtyFourRanks64KiB) { allgather_case(64, 64 << 10, 0.1, 6464); }

// The acceptance case: 128 ranks, 10% loss, 64 KiB per rank (1 GiB
// of receive buffers in this process).
TEST(AllgatherLarge, OneHundredTwentyEightRanks64KiBTenPercentLoss) {
  allgather_case(128, 64 << 10, 0.1, 128128);
}

TEST(AllgatherLarge, TwoRanks64MiB) { allgather_case(2, 64 << 20, 0.01, 264); }

}  // namespace
}  // namespace mccl::testing
