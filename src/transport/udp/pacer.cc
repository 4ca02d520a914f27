#include "transport/udp/pacer.h"

#include <algorithm>
#include <chrono>

namespace mccl::transport::udp {

Pacer::Pacer(double bytes_per_s, std::size_t burst_bytes, common::TimePoint start)
    : rate_(bytes_per_s > 0 ? bytes_per_s : 0),
      burst_(static_cast<double>(burst_bytes)),
      tokens_(static_cast<double>(burst_bytes)),
      last_(start) {}

bool Pacer::try_take(std::size_t bytes, common::TimePoint now) {
  if (rate_ <= 0) return true;
  if (now > last_) {
    const double dt = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + dt * rate_);
    last_ = now;
  }
  const auto need = static_cast<double>(bytes);
  if (tokens_ < need && tokens_ < burst_) return false;
  tokens_ -= need;  // may go below zero only for a datagram larger than the bucket
  return true;
}

void Pacer::set_rate(double bytes_per_s, std::size_t burst_bytes, common::TimePoint now) {
  if (rate_ <= 0 || bytes_per_s <= 0) return;
  try_take(0, now);  // credit the time so far at the old rate
  rate_ = bytes_per_s;
  burst_ = static_cast<double>(burst_bytes);
  tokens_ = std::min(tokens_, burst_);
}

void Pacer::refund(std::size_t bytes) {
  if (rate_ <= 0) return;
  tokens_ = std::min(burst_, tokens_ + static_cast<double>(bytes));
}

}  // namespace mccl::transport::udp
