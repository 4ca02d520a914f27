#include "simworld/world.h"

#include <algorithm>
#include <string>

#include "common/log.h"

namespace mccl::simworld {

World::World(const WorldConfig& config) : config_(config) {
  if (config_.ranks < 1) {
    common::contract_violated("simworld: ranks must be at least 1, got " +
                              std::to_string(config_.ranks));
  }
  config_.fabric.virtual_time = true;
  fabric_ = std::make_shared<transport::sim::Fabric>(config_.fabric);
  protocol::ProtocolConfig pc = config_.protocol;
  pc.clock = [fabric = fabric_.get()] { return fabric->now(); };
  contexts_.reserve(static_cast<std::size_t>(config_.ranks));
  for (int r = 0; r < config_.ranks; ++r) {
    contexts_.push_back(std::make_unique<protocol::Context>(
        r, config_.ranks, config_.tag, fabric_->join_datagram(config_.tag, r),
        fabric_->join_reliable(config_.tag, r, config_.ranks), pc));
  }
}

bool World::round() {
  const transport::sim::FabricCounters before = fabric_->counters();
  std::size_t handled = 0;
  for (auto& c : contexts_) handled += c->progress();
  const transport::sim::FabricCounters after = fabric_->counters();
  return handled > 0 || after.sent != before.sent ||
         after.reliable_messages != before.reliable_messages;
}

void World::advance_clock(bool busy) {
  if (busy) {
    fabric_->advance(config_.tick);
    return;
  }
  // Nothing to do now: skip to the next arrival, but never further than
  // idle_step, which is where a loss deadline or a pacer may come due.
  common::Duration step = config_.idle_step;
  if (auto next = fabric_->next_arrival()) {
    step = std::clamp<common::Duration>(*next - now(), config_.tick, config_.idle_step);
  }
  fabric_->advance(step);
}

common::Status World::run(std::span<const std::shared_ptr<protocol::Operation>> ops,
                          common::Duration wall_limit, RunResult& result) {
  if (ops.size() != contexts_.size()) {
    return common::invalid_argument("simworld: " + std::to_string(ops.size()) + " ops for " +
                                    std::to_string(contexts_.size()) + " ranks");
  }
  const auto deadline = common::Deadline::after(wall_limit);
  const common::TimePoint start = now();
  for (std::size_t r = 0; r < ops.size(); ++r) contexts_[r]->start(ops[r]);
  result = RunResult{};
  std::size_t first_open = 0;  // ops below are done
  common::TimePoint last_done = start;
  while (true) {
    while (first_open < ops.size() && ops[first_open]->done()) ++first_open;
    if (first_open == ops.size()) break;
    if (deadline.expired()) {
      std::string open;
      for (std::size_t r = first_open; r < ops.size() && open.size() < 200; ++r) {
        if (!ops[r]->done()) open += " " + std::to_string(r);
      }
      return common::Status(ErrorCode::kTimeout,
                            "simworld: ranks" + open + " still waiting after the wall-time limit");
    }
    const bool busy = round();
    ++result.rounds;
    last_done = now();
    advance_clock(busy);
  }
  result.elapsed = last_done - start;
  for (const auto& op : ops) {
    if (!op->status().is_ok()) return op->status();
  }
  return common::Status::ok();
}

}  // namespace mccl::simworld
