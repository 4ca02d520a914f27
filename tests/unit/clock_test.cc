// src/common/clock.h: deadlines saturate instead of overflowing, so a
// timeout of INT64_MAX milliseconds means "never", not "already expired".
#include "common/clock.h"

#include <gtest/gtest.h>

#include <chrono>

namespace mccl::common {
namespace {

using namespace std::chrono_literals;

TEST(Clock, HugeTimeoutsSaturateToNever) {
  const auto huge = std::chrono::milliseconds::max();
  EXPECT_TRUE(Deadline::after(huge).is_never());
  EXPECT_FALSE(Deadline::after(huge).expired());
  EXPECT_TRUE(Deadline::after(std::chrono::milliseconds(9'300'000'000'000)).is_never());
  EXPECT_EQ(saturating_duration(huge), Duration::max());
  EXPECT_EQ(saturating_duration(std::chrono::milliseconds::min()), Duration::min());
  EXPECT_EQ(saturating_add(TimePoint::max(), 1ms), TimePoint::max());
  EXPECT_EQ(saturating_add(TimePoint::max() - 1ns, std::chrono::hours(1)), TimePoint::max());
}

TEST(Clock, OrdinaryTimeoutsAreExact) {
  const TimePoint t = now();
  EXPECT_EQ(saturating_add(t, 1500ms), t + 1500ms);
  EXPECT_EQ(saturating_add(t, -5ms), t) << "a negative timeout is already due";
  EXPECT_FALSE(Deadline::after(1h).is_never());
  EXPECT_TRUE(Deadline::after(0ms).expired());
}

}  // namespace
}  // namespace mccl::common
