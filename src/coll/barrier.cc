#include "coll/barrier.h"

#include "protocol/context.h"

namespace mccl::coll {

using protocol::ControlHeader;
using protocol::ControlKind;

void BarrierOperation::on_datagram(const protocol::DataHeader&, std::span<const std::byte>,
                                   common::TimePoint) {
  protocol::Counters::add(ctx_.counters().dropped_invalid);
}

bool BarrierOperation::accept(int peer, const ControlHeader& h, std::uint32_t arg0_limit) {
  if (h.signature != signature_) {
    ctx_.poison(common::mismatch_error(
        "rank " + std::to_string(ctx_.rank()) + ": collective #" + std::to_string(seq()) +
        " is a barrier here but another collective (or another barrier algorithm, "
        "MCCL_COLL_BARRIER_ALGO) on rank " +
        std::to_string(peer)));
    return false;
  }
  if (h.kind != ControlKind::kBarrier || h.arg0 >= arg0_limit) {
    protocol::Counters::add(ctx_.counters().dropped_invalid);
    return false;
  }
  return true;
}

void BarrierOperation::signal(int to, std::uint32_t arg0) {
  ControlHeader h{
      .kind = ControlKind::kBarrier, .seq = seq(), .signature = signature_, .arg0 = arg0};
  common::Status st = ctx_.send_control(to, h);
  if (!st.is_ok()) ctx_.poison(st);
}

// ---- dissemination ----

Barrier::Barrier(protocol::Context& ctx, std::uint64_t signature)
    : BarrierOperation(ctx, signature) {
  while ((1 << rounds_) < ctx.size()) ++rounds_;
  heard_.assign(rounds_, false);
}

int Barrier::from_of_round(int k) const {
  const int n = ctx_.size();
  return ((ctx_.rank() - (1 << k) % n) % n + n) % n;
}

std::string Barrier::describe_wait() const {
  return "round " + std::to_string(round_) + " signal from rank " +
         std::to_string(from_of_round(round_));
}

void Barrier::on_start(common::TimePoint) {
  if (rounds_ > 0) signal((ctx_.rank() + 1) % ctx_.size(), 0);
}

void Barrier::on_control(int peer, const ControlHeader& h, std::span<const std::byte>,
                         common::TimePoint) {
  if (!accept(peer, h, static_cast<std::uint32_t>(rounds_))) return;
  const int k = static_cast<int>(h.arg0);
  if (peer != from_of_round(k)) {
    protocol::Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  heard_[k] = true;
}

bool Barrier::needs(int peer) const {
  for (int k = round_; k < rounds_; ++k) {
    if (!heard_[k] && from_of_round(k) == peer) return true;
  }
  return false;
}

void Barrier::progress(common::TimePoint) {
  // Rounds advance in order: round k+1's signal may only be sent once round
  // k's was heard, which is what makes the barrier transitive.
  while (round_ < rounds_ && heard_[round_]) {
    ++round_;
    if (round_ < rounds_) {
      signal((ctx_.rank() + (1 << round_)) % ctx_.size(), static_cast<std::uint32_t>(round_));
    }
  }
  if (round_ == rounds_) finish(common::Status::ok());
}

// ---- star ----

StarBarrier::StarBarrier(protocol::Context& ctx, std::uint64_t signature)
    : BarrierOperation(ctx, signature) {
  if (ctx.rank() == 0) {
    arrived_.assign(static_cast<std::size_t>(ctx.size()), false);
    waiting_for_ = ctx.size() - 1;
  }
}

std::string StarBarrier::describe_wait() const {
  if (ctx_.rank() != 0) return "the release from rank 0";
  for (int r = 1; r < ctx_.size(); ++r) {
    if (!arrived_[static_cast<std::size_t>(r)]) {
      return std::to_string(waiting_for_) + " ranks' signals, rank " + std::to_string(r) +
             "'s among them";
    }
  }
  return "nothing";
}

void StarBarrier::on_start(common::TimePoint) {
  if (ctx_.rank() != 0) signal(0, kArrived);
}

void StarBarrier::on_control(int peer, const ControlHeader& h, std::span<const std::byte>,
                             common::TimePoint) {
  if (!accept(peer, h, kRelease + 1)) return;
  const bool root = ctx_.rank() == 0;
  if (root && h.arg0 == kArrived && peer != 0 && !arrived_[static_cast<std::size_t>(peer)]) {
    arrived_[static_cast<std::size_t>(peer)] = true;
    --waiting_for_;
  } else if (!root && h.arg0 == kRelease && peer == 0) {
    released_ = true;
  } else {
    protocol::Counters::add(ctx_.counters().dropped_invalid);
  }
}

bool StarBarrier::needs(int peer) const {
  if (ctx_.rank() != 0) return peer == 0 && !released_;
  return peer != 0 && !arrived_[static_cast<std::size_t>(peer)];
}

void StarBarrier::progress(common::TimePoint) {
  if (ctx_.rank() == 0) {
    if (waiting_for_ > 0) return;
    for (int r = 1; r < ctx_.size(); ++r) signal(r, kRelease);
  } else if (!released_) {
    return;
  }
  finish(common::Status::ok());
}

}  // namespace mccl::coll
