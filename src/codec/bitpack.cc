#include "codec/bitpack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "codec/cpu.h"

namespace mccl::codec {

namespace {

std::uint64_t word_at(const std::byte* in, std::size_t w) {
  std::uint64_t v;
  std::memcpy(&v, in + 8 * w, 8);
  return v;
}

// Any width, one code at a time.
void pack_any(const std::uint32_t* codes, std::size_t n, unsigned bits, std::byte* out) {
  std::uint64_t acc = 0;
  unsigned fill = 0;
  for (std::size_t i = 0; i < n; ++i) {
    acc |= std::uint64_t{codes[i]} << fill;
    fill += bits;
    if (fill >= 64) {
      std::memcpy(out, &acc, 8);
      out += 8;
      fill -= 64;
      acc = fill == 0 ? 0 : std::uint64_t{codes[i]} >> (bits - fill);
    }
  }
  if (fill > 0) std::memcpy(out, &acc, 8);
}

// Element i sits at bit i*bits; it spills into the next word only when it
// does not fit in this one, so no word past the packed size is read.
void unpack_any(const std::byte* in, std::size_t n, unsigned bits, std::uint32_t* codes) {
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t p = i * bits;
    const unsigned off = p % 64;
    std::uint64_t v = word_at(in, p / 64) >> off;
    if (off + bits > 64) v |= word_at(in, p / 64 + 1) << (64 - off);
    codes[i] = static_cast<std::uint32_t>(v & mask);
  }
}

// 64 codes of B bits fill exactly B words, so groups of 64 are packed with
// every shift a constant (unrolled: a few instructions per code, where the
// loop above carries its fill from code to code); the rest, starting on a
// word boundary, goes through the loops above. Same layout either way.
constexpr std::size_t kGroup = 64;

template <unsigned B>
void pack_fixed(const std::uint32_t* codes, std::size_t n, std::byte* out) {
  std::size_t i = 0;
  for (; i + kGroup <= n; i += kGroup, out += 8 * B) {
    std::uint64_t w[B] = {};
#pragma GCC unroll 64
    for (unsigned k = 0; k < kGroup; ++k) {
      const unsigned bit = k * B, word = bit / 64, off = bit % 64;
      w[word] |= std::uint64_t{codes[i + k]} << off;
      if (off + B > 64) w[word + 1] |= std::uint64_t{codes[i + k]} >> (64 - off);
    }
    std::memcpy(out, w, sizeof(w));
  }
  if (i < n) pack_any(codes + i, n - i, B, out);
}

#if defined(__x86_64__)
// Eight codes of B <= 25 bits fill B whole bytes, and each lies within the
// four bytes from the byte it starts in (its shift is below 8). A byte
// shuffle moves those four bytes into the code's 32-bit lane, a shift per
// lane and a mask finish. The shuffle works within 128-bit halves, so codes
// 0-3 come from the eight codes' first 16 bytes and codes 4-7 from the 16
// that begin where code 4 does.
constexpr unsigned kMaxShuffleBits = 25;

template <unsigned B>
struct EightCodes {
  static constexpr unsigned kHighByte = 4 * B / 8;  // where code 4 starts
  // The bytes one group of eight reads from its start.
  static constexpr unsigned kReadBytes = kHighByte + 16;
  alignas(32) std::array<std::uint8_t, 32> shuffle{};
  alignas(32) std::array<std::uint32_t, 8> shift{};
};

template <unsigned B>
constexpr EightCodes<B> eight_codes() {
  EightCodes<B> t;
  for (unsigned k = 0; k < 8; ++k) {
    const unsigned bit = k * B, half_start = k < 4 ? 0 : EightCodes<B>::kHighByte;
    for (unsigned j = 0; j < 4; ++j) {
      t.shuffle[4 * k + j] = static_cast<std::uint8_t>(bit / 8 - half_start + j);
    }
    t.shift[k] = bit % 8;
  }
  return t;
}

// `groups` groups of kGroup codes, each B words; the caller keeps the last
// group's reads (EightCodes::kReadBytes from its eighth eight) inside `in`.
template <unsigned B>
MCCL_CODEC_AVX2 void unpack_groups_avx2(const std::byte* in, std::size_t groups,
                                        std::uint32_t* codes) {
  static constexpr EightCodes<B> kT = eight_codes<B>();
  const __m256i shuffle = _mm256_load_si256(reinterpret_cast<const __m256i*>(kT.shuffle.data()));
  const __m256i shift = _mm256_load_si256(reinterpret_cast<const __m256i*>(kT.shift.data()));
  const __m256i mask = _mm256_set1_epi32(static_cast<int>((1u << B) - 1));
  for (std::size_t e = 0; e < groups * (kGroup / 8); ++e, in += B, codes += 8) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
    const __m128i hi =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + EightCodes<B>::kHighByte));
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    v = _mm256_and_si256(_mm256_srlv_epi32(_mm256_shuffle_epi8(v, shuffle), shift), mask);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes), v);
  }
}

