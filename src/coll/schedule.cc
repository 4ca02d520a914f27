#include "coll/schedule.h"

#include <utility>

#include "protocol/context.h"

namespace mccl::coll {

using protocol::Counters;

Schedule::Schedule(protocol::Context& ctx, std::string what,
                   std::vector<std::shared_ptr<protocol::Operation>> steps, Router route,
                   int datagram_step)
    : Operation(ctx),
      what_(std::move(what)),
      steps_(std::move(steps)),
      route_(std::move(route)),
      datagram_step_(datagram_step) {}

std::string Schedule::describe_wait() const {
  if (current_ >= steps_.size()) return "nothing (internal error)";
  const auto& step = *steps_[current_];
  return "step " + std::to_string(current_ + 1) + " of " + std::to_string(steps_.size()) + " (" +
         step.describe() + "): " + step.describe_wait();
}

void Schedule::on_start(common::TimePoint now) {
  for (auto& step : steps_) ctx_.adopt(*step, *this);
  if (steps_.empty()) {
    finish(common::Status::ok());
    return;
  }
  start_step(now);
}

void Schedule::start_step(common::TimePoint now) {
  auto& step = *steps_[current_];
  step.on_start(now);
  // Hand over what came for this step before it started, in arrival order.
  std::vector<Held> mine, later;
  for (auto& m : held_) (m.step == current_ ? mine : later).push_back(std::move(m));
  held_ = std::move(later);
  for (auto& m : mine) {
    if (step.done()) break;
    step.on_control(m.peer, m.header, m.body, now);
  }
}

void Schedule::on_datagram(const protocol::DataHeader& h, std::span<const std::byte> payload,
                           common::TimePoint now) {
  const auto i = static_cast<std::size_t>(datagram_step_);
  if (datagram_step_ < 0 || i >= steps_.size() || i < current_ || steps_[i]->done()) {
    // No multicast step, or it has finished: a duplicate or a late chunk.
    Counters::add(ctx_.counters().dropped_duplicate);
    return;
  }
  steps_[i]->on_datagram(h, payload, now);
}

std::size_t Schedule::landings(std::uint32_t root, std::uint64_t first,
                               std::span<transport::Landing> out) {
  const auto i = static_cast<std::size_t>(datagram_step_);
  if (datagram_step_ < 0 || i != current_ || steps_[i]->done()) return 0;
  return steps_[i]->landings(root, first, out);
}

void Schedule::on_control(int peer, const protocol::ControlHeader& h,
                          std::span<const std::byte> body, common::TimePoint now) {
  const std::size_t i = route_(h);
  if (i >= steps_.size()) {
    Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  if (i < current_) return;  // late news of a finished step
  if (i > current_) {
    held_.push_back({i, peer, h, std::vector<std::byte>(body.begin(), body.end())});
    return;
  }
  if (!steps_[i]->done()) steps_[i]->on_control(peer, h, body, now);
}

void Schedule::progress(common::TimePoint now) {
  while (current_ < steps_.size() && !done()) {
    auto& step = *steps_[current_];
    if (!step.done()) step.progress(now);
    if (!step.done()) return;
    if (!step.status().is_ok()) {
      finish(step.status());
      return;
    }
    if (++current_ == steps_.size()) {
      held_.clear();
      finish(common::Status::ok());
      return;
    }
    start_step(now);
  }
}

bool Schedule::needs(int peer) const {
  // Steps not started yet answer for the messages they will need.
  for (std::size_t i = current_; i < steps_.size(); ++i) {
    if (!steps_[i]->done() && steps_[i]->needs(peer)) return true;
  }
  return false;
}

}  // namespace mccl::coll
