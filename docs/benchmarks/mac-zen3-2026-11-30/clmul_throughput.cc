#include <immintrin.h>

#include <chrono>
#include <cstdio>
int main() {
  const long N = 50000000;
  __m256i a[8];
  for (int i = 0; i < 8; i++) a[i] = _mm256_set1_epi64x(i + 1);
  __m256i h = _mm256_set1_epi64x(0x1234567);
  auto t0 = std::chrono::steady_clock::now();
  for (long n = 0; n < N; n++)
    for (int i = 0; i < 8; i++) a[i] = _mm256_clmulepi64_epi128(a[i], h, 0x00);
  auto t1 = std::chrono::steady_clock::now();
  double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  __m256i s = a[0];
  for (int i = 1; i < 8; i++) s = _mm256_xor_si256(s, a[i]);
  printf("%.3f ns per ymm clmul (%lld)\n", ns / (N * 8.0), (long long)_mm256_extract_epi64(s, 0));
  __m128i b[8];
  for (int i = 0; i < 8; i++) b[i] = _mm_set1_epi64x(i + 1);
  __m128i g = _mm_set1_epi64x(0x1234567);
  t0 = std::chrono::steady_clock::now();
  for (long n = 0; n < N; n++)
    for (int i = 0; i < 8; i++) b[i] = _mm_clmulepi64_si128(b[i], g, 0x00);
  t1 = std::chrono::steady_clock::now();
  ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  __m128i u = b[0];
  for (int i = 1; i < 8; i++) u = _mm_xor_si128(u, b[i]);
  printf("%.3f ns per xmm clmul (%lld)\n", ns / (N * 8.0), (long long)_mm_extract_epi64(u, 0));
  __m256i c[8];
  for (int i = 0; i < 8; i++) c[i] = _mm256_set1_epi64x(i + 1);
  t0 = std::chrono::steady_clock::now();
  for (long n = 0; n < N; n++)
    for (int i = 0; i < 8; i++) c[i] = _mm256_mul_epu32(c[i], h);
  t1 = std::chrono::steady_clock::now();
  ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  s = c[0];
  for (int i = 1; i < 8; i++) s = _mm256_xor_si256(s, c[i]);
  printf("%.3f ns per ymm pmuludq (%lld)\n", ns / (N * 8.0), (long long)_mm256_extract_epi64(s, 0));
}
