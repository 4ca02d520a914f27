// The measured crossovers of the algorithm table (algorithm.h): from which
// size multicast beats the point-to-point algorithms, by team size, by the
// cores each rank has to itself and by whether the team is on one host.
//
// Three tables. The crossovers move with the cores: where a rank has
// a second core, the kernel's TCP receive work runs beside the rank's own
// and a point-to-point message is cheap, so it beats multicast up to far
// larger sizes (at 2 ranks at every size measured, where multicast injects
// no fewer bytes anyway); where ranks share cores, every copy and ACK the
// kernel does for TCP is taken from a rank, and multicast wins early. On one
// host (common::Placement::one_host) there is no wire to save: a multicast
// datagram costs each receiver a copy, as a TCP message does, and more per
// byte on the way (a datagram header, a receive slot), so multicast pays
// only where it spares the root its copies for many receivers.
// Written from bench/tune/crossover.sh's output (the commands and the
// machines are in docs/benchmarks.md, "Small collectives: the algorithm
// table"); rerun it and copy its rows here when the algorithms or the
// transports change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <span>

#include "common/coll_config.h"

namespace mccl::coll {

using Placement = common::Placement;  // common/coll_config.h

// A row's value where multicast never serves.
inline constexpr std::size_t kNeverMulticast = std::numeric_limits<std::size_t>::max();

struct Crossover {
  int max_ranks;          // the row serves teams of up to this many ranks
  std::size_t broadcast;  // bytes: multicast from here up
  std::size_t allgather;  // bytes per rank: multicast from here up
};

// From this many cores per rank (setup::Agreement::cores_per_rank) on, the
// table measured with cores to spare serves.
inline constexpr int kSpareCoresPerRank = 2;

// Rows by increasing max_ranks; the last serves every larger team.
// Measured on the namespace cluster with 10 Gbit/s links, one rank per host,
// RPS on, on a 2-core Intel Xeon (family 6, model 207): 1 core per rank at
// 2 ranks, fewer beyond; by the cycle, which counts what a point-to-point
// tree's TCP traffic leaves for the next collective, median of 5 alternating
// launches each, after the TCP connections between hosts stopped being paced
// (transport/tcp/congestion.h; 2026-11-30,
// docs/benchmarks/tcp-unpaced-2026-11-30/):
//   bench/tune/crossover.sh --where fabric --ranks 2 --metric cycle --reps 5
//   bench/tune/crossover.sh --where fabric --ranks 4,8 --metric cycle --reps 5
// At 2 ranks multicast injects what one send does, and a send measured ahead
// or level at every size to 1 MiB, as with cores to spare: never (2 MiB stands
// for "beyond the largest size measured"). Alternating reruns, 7 launches
// each, binomial against multicast: broadcast 64 KiB 76 against 90 us,
// 512 KiB 559 against 577; allgather 1 MiB 1,446 against 1,632. Paced by BBR,
// the row was {2, 32 KiB, 512 KiB}. At 4 ranks the allgather from 32 KiB
// (Bruck 378 against 343 us; 16 KiB level, 255 against 262), the broadcast
// from 64 KiB as before (binomial 250 against 217 us); the 8-rank row as
// before (broadcast 64 KiB 662 against 578 us, allgather 16 KiB 936 against
// 888).
inline constexpr Crossover kSharedCoresCrossovers[] = {
    {2, 2097152, 2097152},
    {4, 65536, 32768},
    {8, 65536, 16384},
};

// The same command on the lent 16-core Intel Xeon (2026-11-26): 8, 4 and 2
// cores per rank at 2, 4 and 8 ranks. 2 MiB stands for "beyond the largest
// size measured (1 MiB)". One correction: the script put the 4-rank
// broadcast's crossover at 64 KiB on one sample there (96.8 against
// 85.4 us); four runs of bench/fabric/run.sh in the same session measured
// the binomial tree at 52-69 us and multicast at 77-104 us at that size, and
// 128 KiB is clear (200.9 against 120.3 us), so the row says 128 KiB.
inline constexpr Crossover kSpareCoresCrossovers[] = {
    {2, 2097152, 2097152},
    {4, 131072, 2097152},
    {8, 65536, 131072},
};

// Every rank on one host, multicast over loopback (UDP on lo), whatever the
// cores, with the TCP connections unpaced (transport/tcp/congestion.h) and
// long TCP messages landing in the collective's buffer: measured on the
// 2-core AMD EPYC (2026-11-28, after the landing and Bruck's block-long
// segments), 1 core per rank at 2 ranks, fewer beyond:
//   bench/tune/crossover.sh --where loopback --ranks 4 --max-size 8m
//   bench/tune/crossover.sh --where loopback --ranks 8 --max-size 2m
// (docs/benchmarks/one-host-crossover-landing-2026-11-28/). At 2 ranks
// multicast injects what one send does and on one host saves no wire, and
// the sends measured faster at every size tried, to 32 MiB (OSU average,
// 3 rounds: broadcast 16 MiB 4.49 against 5.30 ms, 32 MiB 6.44 against
// 11.44; allgather 16 MiB 9.37 against 11.29, 32 MiB 20.7 against 23.3):
// never multicast. At 4 ranks: broadcast from 8 MiB (4 MiB 3.32 against
// 3.95 ms; three reruns 2.84 against 3.95; 8 MiB level, 8.20 against
// 8.17), allgather from 256 KiB as before. At 8 ranks: broadcast from
// 512 KiB as before; the allgather's p50 of the slowest rank put Bruck ahead
// up to 1 MiB by 3-10% but the OSU averages of three reruns put multicast
// ahead from 32 KiB (780 against 852 us) up, so the row keeps 32 KiB.
// The table before the landing had 4 MiB and 16 MiB ("beyond 8 MiB") for
// the broadcasts at 4 and 2 ranks; the one before that, measured while
// the kernel's default (BBR) paced the TCP connections, 1 MiB for every
// broadcast row.
// The 4- and 8-rank rows again by the cycle (the collective and the barrier
// after it, which counts what a point-to-point exchange leaves for the next
// collective), medians of 3 alternating launches, on the 2-core Intel Xeon
// (2026-11-29, docs/benchmarks/spin-crossover-2026-11-29/):
//   bench/tune/crossover.sh --where loopback --ranks 4 --max-size 8m --metric cycle --reps 3
//   bench/tune/crossover.sh --where loopback --ranks 8 --max-size 2m --metric cycle --reps 3
// At 4 ranks the allgather from 1 MiB (Bruck 913 against multicast 1,046 us
// at 256 KiB, level at 512 KiB, 3,872 against 3,572 at 1 MiB; pinned
// reruns, 7 launches each: 824 against 963 and 1,786 against 1,911); the
// broadcast stays at 8 MiB. At 8 ranks the broadcast from 4 MiB, beyond
// the 2 MiB measured (the binomial tree at 512 KiB 1,170 against
// 1,470 us, 1 MiB 2,344 against 2,897, 2 MiB 4,164 against
// 4,607; pinned reruns, 5 launches each: 1,372 against 1,547 and 2,126
// against 3,141). The 8-rank allgather keeps 32 KiB: multicast measured
// ahead at every size from 32 KiB but 512 KiB, where the two were level
// (9,082 against 9,298 us), which put the script's rule at 1 MiB. Larger
// teams, not measured by the cycle, keep the row that served them before.
inline constexpr Crossover kOneHostCrossovers[] = {
    {2, kNeverMulticast, kNeverMulticast},
    {4, 8388608, 1048576},
    {8, 4194304, 32768},
    {16, 524288, 32768},
};

// Where ranks share cores (fewer than kSpareCoresPerRank each), broadcasts
// below the crossover take the flat tree in teams of 3 up to this many ranks,
// the binomial tree in larger ones. A binomial tree's inner ranks forward,
// and on a shared core each forward waits for that rank to be scheduled;
// the flat tree's root sends N - 1 times instead. Measured on the 2-core
// AMD EPYC (2026-11-27, docs/benchmarks/flat-tree-2026-11-27/), OSU average
// over ranks, medians of 3-6 alternating runs, flat against binomial: one
// host, 8 B at 4 ranks 22 against 32 us, 8 KiB at 8 ranks 79 against
// 122 us, 32 KiB at 8 ranks 95 against 128 us; at 16 ranks 8 B 874
// against 237 us (the root's 15 sends). The namespace cluster at 10 Gbit/s:
// 8 B at 8 ranks 134 against 180 us, 8 B at 4 ranks 61 against 63 us.
// Below 64 KiB: at 4 ranks and 64 KiB (below that row's crossover) the flat
// tree measured 64.5 against the binomial's 60.8 us, where the root's third
// copy of the message starts to count. With cores to spare nothing was
// measured: the binomial tree serves.
inline constexpr int kSharedCoresFlatMaxRanks = 8;
inline constexpr std::size_t kSharedCoresFlatBelowBytes = 65536;

// The star barrier (barrier.h) where ranks share cores, in teams of 3 to
// this many. One host, 2-core AMD EPYC (2026-11-28,
// docs/benchmarks/barrier-star-2026-11-28/), OSU average over ranks, medians
// of 5 alternating runs, star against dissemination: 8-byte broadcast at 4
// ranks 17.8 against 19.0 us, 1 KiB 17.0 against 34.6, at 8 ranks 37.5
// against 53.1; at 16 ranks (3 runs each) 8-byte broadcast 835 against 237
// and allgather 1230 against 511: rank 0 then takes 15 signals and sends 15
// releases, one after another, on a core it shares with 7 other ranks.
inline constexpr int kSharedCoresStarMaxRanks = 8;

// The star allgather (star_allgather.h) where ranks share cores, in the
// barrier's teams (3 to kSharedCoresStarMaxRanks), for blocks below this.
// 2-core AMD EPYC (2026-11-28, docs/benchmarks/star-allgather-2026-11-28/),
// star against Bruck, the slowest rank's mean per iteration, 2 to 3
// alternating runs each: the namespace cluster at 10 Gbit/s, 8 ranks, 8 B
// 512-582 against 691-787 us (Open MPI 715-829), 1 KiB 518-645 against
// 660-849 (Open MPI 886-1054), 4 KiB 582-616 against 887-902, 16 KiB level
// (1296-1461 against 1343-1368); 4 ranks 8 B 144-188 against 245-300, 1 KiB
// level, 16 KiB 296-436 against 372-396. One host, OSU average, medians of
// 7: 8 ranks 8 B 197 against 239 us, 16 KiB 523 against 578; 4 ranks level
// within the noise (8 B 65.9 against 62.6).
inline constexpr std::size_t kSharedCoresStarAllgatherBelowBytes = 16384;

// The 8-rank rows serve larger teams too: nothing larger was measured.
inline const Crossover& measured_crossover(int ranks, const Placement& where) {
  const std::span<const Crossover> table = where.one_host
                                               ? std::span<const Crossover>(kOneHostCrossovers)
                                           : where.cores_per_rank >= kSpareCoresPerRank
                                               ? std::span<const Crossover>(kSpareCoresCrossovers)
                                               : std::span<const Crossover>(kSharedCoresCrossovers);
  for (const Crossover& row : table) {
    if (ranks <= row.max_ranks) return row;
  }
  return table.back();
}

}  // namespace mccl::coll
