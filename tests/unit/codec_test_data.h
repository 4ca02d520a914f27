// Test data shared by the codec's tests (codec_test.cc, codec_sum_test.cc):
// float elements of every compressible type, read and written through
// double, and seeded Gaussian values.
#pragma once

#include <cstring>
#include <random>
#include <vector>

#include "common/half.h"
#include "mccl/types.h"

namespace mccl::codec::test {

// Every type the codec compresses.
inline constexpr DataType kFloatTypes[] = {DataType::kFloat32, DataType::kFloat64,
                                           DataType::kBFloat16, DataType::kFloat16};

// The element of `type` at `p`, widened.
inline double widen(DataType type, const std::byte* p) {
  std::uint16_t h;
  switch (type) {
    case DataType::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DataType::kFloat64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case DataType::kBFloat16:
      std::memcpy(&h, p, 2);
      return common::bf16_in(h);
    default:
      std::memcpy(&h, p, 2);
      return common::fp16_in(h);
  }
}

// `v` narrowed to `type`, element by element (bfloat16 and float16 rounded
// to nearest even).
inline std::vector<std::byte> to_type(DataType type, const std::vector<double>& v) {
  std::vector<std::byte> out(v.size() * size_of(type));
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::byte* p = out.data() + i * size_of(type);
    if (type == DataType::kFloat32) {
      const float f = static_cast<float>(v[i]);
      std::memcpy(p, &f, 4);
    } else if (type == DataType::kFloat64) {
      std::memcpy(p, &v[i], 8);
    } else {
      const std::uint16_t h = type == DataType::kBFloat16
                                  ? common::bf16_out(static_cast<float>(v[i]))
                                  : common::fp16_out(static_cast<float>(v[i]));
      std::memcpy(p, &h, 2);
    }
  }
  return out;
}

// `n` values drawn from N(0, sigma²), the same for the same seed.
inline std::vector<double> gaussian(std::size_t n, double sigma, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, sigma);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace mccl::codec::test
