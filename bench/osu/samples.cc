// The float32 values of the compressed runs (osu_common.h, sample_value,
// load_samples): Gaussian, or a file's (--data).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "osu_common.h"

namespace mccl::bench::osu {
namespace {

// sample_value's 2^20 values: Gaussian, or --data's repeated.
constexpr std::size_t kSampleTable = std::size_t{1} << 20;
std::vector<float>& sample_table() {
  static std::vector<float> table = [] {
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> t(kSampleTable);
    for (auto& x : t) x = d(rng);
    return t;
  }();
  return table;
}

}  // namespace

bool load_samples(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  std::vector<float> v;
  float x;
  while (v.size() < kSampleTable && std::fread(&x, sizeof x, 1, f) == 1) v.push_back(x);
  std::fclose(f);
  double sum = 0, sq = 0;
  for (float y : v) sum += y, sq += double(y) * y;
  const double n = static_cast<double>(v.size());
  const double sigma = n > 1 ? std::sqrt(std::max(0.0, sq / n - (sum / n) * (sum / n))) : 0;
  if (!(sigma > 0) || !std::isfinite(sigma)) return false;
  std::vector<float>& t = sample_table();
  for (std::size_t i = 0; i < kSampleTable; ++i) t[i] = static_cast<float>(v[i % v.size()] / sigma);
  return true;
}

float sample_value(int rank, std::size_t i, int iter) {
  // A table of 2^20 values made once, read from an offset that a hash of
  // (rank, iter) picks: cheap enough to fill and check gigabytes, and
  // every (rank, iter) sees data that differ from the others'.
  static const std::vector<float>& table = sample_table();
  std::uint64_t z = (static_cast<std::uint64_t>(rank) << 32) ^ static_cast<std::uint32_t>(iter);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return table[(z + i) & (kSampleTable - 1)];
}

bool within_guarantee(const std::optional<Compression>& c, float want, float got) {
  if (!c || c->mode == CompressMode::kOff) return want == got;
  const double err = std::fabs(static_cast<double>(got) - want);
  switch (c->mode) {
    case CompressMode::kBound:
      return err <= c->bound;
    case CompressMode::kBf16:
      return err <= std::fabs(want) * 0x1p-8;
    default:
      return true;  // zfp promises no bound
  }
}

}  // namespace mccl::bench::osu
