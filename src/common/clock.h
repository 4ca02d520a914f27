// Clocks and deadlines. Every wait in MCCL has a deadline measured on the
// monotonic clock, never a count of polls.
//
// Timeouts come from users (MCCL_COLL_TIMEOUT_MS, CommOptions::timeout,
// mccl_wait) and may be as large as INT64_MAX milliseconds, which overflows
// both the nanosecond Duration and `now() + timeout`. Every deadline is
// therefore computed here, saturating: a timeout that would carry the
// deadline past the clock's range (about 292 years of nanoseconds from boot)
// gives TimePoint::max(), which means "never" (Deadline::never()).
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>

namespace mccl::common {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;

inline TimePoint now() { return Clock::now(); }

// `t` in nanoseconds since the clock's epoch: CLOCK_MONOTONIC on Linux, one
// clock for every process and network namespace of a host. 0 for TimePoint{}.
inline std::uint64_t monotonic_ns(TimePoint t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

// `d` in the clock's Duration, clamped to [Duration::min(), Duration::max()]
// instead of overflowing (a plain conversion of 2^63 ms to ns wraps).
template <class Rep, class Period>
Duration saturating_duration(std::chrono::duration<Rep, Period> d) {
  using D = std::chrono::duration<Rep, Period>;
  if (d >= std::chrono::floor<D>(Duration::max())) return Duration::max();
  if (d <= std::chrono::ceil<D>(Duration::min())) return Duration::min();
  return std::chrono::duration_cast<Duration>(d);
}

// `from + d`, or TimePoint::max() ("never") when that is past the clock's
// range. A negative `d` counts as zero: the deadline is `from`.
template <class Rep, class Period>
TimePoint saturating_add(TimePoint from, std::chrono::duration<Rep, Period> d) {
  const Duration step = saturating_duration(d);
  if (step <= Duration::zero()) return from;
  if (from == TimePoint::max() || step >= TimePoint::max() - from) return TimePoint::max();
  return from + step;
}

class Deadline {
 public:
  // Saturates (see above): a huge `d` gives never().
  template <class Rep, class Period>
  static Deadline after(std::chrono::duration<Rep, Period> d) {
    return Deadline(saturating_add(now(), d));
  }
  static Deadline never() { return Deadline(TimePoint::max()); }
  explicit Deadline(TimePoint at) : at_(at) {}

  bool is_never() const { return at_ == TimePoint::max(); }
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

// Milliseconds for poll() until `deadline`: -1 for never, rounded up so a
// wait does not end just before its deadline.
inline int poll_timeout_ms(Deadline deadline) {
  if (deadline.is_never()) return -1;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline.remaining()).count();
  return static_cast<int>(std::min<long long>(ms, INT_MAX));
}

inline std::int64_t to_us(Duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace mccl::common
