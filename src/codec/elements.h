// The floating-point element types the codec handles, seen through one
// interface: widen to float64 (exact for all four) and narrow back (round to
// nearest even). Encoder and decoder narrow with the same functions, so a
// reconstruction the encoder checked is bit for bit what the decoder writes.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/half.h"
#include "mccl/types.h"

namespace mccl::codec {

struct F32 {
  using Bits = float;
  static double widen(float x) { return x; }
  static float narrow(double x) { return static_cast<float>(x); }
};
struct F64 {
  using Bits = double;
  static double widen(double x) { return x; }
  static double narrow(double x) { return x; }
};
struct BF16 {
  using Bits = std::uint16_t;
  static double widen(std::uint16_t x) { return common::bf16_in(x); }
  static std::uint16_t narrow(double x) { return common::bf16_out(static_cast<float>(x)); }
};
struct FP16 {
  using Bits = std::uint16_t;
  static double widen(std::uint16_t x) { return common::fp16_in(x); }
  static std::uint16_t narrow(double x) { return common::fp16_out(static_cast<float>(x)); }
};

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
