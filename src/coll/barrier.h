// Dissemination barrier over the reliable transport: in round k every rank
// signals rank + 2^k and waits for rank - 2^k; after ceil(log2 N) rounds
// every rank has (transitively) heard from every other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/operation.h"

namespace mccl::coll {

class Barrier final : public protocol::Operation {
 public:
  explicit Barrier(protocol::Context& ctx, std::uint64_t signature);

  std::string describe() const override { return "barrier"; }
  // A few bytes per round, each round's message microseconds away.
  bool latency_bound() const override { return true; }
  void on_datagram(const protocol::DataHeader&, std::span<const std::byte>,
                   common::TimePoint) override;
  MCCL_OPERATION_HANDLERS;

 private:
  void signal_round();

  std::uint64_t signature_;
  int rounds_ = 0;
  int round_ = 0;            // the round whose signal we wait for
  std::vector<bool> heard_;  // per round, the signal from rank - 2^k came
};

}  // namespace mccl::coll
