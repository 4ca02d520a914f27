// When a compressed collective pays (coll/compress_choice.h): the rule's
// decisions where the measurements put them, the user's limit, and the
// inputs it cannot know.
#include "coll/compress_choice.h"

#include <gtest/gtest.h>

namespace mccl::coll {
namespace {

using codec::Mode;
using Shape = CompressedShape;

codec::Settings asked(Mode mode, std::int64_t max_link_mbit = 0) {
  codec::Settings s;
  s.mode = mode;
  s.bound = 1e-2;
  s.max_link_mbit = max_link_mbit;
  return s;
}

TEST(CompressChoice, OneGigabitPaysForEveryModeButZfpEvenOnAQuarterCore) {
  for (Shape shape : {Shape::kBroadcast, Shape::kAllgather, Shape::kSum}) {
    EXPECT_TRUE(compression_pays(asked(Mode::kBound), shape, 1000, 0.25));
  }
  EXPECT_TRUE(compression_pays(asked(Mode::kBf16), Shape::kAllgather, 1000, 0.25));
  // ZFP turns over about 0.1 GB/s: slower than a gigabit link.
  EXPECT_FALSE(compression_pays(asked(Mode::kZfp), Shape::kAllgather, 1000, 1));
  EXPECT_TRUE(compression_pays(asked(Mode::kZfp), Shape::kAllgather, 100, 1));
}

TEST(CompressChoice, TenGigabitPaysOnlyWhereTheCodecHasACore) {
  // An allgather decodes while other roots' streams arrive: with a core
  // its codec outruns 10 Gbit/s, with a quarter of one it does not.
  EXPECT_TRUE(compression_pays(asked(Mode::kBound), Shape::kAllgather, 10000, 1));
  EXPECT_FALSE(compression_pays(asked(Mode::kBound), Shape::kAllgather, 10000, 0.25));
  EXPECT_FALSE(compression_pays(asked(Mode::kBound), Shape::kAllgather, 10000, 0.5));
  // A broadcast encodes and decodes in series, a ring of sums unpacks and
  // packs: neither pays at 10 Gbit/s even with a core.
  EXPECT_FALSE(compression_pays(asked(Mode::kBound), Shape::kBroadcast, 10000, 1));
  EXPECT_FALSE(compression_pays(asked(Mode::kBound), Shape::kSum, 10000, 1));
}

TEST(CompressChoice, MoreCoresThanOneDoNotHelpAndUnknownCountsAsOne) {
  for (Shape shape : {Shape::kBroadcast, Shape::kAllgather, Shape::kSum}) {
    const auto one = compress_max_mbit(Mode::kBound, shape, 1);
    EXPECT_GT(one, 0u);
    EXPECT_EQ(compress_max_mbit(Mode::kBound, shape, 8), one);
    EXPECT_EQ(compress_max_mbit(Mode::kBound, shape, 0), one);
    EXPECT_EQ(compress_max_mbit(Mode::kBound, shape, 0.5), one / 2);
  }
  EXPECT_LT(compress_max_mbit(Mode::kBound, Shape::kBroadcast, 1),
            compress_max_mbit(Mode::kBound, Shape::kAllgather, 1));
  EXPECT_LT(compress_max_mbit(Mode::kBound, Shape::kAllgather, 1),
            compress_max_mbit(Mode::kBf16, Shape::kAllgather, 1));
}

TEST(CompressChoice, AnUnknownLinkCompressesAsAsked) {
  EXPECT_TRUE(compression_pays(asked(Mode::kBound), Shape::kSum, 0, 0.1));
  EXPECT_TRUE(compression_pays(asked(Mode::kZfp), Shape::kBroadcast, 0, 0.1));
}

TEST(CompressChoice, TheUsersLimitWins) {
  EXPECT_TRUE(compression_pays(asked(Mode::kBound, -1), Shape::kSum, 400000, 0.1));
  EXPECT_TRUE(compression_pays(asked(Mode::kBound, 500), Shape::kAllgather, 500, 1));
  EXPECT_FALSE(compression_pays(asked(Mode::kBound, 500), Shape::kAllgather, 501, 1));
}

TEST(CompressChoice, OffAndSumsOfOtherModesNeverCompress) {
  EXPECT_FALSE(compression_pays(asked(Mode::kOff), Shape::kAllgather, 0, 1));
  EXPECT_EQ(compress_max_mbit(Mode::kOff, Shape::kAllgather, 1), 0u);
  EXPECT_EQ(compress_max_mbit(Mode::kBf16, Shape::kSum, 1), 0u);
}

}  // namespace
}  // namespace mccl::coll
