// A waiting call's spin (progress/engine.h, waiter_spin): it spins as
// configured while its machine has a core per waiting thread, sleeps at
// once where they outnumber the cores, and the user's explicit setting wins;
// a call that drives a short collective itself where they outnumber the
// cores spins longer (driver_spin), and one that waits for a latency-bound
// collective spins longer wherever it runs (latency_bound_spin).
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

// A call that drives a short collective itself spins at least
// kSharedCoresShortSpin where the waiting threads outnumber the cores; a
// longer one, one of unknown size, and one where each waiting thread has a
// core spin as waiter_spin says.
TEST(DriverSpin, AShortCollectiveSpinsThroughTheOtherRanksTurns) {
  const DriverSpin s = driver_spin(microseconds(50), false, 8, 2);
  EXPECT_EQ(s.for_bytes(1), kSharedCoresShortSpin);
  EXPECT_EQ(s.for_bytes(kShortCollectiveBytes - 1), kSharedCoresShortSpin);
  EXPECT_EQ(s.for_bytes(kShortCollectiveBytes), microseconds(0));
  EXPECT_EQ(s.for_bytes(0), microseconds(0));  // unknown: as a long one
  EXPECT_EQ(driver_spin(microseconds(500), false, 16, 2).for_bytes(1), microseconds(500));
}

TEST(DriverSpin, WithACorePerWaitingThreadFollowsTheSetting) {
  const DriverSpin spare = driver_spin(microseconds(50), false, 2, 2);
  EXPECT_EQ(spare.for_bytes(1), microseconds(50));
  EXPECT_EQ(spare.for_bytes(kShortCollectiveBytes), microseconds(50));
}

// A barrier or a small point-to-point collective (no bytes to go by, for a
// barrier) spins at least kLatencyBoundSpin for its next message wherever it
// runs, longer if configured so, and always as the user set it.
TEST(LatencyBoundSpin, AtLeastARoundTripsWorthUnlessTheUserSetIt) {
  EXPECT_EQ(latency_bound_spin(microseconds(50), false), kLatencyBoundSpin);
  EXPECT_EQ(latency_bound_spin(microseconds(1000), false), microseconds(1000));
  EXPECT_EQ(latency_bound_spin(microseconds(0), true), microseconds(0));
  EXPECT_EQ(latency_bound_spin(microseconds(50), true), microseconds(50));
}

// A short collective's waiter spins longer than the setting only where the
// waiting threads outnumber the cores: with a core each, the copies of a
// collective up to 1 MiB are its own work, and its spin stays the setting's.
TEST(DriverSpin, AShortCollectiveSpinsLongerOnlyWhereRanksShareCores) {
  EXPECT_EQ(driver_spin(microseconds(50), false, 4, 2).for_bytes(1), kSharedCoresShortSpin);
  EXPECT_EQ(driver_spin(microseconds(50), false, 2, 2).for_bytes(1), microseconds(50));
  EXPECT_EQ(driver_spin(microseconds(50), false, 8, 16).for_bytes(1), microseconds(50));
}

TEST(DriverSpin, TheUsersSettingWins) {
  for (int us : {0, 50, 200}) {
    const DriverSpin s = driver_spin(microseconds(us), true, 8, 2);
    EXPECT_EQ(s.for_bytes(1), microseconds(us));
    EXPECT_EQ(s.for_bytes(kShortCollectiveBytes), microseconds(us));
  }
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
