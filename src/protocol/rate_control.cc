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

bool RateController::on_injected(std::uint32_t seq, std::uint64_t next, std::uint64_t bytes,
                                 bool paced) {
  const Position p{seq, next};
  const double old = rate_;
  if (!injected_ || common::seq_before(current_seq_, seq)) probe_after(seq);
  paced_in_current_ = paced_in_current_ || paced;
  if (!injected_ || before(sent_, p)) sent_ = p;
  injected_ = true;
  // A cut that many collectives ago orders nothing any more (and the
  // wrap-safe order would turn around past 2^31).
  if (cut_ && common::seq_distance(cut_at_.seq, seq) >= (1u << 16)) cut_ = false;
  if (paced) grow_by_bytes(bytes);
  return rate_ != old;
}

double RateController::ceiling() const {
  return std::max(config_.floor_bytes_per_s, config_.ceiling_bytes_per_s);
}

void RateController::probe_after(std::uint32_t seq) {
  // The first injection of a collective: the one before it ended clean,
  // paced by the estimate, and the estimate sits on the plateau.
  const bool clean = injected_ && !cut_in_current_ && paced_in_current_;
  current_seq_ = seq;
  cut_in_current_ = false;
  paced_in_current_ = false;
  if (!clean || overran_at_ == 0 || rate_ < plateau()) return;
  rate_ = std::min(ceiling(), rate_ * (1 + config_.probe));
  if (rate_ > overran_at_ * config_.plateau_expiry) overran_at_ = 0;
}

void RateController::grow_by_bytes(std::uint64_t bytes) {
  if (config_.recovery_bytes == 0) return;
  clean_bytes_ += bytes;
  while (clean_bytes_ >= config_.recovery_bytes) {
    clean_bytes_ -= config_.recovery_bytes;
    double limit = ceiling();
    if (overran_at_ > 0) {
      if (rate_ >= plateau()) {
        // Probes take it from here; what is sent on the plateau must not
        // be saved up for when it is forgotten.
        clean_bytes_ = 0;
        return;
      }
      limit = std::min(limit, plateau());
    }
    rate_ = std::min(limit, rate_ * (1 + config_.recovery));
  }
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
  cut_in_current_ = true;
  overran_at_ = rate_;
  const double old = rate_;
  rate_ = std::max(config_.floor_bytes_per_s, rate_ * config_.decrease);
  if (rate_ == old) return false;
  ++decreases_;
  return true;
}

}  // namespace mccl::protocol
