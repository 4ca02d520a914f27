// Compressed broadcast and allgather(v) (docs/compression.md), ranks on
// threads over the in-memory fabric, with and without loss, duplication
// and reordering: every element within the bound of the sender's original,
// every rank (the root included) with the same bits, statistics that say
// what was compressed, integer data exact, bad settings refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "harness.h"

namespace mccl::testing {
namespace {

double max_error(const float* got, const float* want, std::size_t n) {
  double e = 0;
  for (std::size_t i = 0; i < n; ++i) e = std::max(e, std::fabs(double(got[i]) - want[i]));
  return e;
}

std::vector<Communicator> world_of(int n, const SimFabricOptions& fabric, CommOptions opt = {}) {
  static std::vector<std::unique_ptr<InProcessWorld>> worlds;  // outlive the communicators
  worlds.push_back(std::make_unique<InProcessWorld>(n, fabric));
  return create_communicators(*worlds.back(), opt);
}

const Compression kBound{CompressMode::kBound, 1e-2};

struct Faults {
  const char* name;
  SimFabricOptions fabric;
};
const Faults kFaults[] = {{"clean", {}},
                          {"lossy", {.loss = 0.03, .duplicate = 0.02, .reorder = 0.05, .seed = 7}}};

TEST(Compress, AllgatherWithinBoundAndBitIdenticalEverywhere) {
  for (const auto& f : kFaults) {
    for (int n : {1, 2, 3, 5}) {
      for (std::size_t count :
           {std::size_t{0}, std::size_t{1}, std::size_t{1023}, std::size_t{50000}}) {
        SCOPED_TRACE(std::string(f.name) + " n=" + std::to_string(n) +
                     " count=" + std::to_string(count));
        auto comms = world_of(n, f.fabric);
        std::vector<std::vector<float>> in(n), out(n, std::vector<float>(count * n, -7.0f));
        for (int r = 0; r < n; ++r) in[r] = gaussian_floats(count, 100 + r);
        run_on_threads(comms, [&](Communicator& c) {
          const int r = c.rank();
          c.allgather(in[r].data(), out[r].data(), count, DataType::kFloat32,
                      {.compression = kBound});
        });
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(std::memcmp(out[r].data(), out[0].data(), count * n * 4), 0) << "rank " << r;
          for (int b = 0; b < n; ++b) {
            EXPECT_LE(max_error(out[r].data() + b * count, in[b].data(), count), 1e-2);
          }
        }
        if (count >= 50000 && n > 1) {
          const Stats s = comms[0].stats();
          EXPECT_EQ(s.compress_bytes_in, count * 4);
          EXPECT_LT(s.compress_bytes_out * 3, s.compress_bytes_in);
          EXPECT_EQ(s.compress_max_bound, 1e-2);
          EXPECT_LT(s.mcast_bytes_sent, count * 4 / 3);
        }
      }
    }
  }
}

TEST(Compress, AllgathervUnevenAndZeroCountsInPlace) {
  for (const auto& f : kFaults) {
    const int n = 4;
    const std::vector<std::size_t> counts = {3000, 0, 1, 20000};
    std::vector<std::size_t> displs(n);
    std::size_t total = 0;
    for (int r = 0; r < n; ++r) {
      displs[r] = total + 5;  // gaps between blocks
      total = displs[r] + counts[r];
    }
    auto comms = world_of(n, f.fabric);
    std::vector<std::vector<float>> in(n), out(n, std::vector<float>(total, 42.0f));
    for (int r = 0; r < n; ++r) {
      in[r] = gaussian_floats(counts[r], 7 + r);
      std::copy(in[r].begin(), in[r].end(), out[r].begin() + displs[r]);  // in place
    }
    run_on_threads(comms, [&](Communicator& c) {
      c.allgatherv(kInPlace, out[c.rank()].data(), counts, displs, DataType::kFloat32,
                   {.compression = Compression{CompressMode::kBound, 1e-3}});
    });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(out[r], out[0]) << f.name << " rank " << r;
      for (int b = 0; b < n; ++b) {
        EXPECT_LE(max_error(out[r].data() + displs[b], in[b].data(), counts[b]), 1e-3);
      }
      EXPECT_EQ(out[r][0], 42.0f) << "a gap was written";
    }
  }
}

