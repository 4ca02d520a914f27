// Data of the validated reduction benchmarks: small integers held in
// float32, so that every sum over up to thousands of ranks is exact and the
// expected value does not depend on the order in which MCCL reduces.
#pragma once

#include <cstddef>

namespace mccl::bench::osu {

// Rank `rank`'s element i in validated iteration `iter`: 1..64.
inline float reduce_input(int rank, std::size_t i, int iter) {
  return static_cast<float>(((rank + 1) * 5 + i * 3 + static_cast<std::size_t>(iter) * 7) % 64 + 1);
}

// The sum over ranks 0..ranks-1 of reduce_input(r, i, iter).
inline float reduce_expected(int ranks, std::size_t i, int iter) {
  float s = 0;
  for (int r = 0; r < ranks; ++r) s += reduce_input(r, i, iter);
  return s;
}

}  // namespace mccl::bench::osu
