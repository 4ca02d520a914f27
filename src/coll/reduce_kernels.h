// Element-wise reduction kernels of the reducing collectives: out = a (op) b
// over `count` elements, for every DataType and ReduceOp.
//
// - Plain loops the compiler vectorises (this file's .cc is built with
//   -ftree-vectorize; `-fopt-info-vec` shows which loops were).
// - float16 and bfloat16 are widened to float32, reduced, and rounded back
//   to nearest even after every call, so a ring of N ranks rounds N-1 times.
// - Integers wrap around (arithmetic is done unsigned, so overflow is
//   defined); min/max on floats is `b < a ? b : a` / `a < b ? b : a`.
// - The order of operands is part of the result (IEEE min/max of -0 and +0,
//   NaN payloads): callers fix it, so every rank computes the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mccl/types.h"

namespace mccl::coll {

// `out` may be exactly `a` or exactly `b` (in-place); any other overlap is
// undefined. The type and op must be valid enum values (validate first).
void reduce(DataType type, ReduceOp op, void* out, const void* a, const void* b, std::size_t count);

// The conversions the half-precision kernels use, exposed for tests.
float bf16_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float f);  // round to nearest even; NaN stays NaN
float fp16_to_float(std::uint16_t h);
std::uint16_t float_to_fp16(float f);  // round to nearest even; overflow to inf

bool valid(DataType type);
bool valid(ReduceOp op);

}  // namespace mccl::coll
