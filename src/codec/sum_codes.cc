#include "codec/sum_codes.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "codec/bitpack.h"
#include "codec/cpu.h"
#include "codec/elements.h"
#include "common/little_endian.h"

namespace mccl::codec {

namespace {

constexpr std::size_t kBlock = 1024;
constexpr std::size_t kHeader = 16;
enum : std::uint8_t { kPacked = 0, kRawCodes = 1 };
constexpr double kRoundMagic = 0x1.8p52;  // see quantize.cc
constexpr std::int64_t kRoundMagicBits = std::bit_cast<std::int64_t>(kRoundMagic);
constexpr std::uint64_t kQuietNan =
    std::bit_cast<std::uint64_t>(std::numeric_limits<double>::quiet_NaN());

// A block's codes (and sums) with their range.
struct Range {
  std::int64_t lo = std::numeric_limits<std::int64_t>::max();
  std::int64_t hi = std::numeric_limits<std::int64_t>::min();
};

// 1/step, and the largest |code| a rank may contribute.
struct Grid {
  double inv;
  double limit;
};

Grid grid_of(double step, int ranks) { return {1.0 / step, static_cast<double>(kSumSpan / ranks)}; }

// What code_block adds to each element's code: nothing, or the left
// neighbour's partial sum as a packed block's base plus offsets.
enum class Add { kNothing, kOffsets };

// The codes of n <= kBlock elements of `src` on the grid g, plus
// base + off[i] where kAdd says so, into sums; returns their range. One
// pass: quantise, add and range in registers.
template <typename E, Add kAdd>
[[gnu::always_inline]] inline Range code_block_body(const std::byte* src, std::size_t n, Grid g,
                                                    std::int64_t base, const std::uint32_t* off,
                                                    std::int64_t* sums) {
  Range r;
  for (std::size_t i = 0; i < n; ++i) {
    // t holds round(x * inv) in its low mantissa bits while |x * inv| < 2^51,
    // so the code is t's bits less the magic's: an integer subtraction the
    // compiler vectorises, where converting q to int64 is scalar before
    // AVX-512. Beyond that range q fails the limit below and the code is
    // not used.
    typename E::Bits x;
    std::memcpy(&x, src + i * sizeof(x), sizeof(x));  // `src` may be unaligned
    const double t = E::widen(x) * g.inv + kRoundMagic;
    const double q = t - kRoundMagic;
    const std::int64_t code = std::bit_cast<std::int64_t>(t) - kRoundMagicBits;
    // Also false for NaN; +-Inf give +-Inf here.
    std::int64_t sum = std::fabs(q) < g.limit ? code : kSumPoison;
    if constexpr (kAdd == Add::kOffsets) sum += base + static_cast<std::int64_t>(off[i]);
    sums[i] = sum;
    r.lo = std::min(r.lo, sum);
    r.hi = std::max(r.hi, sum);
  }
  return r;
}

// The same loop compiled for AVX2 (no FMA, so the same roundings), chosen
// at run time: four lanes where the build's SSE2 has two and no 64-bit
// compare for the range.
template <typename E, Add kAdd>
MCCL_CODEC_AVX2 Range code_block_avx2(const std::byte* src, std::size_t n, Grid g,
                                      std::int64_t base, const std::uint32_t* off,
                                      std::int64_t* sums) {
  return code_block_body<E, kAdd>(src, n, g, base, off, sums);
}

template <typename E, Add kAdd>
Range code_block(const std::byte* in, std::size_t n, Grid g, std::int64_t base,
                 const std::uint32_t* off, std::int64_t* sums) {
  if (have_avx2()) return code_block_avx2<E, kAdd>(in, n, g, base, off, sums);
  return code_block_body<E, kAdd>(in, n, g, base, off, sums);
}

// n <= kBlock codes back to `E` (poisoned ones to NaN) into dst.
template <typename E>
[[gnu::always_inline]] inline void dequantise_body(const std::int64_t* codes, std::size_t n,
                                                   double step, typename E::Bits* dst) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t q = codes[i];
    // q as a float64 through the magic's mantissa: exact, as static_cast is,
    // for the |q| < 2^51 used below, and it vectorises where converting
    // int64 does not before AVX-512 (unsigned: a poisoned sum may wrap).
    const double d = std::bit_cast<double>(static_cast<std::uint64_t>(q) +
                                           static_cast<std::uint64_t>(kRoundMagicBits)) -
                     kRoundMagic;
    // Poisoned sums become the quiet NaN by a mask, not a branch or a
    // select of doubles, either of which keeps GCC from vectorising.
    const std::uint64_t keep = -static_cast<std::uint64_t>((q > -kSumSpan) & (q < kSumSpan));
    const std::uint64_t bits =
        (std::bit_cast<std::uint64_t>(d * step) & keep) | (kQuietNan & ~keep);
    dst[i] = E::narrow(std::bit_cast<double>(bits));
  }
}

