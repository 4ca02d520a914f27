// The shared state of an in-process world: the simulated fabric and the
// rendezvous its bootstraps exchange through.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "mccl/bootstrap.h"
#include "transport/sim/sim_transport.h"

namespace mccl::detail {

class WorldState {
 public:
  WorldState(int size, const transport::sim::FabricConfig& config)
      : size_(size), fabric_(config), calls_(size, 0) {}

  int size() const { return size_; }
  transport::sim::Fabric& fabric() { return fabric_; }

  // The collective exchange behind InProcessBootstrap::allgather: the k-th
  // call of every rank meets the k-th call of every other.
  std::vector<std::byte> allgather(int rank, std::span<const std::byte> mine,
                                   std::chrono::milliseconds timeout);
  void mark_dead(int rank);

 private:
  struct Round {
    std::vector<std::vector<std::byte>> contributions;
    std::vector<bool> arrived;
    int count = 0;
    int taken = 0;
  };
  const int size_;
  transport::sim::Fabric fabric_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::uint64_t> calls_;  // exchanges entered, per rank
  std::map<std::uint64_t, Round> rounds_;
};

// A bootstrap whose ranks are in this process.
class InProcessBootstrap final : public Bootstrap {
 public:
  InProcessBootstrap(std::shared_ptr<WorldState> world, int rank)
      : world_(std::move(world)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  std::vector<std::byte> allgather(std::span<const std::byte> mine,
                                   std::chrono::milliseconds timeout) override {
    return world_->allgather(rank_, mine, timeout);
  }
  WorldState& world() const { return *world_; }

 private:
  std::shared_ptr<WorldState> world_;
  int rank_;
};

}  // namespace mccl::detail
