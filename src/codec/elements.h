// The floating-point element types the codec handles, seen through one
// interface: widen to float64 (exact for all four) and narrow back (round to
// nearest even). Encoder and decoder narrow with the same functions, so a
// reconstruction the encoder checked is bit for bit what the decoder writes.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

#include "common/half.h"
#include "mccl/types.h"

namespace mccl::codec {

// Besides widen/narrow, each type names its bits as a signed integer
// (Int) and +Inf's pattern, for ordered(): float bit patterns mapped to
// integers in the order of their values (NaN beyond +-Inf), so that the
// minimum, maximum and finiteness of a block come from integer loops,
// which vectorise where float min/max do not.
struct F32 {
  using Bits = float;
  using Int = std::int32_t;
  using Wide = std::int32_t;
  static constexpr Wide kInf = 0x7F800000;
  static double widen(float x) { return x; }
  static float narrow(double x) { return static_cast<float>(x); }
};
struct F64 {
  using Bits = double;
  using Int = std::int64_t;
  using Wide = std::int64_t;
  static constexpr Wide kInf = 0x7FF0000000000000;
  static double widen(double x) { return x; }
  static double narrow(double x) { return x; }
};
// The two 16-bit formats differ only in where +Inf lies and how they
// convert (common/half.h).
template <std::int32_t kInfBits, float (*kIn)(std::uint16_t), std::uint16_t (*kOut)(float)>
struct Half {
  using Bits = std::uint16_t;
  using Int = std::int16_t;
  using Wide = std::int32_t;
  static constexpr Wide kInf = kInfBits;
  static double widen(std::uint16_t x) { return kIn(x); }
  static std::uint16_t narrow(double x) { return kOut(static_cast<float>(x)); }
};
using BF16 = Half<0x7F80, common::bf16_in, common::bf16_out>;
using FP16 = Half<0x7C00, common::fp16_in, common::fp16_out>;

// Sign-magnitude bits to an integer of the same order as the value
// (-0 just below +0); its own inverse.
template <typename E>
typename E::Wide ordered(typename E::Wide s) {
  using W = typename E::Wide;
  constexpr int kTop = 8 * sizeof(typename E::Int) - 1;
  constexpr W kMagnitude = std::numeric_limits<typename E::Int>::max();
  return s ^ ((s >> kTop) & kMagnitude);
}

template <typename E>
double widen_ordered(typename E::Wide o) {
  const auto s = static_cast<typename E::Int>(ordered<E>(o));
  typename E::Bits b;
  std::memcpy(&b, &s, sizeof(b));
  return E::widen(b);
}

// Calls f.template operator()<Elem>() for a float type; false for others.
template <typename F>
bool with_element(DataType type, F&& f) {
  switch (type) {
    case DataType::kFloat32:
      f.template operator()<F32>();
      return true;
    case DataType::kFloat64:
      f.template operator()<F64>();
      return true;
    case DataType::kBFloat16:
      f.template operator()<BF16>();
      return true;
    case DataType::kFloat16:
      f.template operator()<FP16>();
      return true;
    default:
      return false;
  }
}

}  // namespace mccl::codec
