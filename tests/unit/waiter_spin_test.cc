// A waiting call's spin (progress/engine.h, waiter_spin): it spins as
// configured while its machine has a core per waiting thread, sleeps at
// once where they outnumber the cores, and the user's explicit setting wins.
#include <gtest/gtest.h>

#include "common/host.h"
#include "progress/activity.h"
#include "progress/engine.h"

namespace mccl::progress {
namespace {

using std::chrono::microseconds;

TEST(WaiterSpin, SpinsWhileEveryWaitingThreadHasACore) {
  EXPECT_EQ(waiter_spin(microseconds(50), false, 1, 2), microseconds(50));
  EXPECT_EQ(waiter_spin(microseconds(50), false, 2, 2), microseconds(50));
  EXPECT_EQ(waiter_spin(microseconds(50), false, 8, 16), microseconds(50));
}

TEST(WaiterSpin, SleepsAtOnceWhereWaitingThreadsOutnumberCores) {
  EXPECT_EQ(waiter_spin(microseconds(50), false, 3, 2), microseconds(0));
  EXPECT_EQ(waiter_spin(microseconds(50), false, 8, 2), microseconds(0));
  EXPECT_EQ(waiter_spin(microseconds(50), false, 2, 1), microseconds(0));
}

TEST(WaiterSpin, TheUsersSettingWins) {
  EXPECT_EQ(waiter_spin(microseconds(50), true, 8, 2), microseconds(50));
  EXPECT_EQ(waiter_spin(microseconds(0), true, 1, 16), microseconds(0));
  EXPECT_EQ(waiter_spin(microseconds(200), true, 8, 2), microseconds(200));
}

// An engine sleeps only after a quiet pass: with no spin at all (ranks
// outnumber cores) a pass that sent or received is still followed by
// another at once.
TEST(WaiterSpin, APassThatDidSomethingIsFollowedByAnotherEvenWithoutSpin) {
  EXPECT_TRUE(pass_again(1, microseconds(0), microseconds(0)));
  EXPECT_TRUE(pass_again(3, std::chrono::seconds(1), microseconds(50)));
  EXPECT_FALSE(pass_again(0, microseconds(10), microseconds(0)));
  EXPECT_TRUE(pass_again(0, microseconds(10), microseconds(50)));
  EXPECT_FALSE(pass_again(0, microseconds(60), microseconds(50)));
}

TEST(WaiterSpin, UsableCoresIsAtLeastOne) { EXPECT_GE(common::usable_cores(), 1); }

}  // namespace
}  // namespace mccl::progress
