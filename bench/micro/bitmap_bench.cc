// Gap search in the received-chunk bitmap: what loss detection costs.
#include <benchmark/benchmark.h>

#include <random>

#include "common/bitmap.h"

namespace mccl::common {
namespace {

// A 64 MiB stream in 1460-byte chunks (~46k bits) with `loss` per mille of
// the bits clear; the benchmark walks every gap.
void BM_WalkGaps(benchmark::State& state) {
  const std::size_t bits = 46000;
  Bitmap b(bits);
  std::mt19937 gen(1);
  for (std::size_t i = 0; i < bits; ++i) {
    if (gen() % 1000 >= static_cast<unsigned>(state.range(0))) b.set(i);
  }
  for (auto _ : state) {
    std::size_t gaps = 0;
    for (std::size_t c = 0; c < bits;) {
      BitRange g = b.next_gap(c, bits);
      if (g.empty()) break;
      ++gaps;
      c = g.end;
    }
    benchmark::DoNotOptimize(gaps);
  }
  state.SetItemsProcessed(state.iterations() * bits);
}
BENCHMARK(BM_WalkGaps)->Arg(0)->Arg(10)->Arg(100)->Arg(300)->ArgName("loss_permille");

void BM_SetBit(benchmark::State& state) {
  Bitmap b(1 << 16);
  std::size_t i = 0;
  for (auto _ : state) {
    b.set(i);
    b.reset(i);
    i = (i + 1) & 0xFFFF;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SetBit);

}  // namespace
}  // namespace mccl::common
