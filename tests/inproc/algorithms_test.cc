// The allgather schedule with a bounded number of concurrent roots, and the
// point-to-point fallbacks (ring allgather, chain broadcast), under loss.
#include <gtest/gtest.h>

#include <tuple>

#include "harness.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

void allgather_with(int n, std::size_t m, const CommOptions& opts, double loss,
                    std::uint64_t seed) {
  SimFabricOptions f{.loss = loss, .duplicate = loss / 4, .reorder = loss / 2, .seed = seed};
  SCOPED_TRACE(describe(n, m, f));
  InProcessWorld world(n, f);
  auto comms = create_communicators(world, opts);
  std::vector<std::vector<std::byte>> send(n, std::vector<std::byte>(m));
  std::vector<std::vector<std::byte>> recv(n, std::vector<std::byte>(n * m));
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    fill(send[r].data(), m, r, seed);
    reqs.push_back(comms[r].iallgather(send[r].data(), recv[r].data(), m));
  }
  drive(reqs, 60s);
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(recv[r].data() + b * m, m, b, seed), m)
          << "rank " << r << " block " << b;
    }
  }
}

using RootsParam = std::tuple<int, int, double>;  // ranks, concurrent roots, loss
class ConcurrentRoots : public ::testing::TestWithParam<RootsParam> {};

TEST_P(ConcurrentRoots, ByteExact) {
  auto [n, roots, loss] = GetParam();
  SCOPED_TRACE("concurrent roots " + std::to_string(roots));
  allgather_with(n, 50000, {.allgather_concurrent_roots = roots}, loss, 300 + n * 7 + roots);
}

INSTANTIATE_TEST_SUITE_P(Schedule, ConcurrentRoots,
                         ::testing::Combine(::testing::Values(3, 5, 8), ::testing::Values(1, 2, 3),
                                            ::testing::Values(0.0, 0.1, 0.3)));

TEST(ConcurrentRoots, OneRootAtATimeStillUsesMulticastOnly) {
  const int n = 6;
  InProcessWorld world(n, {.seed = 12});
  auto comms = create_communicators(world, {.allgather_concurrent_roots = 1});
  std::vector<std::vector<std::byte>> recv(n, std::vector<std::byte>(n * 30000));
  std::vector<std::vector<std::byte>> send(n, std::vector<std::byte>(30000));
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    fill(send[r].data(), 30000, r, 12);
    reqs.push_back(comms[r].iallgather(send[r].data(), recv[r].data(), 30000));
  }
  drive(reqs, 60s);
  for (int r = 0; r < n; ++r) {
    Stats s = comms[r].stats();
    EXPECT_EQ(s.mcast_bytes_sent, 30000u);
    EXPECT_EQ(s.repairs_requested, 0u);
    EXPECT_EQ(s.p2p_bytes_sent, 0u);
  }
}

class Fallbacks : public ::testing::TestWithParam<std::tuple<int, std::size_t, double>> {};

TEST_P(Fallbacks, RingAllgatherAndChainBroadcast) {
  auto [n, m, loss] = GetParam();
  const std::uint64_t seed = 700 + n + m;
  CommOptions opts{.allgather_algorithm = AllgatherAlgorithm::kRing,
                   .broadcast_algorithm = BroadcastAlgorithm::kChain};
  allgather_with(n, m, opts, loss, seed);

  InProcessWorld world(n, {.loss = loss, .seed = seed});
  auto comms = create_communicators(world, opts);
  std::vector<std::vector<std::byte>> bufs(n, std::vector<std::byte>(m));
  for (int root = 0; root < n; ++root) {
    fill(bufs[root].data(), m, root, seed + root);
    std::vector<Request> reqs;
    for (int r = 0; r < n; ++r) reqs.push_back(comms[r].ibroadcast(bufs[r].data(), m, root));
    drive(reqs, 60s);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(first_mismatch(bufs[r].data(), m, root, seed + root), m)
          << "root " << root << " rank " << r;
    }
  }
  // The fallbacks never touch multicast, and the ring makes each rank send
  // (N-1) blocks.
  for (int r = 0; r < n; ++r) EXPECT_EQ(comms[r].stats().mcast_datagrams_sent, 0u);
}

INSTANTIATE_TEST_SUITE_P(PointToPoint, Fallbacks,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5),
                                            ::testing::Values(0, 1, 1461, 300000),
                                            ::testing::Values(0.0, 0.1)));

}  // namespace
}  // namespace mccl::testing
