// MCCL_MPI_MIN_BYTES=auto: from which message size libmccl_mpi serves each
// collective instead of the MPI underneath, by team size, so that an
// unmodified MPI program is never slower under the preload at any size.
//
// The sizes are the ones decide.cc compares: a broadcast's message, an
// allreduce's vector, an allgather's or reduce-scatter's whole result (so
// the crossover moves less with the team size than a rank's block would).
// Written from bench/tune/mpi_crossover.sh's rows (the commands, the
// machine and every figure are in docs/benchmarks/mpi-min-bytes-2026-11-27/
// and docs/benchmarks.md, "libmccl_mpi: the waiting caller drives progress,
// and a threshold per collective"); rerun it and copy its rows here when MCCL or its default
// engine changes. tests/mpi/min_bytes_test.sh checks the preload against
// it (the creation line under MCCL_MPI_DEBUG names each collective's value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace mccl::mpi {

// The collectives whose crossovers were measured; a nonblocking call and
// allgatherv use their blocking allgather's or broadcast's.
enum class Family : std::uint8_t { kBcast, kAllgather, kAllreduce, kReduceScatter };

struct MinBytes {
  int max_ranks;  // the row serves teams of up to this many ranks
  // Bytes from which MCCL serves, by Family: broadcast, allgather,
  // allreduce, reduce-scatter.
  std::size_t bytes[4];

  constexpr std::size_t of(Family f) const { return bytes[static_cast<int>(f)]; }
};

// Rows by increasing max_ranks; the last serves every larger team.
// Measured on the namespace cluster with 10 Gbit/s links (fast links are
// where MPI's own algorithms do best), one rank per host, RPS on, Open MPI
// 4.1.4 over TCP, MCCL with libmccl_mpi's default engine (the progress
// thread), on a 2-core AMD EPYC (2026-11-27): ranks share cores, which
// costs MCCL's small collectives (a progress thread per rank beside MPI
// spinning) more than MPI's. A machine with a core per rank and thread was
// not measured. Twice the largest size measured (2 MiB, or 2 x ranks x
// 1 MiB for a whole result) stands for "not faster up to 1 MiB": at 2 ranks
// multicast saves nothing over MPI's single send, and Open MPI's allreduce
// stayed 1.1-1.3x faster at 1 MiB.
//   bench/tune/mpi_crossover.sh --ranks 2,4 --repeat 3 --max-size 1m
//   bench/tune/mpi_crossover.sh --ranks 8 --repeat 2 --max-size 1m -i 100 -x 10
inline constexpr MinBytes kMeasuredMinBytes[] = {
    {2, {2097152, 4194304, 2097152, 131072}},
    {4, {262144, 524288, 2097152, 262144}},
    {8, {524288, 4194304, 2097152, 262144}},
};

// The 8-rank row serves larger teams too: nothing larger was measured.
constexpr std::size_t measured_min_bytes(Family f, int ranks) {
  for (const MinBytes& row : kMeasuredMinBytes) {
    if (ranks <= row.max_ranks) return row.of(f);
  }
  return kMeasuredMinBytes[std::size(kMeasuredMinBytes) - 1].of(f);
}

}  // namespace mccl::mpi
