// The allgather schedule with a bounded number of concurrent roots, and the
// point-to-point algorithms (ring and Bruck allgather, chain and binomial
// broadcast), under loss.
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
  allgather_with(n, 50000, multicast_only({.allgather_concurrent_roots = roots}), loss,
                 300 + n * 7 + roots);
}

INSTANTIATE_TEST_SUITE_P(Schedule, ConcurrentRoots,
                         ::testing::Combine(::testing::Values(3, 5, 8), ::testing::Values(1, 2, 3),
                                            ::testing::Values(0.0, 0.1, 0.3)));

TEST(ConcurrentRoots, OneRootAtATimeStillUsesMulticastOnly) {
  const int n = 6;
  InProcessWorld world(n, {.seed = 12});
  auto comms = create_communicators(world, multicast_only({.allgather_concurrent_roots = 1}));
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

// The point-to-point algorithms: the bandwidth ones (ring, pipelined chain)
// and the latency ones the algorithm table picks for small sizes (Bruck,
// binomial tree), pinned so that every size runs them.
struct PointToPoint {
  AllgatherAlgorithm allgather;
  BroadcastAlgorithm broadcast;
};
constexpr PointToPoint kRingChain{AllgatherAlgorithm::kRing, BroadcastAlgorithm::kChain};
constexpr PointToPoint kBruckBinomial{AllgatherAlgorithm::kBruck, BroadcastAlgorithm::kBinomial};

// A broadcast of `m` bytes from every root in turn, byte-exact everywhere,
// and never a multicast datagram: the point-to-point algorithms' check.
void broadcast_from_every_root(int n, std::size_t m, const CommOptions& opts, double loss,
                               std::uint64_t seed) {
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
  // The point-to-point algorithms never touch multicast.
  for (int r = 0; r < n; ++r) EXPECT_EQ(comms[r].stats().mcast_datagrams_sent, 0u);
}

class Fallbacks
    : public ::testing::TestWithParam<std::tuple<PointToPoint, int, std::size_t, double>> {};

TEST_P(Fallbacks, AllgatherAndBroadcastByteExact) {
  auto [algos, n, m, loss] = GetParam();
  const std::uint64_t seed = 700 + n + m;
  CommOptions opts{.allgather_algorithm = algos.allgather, .broadcast_algorithm = algos.broadcast};
  allgather_with(n, m, opts, loss, seed);
  broadcast_from_every_root(n, m, opts, loss, seed);
}

std::string point_to_point_name(
    const ::testing::TestParamInfo<std::tuple<PointToPoint, int, std::size_t, double>>& info) {
  auto [algos, n, m, loss] = info.param;
  return std::string(algos.allgather == AllgatherAlgorithm::kRing ? "RingChain" : "BruckBinomial") +
         "_n" + std::to_string(n) + "_m" + std::to_string(m) + (loss > 0 ? "_lossy" : "");
}

// Sizes: 0, 1, a sim datagram's payload and one either side of it, and one
// that spans several 128 KiB segments.
INSTANTIATE_TEST_SUITE_P(PointToPoint, Fallbacks,
                         ::testing::Combine(::testing::Values(kRingChain, kBruckBinomial),
                                            ::testing::Values(1, 2, 3, 5, 8),
                                            ::testing::Values(0, 1, 1460, 1461, 1462, 300000),
                                            ::testing::Values(0.0, 0.1)),
                         point_to_point_name);

// The flat tree (the root sends to every rank), which the table picks where
// ranks share cores: the same sizes and team sizes, pinned.
class FlatTree : public ::testing::TestWithParam<std::tuple<int, std::size_t, double>> {};

TEST_P(FlatTree, BroadcastByteExact) {
  auto [n, m, loss] = GetParam();
  broadcast_from_every_root(n, m, {.broadcast_algorithm = BroadcastAlgorithm::kFlat}, loss,
                            900 + n + m);
}

std::string flat_tree_name(
    const ::testing::TestParamInfo<std::tuple<int, std::size_t, double>>& info) {
  auto [n, m, loss] = info.param;
  return "n" + std::to_string(n) + "_m" + std::to_string(m) + (loss > 0 ? "_lossy" : "");
}

INSTANTIATE_TEST_SUITE_P(PointToPoint, FlatTree,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8),
                                            ::testing::Values(0, 1, 1460, 1461, 1462, 300000),
                                            ::testing::Values(0.0, 0.1)),
                         flat_tree_name);

