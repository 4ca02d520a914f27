// The bytes the multi-process workers send and check: a pattern by rank,
// offset and round, and a check that names the first wrong byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace mccl::mp {

inline std::byte pattern(int rank, std::size_t i, std::uint64_t salt) {
  std::uint64_t x = (std::uint64_t(rank) << 40) ^ i ^ (salt * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return std::byte(x & 0xFF);
}

inline bool check(const std::byte* p, std::size_t n, int rank, std::uint64_t salt,
                  const char* what) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != pattern(rank, i, salt)) {
      std::fprintf(stderr, "%s: wrong byte %zu of %zu (block of rank %d)\n", what, i, n, rank);
      return false;
    }
  }
  return true;
}

}  // namespace mccl::mp