template <typename E>
MCCL_CODEC_AVX2 void dequantise_avx2(const std::int64_t* codes, std::size_t n, double step,
                                     typename E::Bits* dst) {
  dequantise_body<E>(codes, n, step, dst);
}

template <typename E>
void dequantise(const std::int64_t* codes, std::size_t count, double step, std::byte* out) {
  using Bits = typename E::Bits;
  Bits dst[kBlock];
  for (std::size_t at = 0; at < count; at += kBlock) {
    const std::size_t n = std::min(kBlock, count - at);
    if (have_avx2()) {
      dequantise_avx2<E>(codes + at, n, step, dst);
    } else {
      dequantise_body<E>(codes + at, n, step, dst);
    }
    std::memcpy(out + at * sizeof(Bits), dst, n * sizeof(Bits));
  }
}

// One block of n <= kBlock codes of range r packed at `h` (header and
// body; room for kHeader + n * 8 bytes); its size in bytes.
std::size_t pack_block(const std::int64_t* c, std::size_t n, Range r, std::byte* h) {
  const auto range = static_cast<std::uint64_t>(r.hi) - static_cast<std::uint64_t>(r.lo);
  std::memset(h, 0, kHeader);
  common::put_le<std::uint64_t>(h + 8, static_cast<std::uint64_t>(r.lo));
  if (range >> 32 != 0) {
    h[0] = std::byte{kRawCodes};
    std::memcpy(h + kHeader, c, n * 8);
    return kHeader + n * 8;
  }
  const auto bits = static_cast<unsigned>(std::bit_width(range));
  std::uint32_t offsets[kBlock];
  for (std::size_t i = 0; i < n; ++i) {
    offsets[i] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(c[i]) -
                                            static_cast<std::uint64_t>(r.lo));
  }
  h[0] = std::byte{kPacked};
  h[1] = static_cast<std::byte>(bits);
  pack(offsets, n, bits, h + kHeader);
  return kHeader + packed_bytes(n, bits);
}

// pack_block onto the end of `out`. Packing in place would have to size
// `out` for the worst case first (8 bytes per code), and a vector zeroes
// what it grows by: five times what packing writes, in pages a new
// collective's buffers first touch. Appending touches only what is packed.
void append_block(const std::int64_t* c, std::size_t n, Range r, std::vector<std::byte>& out) {
  std::byte block[kHeader + kBlock * 8];
  const std::size_t size = pack_block(c, n, r, block);
  out.insert(out.end(), block, block + size);
}

Range range_of(const std::int64_t* c, std::size_t n) {
  // Branch-free (std::minmax_element branches on every element: codes of
  // noisy data mispredict half the time).
  Range r;
  for (std::size_t i = 0; i < n; ++i) {
    r.lo = std::min(r.lo, c[i]);
    r.hi = std::max(r.hi, c[i]);
  }
  return r;
}

// A packed block read: its codes are base + offsets[i], or raw[i].
struct Block {
  bool raw = false;
  std::int64_t base = 0;
  const std::byte* raw_codes = nullptr;
  std::uint32_t offsets[kBlock];
};

// Reads the block of n codes at in[*at...] into b and moves *at past it;
// kInvalidArgument when it is malformed or truncated.
common::Status read_block(std::span<const std::byte> in, std::size_t* at, std::size_t n, Block& b) {
  if (in.size() - *at < kHeader) return common::invalid_argument("packed codes truncated");
  const std::byte* h = in.data() + *at;
  const auto kind = std::to_integer<unsigned>(h[0]);
  const auto bits = std::to_integer<unsigned>(h[1]);
  const std::size_t body = kind == kRawCodes ? n * 8 : packed_bytes(n, bits);
  if ((kind != kPacked && kind != kRawCodes) || bits > 32 || in.size() - *at - kHeader < body) {
    return common::invalid_argument("packed codes: bad or truncated block");
  }
  b.raw = kind == kRawCodes;
  b.base = static_cast<std::int64_t>(common::get_le<std::uint64_t>(h + 8));
  if (b.raw) {
    b.raw_codes = h + kHeader;
  } else {
    unpack(h + kHeader, n, bits, b.offsets);
  }
  *at += kHeader + body;
  return common::Status::ok();
}

void codes_of(const Block& b, std::size_t n, std::int64_t* out) {
  if (b.raw) {
    std::memcpy(out, b.raw_codes, n * 8);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(b.base) + b.offsets[i]);
  }
}

common::Status trailing(std::span<const std::byte> in, std::size_t at) {
  if (at != in.size()) return common::invalid_argument("packed codes: trailing bytes");
  return common::Status::ok();
}

