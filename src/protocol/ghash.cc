#include "protocol/ghash.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers fill unused lanes from a self-initialised
// variable (_mm256_undefined_si256 and friends), which its own
// -Wmaybe-uninitialized then reports where they inline.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#endif

namespace mccl::protocol::ghash {

const char* to_string(Width w) {
  switch (w) {
    case Width::kXmm:
      return "pclmul-128";
    case Width::kYmm:
      return "vpclmul-256";
    case Width::kZmm:
      return "vpclmul-512";
    case Width::kNone:
      break;
  }
  return "none";
}

#if defined(__x86_64__)

// Each width's code carries its own target, so that nothing wider than the
// CPU has can run: the 128-bit code uses only PCLMULQDQ and SSSE3.
#define MCCL_XMM_TARGET __attribute__((target("pclmul,ssse3")))
#define MCCL_YMM_TARGET __attribute__((target("avx2,vpclmulqdq,pclmul")))
#define MCCL_ZMM_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,vpclmulqdq,pclmul")))

Width best_width() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("ssse3")) return Width::kNone;
  if (!__builtin_cpu_supports("vpclmulqdq") || !__builtin_cpu_supports("avx2")) return Width::kXmm;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    return Width::kZmm;
  }
  return Width::kYmm;
}

namespace {

// GHASH works on bit-reflected blocks; reversing the bytes of a block lets
// the carry-less multiply see its polynomial with the usual bit order
// (Gueron and Kounavis, "Intel Carry-Less Multiplication Instruction and its
// Usage for Computing the GCM Mode", 2014, algorithms 2 and 5).
MCCL_XMM_TARGET inline __m128i reflect_mask() {
  return _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
MCCL_XMM_TARGET inline __m128i reflect(__m128i x) { return _mm_shuffle_epi8(x, reflect_mask()); }

// The 256-bit carry-less product <hi:lo> of reflected operands, shifted
// left by one bit (the reflection leaves it one short) and reduced modulo
// x^128 + x^7 + x^2 + x + 1. Linear: a sum of products needs one call.
MCCL_XMM_TARGET inline __m128i reduce(__m128i lo, __m128i hi) {
  __m128i c_lo = _mm_srli_epi32(lo, 31);
  __m128i c_hi = _mm_srli_epi32(hi, 31);
  lo = _mm_slli_epi32(lo, 1);
  hi = _mm_slli_epi32(hi, 1);
  const __m128i top = _mm_srli_si128(c_lo, 12);
  c_hi = _mm_slli_si128(c_hi, 4);
  c_lo = _mm_slli_si128(c_lo, 4);
  lo = _mm_or_si128(lo, c_lo);
  hi = _mm_or_si128(_mm_or_si128(hi, c_hi), top);

  __m128i a = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi32(lo, 31), _mm_slli_epi32(lo, 30)),
                            _mm_slli_epi32(lo, 25));
  const __m128i carry = _mm_srli_si128(a, 4);
  a = _mm_slli_si128(a, 12);
  lo = _mm_xor_si128(lo, a);
  __m128i b = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi32(lo, 1), _mm_srli_epi32(lo, 2)),
                            _mm_srli_epi32(lo, 7));
  b = _mm_xor_si128(b, carry);
  lo = _mm_xor_si128(lo, b);
  return _mm_xor_si128(hi, lo);
}

MCCL_XMM_TARGET inline __m128i load(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}
MCCL_XMM_TARGET inline void store(void* p, __m128i v) {
  _mm_storeu_si128(static_cast<__m128i*>(p), v);
}

// A sum of products, unreduced: the low, high and middle 128-bit partial
// products (the middle one straddles the other two by 64 bits).
struct Sums {
  __m128i lo;
  __m128i hi;
  __m128i mid;
};

MCCL_XMM_TARGET inline __m128i reduce(const Sums& s) {
  return reduce(_mm_xor_si128(s.lo, _mm_slli_si128(s.mid, 8)),
                _mm_xor_si128(s.hi, _mm_srli_si128(s.mid, 8)));
}

// a·b in GHASH's field, both reflected.
MCCL_XMM_TARGET inline __m128i gfmul(__m128i a, __m128i b) {
  return reduce(
      Sums{_mm_clmulepi64_si128(a, b, 0x00), _mm_clmulepi64_si128(a, b, 0x11),
           _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01), _mm_clmulepi64_si128(a, b, 0x10))});
}

// One step at each width: the `bytes` at `p` as blocks (the last padded
// with zeros), block i times block i of `pw` (H's powers), summed; `y`, the
// running hash, joins the first block. They differ in how many blocks one
// instruction takes, how the last, partial load is made, and how a block
// is multiplied: the 128- and 256-bit steps Karatsuba's way, 3 multiplies
// with `pw_folded` (the carry-less multiply's throughput bounds them: on
// an AMD Zen 3, 8,932 bytes took 942 ns with 4 a block and 773 with 3),
// the 512-bit one with 4, as measured on AVX-512 before the others came.
// The sums stay in locals: the output could alias the input (std::byte
// aliases anything), so the compiler would store them on every block.
using MulSum = Sums (*)(const std::byte* p, std::size_t bytes, const std::byte* pw,
                        const std::byte* pw_folded, __m128i y);