// Whole groups of kGroup codes that unpack_groups_avx2 may take from the
// front of `n` codes: the last one's reads stay inside the packed bytes.
// 0 without AVX2.
template <unsigned B>
std::size_t shuffled_groups(std::size_t n) {
  const std::size_t bytes = packed_bytes(n, B);
  if (!have_avx2() || bytes < EightCodes<B>::kReadBytes) return 0;
  // The last group g - 1 reads up to (g - 1) * 8B + 7B + kReadBytes < g * 8B + kReadBytes.
  return std::min(n / kGroup, (bytes - EightCodes<B>::kReadBytes) / (8 * B));
}
#endif

template <unsigned B>
void unpack_fixed(const std::byte* in, std::size_t n, std::uint32_t* codes) {
  constexpr std::uint64_t kMask = (std::uint64_t{1} << B) - 1;
  std::size_t i = 0;
#if defined(__x86_64__)
  if constexpr (B <= kMaxShuffleBits) {
    if (const std::size_t groups = shuffled_groups<B>(n); groups > 0) {
      unpack_groups_avx2<B>(in, groups, codes);
      i = groups * kGroup;
      in += groups * 8 * B;
    }
  }
#endif
  for (; i + kGroup <= n; i += kGroup, in += 8 * B) {
    std::uint64_t w[B];
    std::memcpy(w, in, sizeof(w));
#pragma GCC unroll 64
    for (unsigned k = 0; k < kGroup; ++k) {
      const unsigned bit = k * B, word = bit / 64, off = bit % 64;
      std::uint64_t v = w[word] >> off;
      if (off + B > 64) v |= w[word + 1] << (64 - off);
      codes[i + k] = static_cast<std::uint32_t>(v & kMask);
    }
  }
  if (i < n) unpack_any(in, n - i, B, codes + i);
}

using PackFn = void (*)(const std::uint32_t*, std::size_t, std::byte*);
using UnpackFn = void (*)(const std::byte*, std::size_t, std::uint32_t*);

// Indexed by width, 1..32 (0 is handled before).
template <std::size_t... I>
constexpr std::array<PackFn, sizeof...(I)> pack_table(std::index_sequence<I...>) {
  return {&pack_fixed<static_cast<unsigned>(I + 1)>...};
}
template <std::size_t... I>
constexpr std::array<UnpackFn, sizeof...(I)> unpack_table(std::index_sequence<I...>) {
  return {&unpack_fixed<static_cast<unsigned>(I + 1)>...};
}
constexpr auto kPack = pack_table(std::make_index_sequence<32>{});
constexpr auto kUnpack = unpack_table(std::make_index_sequence<32>{});

}  // namespace

void pack(const std::uint32_t* codes, std::size_t n, unsigned bits, std::byte* out) {
  if (bits == 0) return;
  kPack[bits - 1](codes, n, out);
}

void unpack(const std::byte* in, std::size_t n, unsigned bits, std::uint32_t* codes) {
  if (bits == 0) {
    std::fill(codes, codes + n, 0u);
    return;
  }
  kUnpack[bits - 1](in, n, codes);
}

}  // namespace mccl::codec
