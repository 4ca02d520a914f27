// Element types and reduction operators of the reducing collectives
// (reduce_scatter, allreduce). Counts of those collectives are in elements.
#pragma once

#include <cstddef>

namespace mccl {

// Values never change: the C API's mccl_datatype_t mirrors them.
//
// Half precision: every reduction step widens both operands to float32,
// combines them there and rounds the result back to nearest even. Partial
// results travel between ranks in the element type (the ring's wire bytes
// are those of the data), so a reduction over N ranks rounds N-1 times; the
// order of the steps is fixed, so every rank gets the same bits.
enum class DataType {
  kFloat32,
  kFloat64,
  kBFloat16,  // bfloat16 (8-bit exponent); reduced in float32, rounded to nearest even
  kFloat16,   // IEEE binary16; reduced in float32, rounded to nearest even
  kInt32,     // integers wrap around on overflow (two's complement)
  kInt64,
  kUInt8,
};

// Values never change: the C API's mccl_reduce_op_t mirrors them.
enum class ReduceOp { kSum, kProd, kMin, kMax };

// Bytes of one element; 0 for a value outside the enum.
constexpr std::size_t size_of(DataType t) {
  switch (t) {
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
      return 8;
    case DataType::kBFloat16:
    case DataType::kFloat16:
      return 2;
    case DataType::kUInt8:
      return 1;
  }
  return 0;
}

// "float32", "sum", ...; "?" for a value outside the enum.
constexpr const char* to_string(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat16:
      return "float16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kUInt8:
      return "uint8";
  }
  return "?";
}

constexpr const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
  }
  return "?";
}

}  // namespace mccl
