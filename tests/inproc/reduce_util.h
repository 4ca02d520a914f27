// Helpers of the reduction tests: typed test vectors and a float64 (or
// exact integer) reference with the tolerance each type allows.
//
// Rank r's element at global index i is value(type, op, r, i, salt):
// floats are multiples of 1/8 (exact in every type; in [0.5, 1.5] for prod
// so that products of 8 stay tame), integers are arbitrary bits (sums and
// products wrap).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mccl/mccl.hpp"

namespace mccl::testing {

inline std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 32);
}

inline bool is_int(DataType t) {
  return t == DataType::kInt32 || t == DataType::kInt64 || t == DataType::kUInt8;
}

inline double decode(DataType t, const std::byte* p) {
  switch (t) {
    case DataType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DataType::kFloat64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DataType::kBFloat16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      std::uint32_t bits = std::uint32_t{h} << 16;
      float v;
      std::memcpy(&v, &bits, 4);
      return v;
    }
    case DataType::kFloat16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      const int e = (h >> 10) & 31, m = h & 1023;
      double v = e == 0 ? std::ldexp(m, -24)
                        : (e == 31 ? (m ? NAN : INFINITY) : std::ldexp(m + 1024, e - 25));
      return (h & 0x8000) ? -v : v;
    }
    default:
      return 0;
  }
}

// Exact for the values value() makes (multiples of 1/8 below 64).
inline void encode_float(DataType t, double v, std::byte* p) {
  if (t == DataType::kFloat32 || t == DataType::kBFloat16) {
    float f = static_cast<float>(v);
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (t == DataType::kFloat32) {
      std::memcpy(p, &bits, 4);
    } else {
      std::uint16_t h = static_cast<std::uint16_t>(bits >> 16);
      std::memcpy(p, &h, 2);
    }
  } else if (t == DataType::kFloat64) {
    std::memcpy(p, &v, 8);
  } else {  // float16, normal or zero
    std::uint16_t h = 0;
    if (v != 0) {
      int e;
      double f = std::frexp(std::fabs(v), &e);  // |v| = f 2^e, f in [0.5, 1)
      h = static_cast<std::uint16_t>(((e + 14) << 10) | static_cast<int>((2 * f - 1) * 1024));
      if (v < 0) h |= 0x8000;
    }
    std::memcpy(p, &h, 2);
  }
}

inline void put(DataType t, ReduceOp op, int rank, std::size_t i, std::uint64_t salt,
                std::byte* p) {
  const std::uint64_t x = mix(mix(salt) ^ (std::uint64_t(rank) << 48) ^ i);
  if (is_int(t)) {
    std::memcpy(p, &x, size_of(t));
    return;
  }
  const double v = op == ReduceOp::kProd ? static_cast<double>(4 + x % 9) / 8
                                         : (static_cast<double>(x % 65) - 32) / 8;
  encode_float(t, v, p);
}

// Rank r's n elements for global indices first, first+1, ...
inline std::vector<std::byte> make_input(DataType t, ReduceOp op, int rank, std::size_t first,
                                         std::size_t n, std::uint64_t salt) {
  std::vector<std::byte> buf(n * size_of(t));
  for (std::size_t j = 0; j < n; ++j)
    put(t, op, rank, first + j, salt, buf.data() + j * size_of(t));
  return buf;
}

inline std::int64_t decode_int(DataType t, const std::byte* p) {
  if (t == DataType::kInt32) {
    std::int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (t == DataType::kInt64) {
    std::int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  return std::to_integer<int>(*p);
}

// Checks `got` (n elements, global indices first..) against the reduction
// over `ranks` ranks: exact for integers and min/max; for sums and products
// within one rounding per step (ranks - 1 steps).
inline ::testing::AssertionResult check_reduced(DataType t, ReduceOp op, const std::byte* got,
                                                int ranks, std::size_t first, std::size_t n,
                                                std::uint64_t salt) {
  const std::size_t es = size_of(t);
  std::byte e[8];
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t i = first + j;
    if (is_int(t)) {
      std::uint64_t acc = 0;
      std::int64_t best = 0;
      for (int r = 0; r < ranks; ++r) {
        put(t, op, r, i, salt, e);
        const std::int64_t v = decode_int(t, e);
        const auto u = static_cast<std::uint64_t>(v);
        if (r == 0) {
          acc = u;
          best = v;
          continue;
        }
        acc = op == ReduceOp::kSum ? acc + u : acc * u;
        best = op == ReduceOp::kMin ? std::min(best, v) : std::max(best, v);
      }
      std::uint64_t want =
          op == ReduceOp::kMin || op == ReduceOp::kMax ? static_cast<std::uint64_t>(best) : acc;
      std::uint64_t have = 0;
      std::memcpy(&have, got + j * es, es);
      if (es < 8) want &= (1ull << (8 * es)) - 1;
      if (have != want) {
        return ::testing::AssertionFailure() << to_string(t) << " " << to_string(op) << ": element "
                                             << i << " is " << have << ", expected " << want;
      }
      continue;
    }
    double ref = 0, mag = 0;
    for (int r = 0; r < ranks; ++r) {
      put(t, op, r, i, salt, e);
      const double v = decode(t, e);
      if (r == 0) {
        ref = v;
      } else if (op == ReduceOp::kSum) {
        ref += v;
      } else if (op == ReduceOp::kProd) {
        ref *= v;
      } else {
        ref = op == ReduceOp::kMin ? std::min(ref, v) : std::max(ref, v);
      }
      mag += std::fabs(v);
    }
    const int bits = t == DataType::kFloat64   ? 53
                     : t == DataType::kFloat32 ? 24
                     : t == DataType::kFloat16 ? 11
                                               : 8;
    const double u = std::ldexp(1.0, -bits);
    double tol = 0;
    if (op == ReduceOp::kSum) tol = (ranks - 1) * u * mag;
    if (op == ReduceOp::kProd) tol = 1.5 * (ranks - 1) * u * std::fabs(ref);
    const double have = decode(t, got + j * es);
    if (!(std::fabs(have - ref) <= tol)) {
      return ::testing::AssertionFailure()
             << to_string(t) << " " << to_string(op) << ": element " << i << " is " << have
             << ", expected " << ref << " within " << tol;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace mccl::testing
