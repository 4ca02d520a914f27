#include "coll/reduce_kernels.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "common/half.h"

// Promise the vectoriser that `out`, `a` and `b` are either the same array
// or disjoint (reduce()'s contract), so it need not version the loops.
#if defined(__clang__)
#define MCCL_VECTOR_LOOP _Pragma("clang loop vectorize(enable)")
#elif defined(__GNUC__)
#define MCCL_VECTOR_LOOP _Pragma("GCC ivdep")
#else
#define MCCL_VECTOR_LOOP
#endif

namespace mccl::coll {

namespace {

// ---- operators ---------------------------------------------------------------

// Integers are added and multiplied as their unsigned twins: wrap-around is
// then defined, and the conversion back is modular (C++20).
template <typename T, bool = std::is_integral_v<T>>
struct ArithOf {
  using type = T;
};
template <typename T>
struct ArithOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using Arith = typename ArithOf<T>::type;

struct Sum {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<Arith<T>>(a) + static_cast<Arith<T>>(b));
  }
};
struct Prod {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<Arith<T>>(a) * static_cast<Arith<T>>(b));
  }
};
struct Min {
  template <typename T>
  T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct Max {
  template <typename T>
  T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};

template <typename T, typename F>
void loop(T* out, const T* a, const T* b, std::size_t n, F f) {
  MCCL_VECTOR_LOOP
  for (std::size_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

// ---- half precision (common/half.h) ----------------------------------------

using common::bf16_in;
using common::bf16_out;
using common::fp16_in;
using common::fp16_out;

struct BF16 {
  static float in(std::uint16_t h) { return bf16_in(h); }
  static std::uint16_t out(float f) { return bf16_out(f); }
};
struct FP16 {
  static float in(std::uint16_t h) { return fp16_in(h); }
  static std::uint16_t out(float f) { return fp16_out(f); }
};

// Widen a tile of both inputs, reduce in float32, round back: three simple
// loops the vectoriser takes one by one.
template <typename Half, typename F>
void half_loop(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b, std::size_t n,
               F f) {
  constexpr std::size_t kTile = 256;
  float fa[kTile], fb[kTile];
  for (std::size_t base = 0; base < n; base += kTile) {
    const std::size_t m = std::min(kTile, n - base);
    const std::uint16_t* pa = a + base;
    const std::uint16_t* pb = b + base;
    std::uint16_t* po = out + base;
    for (std::size_t i = 0; i < m; ++i) fa[i] = Half::in(pa[i]);
    for (std::size_t i = 0; i < m; ++i) fb[i] = Half::in(pb[i]);
    for (std::size_t i = 0; i < m; ++i) fa[i] = f(fa[i], fb[i]);
    MCCL_VECTOR_LOOP
    for (std::size_t i = 0; i < m; ++i) po[i] = Half::out(fa[i]);
  }
}

template <typename T>
void by_op(ReduceOp op, void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  switch (op) {
    case ReduceOp::kSum:
      return loop(o, x, y, n, Sum{});
    case ReduceOp::kProd:
      return loop(o, x, y, n, Prod{});
    case ReduceOp::kMin:
      return loop(o, x, y, n, Min{});
    case ReduceOp::kMax:
      return loop(o, x, y, n, Max{});
  }
}

template <typename Half>
void half_by_op(ReduceOp op, void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<std::uint16_t*>(out);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  switch (op) {
    case ReduceOp::kSum:
      return half_loop<Half>(o, x, y, n, Sum{});
    case ReduceOp::kProd:
      return half_loop<Half>(o, x, y, n, Prod{});
    case ReduceOp::kMin:
      return half_loop<Half>(o, x, y, n, Min{});
    case ReduceOp::kMax:
      return half_loop<Half>(o, x, y, n, Max{});
  }
}

}  // namespace

namespace {

void reduce_aligned(DataType type, ReduceOp op, void* out, const void* a, const void* b,
                    std::size_t count) {
  switch (type) {
    case DataType::kFloat32:
      return by_op<float>(op, out, a, b, count);
    case DataType::kFloat64:
      return by_op<double>(op, out, a, b, count);
    case DataType::kBFloat16:
      return half_by_op<BF16>(op, out, a, b, count);
    case DataType::kFloat16:
      return half_by_op<FP16>(op, out, a, b, count);
    case DataType::kInt32:
      return by_op<std::int32_t>(op, out, a, b, count);
    case DataType::kInt64:
      return by_op<std::int64_t>(op, out, a, b, count);
    case DataType::kUInt8:
      return by_op<std::uint8_t>(op, out, a, b, count);
  }
}

// Operands off their element alignment (a message body cut from a TCP
// stream starts wherever its frame did) go through aligned blocks: loading
// a misaligned T is undefined, and traps on some Arm cores.
void reduce_unaligned(DataType type, ReduceOp op, void* out, const void* a, const void* b,
                      std::size_t count) {
  constexpr std::size_t kBlock = 4096;
  alignas(16) std::byte ba[kBlock], bb[kBlock], bo[kBlock];
  const std::size_t es = size_of(type);
  const std::size_t per = kBlock / es;
  auto* o = static_cast<std::byte*>(out);
  const auto* pa = static_cast<const std::byte*>(a);
  const auto* pb = static_cast<const std::byte*>(b);
  for (std::size_t i = 0; i < count; i += per) {
    const std::size_t n = std::min(per, count - i), bytes = n * es, at = i * es;
    std::memcpy(ba, pa + at, bytes);
    std::memcpy(bb, pb + at, bytes);
    reduce_aligned(type, op, bo, ba, bb, n);
    std::memcpy(o + at, bo, bytes);  // after both reads: `out` may be `a` or `b`
  }
}

}  // namespace

void reduce(DataType type, ReduceOp op, void* out, const void* a, const void* b,
            std::size_t count) {
  if (count == 0) return;
  const std::size_t es = size_of(type);
  auto aligned = [es](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % es == 0; };
  if (aligned(out) && aligned(a) && aligned(b)) return reduce_aligned(type, op, out, a, b, count);
  reduce_unaligned(type, op, out, a, b, count);
}

float bf16_to_float(std::uint16_t h) { return bf16_in(h); }
std::uint16_t float_to_bf16(float f) { return bf16_out(f); }
float fp16_to_float(std::uint16_t h) { return fp16_in(h); }
std::uint16_t float_to_fp16(float f) { return fp16_out(f); }

bool valid(DataType type) { return size_of(type) != 0; }

bool valid(ReduceOp op) {
  return op == ReduceOp::kSum || op == ReduceOp::kProd || op == ReduceOp::kMin ||
         op == ReduceOp::kMax;
}

}  // namespace mccl::coll
