// The inline engine's spin (progress/engine.h, inline_spin): a waiting call
// spins as configured while its machine has a core per rank, sleeps at once
// where ranks outnumber the cores, and the user's explicit setting wins.
#include <gtest/gtest.h>

#include "progress/engine.h"

namespace mccl::progress {
namespace {

using std::chrono::microseconds;

TEST(InlineSpin, SpinsWhileEveryRankHasACore) {
  EXPECT_EQ(inline_spin(microseconds(50), false, 1, 2), microseconds(50));
  EXPECT_EQ(inline_spin(microseconds(50), false, 2, 2), microseconds(50));
  EXPECT_EQ(inline_spin(microseconds(50), false, 8, 16), microseconds(50));
}

TEST(InlineSpin, SleepsAtOnceWhereRanksOutnumberCores) {
  EXPECT_EQ(inline_spin(microseconds(50), false, 3, 2), microseconds(0));
  EXPECT_EQ(inline_spin(microseconds(50), false, 8, 2), microseconds(0));
  EXPECT_EQ(inline_spin(microseconds(50), false, 2, 1), microseconds(0));
}

TEST(InlineSpin, TheUsersSettingWins) {
  EXPECT_EQ(inline_spin(microseconds(50), true, 8, 2), microseconds(50));
  EXPECT_EQ(inline_spin(microseconds(0), true, 1, 16), microseconds(0));
  EXPECT_EQ(inline_spin(microseconds(200), true, 8, 2), microseconds(200));
}

TEST(InlineSpin, UsableCoresIsAtLeastOne) { EXPECT_GE(usable_cores(), 1); }

}  // namespace
}  // namespace mccl::progress
