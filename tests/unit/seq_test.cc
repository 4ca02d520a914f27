// Wrap-safe sequence comparison (RFC 1982 serial-number arithmetic), with the
// cases that matter tested at the wrap boundary.
#include "common/seq.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace mccl::common {
namespace {

constexpr std::uint32_t kMax = 0xFFFFFFFFu;
constexpr std::uint32_t kHalf = 0x80000000u;  // 2^31

// Compile-time checks: the functions are constexpr and usable in headers.
static_assert(seq_before(1, 2));
static_assert(seq_after(2, 1));
static_assert(seq_before(kMax, 0));
static_assert(seq_distance(kMax, 1) == 2);

TEST(Seq, OrdinaryNumbers) {
  EXPECT_TRUE(seq_before(1, 2));
  EXPECT_FALSE(seq_before(2, 1));
  EXPECT_TRUE(seq_after(2, 1));
  EXPECT_FALSE(seq_after(1, 2));
  EXPECT_TRUE(seq_before(0, 1000000));
}

TEST(Seq, EqualIsNeitherBeforeNorAfter) {
  for (std::uint32_t a : {0u, 1u, 0x7FFFFFFFu, kHalf, kMax}) {
    EXPECT_FALSE(seq_before(a, a)) << a;
    EXPECT_FALSE(seq_after(a, a)) << a;
    EXPECT_EQ(seq_distance(a, a), 0u) << a;
  }
}

TEST(Seq, WrapFromMaxToZero) {
  EXPECT_TRUE(seq_before(kMax, 0));
  EXPECT_TRUE(seq_after(0, kMax));
  EXPECT_FALSE(seq_before(0, kMax));
  EXPECT_FALSE(seq_after(kMax, 0));
  EXPECT_TRUE(seq_before(kMax - 5, 5));
  EXPECT_TRUE(seq_after(5, kMax - 5));
  EXPECT_EQ(seq_distance(kMax, 0), 1u);
  EXPECT_EQ(seq_distance(kMax - 5, 5), 11u);
}

TEST(Seq, SignBoundaryIsNotAWrap) {
  // 0x7FFFFFFF -> 0x80000000 is an ordinary step for unsigned numbers.
  EXPECT_TRUE(seq_before(0x7FFFFFFFu, kHalf));
  EXPECT_TRUE(seq_after(kHalf, 0x7FFFFFFFu));
  EXPECT_FALSE(seq_before(kHalf, 0x7FFFFFFFu));
  EXPECT_EQ(seq_distance(0x7FFFFFFFu, kHalf), 1u);
}

TEST(Seq, LargestForwardDistance) {
  // b - a = 2^31 - 1 is the farthest b can be and still be after a.
  EXPECT_TRUE(seq_before(0, 0x7FFFFFFFu));
  EXPECT_TRUE(seq_after(0x7FFFFFFFu, 0));
  EXPECT_TRUE(seq_before(kHalf, kMax));
  EXPECT_TRUE(seq_before(kMax, 0x7FFFFFFEu));
  // One further and the order flips: a is then 2^31 + 1 ahead, i.e. behind.
  EXPECT_TRUE(seq_after(0, kHalf + 1));
  EXPECT_FALSE(seq_before(0, kHalf + 1));
}

// At distance exactly 2^31 RFC 1982 leaves the order undefined. The header
// defines "a before b" as (b - a) mod 2^32 in (0, 2^31), so neither is
// before the other; above all the two must not both claim to be first.
TEST(Seq, HalfwayIsUnorderedAndNeverBothBefore) {
  for (std::uint32_t a : {0u, 1u, 0x7FFFFFFFu, kHalf, kMax}) {
    const std::uint32_t b = a + kHalf;
    EXPECT_FALSE(seq_before(a, b) && seq_before(b, a)) << a;
    EXPECT_FALSE(seq_before(a, b)) << a;
    EXPECT_FALSE(seq_after(a, b)) << a;
    EXPECT_EQ(seq_distance(a, b), kHalf);
  }
}

// Properties on seeded random pairs: antisymmetry, after == mirrored before,
// and agreement with the definition via seq_distance.
TEST(Seq, PropertiesOnRandomPairs) {
  constexpr unsigned kSeed = 1982;
  std::mt19937 rng(kSeed);
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t a = rng();
    // Pairs anywhere, near each other, and near the halfway point.
    const std::uint32_t near = static_cast<std::uint32_t>(rng() % 2001) - 1000u;
    const std::uint32_t b = i % 3 == 0 ? rng() : i % 3 == 1 ? a + near : a + kHalf + near;
    const std::uint32_t d = seq_distance(a, b);
    SCOPED_TRACE(::testing::Message() << "seed " << kSeed << " a " << a << " b " << b);
    ASSERT_EQ(seq_before(a, b), d != 0 && d < kHalf);
    ASSERT_EQ(seq_after(a, b), seq_before(b, a));
    ASSERT_FALSE(seq_before(a, b) && seq_before(b, a));
    ASSERT_EQ(static_cast<std::uint32_t>(a + d), b);
  }
}

}  // namespace
}  // namespace mccl::common
