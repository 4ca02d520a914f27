// How many bytes all multicast roots injecting at once may burst into one
// receiver's switch port (ProtocolConfig::incast_bytes, the incast budget
// of docs/scale.md), when MCCL_PROTO_INCAST_BYTES is left to auto.
//
// A port's buffer grows with its rate: the namespace cluster's rate
// limiters queue 20 ms, the simulated switch 512 KiB at 1 Gbit/s (4.2 ms),
// and switch ports absorb a few hundred KB to a few MB under load. A fixed
// 256 KiB fits the slowest of them (100 Mbit/s, 250 KB) but caps a few
// roots' bursts far below what a faster port holds: at 1 Gbit/s four roots
// got 64 KB each and a 4 x 16 MiB allgather took 1.32x the bound, against
// 1.12x with 512 KiB (docs/benchmarks/line-rate-2026-11-26/). So auto is
// the slowest known link's rate times kIncastAutoSeconds, within
// [kIncastAutoMinBytes, kIncastAutoMaxBytes]; with no rate known, the
// minimum.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mccl::protocol {

inline constexpr double kIncastAutoSeconds = 4e-3;
inline constexpr std::size_t kIncastAutoMinBytes = 256 << 10;
inline constexpr std::size_t kIncastAutoMaxBytes = 4 << 20;

// `slowest_mbit`: the slowest link rate any rank knows, 0 when none does.
std::size_t auto_incast_bytes(std::uint32_t slowest_mbit);

}  // namespace mccl::protocol
