#include "protocol/rate_control.h"

#include <algorithm>

#include "common/seq.h"

namespace mccl::protocol {

RateController::RateController(const RateConfig& config)
    : config_(config),
      rate_(std::clamp(config.initial_bytes_per_s, config.floor_bytes_per_s,
                       std::max(config.floor_bytes_per_s, config.ceiling_bytes_per_s))) {}

bool RateController::before(const Position& a, const Position& b) {
  if (a.seq != b.seq) return common::seq_before(a.seq, b.seq);
  return a.chunk < b.chunk;
}

bool RateController::on_injected(std::uint32_t seq, std::uint64_t next, std::uint64_t bytes) {
  const Position p{seq, next};
  if (!injected_ || before(sent_, p)) sent_ = p;
  injected_ = true;
  // A cut that many collectives ago orders nothing any more (and the
  // wrap-safe order would turn around past 2^31).
  if (cut_ && common::seq_distance(cut_at_.seq, seq) >= (1u << 16)) cut_ = false;
  clean_bytes_ += bytes;
  if (clean_bytes_ < config_.recovery_bytes || config_.recovery_bytes == 0) return false;
  const double ceiling = std::max(config_.floor_bytes_per_s, config_.ceiling_bytes_per_s);
  const double old = rate_;
  while (clean_bytes_ >= config_.recovery_bytes) {
    clean_bytes_ -= config_.recovery_bytes;
    rate_ = std::min(ceiling, rate_ * (1 + config_.recovery));
  }
  return rate_ != old;
}

bool RateController::on_loss(std::uint32_t seq, std::uint64_t chunk) {
  // Nothing sent: a report about a stream this rank never injected (a
  // receiver that gave up on a late root) says nothing about the rate.
  if (!injected_) return false;
  const Position lost{seq, chunk};
  // Lost before the last cut took effect: that episode was answered. A
  // report from beyond what was sent is malformed and ignored too.
  if (cut_ && before(lost, cut_at_)) return false;
  if (!before(lost, sent_)) return false;
  cut_ = true;
  cut_at_ = sent_;
  clean_bytes_ = 0;
  const double old = rate_;
  rate_ = std::max(config_.floor_bytes_per_s, rate_ * config_.decrease);
  if (rate_ == old) return false;
  ++decreases_;
  return true;
}

}  // namespace mccl::protocol
