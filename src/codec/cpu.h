// What the processor running the codec offers beyond the build's target,
// asked once. The codec's hot loops have an AVX2 variant chosen with it.
#pragma once

namespace mccl::codec {

// Marks a function compiled for AVX2, to be called only where have_avx2():
// the hot loops' second copy, auto-vectorised four lanes wide (no FMA, so
// its roundings are the first copy's). Elsewhere a plain second copy.
#if defined(__x86_64__)
#define MCCL_CODEC_AVX2 [[gnu::target("avx2")]]
#else
#define MCCL_CODEC_AVX2
#endif

inline bool have_avx2() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
#else
  return false;
#endif
}

}  // namespace mccl::codec
