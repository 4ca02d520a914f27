// Bitmap: bit operations at every size class around a word boundary, and the
// gap searches against a brute-force reference on seeded random bitmaps.
#include "common/bitmap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

namespace mccl::common {
namespace {

constexpr std::size_t kSizes[] = {0, 1, 63, 64, 65, 127, 128, 129, 1000};

// The obvious definitions the fast versions must agree with.
std::size_t ref_find(const std::vector<bool>& v, std::size_t from, bool value) {
  for (std::size_t i = from; i < v.size(); ++i) {
    if (v[i] == value) return i;
  }
  return v.size();
}

BitRange ref_gap(const std::vector<bool>& v, std::size_t from, std::size_t limit) {
  limit = std::min(limit, v.size());
  std::size_t b = ref_find(v, from, false);
  if (b >= limit) return {};
  std::size_t e = b;
  while (e < limit && !v[e]) ++e;
  return {b, e};
}

class BitmapSizes : public ::testing::TestWithParam<std::size_t> {};

TEST_P(BitmapSizes, StartsEmpty) {
  const std::size_t n = GetParam();
  Bitmap bm(n);
  EXPECT_EQ(bm.size(), n);
  EXPECT_EQ(bm.count(), 0u);
  EXPECT_TRUE(bm.none());
  EXPECT_EQ(bm.all(), n == 0);
  for (std::size_t i = 0; i < n; ++i) EXPECT_FALSE(bm.test(i)) << i;
  EXPECT_EQ(bm.find_zero(0), 0u);  // size() when n == 0
  EXPECT_EQ(bm.find_one(0), n);
}

TEST_P(BitmapSizes, SetAndResetEveryBit) {
  const std::size_t n = GetParam();
  Bitmap bm(n);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(bm.set(i)) << i;
    EXPECT_FALSE(bm.set(i)) << "setting twice reports the bit as new: " << i;
    EXPECT_TRUE(bm.test(i)) << i;
    EXPECT_EQ(bm.count(), i + 1);
  }
  EXPECT_TRUE(bm.all());
  EXPECT_EQ(bm.none(), n == 0);
  EXPECT_EQ(bm.find_zero(0), n);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(bm.reset(i)) << i;
    EXPECT_FALSE(bm.reset(i)) << i;
    EXPECT_FALSE(bm.test(i)) << i;
    EXPECT_EQ(bm.count(), n - i - 1);
  }
  EXPECT_TRUE(bm.none());
}

TEST_P(BitmapSizes, SetAllLeavesNoBitBeyondTheEnd) {
  const std::size_t n = GetParam();
  Bitmap bm(n);
  bm.set_all();
  EXPECT_EQ(bm.count(), n);
  EXPECT_TRUE(bm.all());
  for (std::size_t i = 0; i < n; ++i) EXPECT_TRUE(bm.test(i)) << i;
  EXPECT_EQ(bm.find_zero(0), n);
  EXPECT_EQ(bm.find_one(0), 0u);  // size() when n == 0
  EXPECT_TRUE(bm.next_gap(0, n).empty());
  // Every bit reset one by one: count follows, and a set_all bit beyond the
  // end would show up as a find_one hit past the last valid index.
  for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(bm.reset(i)) << i;
  EXPECT_TRUE(bm.none());
  EXPECT_EQ(bm.find_one(0), n);
  // set_all twice is idempotent.
  bm.set_all();
  bm.set_all();
  EXPECT_EQ(bm.count(), n);
}

TEST_P(BitmapSizes, ResizeClears) {
  const std::size_t n = GetParam();
  Bitmap bm(n);
  bm.set_all();
  bm.resize(n);
  EXPECT_EQ(bm.count(), 0u);
  EXPECT_EQ(bm.find_one(0), n);
  bm.resize(n + 1);
  EXPECT_EQ(bm.size(), n + 1);
  EXPECT_TRUE(bm.none());
  EXPECT_EQ(bm.find_zero(0), 0u);
}

TEST_P(BitmapSizes, SearchesFromThePastTheEnd) {
  const std::size_t n = GetParam();
  Bitmap bm(n);
  EXPECT_EQ(bm.find_zero(n), n);
  EXPECT_EQ(bm.find_one(n), n);
  EXPECT_EQ(bm.find_zero(n + 100), n);
  EXPECT_EQ(bm.find_one(n + 100), n);
  EXPECT_TRUE(bm.next_gap(n, n + 100).empty());
}

INSTANTIATE_TEST_SUITE_P(Sizes, BitmapSizes, ::testing::ValuesIn(kSizes));

TEST(Bitmap, DefaultConstructedIsEmpty) {
  Bitmap bm;
  EXPECT_EQ(bm.size(), 0u);
  EXPECT_TRUE(bm.all());
  EXPECT_TRUE(bm.none());
  EXPECT_EQ(bm.find_zero(0), 0u);
  EXPECT_EQ(bm.find_one(0), 0u);
  EXPECT_TRUE(bm.next_gap(0, 10).empty());
  bm.set_all();
  EXPECT_EQ(bm.count(), 0u);
}

