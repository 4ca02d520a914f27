// The measured crossovers of the algorithm table (algorithm.h): from which
// size multicast beats the point-to-point algorithms, by team size.
//
// Written from bench/tune/crossover.sh's output (the command and the machine
// are in docs/benchmarks.md, "Algorithm table"); rerun it and copy its
// table here when the algorithms or the transports change.
#pragma once

#include <cstddef>
#include <iterator>

namespace mccl::coll {

struct Crossover {
  int max_ranks;          // the row serves teams of up to this many ranks
  std::size_t broadcast;  // bytes: multicast from here up
  std::size_t allgather;  // bytes per rank: multicast from here up
};

// Rows by increasing max_ranks; the last serves every larger team.
// Measured on the namespace cluster with 10 Gbit/s links, one rank per host,
// RPS on, on a 2-core Intel Xeon (2026-11-25, docs/benchmarks.md "Small
// collectives: the algorithm table"):
//   bench/tune/crossover.sh --where fabric --rate 10gbit --ranks 2,4,8 --max-size 1m
// The 8-rank row serves larger teams too: nothing larger was measured.
inline constexpr Crossover kMeasuredCrossovers[] = {
    {2, 32768, 524288},
    {4, 131072, 32768},
    {8, 65536, 16384},
};

inline const Crossover& measured_crossover(int ranks) {
  for (const Crossover& row : kMeasuredCrossovers) {
    if (ranks <= row.max_ranks) return row;
  }
  return kMeasuredCrossovers[std::size(kMeasuredCrossovers) - 1];
}

}  // namespace mccl::coll
