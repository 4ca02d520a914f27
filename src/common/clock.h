// Clocks and deadlines. Every wait in MCCL has a deadline measured on the
// monotonic clock, never a count of polls.
#pragma once

#include <chrono>
#include <cstdint>

namespace mccl::common {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;

inline TimePoint now() { return Clock::now(); }

class Deadline {
 public:
  static Deadline after(Duration d) { return Deadline(now() + d); }
  static Deadline never() { return Deadline(TimePoint::max()); }
  explicit Deadline(TimePoint at) : at_(at) {}

  bool expired() const { return at_ != TimePoint::max() && now() >= at_; }
  bool expired(TimePoint t) const { return t >= at_; }
  TimePoint at() const { return at_; }
  Duration remaining() const {
    if (at_ == TimePoint::max()) return Duration::max();
    auto left = at_ - now();
    return left > Duration::zero() ? left : Duration::zero();
  }

 private:
  TimePoint at_;
};

inline std::int64_t to_us(Duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace mccl::common
