// Compressed sums (coll/compressed.h, codec/sum_codes.h): at N = 2, 3, 8
// and 32 every element of a reduce-scatter and an allreduce lies within
// bound + ulp(result)/2 of the exact sum (the documented bound, which does
// not grow with N), the allreduce is bit-identical on every rank, the wire
// carries fewer bytes than the float ring, and NaN inputs poison only
// their own elements. Ranks are driven round-robin from the test thread.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "harness.h"

namespace mccl::testing {
namespace {

double half_ulp(float r) {
  const float a = std::fabs(r);
  return 0.5 * (double(std::nextafter(a, INFINITY)) - a);
}

struct World {
  std::unique_ptr<InProcessWorld> world;
  std::vector<Communicator> comms;
  std::vector<Communicator*> ptrs;
  World(int n, SimFabricOptions f = {}) : world(std::make_unique<InProcessWorld>(n, f)) {
    comms = create_communicators(*world);
    for (auto& c : comms) ptrs.push_back(&c);
  }
};

TEST(CompressReduce, AllreduceBoundHoldsAtEveryTeamSizeAndRanksAgree) {
  const double bound = 1e-3;
  for (int n : {2, 3, 8, 32}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    World w(n);
    const std::size_t count = 4099;
    std::vector<std::vector<float>> in(n), out(n, std::vector<float>(count));
    std::vector<long double> exact(count, 0.0L);
    for (int r = 0; r < n; ++r) {
      in[r] = gaussian_floats(count, 17 + r);
      for (std::size_t i = 0; i < count; ++i) exact[i] += in[r][i];
    }
    std::vector<Request> reqs;
    const CollOptions o{.compression = Compression{CompressMode::kBound, bound}};
    for (int r = 0; r < n; ++r) {
      reqs.push_back(w.comms[r].iallreduce(in[r].data(), out[r].data(), count, DataType::kFloat32,
                                           ReduceOp::kSum, o));
    }
    drive(reqs, std::chrono::seconds(60), w.ptrs);
    for (int r = 1; r < n; ++r) EXPECT_EQ(out[r], out[0]) << "rank " << r;
    double worst = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const double err = std::fabs(double(out[0][i] - exact[i]));
      ASSERT_LE(err, bound + half_ulp(out[0][i])) << "element " << i;
      worst = std::max(worst, err);
    }
    EXPECT_GT(worst, 0.0);  // it really was quantised
    const Stats s = w.comms[0].stats();
    EXPECT_EQ(s.compress_max_bound, bound);
    // The grid narrows as 1/N to keep the bound: about 15 + 1.5 log2(N)
    // bits per value at bound 1e-3 sigma, still fewer than float32's 32.
    EXPECT_LT(s.compress_bytes_out, s.compress_bytes_in);
  }
}

TEST(CompressReduce, ReduceScatterBoundUnevenCountsFloat64AndBf16) {
  const double bound = 0.01;
  for (DataType type : {DataType::kFloat64, DataType::kBFloat16}) {
    for (int n : {2, 3, 8}) {
      World w(n);
      std::vector<std::size_t> counts(n);
      for (int r = 0; r < n; ++r) counts[r] = r == 1 ? 0 : 1500 + 7 * r;
      std::size_t total = 0;
      for (auto c : counts) total += c;
      const std::size_t es = size_of(type);
      std::vector<std::vector<double>> values(n);
      std::vector<std::vector<std::byte>> in(n, std::vector<std::byte>(total * es));
      std::vector<std::vector<std::byte>> out(n);
      for (int r = 0; r < n; ++r) {
        out[r].resize(counts[r] * es + 1);
        const auto g = gaussian_floats(total, 3 + r);
        for (std::size_t i = 0; i < total; ++i) {
          if (type == DataType::kFloat64) {
            const double d = g[i];
            std::memcpy(in[r].data() + i * 8, &d, 8);
            values[r].push_back(d);
          } else {
            const std::uint16_t h =
                static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(g[i]) >> 16);
            std::memcpy(in[r].data() + i * 2, &h, 2);
            values[r].push_back(std::bit_cast<float>(std::uint32_t{h} << 16));
          }
        }
      }
      std::vector<Request> reqs;
      const CollOptions o{.compression = Compression{CompressMode::kBound, bound}};
      for (int r = 0; r < n; ++r) {
        reqs.push_back(w.comms[r].ireduce_scatterv(in[r].data(), out[r].data(), counts, type,
                                                   ReduceOp::kSum, o));
      }
      drive(reqs, std::chrono::seconds(60), w.ptrs);
      std::size_t first = 0;
      for (int r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < counts[r]; ++i) {
          long double exact = 0;
          for (int q = 0; q < n; ++q) exact += values[q][first + i];
          double got;
          if (type == DataType::kFloat64) {
            std::memcpy(&got, out[r].data() + i * 8, 8);
          } else {
            std::uint16_t h;
            std::memcpy(&h, out[r].data() + i * 2, 2);
            got = std::bit_cast<float>(std::uint32_t{h} << 16);
          }
          // Half a bfloat16 ulp of the result: 2^-8 relative at most.
          const double slack = type == DataType::kFloat64 ? 1e-12 : std::fabs(got) * 0x1p-8;
          ASSERT_LE(std::fabs(got - static_cast<double>(exact)), bound + slack)
              << to_string(type) << " n=" << n << " rank " << r << " element " << i;
        }
        first += counts[r];
      }
    }
  }
}

