// src/codec/sum_codes.h: the quantised sums of the compressed
// reduce-scatter stay within the bound and pack losslessly, the ring's fused
// hops give the bytes of the separate calls, and dequantising gives the
// definition's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "codec/codec.h"
#include "codec/sum_codes.h"
#include "codec_test_data.h"

namespace mccl::codec {
namespace {

using namespace test;  // codec_test_data.h

TEST(CodecSum, QuantisedSumsStayWithinTheBoundAndPackLosslessly) {
  for (int ranks : {1, 2, 3, 8, 32}) {
    const double bound = 1e-3, step = sum_step(bound, ranks);
    std::vector<std::vector<float>> in(ranks);
    std::vector<std::int64_t> total(3000, 0), codes(3000);
    for (int r = 0; r < ranks; ++r) {
      const auto g = gaussian(3000, 50.0, 60 + r);
      in[r].assign(g.begin(), g.end());
      quantise_for_sum(DataType::kFloat32, as_bytes(std::span(in[r])).data(), 3000, step, ranks,
                       codes.data());
      std::vector<std::byte> packed;
      pack_codes(codes.data(), codes.size(), packed);
      std::vector<std::int64_t> back(codes.size());
      ASSERT_TRUE(unpack_codes(packed, back.size(), back.data()).is_ok());
      ASSERT_EQ(back, codes);
      EXPECT_FALSE(
          unpack_codes(std::span(packed).first(packed.size() - 1), back.size(), back.data())
              .is_ok());
      for (std::size_t i = 0; i < total.size(); ++i) total[i] += codes[i];
    }
    std::vector<double> out(3000);
    dequantise_sum(DataType::kFloat64, total.data(), total.size(), step,
                   as_writable_bytes(std::span(out)).data());
    for (std::size_t i = 0; i < out.size(); ++i) {
      long double exact = 0;
      for (int r = 0; r < ranks; ++r) exact += in[r][i];
      ASSERT_LE(std::fabs(out[i] - static_cast<double>(exact)), bound) << ranks << " " << i;
    }
  }
  // Values the grid cannot code are poisoned: their sums come out NaN.
  const float bad[] = {NAN, INFINITY, 3e38f, 1.0f};
  std::int64_t codes[4];
  quantise_for_sum(DataType::kFloat32, reinterpret_cast<const std::byte*>(bad), 4,
                   sum_step(1e-6, 4), 4, codes);
  float out[4];
  dequantise_sum(DataType::kFloat32, codes, 4, sum_step(1e-6, 4),
                 reinterpret_cast<std::byte*>(out));
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]) && std::isnan(out[2]));
  EXPECT_NEAR(out[3], 1.0f, 1e-6);
}

// The ring's fused hops (pack_quantised, add_and_pack, add_to_codes) give
// the bytes of the separate calls they replace, on every type, at sizes
// around the 1,024-code blocks, with poisoned elements (whose blocks travel
// as raw codes); each code is round(x / step), ties to even, as a scalar
// reference computes it; a malformed partial is refused.
TEST(CodecSum, FusedHopsGiveTheBytesOfTheSeparateCalls) {
  const int ranks = 5;
  const double step = sum_step(1e-2, ranks);
  const double limit = static_cast<double>(kSumSpan / ranks);
  for (DataType type : kFloatTypes) {
    for (std::size_t n : {0u, 1u, 3u, 1023u, 1024u, 1025u, 2500u}) {
      auto values = gaussian(n, 3.0, static_cast<std::uint32_t>(n) + 11);
      auto others = gaussian(n, 3.0, static_cast<std::uint32_t>(n) + 12);
      if (n > 1030) {
        values[5] = std::numeric_limits<double>::quiet_NaN();    // poisons block 0
        others[1500] = std::numeric_limits<double>::infinity();  // poisons block 1
        values[1030] = 0.5 * step;                               // a tie: rounds to 0
        values[1031] = 1.5 * step;                               // a tie: rounds to 2
      }
      const auto mine = to_type(type, values);
      const auto left = to_type(type, others);
      std::vector<std::int64_t> my_codes(n), left_codes(n), sums(n);
      quantise_for_sum(type, mine.data(), n, step, ranks, my_codes.data());
      quantise_for_sum(type, left.data(), n, step, ranks, left_codes.data());
      for (std::size_t i = 0; i < n; ++i) {
        const double q = std::nearbyint(widen(type, mine.data() + i * size_of(type)) / step);
        const std::int64_t expect =
            std::fabs(q) < limit ? static_cast<std::int64_t>(q) : kSumPoison;
        ASSERT_EQ(my_codes[i], expect) << to_string(type) << " n=" << n << " i=" << i;
        sums[i] = left_codes[i] + my_codes[i];
      }
      std::vector<std::byte> separate, fused, partial;
      pack_codes(my_codes.data(), n, separate);
      pack_quantised(type, mine.data(), n, step, ranks, fused);
      EXPECT_EQ(fused, separate) << to_string(type) << " n=" << n;

      pack_codes(left_codes.data(), n, partial);
      pack_codes(sums.data(), n, separate);
      ASSERT_TRUE(add_and_pack(partial, type, mine.data(), n, step, ranks, fused).is_ok());
      EXPECT_EQ(fused, separate) << to_string(type) << " n=" << n;
      std::vector<std::int64_t> kept(n);
      ASSERT_TRUE(add_to_codes(partial, type, mine.data(), n, step, ranks, kept.data()).is_ok());
      EXPECT_EQ(kept, sums) << to_string(type) << " n=" << n;

      if (n == 0) continue;
      const auto truncated = std::span(partial).first(partial.size() - 1);
      EXPECT_FALSE(add_and_pack(truncated, type, mine.data(), n, step, ranks, fused).is_ok());
      EXPECT_FALSE(add_to_codes(truncated, type, mine.data(), n, step, ranks, kept.data()).is_ok());
      partial.push_back(std::byte{0});
      EXPECT_FALSE(add_and_pack(partial, type, mine.data(), n, step, ranks, fused).is_ok());
    }
  }
}

// Dequantising (vectorised, through the float64 magic) gives the bits of
// the definition: the code times the step, narrowed; NaN for a sum that
// carries poison, at any magnitude.
TEST(CodecSum, DequantiseIsTheCodeTimesTheStepNarrowed) {
  const double step = sum_step(1e-3, 7);
  std::mt19937_64 rng(5);
  std::vector<std::int64_t> codes(2051);
  for (auto& q : codes) q = static_cast<std::int64_t>(rng() % (1u << 30)) - (1 << 29);
  codes[0] = kSumSpan - 1;
  codes[1] = -kSumSpan + 1;
  codes[2] = kSumSpan;
  codes[3] = kSumPoison * 7 - 3;
  codes[1500] = -kSumPoison;
  codes[2050] = std::numeric_limits<std::int64_t>::max();
  std::vector<double> expect(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const std::int64_t q = codes[i];
    expect[i] = q > -kSumSpan && q < kSumSpan ? static_cast<double>(q) * step
                                              : std::numeric_limits<double>::quiet_NaN();
  }
  for (DataType type : kFloatTypes) {
    std::vector<std::byte> out(codes.size() * size_of(type));
    dequantise_sum(type, codes.data(), codes.size(), step, out.data());
    EXPECT_EQ(out, to_type(type, expect)) << to_string(type);
  }
}

}  // namespace
}  // namespace mccl::codec
