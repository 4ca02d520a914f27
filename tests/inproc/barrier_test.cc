// Both barriers (coll/barrier.h): no rank leaves before the last one has
// called, whichever rank is last, at every team size to 9; ranks that chose
// different algorithms fail with kMismatch instead of hanging; and the
// communicator names its choice (the table's rule: algorithm_table_test).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "harness.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

using BarrierParam = std::tuple<BarrierAlgorithm, int>;  // algorithm, ranks

class Barriers : public ::testing::TestWithParam<BarrierParam> {};

TEST_P(Barriers, NoRankLeavesBeforeTheLastArrives) {
  const auto [algo, n] = GetParam();
  for (int late = 0; late < n; ++late) {
    SCOPED_TRACE("rank " + std::to_string(late) + " calls last");
    InProcessWorld world(n, {.seed = 70u + static_cast<unsigned>(n)});
    auto comms = create_communicators(world, {.barrier_algorithm = algo});
    std::vector<Request> early;
    for (int r = 0; r < n; ++r) {
      if (r != late) early.push_back(comms[r].ibarrier());
    }
    // Long enough for every message the early ranks can send to arrive.
    for (int pass = 0; pass < 2000; ++pass) {
      for (auto& c : comms) c.progress();
    }
    for (std::size_t i = 0; i < early.size(); ++i) {
      ASSERT_FALSE(early[i].test()) << "a rank left the barrier before rank " << late << " came";
    }
    early.push_back(comms[late].ibarrier());
    std::vector<Communicator*> all;
    for (auto& c : comms) all.push_back(&c);
    drive(early, 30s, all);
  }
}

TEST_P(Barriers, RunBackToBack) {
  const auto [algo, n] = GetParam();
  InProcessWorld world(n, {.seed = 90u + static_cast<unsigned>(n)});
  auto comms = create_communicators(world, {.barrier_algorithm = algo});
  run_on_threads(comms, [](Communicator& c) {
    for (int i = 0; i < 50; ++i) c.barrier();
  });
}

std::string barrier_name(const ::testing::TestParamInfo<BarrierParam>& info) {
  return std::string(to_string(std::get<0>(info.param))) + "_n" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllShapes, Barriers,
                         ::testing::Combine(::testing::Values(BarrierAlgorithm::kDissemination,
                                                              BarrierAlgorithm::kStar),
                                            ::testing::Range(1, 10)),
                         barrier_name);

// Rank 0 runs the star, the others dissemination: the signatures differ, so
// the first signal that crosses fails its receiver, whose abort fails the
// rest; every rank reports kMismatch, none waits for its timeout.
TEST(BarrierMismatch, RanksThatChoseDifferentAlgorithmsFail) {
  const int n = 4;
  InProcessWorld world(n, {.seed = 5});
  auto comms = create_communicators_each(world, [](int r) {
    return CommOptions{
        .timeout = 60s,
        .barrier_algorithm = r == 0 ? BarrierAlgorithm::kStar : BarrierAlgorithm::kDissemination};
  });
  std::vector<ErrorCode> codes(n, ErrorCode::kOk);
  std::vector<std::string> msgs(n);
  run_on_threads(comms, [&](Communicator& c) {
    codes[c.rank()] = code_of([&] { c.barrier(); }, &msgs[c.rank()]);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(codes[r], ErrorCode::kMismatch) << "rank " << r << ": " << msgs[r];
  }
}

// In one process the ranks' cores are not counted (the placement is
// unknown): dissemination, unless the options pin the star.
TEST(BarrierChoice, TheCommunicatorSaysWhichBarrierItRuns) {
  InProcessWorld world(4);
  auto plain = create_communicators(world);
  EXPECT_EQ(plain[0].barrier_algorithm(), BarrierAlgorithm::kDissemination);
  InProcessWorld world2(4);
  auto star = create_communicators(world2, {.barrier_algorithm = BarrierAlgorithm::kStar});
  EXPECT_EQ(star[3].barrier_algorithm(), BarrierAlgorithm::kStar);
}

}  // namespace
}  // namespace mccl::testing