TEST(Bitmap, SearchesCrossWordBoundaries) {
  Bitmap bm(200);
  bm.set_all();
  ASSERT_TRUE(bm.reset(130));
  EXPECT_EQ(bm.find_zero(0), 130u);
  EXPECT_EQ(bm.find_zero(64), 130u);
  EXPECT_EQ(bm.find_zero(130), 130u);
  EXPECT_EQ(bm.find_zero(131), 200u);

  Bitmap ones(200);
  ASSERT_TRUE(ones.set(63));
  ASSERT_TRUE(ones.set(64));
  ASSERT_TRUE(ones.set(199));
  EXPECT_EQ(ones.find_one(0), 63u);
  EXPECT_EQ(ones.find_one(64), 64u);
  EXPECT_EQ(ones.find_one(65), 199u);
  EXPECT_EQ(ones.find_one(199), 199u);
}

TEST(Bitmap, NextGapSpansWordsAndStopsAtLimit) {
  Bitmap bm(300);
  bm.set_all();
  for (std::size_t i = 60; i < 140; ++i) ASSERT_TRUE(bm.reset(i));
  BitRange g = bm.next_gap(0, 300);
  EXPECT_EQ(g.begin, 60u);
  EXPECT_EQ(g.end, 140u);
  EXPECT_EQ(g.size(), 80u);

  g = bm.next_gap(100, 300);  // starting inside the gap
  EXPECT_EQ(g.begin, 100u);
  EXPECT_EQ(g.end, 140u);

  g = bm.next_gap(0, 70);  // gap truncated by the limit
  EXPECT_EQ(g.begin, 60u);
  EXPECT_EQ(g.end, 70u);

  EXPECT_TRUE(bm.next_gap(0, 60).empty());  // gap begins at the limit
  EXPECT_TRUE(bm.next_gap(140, 300).empty());

  g = bm.next_gap(0, 100000);  // limit clamped to size()
  EXPECT_EQ(g.end, 140u);
}

TEST(Bitmap, TrailingGapEndsAtSize) {
  Bitmap bm(65);
  for (std::size_t i = 0; i < 60; ++i) ASSERT_TRUE(bm.set(i));
  BitRange g = bm.next_gap(0, 1000);
  EXPECT_EQ(g.begin, 60u);
  EXPECT_EQ(g.end, 65u);
}

// Seeded random bitmaps of several densities compared with the reference at
// every `from` and a spread of limits.
TEST(Bitmap, MatchesBruteForceOnRandomBitmaps) {
  constexpr unsigned kSeed = 20240611;
  std::mt19937_64 rng(kSeed);
  const double densities[] = {0.0, 0.02, 0.5, 0.98, 1.0};
  for (std::size_t n : kSizes) {
    for (double density : densities) {
      std::bernoulli_distribution coin(density);
      Bitmap bm(n);
      std::vector<bool> ref(n, false);
      for (std::size_t i = 0; i < n; ++i) {
        if (coin(rng)) {
          ref[i] = true;
          bm.set(i);
        }
      }
      const auto ones = static_cast<std::size_t>(std::count(ref.begin(), ref.end(), true));
      ASSERT_EQ(bm.count(), ones) << "seed " << kSeed << " n " << n;
      std::uniform_int_distribution<std::size_t> pick(0, n + 70);
      for (std::size_t from = 0; from <= n + 1; ++from) {
        SCOPED_TRACE(::testing::Message() << "seed " << kSeed << " n " << n << " density "
                                          << density << " from " << from);
        ASSERT_EQ(bm.find_zero(from), ref_find(ref, from, false));
        ASSERT_EQ(bm.find_one(from), ref_find(ref, from, true));
        for (std::size_t limit : {from, from + 1, from + 63, from + 64, from + 65, n, pick(rng)}) {
          BitRange got = bm.next_gap(from, limit);
          BitRange want = ref_gap(ref, from, limit);
          ASSERT_EQ(got.empty(), want.empty()) << "limit " << limit;
          if (!want.empty()) {
            ASSERT_EQ(got.begin, want.begin) << "limit " << limit;
            ASSERT_EQ(got.end, want.end) << "limit " << limit;
          }
        }
      }
    }
  }
}

// Walking the gaps with next_gap visits every clear bit exactly once: how
// the protocol enumerates missing chunks for repair.
TEST(Bitmap, GapWalkCoversEveryClearBit) {
  std::mt19937 rng(7);
  std::bernoulli_distribution coin(0.7);
  Bitmap bm(1000);
  for (std::size_t i = 0; i < 1000; ++i) {
    if (coin(rng)) bm.set(i);
  }
  std::size_t clear = 0;
  std::size_t pos = 0;
  while (true) {
    BitRange g = bm.next_gap(pos, bm.size());
    if (g.empty()) break;
    for (std::size_t i = g.begin; i < g.end; ++i) ASSERT_FALSE(bm.test(i)) << i;
    if (g.end < bm.size()) {
      ASSERT_TRUE(bm.test(g.end)) << "gap does not end at a set bit: " << g.end;
    }
    clear += g.size();
    pos = g.end;
  }
  EXPECT_EQ(clear, bm.size() - bm.count());
}

}  // namespace
}  // namespace mccl::common
