// What the processor running the codec offers beyond the build's target,
// asked once. The codec's hot loops have an AVX2 variant chosen with it.
#pragma once

namespace mccl::codec {

inline bool have_avx2() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
#else
  return false;
#endif
}

}  // namespace mccl::codec
