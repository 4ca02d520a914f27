// --timeline: where the time of one multicast collective goes, rank by rank.
// Each rank records, for every timed iteration, when it called the
// collective and when the call returned (the benchmark's clock) and the
// steps MCCL reports for it (Stats::last_mcast); rank 0 prints, per rank,
// the median over iterations of each step relative to the iteration's first
// datagram sent (the root's), plus the spread of the ranks' call times (how
// unevenly the barrier before it let them go). One clock serves every rank
// of a host, network namespaces included, so the figures are comparable
// there; across hosts they are not.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <vector>

#include "mccl/stats.h"

namespace mccl::bench::osu {

class Timeline {
 public:
  // The steps of one iteration on one rank, in the order they happen.
  enum Step {
    kCalled,
    kStarted,
    kFirstSent,
    kLastSent,
    kFirstArrival,
    kLastArrival,
    kHeld,
    kReleased,
    kCompleted,
    kReturned,
    kSteps
  };

  explicit Timeline(int iterations);

  // Iteration `iter` (0-based among the timed ones) on this rank.
  void record(int iter, std::chrono::steady_clock::time_point called,
              std::chrono::steady_clock::time_point returned, const McastTimeline& steps);

  // This rank's values, for the allgather that brings every rank's to rank 0.
  const std::vector<double>& values() const { return values_; }

  // Rank 0: `all` holds every rank's values() one after the other. Prints
  // '#' lines to stdout; `json` (may be null) gets `,"timeline":{...}`
  // appended to the line being written.
  static void report(const std::vector<double>& all, int ranks, int iterations, std::FILE* json);

 private:
  std::vector<double> values_;  // iterations x kSteps, ns of CLOCK_MONOTONIC, 0 = none
};

}  // namespace mccl::bench::osu
