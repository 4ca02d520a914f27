// Encode and decode throughput of the codec (src/codec) per core, in bytes
// of uncompressed float32 per second: at 10 Gbit/s (1.25 GB/s) a codec of
// 3 GB/s costs under half a core. Gaussian data (sigma 1) of 4 MiB, as a
// shard of an allgather; the label gives the compression ratio.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "codec/codec.h"

namespace mccl::codec {
namespace {

constexpr std::size_t kCount = 1 << 20;  // 4 MiB of float32

const std::vector<float>& gaussian_data() {
  static const std::vector<float> data = [] {
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(kCount);
    for (auto& x : v) x = d(rng);
    return v;
  }();
  return data;
}

Settings settings_of(int mode, int param) {
  switch (mode) {
    case 1:
      return {Mode::kBf16};
    case 2:
      return {Mode::kBound, 1.0 / param};  // bound = sigma / param
    default:
      return {Mode::kZfp, 0, static_cast<double>(param)};
  }
}

void label(benchmark::State& state, const Settings& s, std::size_t encoded) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kCount * 4));
  state.SetLabel(std::string(to_string(s.mode)) + " ratio " +
                 std::to_string(static_cast<double>(kCount * 4) / static_cast<double>(encoded)));
}

void BM_Encode(benchmark::State& state) {
  const Settings s =
      settings_of(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  if (s.mode == Mode::kZfp && !zfp_available()) return state.SkipWithError("no libzfp");
  const auto* in = reinterpret_cast<const std::byte*>(gaussian_data().data());
  std::vector<std::byte> out;
  for (auto _ : state) {
    if (!encode(s, DataType::kFloat32, in, kCount, out).is_ok()) state.SkipWithError("encode");
    benchmark::DoNotOptimize(out.data());
  }
  label(state, s, out.size());
}

void BM_Decode(benchmark::State& state) {
  const Settings s =
      settings_of(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  if (s.mode == Mode::kZfp && !zfp_available()) return state.SkipWithError("no libzfp");
  const auto* in = reinterpret_cast<const std::byte*>(gaussian_data().data());
  std::vector<std::byte> enc;
  if (!encode(s, DataType::kFloat32, in, kCount, enc).is_ok()) return state.SkipWithError("encode");
  std::vector<float> out(kCount);
  for (auto _ : state) {
    if (!decode(enc, DataType::kFloat32, kCount, reinterpret_cast<std::byte*>(out.data()))
             .is_ok()) {
      state.SkipWithError("decode");
    }
    benchmark::DoNotOptimize(out.data());
  }
  label(state, s, enc.size());
}

// {mode, param}: bf16; bound sigma/100 and sigma/1000; zfp rate 16 and 8.
#define MCCL_CODEC_ARGS                 \
  ArgsProduct({{1}, {0}})               \
      ->ArgsProduct({{2}, {100, 1000}}) \
      ->ArgsProduct({{3}, {16, 8}})     \
      ->ArgNames({"mode", "param"})
BENCHMARK(BM_Encode)->MCCL_CODEC_ARGS;
BENCHMARK(BM_Decode)->MCCL_CODEC_ARGS;

}  // namespace
}  // namespace mccl::codec
