#include "codec/bitpack.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

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

template <unsigned B>
void unpack_fixed(const std::byte* in, std::size_t n, std::uint32_t* codes) {
  constexpr std::uint64_t kMask = (std::uint64_t{1} << B) - 1;
  std::size_t i = 0;
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