// An allgatherv with uneven and zero counts pinned to `algo`, every team
// size to 9 (for Bruck, every shape of its last, partial round); with
// `reversed`, the blocks lie in the output in reverse rank order.
void uneven_allgatherv(AllgatherAlgorithm algo, bool reversed, std::uint64_t seed) {
  for (int n = 1; n <= 9; ++n) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    InProcessWorld world(n, {.seed = seed + n});
    auto comms = create_communicators(world, {.allgather_algorithm = algo});
    std::vector<std::size_t> counts(n), displs(n);
    std::size_t total = 0;
    for (int i = 0; i < n; ++i) {
      const int r = reversed ? n - 1 - i : i;
      counts[r] = r % 3 == 1 ? 0 : 700 * r + 13;
      displs[r] = total;
      total += counts[r];
    }
    std::vector<std::vector<std::byte>> send(n), recv(n, std::vector<std::byte>(total));
    std::vector<Request> reqs;
    for (int r = 0; r < n; ++r) {
      send[r].resize(counts[r]);
      fill(send[r].data(), counts[r], r, seed + 1);
      reqs.push_back(comms[r].iallgatherv(send[r].data(), recv[r].data(), counts, displs));
    }
    drive(reqs, 60s);
    for (int r = 0; r < n; ++r) {
      for (int b = 0; b < n; ++b) {
        ASSERT_EQ(first_mismatch(recv[r].data() + displs[b], counts[b], b, seed + 1), counts[b])
            << "rank " << r << " block " << b;
      }
    }
  }
}

TEST(Bruck, UnevenAndZeroCounts) { uneven_allgatherv(AllgatherAlgorithm::kBruck, false, 40); }

// The star allgather (through rank 0), which the table picks where ranks
// share cores: the sizes and team sizes of the other point-to-point
// algorithms, pinned; blocks out of rank order (the result gathered at rank
// 0 and placed piece by piece); blocks longer than a segment.
class StarAllgatherTest : public ::testing::TestWithParam<std::tuple<int, std::size_t, double>> {};

TEST_P(StarAllgatherTest, ByteExact) {
  auto [n, m, loss] = GetParam();
  allgather_with(n, m, {.allgather_algorithm = AllgatherAlgorithm::kStar}, loss, 1100 + n + m);
}

INSTANTIATE_TEST_SUITE_P(PointToPoint, StarAllgatherTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8),
                                            ::testing::Values(0, 1, 1460, 1461, 1462, 300000),
                                            ::testing::Values(0.0, 0.1)),
                         flat_tree_name);

TEST(StarAllgather, UnevenAndZeroCountsInAndOutOfRankOrder) {
  uneven_allgatherv(AllgatherAlgorithm::kStar, false, 60);
  uneven_allgatherv(AllgatherAlgorithm::kStar, true, 80);
}

TEST(StarAllgather, BlocksLongerThanASegment) {
  allgather_with(3, (4u << 20) + 1, {.allgather_algorithm = AllgatherAlgorithm::kStar}, 0.0, 1300);
}

// Ranks that pinned different allgather algorithms fail with kMismatch, not
// by a hang.
TEST(StarAllgather, AgainstBruckIsAMismatch) {
  constexpr int n = 4;
  InProcessWorld world(n, {.seed = 1400});
  auto comms = create_communicators_each(world, [](int r) {
    return CommOptions{
        .timeout = 60s,
        .allgather_algorithm = r == 0 ? AllgatherAlgorithm::kStar : AllgatherAlgorithm::kBruck};
  });
  std::vector<ErrorCode> codes(n, ErrorCode::kOk);
  std::vector<std::string> msgs(n);
  run_on_threads(comms, [&](Communicator& c) {
    std::vector<std::byte> send(100), recv(100 * n);
    codes[c.rank()] =
        code_of([&] { c.allgather(send.data(), recv.data(), send.size()); }, &msgs[c.rank()]);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(codes[r], ErrorCode::kMismatch) << "rank " << r << ": " << msgs[r];
  }
}

// The table's choice under kAuto, as the statistics show it: below the
// crossover point to point, from it up multicast; the settings move the
// crossover (0: multicast at every size).
struct TableRun {
  std::uint64_t p2p_collectives = 0;
  std::uint64_t mcast_datagrams = 0;
};

TableRun broadcast_and_allgather(int n, std::size_t m) {
  InProcessWorld world(n, {.seed = 90});
  auto comms = create_communicators(world);
  std::vector<std::vector<std::byte>> send(n, std::vector<std::byte>(m));
  std::vector<std::vector<std::byte>> recv(n, std::vector<std::byte>(n * m));
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    fill(send[r].data(), m, r, 90);
    reqs.push_back(comms[r].ibroadcast(send[r].data(), m, 0));
  }
  drive(reqs, 60s);
  reqs.clear();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(first_mismatch(send[r].data(), m, 0, 90), m) << "broadcast, rank " << r;
    fill(send[r].data(), m, r, 91);
    reqs.push_back(comms[r].iallgather(send[r].data(), recv[r].data(), m));
  }
  drive(reqs, 60s);
  TableRun out;
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b) {
      EXPECT_EQ(first_mismatch(recv[r].data() + b * m, m, b, 91), m) << "rank " << r;
    }
    Stats s = comms[r].stats();
    out.p2p_collectives += s.p2p_collectives;
    out.mcast_datagrams += s.mcast_datagrams_sent;
  }
  return out;
}

