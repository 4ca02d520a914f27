// A token bucket that paces a sender to a byte rate on the monotonic clock.
// It never sleeps: try_take() says no, and the caller reports "busy" so the
// protocol comes back later.
#pragma once

#include <cstddef>

#include "common/clock.h"

namespace mccl::transport::udp {

class Pacer {
 public:
  Pacer() = default;  // unpaced
  // `bytes_per_s` <= 0 means unpaced. The bucket holds at most
  // `burst_bytes` and starts full, so a sender may emit that much at once.
  Pacer(double bytes_per_s, std::size_t burst_bytes, common::TimePoint start);

  bool enabled() const { return rate_ > 0; }
  double bytes_per_s() const { return rate_; }
  std::size_t burst_bytes() const { return static_cast<std::size_t>(burst_); }

  // Debits `bytes` and returns true when the bucket holds that many tokens
  // at `now`; otherwise changes nothing and returns false. Unpaced: true.
  // A datagram larger than the bucket passes once the bucket is full, so
  // nothing can be refused forever.
  bool try_take(std::size_t bytes, common::TimePoint now);

  // Gives back tokens taken for bytes that were not sent after all.
  void refund(std::size_t bytes);

  // A new rate from `now` on (> 0; a disabled pacer stays disabled), with
  // the bucket resized to `burst_bytes`; tokens earned so far are kept.
  void set_rate(double bytes_per_s, std::size_t burst_bytes, common::TimePoint now);

 private:
  double rate_ = 0;    // bytes per second
  double burst_ = 0;   // bucket size, bytes
  double tokens_ = 0;  // bytes that may go now
  common::TimePoint last_{};
};

}  // namespace mccl::transport::udp
