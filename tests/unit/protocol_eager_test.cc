// Eager completion on the in-memory rig: a rank that holds everything
// completes at once and serves its right neighbour from a copy; the copy is
// byte-exact under loss while the rank reuses its buffer, stays within its
// budget and is freed by the release, the neighbour's failure or the
// collective's deadline.
#include <gtest/gtest.h>

#include "protocol_rig.h"

namespace mccl::protocol::test {
namespace {

ProtocolConfig eager_on(std::size_t budget = 8 << 20) {
  ProtocolConfig c = eager();
  c.eager_bytes = 64 << 10;
  c.eager_budget = budget;
  return c;
}

// Drives every rank until every op is done. The moment a rank's op
// completes its buffer is checked and overwritten, as a user reusing it
// would: a neighbour still missing chunks must get them from the copy.
// Then drives on until no rank keeps a copy (every release arrived).
template <class Collective>
void run_reusing_buffers(Rig& rig, Collective& c) {
  const auto n = static_cast<std::size_t>(rig.size());
  std::vector<bool> seen(n, false);
  std::size_t left = n;
  auto deadline = common::Deadline::after(kDeadline);
  while (left > 0) {
    ASSERT_FALSE(deadline.expired()) << left << " ranks unfinished";
    rig.progress_all();
    for (std::size_t r = 0; r < n; ++r) {
      if (seen[r] || !c.ops[r]->done()) continue;
      seen[r] = true;
      --left;
      ASSERT_TRUE(c.ops[r]->status().is_ok())
          << "rank " << r << ": " << c.ops[r]->status().message();
      ASSERT_TRUE(c.bufs[r] == c.expect) << "rank " << r << " holds other bytes than were sent";
      std::fill(c.bufs[r].begin(), c.bufs[r].end(), std::byte{0xEE});
    }
  }
  for (int r = 0; r < rig.size(); ++r) {
    while (rig.ctx(r).serving() > 0) {
      ASSERT_FALSE(deadline.expired()) << "rank " << r << " still keeps a copy";
      rig.progress_all();
    }
    EXPECT_EQ(rig.ctx(r).eager_bytes_kept(), 0u);
  }
}

std::uint64_t eager_completions(const Rig& rig) {
  std::uint64_t n = 0;
  for (int r = 0; r < rig.size(); ++r) n += rig.stats(r).eager_completions;
  return n;
}

TEST(EagerCompletion, BroadcastIsByteExactUnderLossWhileBuffersAreReused) {
  std::uint64_t eager = 0;
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{kChunk - 1},
                            std::size_t{kChunk}, std::size_t{kChunk + 1}, std::size_t{20000}}) {
    for (int root = 0; root < 5; ++root) {
      SCOPED_TRACE("bytes " + std::to_string(bytes) + " root " + std::to_string(root));
      Rig rig(5, lossy(0.1, 700 + bytes + root), eager_on());
      Broadcast b(rig, bytes, root, 11 + bytes);
      b.start_all(rig);
      run_reusing_buffers(rig, b);
      eager += eager_completions(rig);
    }
  }
  EXPECT_GT(eager, 0u) << "no rank ever completed eagerly";
}

TEST(EagerCompletion, AllgatherIsByteExactUnderLossWhileBuffersAreReused) {
  for (int n : {2, 3, 5, 8}) {
    for (std::size_t m : {std::size_t{1}, std::size_t{1500}, std::size_t{4000}}) {
      SCOPED_TRACE("n " + std::to_string(n) + " m " + std::to_string(m));
      Rig rig(n, lossy(0.1, 900 + n * 31 + m), eager_on());
      Allgather a(rig, m, 21 + m);
      a.start_all(rig);
      run_reusing_buffers(rig, a);
      EXPECT_GT(eager_completions(rig), 0u);
    }
  }
}

// Rank 1 (rank 0's right neighbour) is not driven: rank 0 completes the
// first broadcast from a copy, the second no longer fits the budget and
// waits for the release, as without eager completion.
TEST(EagerCompletion, TheBudgetBoundsTheCopies) {
  constexpr std::size_t kBudget = 5000, kBytes = 3000;
  Rig rig(3, clean(), eager_on(kBudget));
  std::vector<std::unique_ptr<Broadcast>> bcasts;
  for (int i = 0; i < 2; ++i) {
    bcasts.push_back(std::make_unique<Broadcast>(rig, kBytes, 0, 31 + i, i));
    bcasts.back()->start_all(rig);
  }
  for (int round = 0; round < 300; ++round) {
    rig.ctx(0).progress();
    rig.ctx(2).progress();
    ASSERT_LE(rig.ctx(0).eager_bytes_kept(), kBudget);
  }
  EXPECT_TRUE(bcasts[0]->ops[0]->done());
  EXPECT_FALSE(bcasts[1]->ops[0]->done()) << "completed although its copy did not fit";
  EXPECT_EQ(rig.ctx(0).serving(), 1u);
  EXPECT_EQ(rig.ctx(0).eager_bytes_kept(), kBytes);
  OpList all;
  for (auto& b : bcasts) all.insert(all.end(), b->ops.begin(), b->ops.end());
  ASSERT_TRUE(rig.run(all));
  for (auto& b : bcasts) b->expect_exact();
  rig.progress_all(50);
  EXPECT_EQ(rig.ctx(0).serving(), 0u);
  EXPECT_EQ(rig.stats(0).eager_completions, 1u);
}

TEST(EagerCompletion, OffItWaitsForTheRelease) {
  Rig rig(2, clean(), eager());  // eager_bytes 0
  Broadcast b(rig, 1000, 0, 41);
  b.start_all(rig);
  for (int round = 0; round < 300; ++round) rig.ctx(0).progress();
  EXPECT_FALSE(b.ops[0]->done());
  ASSERT_TRUE(rig.run(b.ops));
  b.expect_exact();
  EXPECT_EQ(rig.stats(0).eager_completions, 0u);
}

TEST(EagerCompletion, TheCopyGoesWithTheCollectivesDeadline) {
  ProtocolConfig pc = eager_on();
  pc.op_timeout = 100ms;
  Rig rig(2, clean(), pc);
  Broadcast b(rig, 1000, 0, 51);
  b.start(rig, 0);  // rank 1 never calls it
  for (int round = 0; round < 100 && !b.ops[0]->done(); ++round) rig.ctx(0).progress();
  ASSERT_TRUE(b.ops[0]->done());
  EXPECT_TRUE(b.ops[0]->status().is_ok());
  EXPECT_EQ(rig.ctx(0).serving(), 1u);
  auto deadline = common::Deadline::after(kDeadline);
  while (rig.ctx(0).serving() > 0 && !deadline.expired()) rig.ctx(0).progress();
  EXPECT_EQ(rig.ctx(0).serving(), 0u);
  EXPECT_EQ(rig.ctx(0).eager_bytes_kept(), 0u);
}

TEST(EagerCompletion, TheNeighboursFailureFreesTheCopy) {
  Rig rig(3, clean(), eager_on());
  Broadcast b(rig, 1000, 0, 61);
  b.start(rig, 0);
  for (int round = 0; round < 100 && !b.ops[0]->done(); ++round) rig.ctx(0).progress();
  ASSERT_TRUE(b.ops[0]->done());
  EXPECT_EQ(rig.ctx(0).serving(), 1u);
  rig.fabric().kill_rank(1);
  for (int round = 0; round < 100 && rig.ctx(0).serving() > 0; ++round) rig.ctx(0).progress();
  EXPECT_EQ(rig.ctx(0).serving(), 0u);
}

}  // namespace
}  // namespace mccl::protocol::test