TEST(Compress, BroadcastEveryModeRootIncluded) {
  std::vector<Compression> modes = {{CompressMode::kBf16}, {CompressMode::kBound, 0.05}};
  modes.push_back({CompressMode::kZfp, 0, 16});  // skipped where the build lacks libzfp
  for (const auto& f : kFaults) {
    for (const auto& m : modes) {
      const int n = 3, root = 1;
      const std::size_t count = 30001;
      auto comms = world_of(n, f.fabric);
      const auto original = gaussian_floats(count, 3);
      std::vector<std::vector<float>> buf(n, std::vector<float>(count, 0.0f));
      buf[root] = original;
      bool zfp_missing = false;
      run_on_threads(comms, [&](Communicator& c) {
        try {
          c.broadcast(buf[c.rank()].data(), count, DataType::kFloat32, root, {.compression = m});
        } catch (const Error& e) {
          if (e.code() != ErrorCode::kUnavailable) throw;
          zfp_missing = true;
        }
      });
      if (zfp_missing) continue;  // a build without libzfp refuses zfp on every rank
      for (int r = 0; r < n; ++r) EXPECT_EQ(buf[r], buf[0]) << f.name << " rank " << r;
      const double err = max_error(buf[0].data(), original.data(), count);
      if (m.mode == CompressMode::kBound) {
        EXPECT_LE(err, 0.05);
      } else if (m.mode == CompressMode::kBf16) {
        EXPECT_LE(err, 5.0 * 0x1p-8);  // |x| < 5 here, relative error <= 2^-8
      }
      EXPECT_GT(err, 0.0) << "the root's own data is replaced by its decoded copy";
    }
  }
}

TEST(Compress, IntegersAndOffMoveExactly) {
  const int n = 3;
  auto comms = world_of(n, {});
  const std::size_t count = 5000;
  std::vector<std::vector<std::int32_t>> out(n, std::vector<std::int32_t>(count * n));
  std::vector<std::vector<float>> fout(n, std::vector<float>(count * n));
  auto fin = gaussian_floats(count, 9);
  run_on_threads(comms, [&](Communicator& c) {
    std::vector<std::int32_t> in(count);
    for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<std::int32_t>(i * 31 + c.rank());
    c.allgather(in.data(), out[c.rank()].data(), count, DataType::kInt32, {.compression = kBound});
    c.allgather(fin.data(), fout[c.rank()].data(), count, DataType::kFloat32,
                {.compression = Compression{}});
  });
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b) {
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(out[r][b * count + i], static_cast<std::int32_t>(i * 31 + b));
      }
      EXPECT_EQ(std::memcmp(fout[r].data() + b * count, fin.data(), count * 4), 0);
    }
  }
  EXPECT_EQ(comms[0].stats().compress_bytes_in, 0u);
}

TEST(Compress, CommunicatorDefaultFromEnvironmentAndBadSettingsRefused) {
  {
    ScopedEnv env;
    env.set("MCCL_COLL_COMPRESS", "bound");
    env.set("MCCL_COLL_COMPRESS_BOUND", "0.25");
    auto comms = world_of(2, {});
    std::vector<std::vector<double>> out(2, std::vector<double>(2000));
    std::vector<double> in(1000);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = std::sin(0.01 * double(i));
    run_on_threads(comms, [&](Communicator& c) {
      c.allgather(in.data(), out[c.rank()].data(), in.size(), DataType::kFloat64);
    });
    EXPECT_EQ(out[0], out[1]);
    for (std::size_t i = 0; i < 2000; ++i) EXPECT_LE(std::fabs(out[0][i] - in[i % 1000]), 0.25);
    EXPECT_EQ(comms[1].stats().compress_max_bound, 0.25);
  }
  {
    ScopedEnv env;
    env.set("MCCL_COLL_COMPRESS", "bound");  // and no bound
    InProcessWorld world(1);
    std::string why;
    EXPECT_EQ(code_of([&] { create_communicators(world); }, &why), ErrorCode::kInvalidArgument);
    EXPECT_NE(why.find("MCCL_COLL_COMPRESS_BOUND"), std::string::npos) << why;
  }
  auto comms = world_of(1, {});
  float x = 1.0f;
  std::string why;
  EXPECT_EQ(code_of(
                [&] {
                  comms[0].broadcast(&x, 1, DataType::kFloat32, 0,
                                     {.compression = Compression{CompressMode::kBound, -1.0}});
                },
                &why),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(why.find("CollOptions::compression"), std::string::npos) << why;
}

TEST(Compress, RanksDisagreeingOnCompressionFailWithMismatch) {
  auto comms = world_of(2, {}, {.timeout = std::chrono::seconds(5)});
  std::vector<float> in(4000, 1.5f), out(8000);
  std::vector<ErrorCode> codes(2);
  run_on_threads(comms, [&](Communicator& c) {
    const CollOptions o = c.rank() == 0 ? CollOptions{.compression = kBound} : CollOptions{};
    codes[c.rank()] =
        code_of([&] { c.allgather(in.data(), out.data() + 0, in.size(), DataType::kFloat32, o); });
  });
  // Rank 1 runs the plain allgather, rank 0 the compressed one.
  EXPECT_NE(codes[0], ErrorCode::kOk);
  EXPECT_NE(codes[1], ErrorCode::kOk);
}

}  // namespace
}  // namespace mccl::testing
