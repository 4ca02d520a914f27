// One measured case of the scale simulation: a collective at N ranks on a
// simworld::World, timed on the fabric's virtual clock, with what each rank
// repaired, sent over the reliable transport and to how many peers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "coll/collectives.h"
#include "simworld/world.h"

namespace mccl::bench::scale {

enum class Bench { kBroadcast, kAllgather, kReduceScatter };
const char* bench_name(Bench b);

struct CaseSpec {
  Bench bench = Bench::kBroadcast;
  // Broadcast: the message; allgather: each rank's block; reduce-scatter:
  // each rank's result block (its input is ranks x this).
  std::size_t bytes = 0;
  coll::CollConfig coll;
};

// Everything a JSON line reports about one case.
struct CaseResult {
  bool exact = false;  // every rank's result byte-exact
  std::string error;   // the run's failure, empty on success
  double time_us = 0;  // virtual time, start to the last rank's completion
  double bound_us = 0;
  std::uint64_t rounds = 0;
  double wall_s = 0;
  // Per rank: mean and max.
  double repair_bytes_mean = 0, repair_bytes_max = 0;
  double excess_repair_max = 0;  // repair bytes beyond what the fabric dropped to the rank
  double lost_bytes_max = 0;     // dropped by the loss model and the ports
  double control_mean = 0, control_max = 0;
  double peers_mean = 0, peers_max = 0;
  std::uint64_t port_drops = 0, port_drops_max = 0;  // total, busiest port
  std::uint64_t port_peak_bytes = 0;
  double injected_max = 0;  // datagram bytes the busiest root sent, in m
  // Heap the world holds per rank after the run, the case's buffers freed
  // (receive queues grown, eager copies, early arrivals).
  double state_after_bytes = 0;
};

// Runs `spec` once on `world`; `link_bytes_per_s` gives the bound.
CaseResult run_case(simworld::World& world, const CaseSpec& spec, double link_bytes_per_s,
                    common::Duration wall_limit);

}  // namespace mccl::bench::scale