// The left partial `b` plus this rank's codes of n elements at `in`, into
// sums; their range.
template <typename E>
Range add_block(const Block& b, const std::byte* in, std::size_t n, Grid g, std::int64_t* sums) {
  if (!b.raw) return code_block<E, Add::kOffsets>(in, n, g, b.base, b.offsets, sums);
  // Raw blocks (a poisoned element, or a range past 32 bits) are rare.
  std::int64_t left[kBlock];
  codes_of(b, n, left);
  code_block<E, Add::kNothing>(in, n, g, 0, nullptr, sums);
  for (std::size_t i = 0; i < n; ++i) sums[i] += left[i];
  return range_of(sums, n);
}

// Reads `packed` block by block, adds this rank's codes of `in` and hands
// each block's sums to emit(first, n, sums, range).
template <typename Emit>
common::Status add_blocks(std::span<const std::byte> packed, DataType type, const std::byte* in,
                          std::size_t count, Grid g, Emit emit) {
  std::size_t at = 0;
  common::Status st = common::Status::ok();
  with_element(type, [&]<typename E>() {
    Block b;
    std::int64_t sums[kBlock];
    for (std::size_t first = 0; first < count; first += kBlock) {
      const std::size_t n = std::min(kBlock, count - first);
      st = read_block(packed, &at, n, b);
      if (!st.is_ok()) return;
      const Range r = add_block<E>(b, in + first * sizeof(typename E::Bits), n, g, sums);
      emit(first, n, sums, r);
    }
  });
  return st.is_ok() ? trailing(packed, at) : st;
}

}  // namespace

bool sum_supported(int ranks) { return ranks >= 1 && ranks < (1 << 17); }

double sum_step(double bound, int ranks) { return 2.0 * bound / ranks * (1.0 - 0x1p-6); }

void quantise_for_sum(DataType type, const std::byte* in, std::size_t count, double step, int ranks,
                      std::int64_t* codes) {
  const Grid g = grid_of(step, ranks);
  with_element(type, [&]<typename E>() {
    for (std::size_t first = 0; first < count; first += kBlock) {
      code_block<E, Add::kNothing>(in + first * sizeof(typename E::Bits),
                                   std::min(kBlock, count - first), g, 0, nullptr, codes + first);
    }
  });
}

void dequantise_sum(DataType type, const std::int64_t* codes, std::size_t count, double step,
                    std::byte* out) {
  with_element(type, [&]<typename E>() { dequantise<E>(codes, count, step, out); });
}

void pack_codes(const std::int64_t* codes, std::size_t count, std::vector<std::byte>& out) {
  out.clear();
  for (std::size_t first = 0; first < count; first += kBlock) {
    const std::size_t n = std::min(kBlock, count - first);
    append_block(codes + first, n, range_of(codes + first, n), out);
  }
}

common::Status unpack_codes(std::span<const std::byte> in, std::size_t count, std::int64_t* out) {
  std::size_t at = 0;
  Block b;
  for (std::size_t first = 0; first < count; first += kBlock) {
    const std::size_t n = std::min(kBlock, count - first);
    common::Status st = read_block(in, &at, n, b);
    if (!st.is_ok()) return st;
    codes_of(b, n, out + first);
  }
  return trailing(in, at);
}

// The fused hops below work a block of kBlock codes at a time, so the
// int64 codes between quantiser, sum and packer stay in L1 instead of
// going through memory at 8 bytes per element (two arrays per hop).

void pack_quantised(DataType type, const std::byte* in, std::size_t count, double step, int ranks,
                    std::vector<std::byte>& out) {
  out.clear();
  const Grid g = grid_of(step, ranks);
  with_element(type, [&]<typename E>() {
    std::int64_t codes[kBlock];
    for (std::size_t first = 0; first < count; first += kBlock) {
      const std::size_t n = std::min(kBlock, count - first);
      const Range r = code_block<E, Add::kNothing>(in + first * sizeof(typename E::Bits), n, g, 0,
                                                   nullptr, codes);
      append_block(codes, n, r, out);
    }
  });
}

common::Status add_and_pack(std::span<const std::byte> packed, DataType type, const std::byte* in,
                            std::size_t count, double step, int ranks,
                            std::vector<std::byte>& out) {
  out.clear();
  return add_blocks(packed, type, in, count, grid_of(step, ranks),
                    [&](std::size_t, std::size_t n, const std::int64_t* sums, Range r) {
                      append_block(sums, n, r, out);
                    });
}

common::Status add_to_codes(std::span<const std::byte> packed, DataType type, const std::byte* in,
                            std::size_t count, double step, int ranks, std::int64_t* out) {
  return add_blocks(packed, type, in, count, grid_of(step, ranks),
                    [&](std::size_t first, std::size_t n, const std::int64_t* sums, Range) {
                      std::memcpy(out + first, sums, n * sizeof(std::int64_t));
                    });
}

}  // namespace mccl::codec