// The `n` < `width` bytes at `p`, then zeros, in `out`.
inline const std::byte* padded(const std::byte* p, std::size_t n, std::byte* out,
                               std::size_t width) {
  std::memset(out, 0, width);
  std::memcpy(out, p, n);
  return out;
}

MCCL_XMM_TARGET inline __m128i fold(__m128i x) {
  return _mm_xor_si128(x, _mm_shuffle_epi32(x, 0x4e));
}

MCCL_XMM_TARGET Sums mul_sum_xmm(const std::byte* p, std::size_t bytes, const std::byte* pw,
                                 const std::byte* pw_folded, __m128i y) {
  __m128i lo = _mm_setzero_si128();
  __m128i hi = lo;
  __m128i mid = lo;
  alignas(16) std::byte tail[16];
  for (std::size_t off = 0; off < bytes; off += 16) {
    const std::byte* in = bytes - off >= 16 ? p + off : padded(p + off, bytes - off, tail, 16);
    const __m128i x = _mm_xor_si128(reflect(load(in)), y);
    y = _mm_setzero_si128();
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pw + off));
    const __m128i hf = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pw_folded + off));
    lo = _mm_xor_si128(lo, _mm_clmulepi64_si128(x, h, 0x00));
    hi = _mm_xor_si128(hi, _mm_clmulepi64_si128(x, h, 0x11));
    mid = _mm_xor_si128(mid, _mm_clmulepi64_si128(fold(x), hf, 0x00));
  }
  return Sums{lo, hi, _mm_xor_si128(mid, _mm_xor_si128(lo, hi))};
}

MCCL_YMM_TARGET inline __m128i xor_halves(__m256i v) {
  return _mm_xor_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

MCCL_YMM_TARGET Sums mul_sum_ymm(const std::byte* p, std::size_t bytes, const std::byte* pw,
                                 const std::byte* pw_folded, __m128i y) {
  const __m256i swap = _mm256_broadcastsi128_si256(reflect_mask());
  __m256i lo = _mm256_setzero_si256();
  __m256i hi = lo;
  __m256i mid = lo;
  __m256i first = _mm256_zextsi128_si256(y);
  alignas(32) std::byte tail[32];
  for (std::size_t off = 0; off < bytes; off += 32) {
    const std::byte* in = bytes - off >= 32 ? p + off : padded(p + off, bytes - off, tail, 32);
    const __m256i x = _mm256_xor_si256(
        _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)), swap), first);
    first = _mm256_setzero_si256();
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pw + off));
    const __m256i hf = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pw_folded + off));
    const __m256i xf = _mm256_xor_si256(x, _mm256_shuffle_epi32(x, 0x4e));
    lo = _mm256_xor_si256(lo, _mm256_clmulepi64_epi128(x, h, 0x00));
    hi = _mm256_xor_si256(hi, _mm256_clmulepi64_epi128(x, h, 0x11));
    mid = _mm256_xor_si256(mid, _mm256_clmulepi64_epi128(xf, hf, 0x00));
  }
  mid = _mm256_xor_si256(mid, _mm256_xor_si256(lo, hi));
  return Sums{xor_halves(lo), xor_halves(hi), xor_halves(mid)};
}

