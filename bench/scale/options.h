// mccl_scale_sim's command line (scale_sim.cc has the usage).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cases.h"

namespace mccl::bench::scale {

struct Options {
  std::vector<int> ranks{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  std::vector<Bench> benches{Bench::kBroadcast, Bench::kAllgather, Bench::kReduceScatter};
  std::vector<double> losses{0.0, 0.01};
  std::size_t bcast_bytes = 1 << 20;
  std::size_t ag_total = 2 << 20;  // allgather: m = min(ag_max, ag_total / N)
  std::size_t ag_max = 64 << 10;
  std::size_t rs_total = 1 << 20;  // reduce-scatter: block = rs_total / N
  double link_gbit = 1;
  std::size_t port_buffer = 512 << 10;
  std::size_t sender_burst = 256 << 10;
  std::optional<std::size_t> incast_budget;  // unset: MCCL_PROTO_INCAST_BYTES
  int roots = 0;                             // CollConfig::concurrent_roots
  double latency_us = 2;
  double tick_us = 0;  // the driver's clock step; 0: one MTU's time on the link
  std::uint64_t seed = 7;
  common::Duration wall_limit = std::chrono::seconds(300);
  std::string label;
  std::string json;
};

// False (after a message on stderr) for a bad command line.
bool parse(int argc, char** argv, Options& o);

}  // namespace mccl::bench::scale
