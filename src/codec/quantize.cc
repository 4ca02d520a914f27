#include "codec/quantize.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "codec/bitpack.h"
#include "codec/elements.h"
#include "common/little_endian.h"

namespace mccl::codec {

namespace {

enum BlockKind : std::uint8_t { kQuantised = 0, kRaw = 1 };
constexpr int kMaxShift = 2;  // grids 2*bound, bound, bound/2
constexpr unsigned kMaxBits = 31;
// Adding and subtracting 1.5 * 2^52 rounds a float64 of magnitude below
// 2^51 to the nearest integer (ties to even) in the default rounding mode.
constexpr double kRoundMagic = 0x1.8p52;
constexpr double kMaxSteps = 0x1p50;

std::size_t round8(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

double grid_step(double bound, int shift) { return std::ldexp(2.0 * bound, -shift); }

// The comparison below runs in float64; |fl(y - x)| <= limit implies the
// exact |y - x| < bound, because fl() errs by at most 2^-53 relatively.
double check_limit(double bound) { return bound * (1.0 - 0x1p-50); }

void put_block_header(std::byte* out, BlockKind kind, unsigned bits, int shift, double base) {
  std::memset(out, 0, kBlockHeaderBytes);
  out[0] = static_cast<std::byte>(kind);
  out[1] = static_cast<std::byte>(bits);
  out[2] = static_cast<std::byte>(shift);
  common::put_le<std::uint64_t>(out + 8,
                                static_cast<std::uint64_t>(static_cast<std::int64_t>(base)));
}

// The block's smallest and largest value, and whether all are finite.
template <typename E>
bool block_range(const std::byte* in, std::size_t n, double& lo, double& hi) {
  using W = typename E::Wide;
  typename E::Int raw[kBlockElems];
  std::memcpy(raw, in, n * sizeof(raw[0]));
  W omin = std::numeric_limits<W>::max(), omax = std::numeric_limits<W>::min();
  for (std::size_t i = 0; i < n; ++i) {
    const W o = ordered<E>(raw[i]);
    omin = std::min(omin, o);
    omax = std::max(omax, o);
  }
  // -Inf is ordered at -kInf - 1; NaNs lie beyond +-Inf.
  if (omax >= E::kInf || omin <= -E::kInf - 1) return false;
  lo = widen_ordered<E>(omin);
  hi = widen_ordered<E>(omax);
  return true;
}

// Quantises the block on the grid of `shift` into codes relative to the
// smallest; true when every reconstruction is within the bound.
template <typename E>
bool quantise(const typename E::Bits* src, std::size_t n, double lo, double hi, double bound,
              int shift, std::uint32_t* codes, double& base, unsigned& bits) {
  const double step = grid_step(bound, shift);
  const double inv = 1.0 / step;
  if (!(std::max(-lo, hi) * inv < kMaxSteps)) return false;
  // Rounding is monotone: the extreme values give the extreme codes.
  const double qlo = (lo * inv + kRoundMagic) - kRoundMagic;
  const double qhi = (hi * inv + kRoundMagic) - kRoundMagic;
  if (qhi - qlo >= 0x1p31) return false;
  bits = static_cast<unsigned>(std::bit_width(static_cast<std::uint64_t>(qhi - qlo)));
  // Two loops of one lane width each, which the vectoriser takes.
  double q[kBlockElems];
  for (std::size_t i = 0; i < n; ++i) {
    q[i] = (E::widen(src[i]) * inv + kRoundMagic) - kRoundMagic;
    codes[i] = static_cast<std::uint32_t>(static_cast<std::int32_t>(q[i] - qlo));  // < 2^31
  }
  const double limit = check_limit(bound);
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = E::widen(src[i]);
    const double y = E::widen(E::narrow(q[i] * step));
    bad += std::fabs(y - x) > limit;
  }
  base = qlo;
  return bad == 0;
}

template <typename E>
std::size_t encode_block(const std::byte* in, std::size_t n, double bound, std::byte* out) {
  using Bits = typename E::Bits;
  Bits src[kBlockElems];
  std::memcpy(src, in, n * sizeof(Bits));
  double lo = 0, hi = 0;
  const bool finite = block_range<E>(in, n, lo, hi);
  std::uint32_t codes[kBlockElems];
  double base = 0.0;
  unsigned bits = 0;
  for (int shift = 0; finite && shift <= kMaxShift; ++shift) {
    if (!quantise<E>(src, n, lo, hi, bound, shift, codes, base, bits)) continue;
    put_block_header(out, kQuantised, bits, shift, base);
    pack(codes, n, bits, out + kBlockHeaderBytes);
    return kBlockHeaderBytes + packed_bytes(n, bits);
  }
  put_block_header(out, kRaw, 0, 0, 0.0);
  std::memcpy(out + kBlockHeaderBytes, in, n * sizeof(Bits));
  std::memset(out + kBlockHeaderBytes + n * sizeof(Bits), 0,
              round8(n * sizeof(Bits)) - n * sizeof(Bits));
  return kBlockHeaderBytes + round8(n * sizeof(Bits));
}

template <typename E>
void decode_codes(const std::uint32_t* codes, std::size_t n, std::int64_t base, double step,
                  std::byte* out) {
  using Bits = typename E::Bits;
  Bits dst[kBlockElems];
  for (std::size_t i = 0; i < n; ++i) {
    dst[i] = E::narrow(static_cast<double>(base + std::int64_t{codes[i]}) * step);
  }
  std::memcpy(out, dst, n * sizeof(Bits));
}

}  // namespace

std::size_t bound_block_max_bytes(DataType type, std::size_t n) {
  return kBlockHeaderBytes + round8(n * std::max<std::size_t>(size_of(type), 4));
}

std::size_t bound_encode_block(DataType type, const std::byte* in, std::size_t n, double bound,
                               std::byte* out) {
  std::size_t written = 0;
  with_element(type, [&]<typename E>() { written = encode_block<E>(in, n, bound, out); });
  return written;
}

common::Status bound_decode_block(DataType type, std::span<const std::byte> in, std::size_t n,
                                  double bound, std::byte* out, std::size_t& used) {
  if (in.size() < kBlockHeaderBytes) {
    return common::invalid_argument("compressed stream: block header truncated");
  }
  const auto kind = std::to_integer<unsigned>(in[0]);
  const auto bits = std::to_integer<unsigned>(in[1]);
  const auto shift = std::to_integer<int>(in[2]);
  const std::size_t es = size_of(type);
  if (kind == kRaw) {
    used = kBlockHeaderBytes + round8(n * es);
    if (in.size() < used) return common::invalid_argument("compressed stream: raw block truncated");
    std::memcpy(out, in.data() + kBlockHeaderBytes, n * es);
    return common::Status::ok();
  }
  if (kind != kQuantised || bits > kMaxBits || shift > kMaxShift) {
    return common::invalid_argument("compressed stream: bad block header (kind " +
                                    std::to_string(kind) + ", bits " + std::to_string(bits) + ")");
  }
  used = kBlockHeaderBytes + packed_bytes(n, bits);
  if (in.size() < used) return common::invalid_argument("compressed stream: block truncated");
  const auto base = static_cast<std::int64_t>(common::get_le<std::uint64_t>(in.data() + 8));
  if (base > (std::int64_t{1} << 51) || base < -(std::int64_t{1} << 51)) {
    return common::invalid_argument("compressed stream: block base out of range");
  }
  std::uint32_t codes[kBlockElems];
  unpack(in.data() + kBlockHeaderBytes, n, bits, codes);
  const double step = grid_step(bound, shift);
  with_element(type, [&]<typename E>() { decode_codes<E>(codes, n, base, step, out); });
  return common::Status::ok();
}

}  // namespace mccl::codec
