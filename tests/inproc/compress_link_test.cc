// Compression only where it pays (coll/compress_choice.h): over UDP on lo
// with a link rate given in MCCL_UDP_RATE_MBIT, a collective asked to
// compress runs exact on a link faster than the codec (the same bits as an
// uncompressed call, counted in Stats::compress_fast_link_skips) and
// compressed on a slow one; Compression::max_link_mbit (at least -1) overrides the rule.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "harness.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kRanks = 3;
constexpr std::size_t kCount = 60000;  // float32 per rank
constexpr double kBound = 1e-2;

struct Outcome {
  std::vector<std::vector<float>> out;  // per rank
  std::uint64_t skips = 0, bytes_in = 0;
};

// An allgather, a broadcast from rank 1 and a reduce-scatter of Gaussian
// floats on a fresh world whose link runs at `link_mbit`, with `c` asked
// for (nullopt: no compression). Each rank's outputs, one after the other.
Outcome run(const std::string& link_mbit, std::optional<Compression> c) {
  ScopedEnv env;
  env.set("MCCL_UDP_RATE_MBIT", link_mbit);
  InProcessWorld world(kRanks);
  auto comms = create_communicators(
      world, {.transport = TransportKind::kUdp, .progress = ProgressKind::kInline, .timeout = 60s});
  Outcome result;
  result.out.resize(kRanks);
  run_on_threads(comms, [&](Communicator& comm) {
    const int r = comm.rank();
    const CollOptions o{.compression = c};
    const std::vector<float> in = gaussian_floats(kCount * kRanks, 300 + r);
    std::vector<float> gathered(kCount * kRanks), bcast(in.begin(), in.begin() + kCount),
        summed(kCount);
    comm.allgather(in.data(), gathered.data(), kCount, DataType::kFloat32, o);
    comm.broadcast(bcast.data(), kCount, DataType::kFloat32, 1, o);
    comm.reduce_scatter(in.data(), summed.data(), kCount, DataType::kFloat32, ReduceOp::kSum, o);
    auto& all = result.out[static_cast<std::size_t>(r)];
    for (const auto* v : {&gathered, &bcast, &summed}) all.insert(all.end(), v->begin(), v->end());
  });
  for (auto& comm : comms) {
    const Stats s = comm.stats();
    result.skips += s.compress_fast_link_skips;
    result.bytes_in += s.compress_bytes_in;
  }
  return result;
}

void expect_same_bits(const Outcome& a, const Outcome& b) {
  for (int r = 0; r < kRanks; ++r) {
    const auto& x = a.out[static_cast<std::size_t>(r)];
    const auto& y = b.out[static_cast<std::size_t>(r)];
    ASSERT_EQ(x.size(), y.size());
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0) << "rank " << r;
  }
}

// 100 Gbit/s is past what the codec turns over on any core measured.
TEST(CompressLink, AFastLinkRunsExactAndSaysSo) {
  const Outcome exact = run("100000", std::nullopt);
  const Outcome asked = run("100000", Compression{CompressMode::kBound, kBound});
  expect_same_bits(asked, exact);
  EXPECT_EQ(asked.skips, 3u * kRanks) << "three collectives on each rank ran exact";
  EXPECT_EQ(asked.bytes_in, 0u) << "nothing was encoded";
  EXPECT_EQ(exact.skips, 0u) << "nothing was asked to compress";
}

TEST(CompressLink, ASlowLinkCompresses) {
  const Outcome exact = run("200", std::nullopt);
  const Outcome asked = run("200", Compression{CompressMode::kBound, kBound});
  EXPECT_EQ(asked.skips, 0u);
  EXPECT_GT(asked.bytes_in, 0u);
  bool differs = false;
  for (int r = 0; r < kRanks; ++r) {
    const auto& x = asked.out[static_cast<std::size_t>(r)];
    const auto& y = exact.out[static_cast<std::size_t>(r)];
    differs |= std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) != 0;
  }
  EXPECT_TRUE(differs) << "lossy compression changed no bit: it did not run";
}

TEST(CompressLink, TheUsersLimitWins) {
  Compression any{CompressMode::kBound, kBound};
  any.max_link_mbit = -1;
  const Outcome forced = run("100000", any);
  EXPECT_EQ(forced.skips, 0u);
  EXPECT_GT(forced.bytes_in, 0u);

  Compression low{CompressMode::kBound, kBound};
  low.max_link_mbit = 100;
  const Outcome capped = run("200", low);
  EXPECT_EQ(capped.skips, 3u * kRanks);
  EXPECT_EQ(capped.bytes_in, 0u);
}

TEST(CompressLink, ALimitBelowMinusOneIsRefused) {
  InProcessWorld world(1);
  auto comms = create_communicators(world);
  Compression bad{CompressMode::kBound, kBound};
  bad.max_link_mbit = -5;
  std::vector<float> v(10);
  try {
    comms[0].broadcast(v.data(), v.size(), DataType::kFloat32, 0, {.compression = bad});
    FAIL() << "a max_link_mbit of -5 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("max_link_mbit"), std::string::npos) << e.what();
  }
}

TEST(CompressLink, TheSettingSetsTheLimit) {
  ScopedEnv env;
  env.set("MCCL_COLL_COMPRESS", "bound");
  env.set("MCCL_COLL_COMPRESS_BOUND", "0.01");
  env.set("MCCL_COLL_COMPRESS_MAX_MBIT", "-1");
  const Outcome forced = run("100000", std::nullopt);
  EXPECT_EQ(forced.skips, 0u);
  EXPECT_GT(forced.bytes_in, 0u) << "the communicator's compression came from the environment";
}

}  // namespace
}  // namespace mccl::testing
