// Ranks as tasks: N protocol contexts over one in-memory fabric, all driven
// from the calling thread in the fabric's virtual time. No rank has a
// thread of its own, so a thousand ranks cost a thousand contexts and their
// buffers, not a thousand stacks, and a run is reproducible: what happens
// follows from the order of events on the virtual clock, never from how the
// operating system schedules threads (bench/scale and the scale test).
//
// The driver runs rounds: every rank's Context::progress() once, then the
// clock moves on, by `tick` after a round in which something happened, or
// straight to the next arrival on the fabric (at most `idle_step` ahead, so
// the protocol's loss deadlines still come due) after a round in which
// nothing did.
//
// Single-threaded: one thread creates, drives and reads a World.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "protocol/context.h"
#include "protocol/operation.h"
#include "transport/sim/sim_transport.h"

namespace mccl::simworld {

struct WorldConfig {
  int ranks = 2;
  transport::sim::FabricConfig fabric;  // virtual_time is forced on
  protocol::ProtocolConfig protocol;    // its clock is the fabric's
  common::Duration tick = std::chrono::microseconds(1);
  common::Duration idle_step = std::chrono::microseconds(20);
  std::uint32_t tag = 0x5CA1E001;
};

// The virtual time a run took and how the driver spent it.
struct RunResult {
  common::Duration elapsed{};  // on the fabric's clock, start to last completion
  std::uint64_t rounds = 0;
};

class World {
 public:
  // config.ranks must be at least 1 (a broken precondition aborts).
  explicit World(const WorldConfig& config);
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int size() const { return static_cast<int>(contexts_.size()); }
  protocol::Context& context(int rank) { return *contexts_[static_cast<std::size_t>(rank)]; }
  transport::sim::Fabric& fabric() { return *fabric_; }
  common::TimePoint now() const { return fabric_->now(); }

  // Starts ops[r] on rank r, all at the same virtual instant, and drives
  // every rank until every op is done (finished ranks keep serving their
  // neighbours' repairs). Fails with the first op's error, or with
  // kTimeout naming the ranks still waiting when `wall_limit` of real time
  // passed first.
  common::Status run(std::span<const std::shared_ptr<protocol::Operation>> ops,
                     common::Duration wall_limit, RunResult& result);

 private:
  // One round; true when some rank handled or sent something.
  bool round();
  void advance_clock(bool busy);

  WorldConfig config_;
  std::shared_ptr<transport::sim::Fabric> fabric_;
  std::vector<std::unique_ptr<protocol::Context>> contexts_;
};

}  // namespace mccl::simworld