TEST(CompressReduce, LossyFabricNanPoisonsOnlyItsElementAndOtherOpsAreExact) {
  const int n = 3;
  World w(n, {.loss = 0.03, .duplicate = 0.02, .reorder = 0.05, .seed = 5});
  const std::size_t count = 20000;
  std::vector<std::vector<float>> in(n), out(n, std::vector<float>(count)),
      maxed(n, std::vector<float>(count));
  for (int r = 0; r < n; ++r) in[r] = gaussian_floats(count, 40 + r);
  in[1][123] = NAN;
  std::vector<Request> reqs;
  const CollOptions o{.compression = Compression{CompressMode::kBound, 1e-2}};
  for (int r = 0; r < n; ++r) {
    reqs.push_back(w.comms[r].iallreduce(in[r].data(), out[r].data(), count, DataType::kFloat32,
                                         ReduceOp::kSum, o));
    reqs.push_back(w.comms[r].iallreduce(in[r].data(), maxed[r].data(), count, DataType::kFloat32,
                                         ReduceOp::kMax, o));
  }
  drive(reqs, std::chrono::seconds(60), w.ptrs);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(std::memcmp(out[r].data(), out[0].data(), count * 4), 0);
    EXPECT_TRUE(std::isnan(out[r][123]));
    EXPECT_FALSE(std::isnan(out[r][122]));
    for (std::size_t i = 0; i < count; ++i) {
      if (i == 123) continue;
      const float want = std::max({in[0][i], in[1][i], in[2][i]});
      ASSERT_EQ(maxed[r][i], want) << "max is never compressed";
    }
  }
}

// The ring's segmenting changes nothing in the result: codes are summed
// exactly, so a block cut into many segments of packed codes (the last one
// short) gives the bits of the block sent whole.
TEST(CompressReduce, SegmentsOfAnySizeGiveTheSameBits) {
  const int n = 3;
  const std::size_t per_rank = 2501;
  std::vector<std::vector<float>> in(n);
  for (int r = 0; r < n; ++r) in[r] = gaussian_floats(per_rank * n, 70 + r);
  const CollOptions o{.compression = Compression{CompressMode::kBound, 1e-2}};
  auto run = [&](const char* segment_bytes) {
    ScopedEnv env;
    // 1,000 bytes: segments of 500 float32 codes (compressed_reduce.cc).
    if (segment_bytes != nullptr) env.set("MCCL_COLL_REDUCE_SEGMENT_BYTES", segment_bytes);
    World w(n);
    std::vector<std::vector<float>> out(n, std::vector<float>(per_rank));
    std::vector<Request> reqs;
    for (int r = 0; r < n; ++r) {
      std::vector<std::size_t> counts(n, per_rank);
      reqs.push_back(w.comms[r].ireduce_scatterv(in[r].data(), out[r].data(), counts,
                                                 DataType::kFloat32, ReduceOp::kSum, o));
    }
    drive(reqs, std::chrono::seconds(60), w.ptrs);
    return out;
  };
  const auto segmented = run("1000");
  const auto whole = run(nullptr);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(segmented[r], whole[r]) << "rank " << r;
    for (std::size_t i = 0; i < per_rank; ++i) {
      const std::size_t at = r * per_rank + i;
      const double exact = double(in[0][at]) + in[1][at] + in[2][at];
      ASSERT_LE(std::fabs(segmented[r][i] - exact), 1e-2 + half_ulp(segmented[r][i])) << i;
    }
  }
}

// The FSDP step: a compressed allgather and a compressed reduce-scatter
// started together on every rank, on a fabric that loses, duplicates and
// reorders. The allgather's size exchange runs against the ring's
// direction (compressed_steps.h); both finish, the allgather bit-identical
// everywhere and within the bound, the sums within bound + ulp/2.
TEST(CompressReduce, AllgatherBesideReduceScatterBothWithinTheBound) {
  const double bound = 1e-2;
  const CollOptions o{.compression = Compression{CompressMode::kBound, bound}};
  for (int n : {3, 8}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    World w(n, {.loss = 0.02, .duplicate = 0.01, .reorder = 0.05, .seed = 11});
    const std::size_t per_rank = 6000;
    const auto un = static_cast<std::size_t>(n);
    std::vector<std::vector<float>> shard(un), gathered(un, std::vector<float>(per_rank * un));
    std::vector<std::vector<float>> in(un), out(un, std::vector<float>(per_rank));
    for (int r = 0; r < n; ++r) {
      shard[r] = gaussian_floats(per_rank, 60 + r);
      in[r] = gaussian_floats(per_rank * un, 90 + r);
    }
    std::vector<Request> reqs;
    for (int r = 0; r < n; ++r) {
      reqs.push_back(w.comms[r].iallgather(shard[r].data(), gathered[r].data(), per_rank,
                                           DataType::kFloat32, o));
      reqs.push_back(w.comms[r].ireduce_scatter(in[r].data(), out[r].data(), per_rank,
                                                DataType::kFloat32, ReduceOp::kSum, o));
    }
    drive(reqs, std::chrono::seconds(60), w.ptrs);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(gathered[r], gathered[0]) << "rank " << r;
      for (std::size_t i = 0; i < per_rank; ++i) {
        const std::size_t at = r * per_rank + i;
        ASSERT_LE(std::fabs(double(gathered[0][at]) - shard[r][i]), bound) << "block " << r;
        double exact = 0;
        for (int k = 0; k < n; ++k) exact += in[k][at];
        ASSERT_LE(std::fabs(out[r][i] - exact), bound + half_ulp(out[r][i])) << "rank " << r;
      }
    }
    const Stats s = w.comms[0].stats();
    EXPECT_EQ(s.compress_max_bound, bound);
    EXPECT_LT(s.compress_bytes_out, s.compress_bytes_in);  // both really compressed
  }
}

}  // namespace
}  // namespace mccl::testing
