// The reduction kernels (src/coll/reduce_kernels.h) for every datatype and
// op against a float64 reference, within what the type allows: exact for
// integers (wrap-around included) and for min/max, one rounding for the
// floats; plus the half-precision conversions bit by bit.
#include "coll/reduce_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace mccl::coll {
namespace {

constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16,
                               DataType::kFloat16, DataType::kInt32,   DataType::kInt64,
                               DataType::kUInt8};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax};

// Element i of a buffer as a double (exact for every type but int64's
// extremes, which the generator avoids where it matters).
double get(DataType t, const std::vector<std::byte>& buf, std::size_t i) {
  const std::byte* p = buf.data() + i * size_of(t);
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
    case DataType::kBFloat16:
    case DataType::kFloat16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return t == DataType::kBFloat16 ? bf16_to_float(v) : fp16_to_float(v);
    }
    case DataType::kInt32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DataType::kInt64: {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DataType::kUInt8:
      return std::to_integer<int>(*p);
  }
  return 0;
}

// Random elements: floats in [-8, 8] (products stay far from overflow),
// integers over their whole range so sums and products wrap.
std::vector<std::byte> random_buffer(DataType t, std::size_t n, std::mt19937_64& gen) {
  std::vector<std::byte> buf(n * size_of(t));
  std::uniform_real_distribution<double> real(-8.0, 8.0);
  for (std::size_t i = 0; i < n; ++i) {
    std::byte* p = buf.data() + i * size_of(t);
    const std::uint64_t bits = gen();
    switch (t) {
      case DataType::kFloat32: {
        float v = static_cast<float>(real(gen));
        std::memcpy(p, &v, 4);
        break;
      }
      case DataType::kFloat64: {
        double v = real(gen);
        std::memcpy(p, &v, 8);
        break;
      }
      case DataType::kBFloat16:
      case DataType::kFloat16: {
        const float v = static_cast<float>(real(gen));
        std::uint16_t h = t == DataType::kBFloat16 ? float_to_bf16(v) : float_to_fp16(v);
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::kInt32:
      case DataType::kInt64:
      case DataType::kUInt8:
        std::memcpy(p, &bits, size_of(t));
        break;
    }
  }
  return buf;
}

// The exact wrapped integer result of a op b, as the type's bits.
std::uint64_t int_reference(DataType t, ReduceOp op, std::int64_t a, std::int64_t b) {
  const auto ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
  switch (op) {
    case ReduceOp::kSum:
      return ua + ub;
    case ReduceOp::kProd:
      return ua * ub;
    case ReduceOp::kMin:
      return static_cast<std::uint64_t>(std::min(a, b));
    case ReduceOp::kMax:
      return static_cast<std::uint64_t>(std::max(a, b));
  }
  (void)t;
  return 0;
}

std::int64_t get_int(DataType t, const std::vector<std::byte>& buf, std::size_t i) {
  const std::byte* p = buf.data() + i * size_of(t);
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

double float_reference(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::kSum:
      return a + b;
    case ReduceOp::kProd:
      return a * b;
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
  }
  return 0;
}

// One rounding to the type: half an ulp relative, plus the smallest
// subnormal for results near zero. float64 is its own reference.
double tolerance(DataType t, double ref) {
  switch (t) {
    case DataType::kFloat32:
      return std::ldexp(std::fabs(ref), -24) + 1e-45;
    case DataType::kBFloat16:
      return std::ldexp(std::fabs(ref), -8) + 1e-40;
    case DataType::kFloat16:
      return std::ldexp(std::fabs(ref), -11) + std::ldexp(1.0, -25);
    default:
      return 0;
  }
}

void check(DataType t, ReduceOp op, const std::vector<std::byte>& a,
           const std::vector<std::byte>& b, const std::vector<std::byte>& out, std::size_t n) {
  const bool is_int = t == DataType::kInt32 || t == DataType::kInt64 || t == DataType::kUInt8;
  for (std::size_t i = 0; i < n; ++i) {
    if (is_int) {
      std::uint64_t want = int_reference(t, op, get_int(t, a, i), get_int(t, b, i));
      std::uint64_t got = 0;
      std::memcpy(&got, out.data() + i * size_of(t), size_of(t));
      const std::uint64_t mask = size_of(t) == 8 ? ~0ull : (1ull << (8 * size_of(t))) - 1;
      ASSERT_EQ(got, want & mask) << to_string(t) << " " << to_string(op) << " element " << i;
      continue;
    }
    const double ref = float_reference(op, get(t, a, i), get(t, b, i));
    const double got = get(t, out, i);
    const double tol = op == ReduceOp::kMin || op == ReduceOp::kMax ? 0 : tolerance(t, ref);
    ASSERT_LE(std::fabs(got - ref), tol)
        << to_string(t) << " " << to_string(op) << " element " << i << ": " << got << " vs " << ref;
  }
}

class Kernels : public ::testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

TEST_P(Kernels, MatchFloat64ReferenceWithinTheTypesRounding) {
  auto [t, op] = GetParam();
  std::mt19937_64 gen(static_cast<unsigned>(t) * 16 + static_cast<unsigned>(op));
  // Lengths around the vector widths and the half-precision tile (256).
  for (std::size_t n : {0u, 1u, 7u, 255u, 256u, 257u, 1037u}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    auto a = random_buffer(t, n, gen), b = random_buffer(t, n, gen);
    std::vector<std::byte> out(a.size());
    reduce(t, op, out.data(), a.data(), b.data(), n);
    check(t, op, a, b, out, n);
    // In place on either operand gives the same bits.
    auto in_a = a, in_b = b;
    reduce(t, op, in_a.data(), in_a.data(), b.data(), n);
    reduce(t, op, in_b.data(), a.data(), in_b.data(), n);
    EXPECT_EQ(in_a, out);
    EXPECT_EQ(in_b, out);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, Kernels,
                         ::testing::Combine(::testing::ValuesIn(kTypes), ::testing::ValuesIn(kOps)),
                         [](const auto& param_info) {
                           return std::string(to_string(std::get<0>(param_info.param))) + "_" +
                                  to_string(std::get<1>(param_info.param));
                         });

TEST(HalfConversions, EveryFloat16RoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_float(static_cast<std::uint16_t>(h));
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    if (nan) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_EQ(float_to_fp16(f) & 0x7E00, 0x7E00) << h;  // stays a (quiet) NaN
    } else {
      ASSERT_EQ(float_to_fp16(f), h) << h;
    }
  }
}

