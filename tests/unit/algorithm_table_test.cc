// The algorithm table (coll/algorithm.h, coll/tuning.h): the agreed cores
// per rank pick the table, the team size its row, and a setting or a pinned
// algorithm overrides both.
#include <gtest/gtest.h>

#include "coll/algorithm.h"
#include "coll/algorithm_text.h"

namespace mccl::coll {
namespace {

TEST(AlgorithmTable, CoresPerRankPickTheTable) {
  EXPECT_EQ(measured_crossover(2, 0).broadcast, kSharedCoresCrossovers[0].broadcast);
  EXPECT_EQ(measured_crossover(2, kSpareCoresPerRank - 1).broadcast,
            kSharedCoresCrossovers[0].broadcast);
  EXPECT_EQ(measured_crossover(2, kSpareCoresPerRank).broadcast,
            kSpareCoresCrossovers[0].broadcast);
  EXPECT_EQ(measured_crossover(4, 64).allgather, kSpareCoresCrossovers[1].allgather);
}

TEST(AlgorithmTable, TheTeamSizePicksTheRowAndTheLastServesLargerTeams) {
  EXPECT_EQ(measured_crossover(3, 0).broadcast, kSharedCoresCrossovers[1].broadcast);
  EXPECT_EQ(measured_crossover(8, 0).allgather, kSharedCoresCrossovers[2].allgather);
  EXPECT_EQ(measured_crossover(1024, 0).allgather, kSharedCoresCrossovers[2].allgather);
  EXPECT_EQ(measured_crossover(1024, 16).broadcast, kSpareCoresCrossovers[2].broadcast);
}

TEST(AlgorithmTable, WithCoresToSpareTwoRanksStayPointToPoint) {
  const MulticastFrom automatic;
  // At 2 ranks multicast injects no fewer bytes than a send: below 2 MiB
  // the point-to-point algorithms serve (measured faster at every size).
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, true, 2, 1 << 20, automatic, 8),
            BroadcastAlgorithm::kBinomial);
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, true, 2, 1 << 20, automatic, 1),
            BroadcastAlgorithm::kMulticast);
  EXPECT_EQ(choose_allgather(AllgatherAlgorithm::kAuto, true, 2, 1 << 20, automatic, 8),
            AllgatherAlgorithm::kBruck);
  EXPECT_EQ(choose_allgather(AllgatherAlgorithm::kAuto, true, 2, 4 << 20, automatic, 8),
            AllgatherAlgorithm::kMulticast);
}

TEST(AlgorithmTable, SmallTeamsThatShareCoresTakeTheFlatTree) {
  const MulticastFrom automatic;
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, true, 2, 8, automatic, 0),
            BroadcastAlgorithm::kBinomial)
      << "at 2 ranks both trees are the one send: the name stays";
  for (int n : {3, 4, kSharedCoresFlatMaxRanks}) {
    EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, true, n, 8, automatic, 0),
              BroadcastAlgorithm::kFlat)
        << n << " ranks";
    EXPECT_EQ(
        choose_broadcast(BroadcastAlgorithm::kAuto, true, n, 8, automatic, kSpareCoresPerRank),
        BroadcastAlgorithm::kBinomial)
        << n << " ranks with cores to spare";
  }
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, true, kSharedCoresFlatMaxRanks + 1, 8,
                             automatic, 0),
            BroadcastAlgorithm::kBinomial);
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, true, 4, kSharedCoresFlatBelowBytes - 1,
                             automatic, 0),
            BroadcastAlgorithm::kFlat);
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, true, 4, kSharedCoresFlatBelowBytes,
                             automatic, 0),
            BroadcastAlgorithm::kBinomial)
      << "below the 4-rank row's multicast crossover, but where the root's copies count";
  // From the crossover up multicast, and without it the chain, as before.
  const std::size_t from = measured_crossover(4, 0).broadcast;
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, true, 4, from, automatic, 0),
            BroadcastAlgorithm::kMulticast);
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, false, 4, from, automatic, 0),
            BroadcastAlgorithm::kChain);
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kBinomial, true, 4, 8, automatic, 0),
            BroadcastAlgorithm::kBinomial)
      << "a pinned algorithm wins";
}

TEST(AlgorithmTable, SettingsAndPinnedAlgorithmsWinOverTheTable) {
  const MulticastFrom always{.broadcast = 0, .allgather = 0};
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, true, 2, 8, always, 8),
            BroadcastAlgorithm::kMulticast);
  EXPECT_EQ(choose_allgather(AllgatherAlgorithm::kAuto, true, 2, 8, always, 0),
            AllgatherAlgorithm::kMulticast);
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kChain, true, 8, 8 << 20, {}, 0),
            BroadcastAlgorithm::kChain);
  // Without multicast the large sizes go to the pipelined chain and the ring.
  EXPECT_EQ(choose_broadcast(BroadcastAlgorithm::kAuto, false, 8, 8 << 20, {}, 0),
            BroadcastAlgorithm::kChain);
  EXPECT_EQ(choose_allgather(AllgatherAlgorithm::kAuto, false, 8, 8 << 20, {}, 16),
            AllgatherAlgorithm::kRing);
}

// mccl_info's words for the table come from the choice functions themselves.
TEST(AlgorithmTable, TheTextSaysWhichAlgorithmServesWhichSizes) {
  EXPECT_EQ(size_text(65536), "64 KiB");
  EXPECT_EQ(size_text(2 << 20), "2 MiB");
  EXPECT_EQ(size_text(1500), "1500 B");
  const std::size_t from4 = kSharedCoresCrossovers[1].broadcast;
  ASSERT_GT(from4, kSharedCoresFlatBelowBytes);
  EXPECT_EQ(describe_broadcast_choice(4, 0), "flat below " + size_text(kSharedCoresFlatBelowBytes) +
                                                 ", binomial below " + size_text(from4) +
                                                 ", multicast from " + size_text(from4));
  EXPECT_EQ(describe_broadcast_choice(4, kSpareCoresPerRank),
            "binomial below " + size_text(kSpareCoresCrossovers[1].broadcast) +
                ", multicast from " + size_text(kSpareCoresCrossovers[1].broadcast));
  EXPECT_EQ(describe_allgather_choice(8, 0),
            "bruck below " + size_text(kSharedCoresCrossovers[2].allgather) + ", multicast from " +
                size_text(kSharedCoresCrossovers[2].allgather));
  // A setting that moves the crossover to a size that is no power of two.
  EXPECT_EQ(describe_broadcast_choice(4, 0, {.broadcast = 1000}),
            "flat below 1000 B, multicast from 1000 B");
  EXPECT_EQ(describe_broadcast_choice(4, 0, {.broadcast = 0}), "multicast");
}

}  // namespace
}  // namespace mccl::coll
