#include "coll/local_steps.h"

#include "protocol/context.h"

namespace mccl::coll {

using protocol::Counters;

std::string DeferredStep::describe_wait() const {
  return inner_ ? inner_->describe_wait() : "its start";
}

void DeferredStep::on_start(common::TimePoint now) {
  inner_ = build_();
  ctx_.adopt(*inner_, *this);
  inner_->on_start(now);
  std::vector<Early> early = std::move(early_);
  early_bytes_ = 0;
  for (const auto& e : early) {
    if (inner_->done()) break;
    inner_->on_datagram(e.header, e.payload, now);
  }
  settle();
}

void DeferredStep::on_datagram(const protocol::DataHeader& h, std::span<const std::byte> payload,
                               common::TimePoint now) {
  if (!inner_) {
    // A root ahead of this rank: its stream's size is not known here yet.
    if (early_bytes_ + payload.size() > kEarlyBytes) {
      Counters::add(ctx_.counters().early_arrivals_dropped);
      return;
    }
    early_bytes_ += payload.size();
    early_.push_back({h, {payload.begin(), payload.end()}});
    Counters::add(ctx_.counters().early_arrivals_stored);
    return;
  }
  inner_->on_datagram(h, payload, now);
  settle();
}

void DeferredStep::on_control(int peer, const protocol::ControlHeader& h,
                              std::span<const std::byte> body, common::TimePoint now) {
  if (!inner_) return;  // the schedule holds messages until the step starts
  inner_->on_control(peer, h, body, now);
  settle();
}

void DeferredStep::progress(common::TimePoint now) {
  if (!inner_) return;
  if (!inner_->done()) inner_->progress(now);
  settle();
}

bool DeferredStep::needs(int peer) const {
  if (!inner_) return peer == ctx_.left() || peer == ctx_.right();
  return !inner_->done() && inner_->needs(peer);
}

void DeferredStep::settle() {
  if (inner_->done()) finish(inner_->status());
}

}  // namespace mccl::coll