MCCL_ZMM_TARGET inline __m128i xor_quarters(__m512i v) {
  const __m256i a = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  return _mm_xor_si128(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
}

struct ZmmSums {
  __m512i lo;
  __m512i hi;
  __m512i mid;
};

// Four reflected blocks `x` times four of H's powers, added to `s`.
MCCL_ZMM_TARGET inline void mul_add(ZmmSums& s, __m512i x, const std::byte* pw) {
  const __m512i h = _mm512_loadu_si512(pw);
  s.lo = _mm512_xor_si512(s.lo, _mm512_clmulepi64_epi128(x, h, 0x00));
  s.hi = _mm512_xor_si512(s.hi, _mm512_clmulepi64_epi128(x, h, 0x11));
  s.mid = _mm512_ternarylogic_epi64(s.mid, _mm512_clmulepi64_epi128(x, h, 0x01),
                                    _mm512_clmulepi64_epi128(x, h, 0x10), 0x96);
}

// Whole 64-byte loads in the loop and one masked load for the tail: a mask
// made per iteration is a move to a mask register, which competes with the
// multiplies for the one port that runs them.
MCCL_ZMM_TARGET Sums mul_sum_zmm(const std::byte* p, std::size_t bytes, const std::byte* pw,
                                 const std::byte* /*pw_folded*/, __m128i y) {
  const __m512i swap = _mm512_broadcast_i32x4(reflect_mask());
  ZmmSums s{_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
  __m512i first = _mm512_zextsi128_si512(y);
  std::size_t off = 0;
  for (; off + 64 <= bytes; off += 64) {
    mul_add(s, _mm512_xor_si512(_mm512_shuffle_epi8(_mm512_loadu_si512(p + off), swap), first),
            pw + off);
    first = _mm512_setzero_si512();
  }
  if (off < bytes) {
    const __mmask64 m = (__mmask64{1} << (bytes - off)) - 1;
    mul_add(s,
            _mm512_xor_si512(_mm512_shuffle_epi8(_mm512_maskz_loadu_epi8(m, p + off), swap), first),
            pw + off);
  }
  return Sums{xor_quarters(s.lo), xor_quarters(s.hi), xor_quarters(s.mid)};
}

MulSum mul_sum_of(Width w) {
  switch (w) {
    case Width::kZmm:
      return mul_sum_zmm;
    case Width::kYmm:
      return mul_sum_ymm;
    default:
      return mul_sum_xmm;
  }
}

// Absorbs `len` bytes into the reflected hash `y`, the last block padded
// with zeros: so every call but a string's last must bring a whole number
// of blocks. A step of n blocks reads H^n..H^1 from `powers`.
MCCL_XMM_TARGET __m128i absorb(MulSum mul_sum, __m128i y, const Powers& powers, const std::byte* p,
                               std::size_t len) {
  while (len > 0) {
    const std::size_t step = std::min<std::size_t>(len, kStepBlocks * 16);
    const std::size_t blocks = (step + 15) / 16;
    const std::size_t at = (kStepBlocks - blocks) * 16;
    y = reduce(mul_sum(p, step, powers.h + at, powers.h_folded + at, y));
    p += step;
    len -= step;
  }
  return y;
}

// A 16-byte block holding a 64-bit big-endian number in bytes `at`..`at`+7.
MCCL_XMM_TARGET inline __m128i be64_block(std::uint64_t v, int at) {
  unsigned char b[16] = {};
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<unsigned char>(v >> (56 - 8 * i));
  return reflect(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
}

MCCL_XMM_TARGET void expand_xmm(const unsigned char h_block[16], Powers& out) {
  const __m128i h = reflect(load(h_block));
  __m128i p = h;
  for (std::size_t k = 1; k <= kStepBlocks; ++k) {
    store(out.h + (kStepBlocks - k) * 16, p);
    store(out.h_folded + (kStepBlocks - k) * 16, fold(p));
    p = gfmul(p, h);
  }
  store(out.iv_term, gfmul(be64_block(kIvBytes * 8, 8), h));
}

// J0 from an IV that is not 12 bytes long:
// GHASH(IV || 0^64 || [bits of IV]_64) = IV·H^2 + L·H, L·H being
// `iv_term`; S from the header and the payload's first bytes up to a block
// boundary (so that the payload's rest starts on one), then the rest, then
// the lengths block.
MCCL_XMM_TARGET void datagram_xmm(Width width, const Powers& powers, const std::byte iv[kIvBytes],
                                  std::span<const std::byte> header,
                                  std::span<const std::byte> payload, unsigned char j0[16],
                                  unsigned char s[16]) {
  const auto power = [&powers](std::size_t k) { return load(powers.h + (kStepBlocks - k) * 16); };
  const __m128i j = _mm_xor_si128(gfmul(reflect(load(iv)), power(2)), load(powers.iv_term));
  store(j0, reflect(j));

  const MulSum mul_sum = mul_sum_of(width);
  std::byte first[kMaxHeaderBytes + 16];
  const std::size_t k = std::min((16 - header.size() % 16) % 16, payload.size());
  std::memcpy(first, header.data(), header.size());
  if (k > 0) std::memcpy(first + header.size(), payload.data(), k);
  __m128i y = absorb(mul_sum, _mm_setzero_si128(), powers, first, header.size() + k);
  y = absorb(mul_sum, y, powers, payload.data() + k, payload.size() - k);
  // The lengths block: associated data in bits, then an empty message's 0.
  y = gfmul(_mm_xor_si128(y, be64_block((header.size() + payload.size()) * 8, 0)), power(1));
  store(s, reflect(y));
}

}  // namespace

void expand(const unsigned char h_block[16], Powers& out) { expand_xmm(h_block, out); }

void datagram(Width width, const Powers& powers, const std::byte iv[kIvBytes],
              std::span<const std::byte> header, std::span<const std::byte> payload,
              unsigned char j0[16], unsigned char s[16]) {
  datagram_xmm(width, powers, iv, header, payload, j0, s);
}

#else  // not x86-64: OpenSSL computes every tag (gmac.cc never calls these)

Width best_width() { return Width::kNone; }
void expand(const unsigned char*, Powers&) {}
void datagram(Width, const Powers&, const std::byte*, std::span<const std::byte>,
              std::span<const std::byte>, unsigned char*, unsigned char*) {}

#endif

}  // namespace mccl::protocol::ghash
