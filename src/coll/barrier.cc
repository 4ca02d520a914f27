#include "coll/barrier.h"

#include "protocol/context.h"

namespace mccl::coll {

using protocol::ControlHeader;
using protocol::ControlKind;

Barrier::Barrier(protocol::Context& ctx, std::uint64_t signature)
    : Operation(ctx), signature_(signature) {
  while ((1 << rounds_) < ctx.size()) ++rounds_;
  heard_.assign(rounds_, false);
}

std::string Barrier::describe_wait() const {
  int from = (ctx_.rank() - (1 << round_) % ctx_.size() + ctx_.size()) % ctx_.size();
  return "round " + std::to_string(round_) + " signal from rank " + std::to_string(from);
}

void Barrier::signal_round() {
  ControlHeader h{.kind = ControlKind::kBarrier,
                  .seq = seq(),
                  .signature = signature_,
                  .arg0 = static_cast<std::uint32_t>(round_)};
  int to = (ctx_.rank() + (1 << round_)) % ctx_.size();
  common::Status st = ctx_.send_control(to, h);
  if (!st.is_ok()) ctx_.poison(st);
}

void Barrier::on_start(common::TimePoint) {
  if (rounds_ > 0) signal_round();
}

void Barrier::on_datagram(const protocol::DataHeader&, std::span<const std::byte>,
                          common::TimePoint) {
  protocol::Counters::add(ctx_.counters().dropped_invalid);
}

void Barrier::on_control(int peer, const ControlHeader& h, std::span<const std::byte>,
                         common::TimePoint) {
  if (h.signature != signature_) {
    ctx_.poison(common::mismatch_error(
        "rank " + std::to_string(ctx_.rank()) + ": collective #" + std::to_string(seq()) +
        " is a barrier here but another collective on rank " + std::to_string(peer)));
    return;
  }
  if (h.kind != ControlKind::kBarrier || h.arg0 >= static_cast<std::uint32_t>(rounds_)) {
    protocol::Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  const int k = static_cast<int>(h.arg0);
  const int from =
      ((ctx_.rank() - (1 << k) % ctx_.size()) % ctx_.size() + ctx_.size()) % ctx_.size();
  if (peer != from) {
    protocol::Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  heard_[k] = true;
}

bool Barrier::needs(int peer) const {
  for (int k = round_; k < rounds_; ++k) {
    int from = ((ctx_.rank() - (1 << k) % ctx_.size()) % ctx_.size() + ctx_.size()) % ctx_.size();
    if (!heard_[k] && from == peer) return true;
  }
  return false;
}

void Barrier::progress(common::TimePoint) {
  // Rounds advance in order: round k+1's signal may only be sent once round
  // k's was heard, which is what makes the barrier transitive.
  while (round_ < rounds_ && heard_[round_]) {
    ++round_;
    if (round_ < rounds_) signal_round();
  }
  if (round_ == rounds_) finish(common::Status::ok());
}

}  // namespace mccl::coll