TEST(AlgorithmTable, SmallPointToPointLargeMulticast) {
  const int n = 5;
  TableRun small = broadcast_and_allgather(n, 100);
  EXPECT_EQ(small.p2p_collectives, 2u * n)
      << "a 100-byte broadcast and allgather go point to point";
  EXPECT_EQ(small.mcast_datagrams, 0u);
  TableRun large = broadcast_and_allgather(n, 1 << 20);
  EXPECT_EQ(large.p2p_collectives, 0u) << "1 MiB is past every crossover of the table";
  EXPECT_GT(large.mcast_datagrams, 0u);
}

// Where no rank forwards, a tree sends the message whole (coll/tree_broadcast.h):
// byte-exact at sizes that were several segments and past the 4 MiB cap.
TEST(TreeSegments, WholeMessagesWhereNobodyForwardsAreByteExact) {
  for (auto [n, algo] :
       {std::pair{2, BroadcastAlgorithm::kBinomial}, std::pair{2, BroadcastAlgorithm::kChain},
        std::pair{3, BroadcastAlgorithm::kFlat}}) {
    for (std::size_t m : {std::size_t{1} << 20, (std::size_t{8} << 20) + 1}) {
      InProcessWorld world(n, {.seed = 93});
      auto comms = create_communicators(world, {.broadcast_algorithm = algo});
      std::vector<std::vector<std::byte>> buf(n, std::vector<std::byte>(m));
      fill(buf[0].data(), m, 0, 93);
      std::vector<Request> reqs;
      for (int r = 0; r < n; ++r) reqs.push_back(comms[r].ibroadcast(buf[r].data(), m, 0));
      drive(reqs, 60s);
      for (int r = 1; r < n; ++r) {
        EXPECT_EQ(first_mismatch(buf[r].data(), m, 0, 93), m)
            << n << " ranks, " << to_string(algo) << ", " << m << " bytes, rank " << r;
      }
    }
  }
}

// 4 MiB is past both tables' crossovers (coll/tuning.h), whichever this
// machine's cores per rank pick.
TEST(AlgorithmTable, CommunicatorSaysWhichAlgorithmASizeGets) {
  InProcessWorld world(4, {.seed = 92});
  auto comms = create_communicators(world);
  // An in-process world says nothing of its cores: the shared-cores table
  // serves, whose small teams take the flat tree.
  EXPECT_EQ(comms[0].broadcast_algorithm(100), BroadcastAlgorithm::kFlat);
  EXPECT_EQ(comms[0].broadcast_algorithm(4 << 20), BroadcastAlgorithm::kMulticast);
  EXPECT_EQ(comms[0].allgather_algorithm(100), AllgatherAlgorithm::kBruck);
  EXPECT_EQ(comms[0].allgather_algorithm(4 << 20), AllgatherAlgorithm::kMulticast);
  EXPECT_STREQ(to_string(BroadcastAlgorithm::kBinomial), "binomial");
  EXPECT_STREQ(to_string(BroadcastAlgorithm::kFlat), "flat");
  EXPECT_STREQ(to_string(AllgatherAlgorithm::kBruck), "bruck");
  auto pinned = create_communicators(world, {.broadcast_algorithm = BroadcastAlgorithm::kChain});
  EXPECT_EQ(pinned[0].broadcast_algorithm(100), BroadcastAlgorithm::kChain);
}

TEST(AlgorithmTable, SettingsMoveTheCrossover) {
  const int n = 3;
  {
    ScopedEnv env;
    env.set("MCCL_COLL_BCAST_MCAST_FROM_BYTES", "0");
    env.set("MCCL_COLL_ALLGATHER_MCAST_FROM_BYTES", "0");
    TableRun r = broadcast_and_allgather(n, 100);
    EXPECT_EQ(r.p2p_collectives, 0u);
    EXPECT_GT(r.mcast_datagrams, 0u);
  }
  {
    ScopedEnv env;
    env.set("MCCL_COLL_BCAST_MCAST_FROM_BYTES", "4000000");
    env.set("MCCL_COLL_ALLGATHER_MCAST_FROM_BYTES", "4000000");
    TableRun r = broadcast_and_allgather(n, 1 << 20);
    EXPECT_EQ(r.p2p_collectives, 2u * n);
    EXPECT_EQ(r.mcast_datagrams, 0u);
  }
}

}  // namespace
}  // namespace mccl::testing