TEST(HalfConversions, EveryBFloat16RoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f)))) << h;
    } else {
      ASSERT_EQ(float_to_bf16(f), h) << h;
    }
  }
}

TEST(HalfConversions, RoundToNearestEven) {
  // float16: 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go even.
  EXPECT_EQ(float_to_fp16(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(float_to_fp16(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(float_to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // above the tie: up
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);  // rounds up past the largest: inf
  EXPECT_EQ(float_to_fp16(-1e9f), 0xFC00);
  EXPECT_EQ(float_to_fp16(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_fp16(0x1p-25f), 0x0000);  // tie with 0: even
  EXPECT_EQ(float_to_fp16(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(float_to_fp16(-0.0f), 0x8000);
  // bfloat16 keeps float32's exponent: ties on the 8th mantissa bit.
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_EQ(float_to_bf16(3.4e38f), 0x7F80);  // rounds up past the largest: inf
}

TEST(Kernels, HalfSumsAreAccumulatedInFloat32AndRoundedOnce) {
  // 2048 + 1 is not a float16 (spacing 2 there) and rounds to even (2048),
  // while 2048 + 3 = 2051 rounds to 2052: one rounding of the exact sum.
  const std::uint16_t a[2] = {float_to_fp16(2048.0f), float_to_fp16(2048.0f)};
  const std::uint16_t b[2] = {float_to_fp16(1.0f), float_to_fp16(3.0f)};
  std::uint16_t out[2];
  reduce(DataType::kFloat16, ReduceOp::kSum, out, a, b, 2);
  EXPECT_EQ(fp16_to_float(out[0]), 2048.0f);
  EXPECT_EQ(fp16_to_float(out[1]), 2052.0f);
}

TEST(Kernels, ValidityOfEnumValues) {
  for (auto t : kTypes) EXPECT_TRUE(valid(t));
  for (auto op : kOps) EXPECT_TRUE(valid(op));
  EXPECT_FALSE(valid(static_cast<DataType>(7)));
  EXPECT_FALSE(valid(static_cast<DataType>(-1)));
  EXPECT_FALSE(valid(static_cast<ReduceOp>(4)));
}

}  // namespace
// A body cut from a TCP stream starts at any byte (the ring reduce-scatter
// reduces it in place): misaligned operands, in place and not, longer than
// one internal block, give the bits aligned ones give. (UBSan flagged the
// misaligned loads before.)
TEST(Kernels, MisalignedOperandsGiveTheAlignedResult) {
  const std::size_t n = 3000;
  std::vector<std::int64_t> a(n), b(n), want(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<std::int64_t>(i * 2654435761u);
    b[i] = static_cast<std::int64_t>(i * 40503u) - 7;
  }
  reduce(DataType::kInt64, ReduceOp::kSum, want.data(), a.data(), b.data(), n);
  std::vector<std::byte> buf(3 * n * 8 + 3);
  std::byte* ma = buf.data() + 1;
  std::byte* mb = ma + n * 8 + 1;
  std::byte* mo = mb + n * 8;
  std::memcpy(ma, a.data(), n * 8);
  std::memcpy(mb, b.data(), n * 8);
  reduce(DataType::kInt64, ReduceOp::kSum, mo, ma, mb, n);
  EXPECT_EQ(std::memcmp(mo, want.data(), n * 8), 0);
  reduce(DataType::kInt64, ReduceOp::kSum, ma, ma, mb, n);  // in place
  EXPECT_EQ(std::memcmp(ma, want.data(), n * 8), 0);
}

}  // namespace mccl::coll
