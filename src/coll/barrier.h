// Barriers over the reliable transport, with no payload (kBarrier messages).
//  - Barrier, dissemination: in round k every rank signals rank + 2^k and
//    waits for rank - 2^k; after ceil(log2 N) rounds every rank has
//    (transitively) heard from every other. Every rank runs in every round.
//  - StarBarrier: every other rank signals rank 0 (arg0 = 0); rank 0, once
//    it has heard from all, releases them (arg0 = 1). A rank other than 0
//    runs twice, to signal and to leave, which is what counts where ranks
//    share cores and each round waits for its receiver to be scheduled
//    (docs/algorithms.md; the table: choose_barrier).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/operation.h"

namespace mccl::coll {

// What both barriers share: a datagram is never theirs, and a message under
// another signature means a rank called another collective.
class BarrierOperation : public protocol::Operation {
 public:
  BarrierOperation(protocol::Context& ctx, std::uint64_t signature)
      : Operation(ctx), signature_(signature) {}

  std::string describe() const override { return "barrier"; }
  // A few bytes per round, each round's message microseconds away.
  bool latency_bound() const override { return true; }
  void on_datagram(const protocol::DataHeader&, std::span<const std::byte>,
                   common::TimePoint) final;

 protected:
  // Whether `h` is a kBarrier message of this barrier with arg0 below
  // `arg0_limit`; a message under another signature fails the barrier, any
  // other is counted invalid.
  bool accept(int peer, const protocol::ControlHeader& h, std::uint32_t arg0_limit);
  // Sends this barrier's signal `arg0` to `to`; a failure fails it.
  void signal(int to, std::uint32_t arg0);

 private:
  std::uint64_t signature_;
};

class Barrier final : public BarrierOperation {
 public:
  Barrier(protocol::Context& ctx, std::uint64_t signature);
  MCCL_OPERATION_HANDLERS;

 private:
  int from_of_round(int k) const;  // rank - 2^k

  int rounds_ = 0;
  int round_ = 0;            // the round whose signal we wait for
  std::vector<bool> heard_;  // per round, the signal from rank - 2^k came
};

class StarBarrier final : public BarrierOperation {
 public:
  StarBarrier(protocol::Context& ctx, std::uint64_t signature);
  MCCL_OPERATION_HANDLERS;

 private:
  static constexpr std::uint32_t kArrived = 0;
  static constexpr std::uint32_t kRelease = 1;

  std::vector<bool> arrived_;  // rank 0: per rank, its signal came
  int waiting_for_ = 0;        // rank 0: signals still to come
  bool released_ = false;      // others: rank 0's release came
};

}  // namespace mccl::coll
