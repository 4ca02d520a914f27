// protocol/membership.h on the in-memory fabric, every rank's context
// driven from this thread: the agreement on failed ranks, the survivors'
// exchange, and the numbering that keeps a shrink's attempts apart.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "protocol/membership.h"
#include "protocol_rig.h"

namespace mccl::protocol::test {
namespace {

FabricConfig plain() {
  FabricConfig f;
  f.seed = 5;
  return f;
}

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) b[i] = static_cast<std::byte>(s[i]);
  return b;
}

TEST(Membership, EverySurvivorAgreesOnTheSameFailedRanks) {
  Rig rig(5, plain(), patient());
  rig.fabric().kill_rank(1);
  rig.fabric().kill_rank(3);
  std::vector<std::vector<int>> failed(5);
  OpList ops;
  for (int r : {0, 2, 4}) {
    ops.push_back(std::make_shared<AgreeOnFailed>(rig.ctx(r), 1, failed[r]));
    rig.ctx(r).start(ops.back());
  }
  ASSERT_TRUE(rig.run(ops));
  for (int r : {0, 2, 4}) {
    EXPECT_TRUE(ops[r / 2]->status().is_ok()) << ops[r / 2]->status().message();
    EXPECT_EQ(failed[r], (std::vector<int>{1, 3})) << "rank " << r;
  }
}

TEST(Membership, TheSurvivorsExchangeNamesAMemberThatDied) {
  Rig rig(3, plain(), patient());
  rig.fabric().kill_rank(2);
  const auto mine = bytes_of("12345678");
  std::vector<std::vector<std::byte>> out(2);
  OpList ops;
  for (int r : {0, 1}) {
    ops.push_back(
        std::make_shared<SurvivorExchange>(rig.ctx(r), 1, std::vector<int>{0, 1, 2}, mine, out[r]));
    rig.ctx(r).start(ops.back());
  }
  ASSERT_TRUE(rig.run(ops));
  for (const auto& op : ops) {
    EXPECT_EQ(op->status().code(), ErrorCode::kPeerFailure);
    EXPECT_NE(op->status().message().find("rank 2 failed"), std::string::npos)
        << op->status().message();
  }
}

// Rank 0 got one exchange further into attempt 1 than rank 1 (a death
// ended rank 1's attempt earlier): its attempt-1 contribution must never
// be taken for its attempt-2 one.
TEST(Membership, AnEarlierAttemptsMessageIsNeverTakenForALaterOnes) {
  Rig rig(2, plain(), patient());
  std::vector<std::byte> stale_out, out0, out1;
  auto stale = std::make_shared<SurvivorExchange>(rig.ctx(0), 1, std::vector<int>{0, 1},
                                                  bytes_of("attempt1"), stale_out);
  rig.ctx(0).start(stale);
  rig.progress_all(20);  // delivered to rank 1, which keeps it as early
  EXPECT_FALSE(stale->done());
  auto a = std::make_shared<SurvivorExchange>(rig.ctx(0), 2, std::vector<int>{0, 1},
                                              bytes_of("r0-try-2"), out0);
  auto b = std::make_shared<SurvivorExchange>(rig.ctx(1), 2, std::vector<int>{0, 1},
                                              bytes_of("r1-try-2"), out1);
  rig.ctx(0).start(a);
  rig.ctx(1).start(b);
  ASSERT_TRUE(rig.run({a, b}));
  ASSERT_TRUE(a->status().is_ok()) << a->status().message();
  ASSERT_TRUE(b->status().is_ok()) << b->status().message();
  EXPECT_EQ(out1, bytes_of("r0-try-2r1-try-2"));
  EXPECT_EQ(out0, out1);
}

}  // namespace
}  // namespace mccl::protocol::test
