// Half-precision conversions: bfloat16 and IEEE binary16 to and from
// float32, round to nearest even, NaN kept a (quiet) NaN. Branch-free so
// that loops over them vectorise. Used by the reduction kernels (coll) and
// the codec.
#pragma once

#include <bit>
#include <cstdint>

namespace mccl::common {

inline float bf16_in(std::uint16_t h) { return std::bit_cast<float>(std::uint32_t{h} << 16); }

inline std::uint16_t bf16_out(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<std::uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
}

inline float fp16_in(std::uint16_t h) {
  const std::uint32_t sign = (std::uint32_t{h} & 0x8000u) << 16;
  const std::uint32_t em = std::uint32_t{h} & 0x7FFFu;
  // Shifting exponent and mantissa into place and scaling by 2^(127-15)
  // rebiases normals and normalises subnormals in one exact multiply.
  std::uint32_t bits = std::bit_cast<std::uint32_t>(std::bit_cast<float>(em << 13) * 0x1p112f);
  bits = em >= 0x7C00u ? (bits | 0x7F800000u) : bits;  // inf and NaN
  return std::bit_cast<float>(bits | sign);
}

// After F. Giesen's float_to_half_fast3_rtne: all three cases computed,
// one selected.
inline std::uint16_t fp16_out(float f) {
  constexpr std::uint32_t kDenormMagic = ((127 - 15) + (23 - 10) + 1) << 23;
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = u & 0x80000000u;
  u ^= sign;
  // Result subnormal or zero: the float adder rounds the mantissa for us.
  const float aligned = std::bit_cast<float>(u) + std::bit_cast<float>(kDenormMagic);
  const std::uint32_t sub = std::bit_cast<std::uint32_t>(aligned) - kDenormMagic;
  // Normal: rebias the exponent (-112 << 23) and round to nearest even.
  const std::uint32_t normal = (u + 0xC8000FFFu + ((u >> 13) & 1u)) >> 13;
  // NaN stays a (quiet) NaN; anything else from 65520 up overflows to inf.
  const std::uint32_t special = 0x7C00u | (std::uint32_t{u > 0x7F800000u} << 9);
  // Selected with masks, not branches, which the vectoriser turns down here.
  const std::uint32_t is_sub = 0u - std::uint32_t{u < (113u << 23)};
  const std::uint32_t is_special = 0u - std::uint32_t{u >= 0x47800000u};
  const std::uint32_t finite = (sub & is_sub) | (normal & ~is_sub);
  const std::uint32_t out = (special & is_special) | (finite & ~is_special);
  return static_cast<std::uint16_t>(out | (sign >> 16));
}

}  // namespace mccl::common
