#include "codec/sum_codes.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "codec/bitpack.h"
#include "codec/elements.h"
#include "common/little_endian.h"

namespace mccl::codec {

namespace {

constexpr std::size_t kBlock = 1024;
constexpr std::size_t kHeader = 16;
enum : std::uint8_t { kPacked = 0, kRawCodes = 1 };
constexpr double kRoundMagic = 0x1.8p52;  // see quantize.cc
constexpr std::int64_t kRoundMagicBits = std::bit_cast<std::int64_t>(kRoundMagic);

template <typename E>
void quantise(const std::byte* in, std::size_t count, double step, int ranks, std::int64_t* codes) {
  using Bits = typename E::Bits;
  const double inv = 1.0 / step;
  const double limit = static_cast<double>(kSumSpan / ranks);
  Bits src[kBlock];
  for (std::size_t at = 0; at < count; at += kBlock) {
    const std::size_t n = std::min(kBlock, count - at);
    std::memcpy(src, in + at * sizeof(Bits), n * sizeof(Bits));
    for (std::size_t i = 0; i < n; ++i) {
      // t holds round(x * inv) in its low mantissa bits while |x * inv| < 2^51,
      // so the code is t's bits less the magic's: an integer subtraction the
      // compiler vectorises, where converting q to int64 is scalar before
      // AVX-512. Beyond that range q fails the limit below and the code is
      // not used.
      const double t = E::widen(src[i]) * inv + kRoundMagic;
      const double q = t - kRoundMagic;
      const std::int64_t code = std::bit_cast<std::int64_t>(t) - kRoundMagicBits;
      // Also false for NaN; +-Inf give +-Inf here.
      codes[at + i] = std::fabs(q) < limit ? code : kSumPoison;
    }
  }
}

template <typename E>
void dequantise(const std::int64_t* codes, std::size_t count, double step, std::byte* out) {
  using Bits = typename E::Bits;
  Bits dst[kBlock];
  for (std::size_t at = 0; at < count; at += kBlock) {
    const std::size_t n = std::min(kBlock, count - at);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t q = codes[at + i];
      const double v = q > -kSumSpan && q < kSumSpan ? static_cast<double>(q) * step
                                                     : std::numeric_limits<double>::quiet_NaN();
      dst[i] = E::narrow(v);
    }
    std::memcpy(out + at * sizeof(Bits), dst, n * sizeof(Bits));
  }
}

}  // namespace

bool sum_supported(int ranks) { return ranks >= 1 && ranks < (1 << 17); }

double sum_step(double bound, int ranks) { return 2.0 * bound / ranks * (1.0 - 0x1p-6); }

void quantise_for_sum(DataType type, const std::byte* in, std::size_t count, double step, int ranks,
                      std::int64_t* codes) {
  with_element(type, [&]<typename E>() { quantise<E>(in, count, step, ranks, codes); });
}

void dequantise_sum(DataType type, const std::int64_t* codes, std::size_t count, double step,
                    std::byte* out) {
  with_element(type, [&]<typename E>() { dequantise<E>(codes, count, step, out); });
}

void pack_codes(const std::int64_t* codes, std::size_t count, std::vector<std::byte>& out) {
  out.resize((count / kBlock + 1) * kHeader + count * 8);
  std::size_t at = 0;
  std::uint32_t offsets[kBlock];
  for (std::size_t first = 0; first < count; first += kBlock) {
    const std::size_t n = std::min(kBlock, count - first);
    const std::int64_t* c = codes + first;
    // Branch-free (std::minmax_element branches on every element: codes of
    // noisy data mispredict half the time, a fifth of a reduce-scatter hop).
    std::int64_t lo = c[0], hi = c[0];
    for (std::size_t i = 1; i < n; ++i) {
      lo = std::min(lo, c[i]);
      hi = std::max(hi, c[i]);
    }
    const auto range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    std::byte* h = out.data() + at;
    std::memset(h, 0, kHeader);
    common::put_le<std::uint64_t>(h + 8, static_cast<std::uint64_t>(lo));
    if (range >> 32 != 0) {
      h[0] = std::byte{kRawCodes};
      std::memcpy(h + kHeader, c, n * 8);
      at += kHeader + n * 8;
      continue;
    }
    const auto bits = static_cast<unsigned>(std::bit_width(range));
    for (std::size_t i = 0; i < n; ++i) {
      offsets[i] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(c[i]) -
                                              static_cast<std::uint64_t>(lo));
    }
    h[0] = std::byte{kPacked};
    h[1] = static_cast<std::byte>(bits);
    pack(offsets, n, bits, h + kHeader);
    at += kHeader + packed_bytes(n, bits);
  }
  out.resize(at);
}

common::Status unpack_codes(std::span<const std::byte> in, std::size_t count, std::int64_t* out) {
  std::size_t at = 0;
  std::uint32_t offsets[kBlock];
  for (std::size_t first = 0; first < count; first += kBlock) {
    const std::size_t n = std::min(kBlock, count - first);
    if (in.size() - at < kHeader) return common::invalid_argument("packed codes truncated");
    const std::byte* h = in.data() + at;
    const auto kind = std::to_integer<unsigned>(h[0]);
    const auto bits = std::to_integer<unsigned>(h[1]);
    const auto base = common::get_le<std::uint64_t>(h + 8);
    const std::size_t body = kind == kRawCodes ? n * 8 : packed_bytes(n, bits);
    if ((kind != kPacked && kind != kRawCodes) || bits > 32 || in.size() - at - kHeader < body) {
      return common::invalid_argument("packed codes: bad or truncated block");
    }
    if (kind == kRawCodes) {
      std::memcpy(out + first, h + kHeader, n * 8);
    } else {
      unpack(h + kHeader, n, bits, offsets);
      for (std::size_t i = 0; i < n; ++i) {
        out[first + i] = static_cast<std::int64_t>(base + offsets[i]);
      }
    }
    at += kHeader + body;
  }
  if (at != in.size()) return common::invalid_argument("packed codes: trailing bytes");
  return common::Status::ok();
}

}  // namespace mccl::codec
