// --timeline: where the time of one multicast collective goes, rank by rank.
// Each rank records, for every timed iteration, when it called the
// collective and when the call returned (the benchmark's clock) and the
// steps MCCL reports for it (Stats::last_mcast); rank 0 prints, per rank,
// the median over iterations of each step relative to the iteration's first
// datagram sent (the root's), plus the spread of the ranks' call times (how
// unevenly the barrier before it let them go). One clock serves every rank
// of a host, network namespaces included, so the figures are comparable
// there; across hosts they are not. It also reports the CPU time each call
// took on each rank (CLOCK_PROCESS_CPUTIME_ID around the call), to tell a
// rank that waits from one that works.
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
    kCpu,  // not a moment: CPU time the call took on this rank (process time)
    kSteps
  };

  explicit Timeline(int iterations);

  // The whole machine's CPU time by kind (/proc/stat, every core), read by
  // rank 0 before and after the timed loop: with every rank on this host, it
  // says what one collective cost the machine, kernel (the fabric: bridge,
  // rate limiters, softirq) and processes apart.
  struct MachineCpu {
    double user_s = 0, system_s = 0, softirq_s = 0, idle_s = 0;
    static MachineCpu now();  // zeros where /proc/stat cannot be read
  };
  void machine_before() { before_ = MachineCpu::now(); }
  void machine_after() { after_ = MachineCpu::now(); }

  // Iteration `iter` (0-based among the timed ones) on this rank.
  // `cpu_ns`: the process's CPU time (user and system) the call took.
  void record(int iter, std::chrono::steady_clock::time_point called,
              std::chrono::steady_clock::time_point returned, double cpu_ns,
              const McastTimeline& steps);

  // This rank's values, for the allgather that brings every rank's to rank 0.
  const std::vector<double>& values() const { return values_; }

  // Rank 0: `all` holds every rank's values() one after the other. Prints
  // '#' lines to stdout; `json` (may be null) gets `,"timeline":{...}`
  // appended to the line being written.
  // Also prints the machine's CPU per collective from machine_before/after.
  void report(const std::vector<double>& all, int ranks, int iterations, std::FILE* json) const;

 private:
  std::vector<double> values_;  // iterations x kSteps, ns of CLOCK_MONOTONIC, 0 = none
  MachineCpu before_, after_;
};

}  // namespace mccl::bench::osu
