// The context's part in the rate from loss (protocol/rate_control.h): a
// receiver reports its loss to the root it lost from, and a root adapts its
// estimate of the link rate and hands it to the transport. A root rarely
// sees the repair requests for its own stream (a receiver asks its left
// neighbour), hence the separate report (docs/wire-protocol.md, "Rate from
// loss").
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "common/log.h"
#include "common/seq.h"
#include "protocol/context.h"

namespace mccl::protocol {

void Context::apply_rate() {
  const double bytes_per_s = rate_.bytes_per_s();
  dgram_->set_link_estimate(bytes_per_s);
  counters_.link_estimate_mbit.store(static_cast<std::uint64_t>(std::llround(bytes_per_s * 8e-6)),
                                     std::memory_order_relaxed);
}

void Context::note_injected(std::uint32_t seq, std::uint64_t next, std::uint64_t bytes,
                            bool paced) {
  if (adapt_rate_ && rate_.on_injected(seq, next, bytes, paced)) apply_rate();
}

void Context::report_loss(std::uint32_t root, std::uint32_t seq, std::uint64_t signature,
                          std::uint64_t first, std::uint64_t count) {
  // A rank that knows its link rate assumes the roots know theirs: nobody
  // would listen, so nothing changes on the wire where the rate is known.
  if (!adapt_rate_ || !poison_.is_ok() || root >= static_cast<std::uint32_t>(size_) ||
      static_cast<int>(root) == rank_) {
    return;
  }
  // One report per loss deadline per root and collective: a root answers
  // an episode once, and the reports of several receivers already reach it.
  // The memory is a hint: forgetting it costs at most one report more, so
  // it is dropped whole rather than let grow towards N entries.
  constexpr std::size_t kRemembered = 256;
  if (loss_reported_.size() >= kRemembered && !loss_reported_.contains(root)) {
    loss_reported_.clear();
  }
  LossReported& last = loss_reported_[root];
  if (last.sent && last.seq == seq && now_ - last.at < stall_deadline()) return;
  last = {true, seq, now_};
  ControlHeader h{.kind = ControlKind::kLossReport,
                  .seq = seq,
                  .root = root,
                  .signature = signature,
                  .arg0 = static_cast<std::uint32_t>(first),
                  .arg1 = static_cast<std::uint32_t>(std::min<std::uint64_t>(count, UINT32_MAX))};
  Counters::add(counters_.loss_reports_sent);
  const common::Status st = send_control(static_cast<int>(root), h);
  // A root that finished and left is no failure: the report was a hint.
  if (!st.is_ok() && st.code() != ErrorCode::kPeerFailure) poison(st);
}

void Context::on_loss_report(int peer, const ControlHeader& h, std::span<const std::byte> body) {
  // Reports about this rank's own stream only, from another rank, empty.
  if (h.root != static_cast<std::uint32_t>(rank_) || peer == rank_ || !body.empty()) {
    Counters::add(counters_.dropped_invalid);
    return;
  }
  // A collective not started here yet: this rank has sent nothing of it,
  // so the loss is no overrun (a receiver gave up waiting for a late root).
  if (!adapt_rate_ || !common::seq_before(h.seq, next_seq_)) return;
  if (!rate_.on_loss(h.seq, h.arg0)) return;
  Counters::add(counters_.rate_decreases);
  apply_rate();
  common::logf(common::LogLevel::kDebug, rank_,
               "rank %d lost from chunk %u of collective #%u: link rate estimate now %.0f Mbit/s",
               peer, h.arg0, h.seq, rate_.bytes_per_s() * 8e-6);
}

}  // namespace mccl::protocol
