// Encode and decode throughput of the codec (src/codec) per core, in bytes
// of uncompressed float32 per second: at 10 Gbit/s (1.25 GB/s) a codec of
// 3 GB/s costs under half a core. Gaussian data (sigma 1) of 4 MiB, as a
// shard of an allgather; the label gives the compression ratio. The
// compressed sums' steps (codec/sum_codes.h) beside them: quantising to
// int64 codes, packing them, unpacking, dequantising (8 ranks, bound
// sigma/100).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "codec/sum_codes.h"

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

constexpr int kSumRanks = 8;
const double kSumStep = sum_step(0.01, kSumRanks);

std::vector<std::int64_t> sum_codes_of_data() {
  std::vector<std::int64_t> codes(kCount);
  quantise_for_sum(DataType::kFloat32, reinterpret_cast<const std::byte*>(gaussian_data().data()),
                   kCount, kSumStep, kSumRanks, codes.data());
  return codes;
}

void sum_label(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kCount * 4));
}

void BM_SumQuantise(benchmark::State& state) {
  const auto* in = reinterpret_cast<const std::byte*>(gaussian_data().data());
  std::vector<std::int64_t> codes(kCount);
  for (auto _ : state) {
    quantise_for_sum(DataType::kFloat32, in, kCount, kSumStep, kSumRanks, codes.data());
    benchmark::DoNotOptimize(codes.data());
  }
  sum_label(state);
}

void BM_SumDequantise(benchmark::State& state) {
  const std::vector<std::int64_t> codes = sum_codes_of_data();
  std::vector<float> out(kCount);
  for (auto _ : state) {
    dequantise_sum(DataType::kFloat32, codes.data(), kCount, kSumStep,
                   reinterpret_cast<std::byte*>(out.data()));
    benchmark::DoNotOptimize(out.data());
  }
  sum_label(state);
}

void BM_SumPack(benchmark::State& state) {
  const std::vector<std::int64_t> codes = sum_codes_of_data();
  std::vector<std::byte> packed;
  for (auto _ : state) {
    pack_codes(codes.data(), kCount, packed);
    benchmark::DoNotOptimize(packed.data());
  }
  sum_label(state);
}

void BM_SumUnpack(benchmark::State& state) {
  const std::vector<std::int64_t> codes = sum_codes_of_data();
  std::vector<std::byte> packed;
  pack_codes(codes.data(), kCount, packed);
  std::vector<std::int64_t> back(kCount);
  for (auto _ : state) {
    if (!unpack_codes(packed, kCount, back.data()).is_ok()) state.SkipWithError("unpack");
    benchmark::DoNotOptimize(back.data());
  }
  sum_label(state);
}

// One ring hop over the whole vector, segment by segment as the ring
// runs it (MCCL_COLL_REDUCE_SEGMENT_BYTES' default: 8,192 int64 codes):
// the left partial arrives packed, this rank's codes are added, the sum
// leaves packed. Arg 0: the separate calls with int64 arrays between them
// (as the ring ran them before the fused hop); 1: add_and_pack.
void BM_SumHop(benchmark::State& state) {
  constexpr std::size_t kSegment = 8192;
  const auto* in = reinterpret_cast<const std::byte*>(gaussian_data().data());
  const std::vector<std::int64_t> partial = sum_codes_of_data();
  std::vector<std::vector<std::byte>> packed(kCount / kSegment);
  for (std::size_t s = 0; s < packed.size(); ++s) {
    pack_codes(partial.data() + s * kSegment, kSegment, packed[s]);
  }
  std::vector<std::int64_t> codes(kCount), left(kSegment), sum(kSegment);
  std::vector<std::byte> out;
  for (auto _ : state) {
    for (std::size_t s = 0; s < packed.size(); ++s) {
      const std::byte* x = in + s * kSegment * 4;
      if (state.range(0) == 1) {
        if (!add_and_pack(packed[s], DataType::kFloat32, x, kSegment, kSumStep, kSumRanks, out)
                 .is_ok()) {
          state.SkipWithError("add_and_pack");
        }
      } else {
        if (!unpack_codes(packed[s], kSegment, left.data()).is_ok()) state.SkipWithError("unpack");
        std::int64_t* mine = codes.data() + s * kSegment;
        quantise_for_sum(DataType::kFloat32, x, kSegment, kSumStep, kSumRanks, mine);
        for (std::size_t i = 0; i < kSegment; ++i) sum[i] = left[i] + mine[i];
        pack_codes(sum.data(), kSegment, out);
      }
      benchmark::DoNotOptimize(out.data());
    }
  }
  sum_label(state);
}

BENCHMARK(BM_SumQuantise);
BENCHMARK(BM_SumDequantise);
BENCHMARK(BM_SumPack);
BENCHMARK(BM_SumUnpack);
BENCHMARK(BM_SumHop)->Arg(0)->Arg(1);

}  // namespace
}  // namespace mccl::codec
