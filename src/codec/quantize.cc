#include "codec/quantize.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "codec/bitpack.h"
#include "codec/cpu.h"
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
bool block_range(const typename E::Bits* src, std::size_t n, double& lo, double& hi) {
  using W = typename E::Wide;
  W omin = std::numeric_limits<W>::max(), omax = std::numeric_limits<W>::min();
  for (std::size_t i = 0; i < n; ++i) {
    const W o = ordered<E>(std::bit_cast<typename E::Int>(src[i]));
    omin = std::min(omin, o);
    omax = std::max(omax, o);
  }
  // -Inf is ordered at -kInf - 1; NaNs lie beyond +-Inf.
  if (omax >= E::kInf || omin <= -E::kInf - 1) return false;
  lo = widen_ordered<E>(omin);
  hi = widen_ordered<E>(omax);
  return true;
}

// The grid point of each element (an integer as a float64, rounded to
// nearest even by kRoundMagic), its code relative to the block's smallest,
// qlo, and the check that narrowing the grid point back, as the decoder
// will, lands within `limit` of the original: one pass, no array of grid
// points. Elements [i, n) one at a time; false at the first that fails.
template <typename E>
bool quantise_from(const typename E::Bits* src, std::size_t i, std::size_t n, double inv,
                   double step, double qlo, double limit, std::uint32_t* codes) {
  for (; i < n; ++i) {
    const double x = E::widen(src[i]);
    const double q = (x * inv + kRoundMagic) - kRoundMagic;
    codes[i] = static_cast<std::uint32_t>(static_cast<std::int32_t>(q - qlo));  // < 2^31
    if (std::fabs(E::widen(E::narrow(q * step)) - x) > limit) return false;
  }
  return true;
}

// The same for float32 and float64 two at a time with SSE2 where the target
// has it (the compiler does not vectorise the loop above: narrowing to
// float and back mixes lane widths), the same IEEE operations, so the same
// bits. Elements [i, n) in pairs; returns where it stopped, `ok` false when
// one failed.
#if defined(__SSE2__)
template <typename E>
std::size_t quantise_pairs(const typename E::Bits* src, std::size_t i, std::size_t n, double inv,
                           double step, double qlo, double limit, std::uint32_t* codes, bool& ok) {
  ok = true;
  if constexpr (std::is_same_v<E, F32> || std::is_same_v<E, F64>) {
    const __m128d invs = _mm_set1_pd(inv), steps = _mm_set1_pd(step),
                  magic = _mm_set1_pd(kRoundMagic);
    const __m128d qlos = _mm_set1_pd(qlo), limits = _mm_set1_pd(limit);
    const __m128d magnitude = _mm_castsi128_pd(_mm_set1_epi64x(~(std::int64_t{1} << 63)));
    __m128d bad = _mm_setzero_pd();
    for (; i + 2 <= n; i += 2) {
      __m128d x;
      if constexpr (std::is_same_v<E, F32>) {
        x = _mm_cvtps_pd(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(src + i))));
      } else {
        x = _mm_loadu_pd(src + i);
      }
      const __m128d q = _mm_sub_pd(_mm_add_pd(_mm_mul_pd(x, invs), magic), magic);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i),
                       _mm_cvttpd_epi32(_mm_sub_pd(q, qlos)));
      __m128d y = _mm_mul_pd(q, steps);
      if constexpr (std::is_same_v<E, F32>) y = _mm_cvtps_pd(_mm_cvtpd_ps(y));
      bad = _mm_or_pd(bad, _mm_cmpgt_pd(_mm_and_pd(_mm_sub_pd(y, x), magnitude), limits));
    }
    ok = _mm_movemask_pd(bad) == 0;
  }
  return i;
}
#else
// No vector unit the code knows: the loop above does every element.
template <typename E>
std::size_t quantise_pairs(const typename E::Bits*, std::size_t i, std::size_t, double, double,
                           double, double, std::uint32_t*, bool& ok) {
  ok = true;
  return i;
}
#endif

#if defined(__x86_64__)
// Four at a time with AVX2 (no FMA: the same roundings as above), for the
// processors that have it, chosen at run time.
template <typename E>
__attribute__((target("avx2"))) std::size_t quantise_quads(const typename E::Bits* src,
                                                           std::size_t n, double inv, double step,
                                                           double qlo, double limit,
                                                           std::uint32_t* codes, bool& ok) {
  std::size_t i = 0;
  ok = true;
  if constexpr (std::is_same_v<E, F32> || std::is_same_v<E, F64>) {
    const __m256d invs = _mm256_set1_pd(inv), steps = _mm256_set1_pd(step);
    const __m256d magic = _mm256_set1_pd(kRoundMagic), qlos = _mm256_set1_pd(qlo);
    const __m256d limits = _mm256_set1_pd(limit);
    const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(~(std::int64_t{1} << 63)));
    __m256d bad = _mm256_setzero_pd();
    for (; i + 4 <= n; i += 4) {
      __m256d x;
      if constexpr (std::is_same_v<E, F32>) {
        x = _mm256_cvtps_pd(_mm_loadu_ps(src + i));
      } else {
        x = _mm256_loadu_pd(src + i);
      }
      const __m256d q = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(x, invs), magic), magic);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i),
                       _mm256_cvttpd_epi32(_mm256_sub_pd(q, qlos)));
      __m256d y = _mm256_mul_pd(q, steps);
      if constexpr (std::is_same_v<E, F32>) y = _mm256_cvtps_pd(_mm256_cvtpd_ps(y));
      const __m256d err = _mm256_and_pd(_mm256_sub_pd(y, x), magnitude);
      bad = _mm256_or_pd(bad, _mm256_cmp_pd(err, limits, _CMP_GT_OQ));
    }
    ok = _mm256_movemask_pd(bad) == 0;
  }
  return i;
}
#endif

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
  base = qlo;
  const double limit = check_limit(bound);
  bool ok = true;
  // Fours where the processor can, then pairs, then one at a time: every
  // path runs on every machine with AVX2 (blocks of 2 and 3 elements left).
  std::size_t done = 0;
#if defined(__x86_64__)
  if (have_avx2()) done = quantise_quads<E>(src, n, inv, step, qlo, limit, codes, ok);
  if (!ok) return false;
#endif
  done = quantise_pairs<E>(src, done, n, inv, step, qlo, limit, codes, ok);
  return ok && quantise_from<E>(src, done, n, inv, step, qlo, limit, codes);
}

template <typename E>
std::size_t encode_block(const std::byte* in, std::size_t n, double bound, std::byte* out) {
  using Bits = typename E::Bits;
  Bits src[kBlockElems];
  std::memcpy(src, in, n * sizeof(Bits));
  double lo = 0, hi = 0;
  const bool finite = block_range<E>(src, n, lo, hi);
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

// The grid points base + codes[i] (|base| <= 2^51, codes below 2^31: every
// value and sum exact in float64) times the step, narrowed. The code
// becomes a float64 through 2^52's mantissa, an integer OR and a
// subtraction that vectorise, where converting an int64 is scalar before
// AVX-512; the sum is the same exact value as static_cast of base + code.
template <typename E>
[[gnu::always_inline]] inline void decode_codes_body(const std::uint32_t* codes, std::size_t n,
                                                     std::int64_t base, double step,
                                                     typename E::Bits* dst) {
  constexpr double kTwo52 = 0x1p52;
  constexpr std::uint64_t kTwo52Bits = std::bit_cast<std::uint64_t>(kTwo52);
  const double b = static_cast<double>(base);
  for (std::size_t i = 0; i < n; ++i) {
    const double code = std::bit_cast<double>(kTwo52Bits | codes[i]) - kTwo52;
    dst[i] = E::narrow((b + code) * step);
  }
}

template <typename E>
MCCL_CODEC_AVX2 void decode_codes_avx2(const std::uint32_t* codes, std::size_t n, std::int64_t base,
                                       double step, typename E::Bits* dst) {
  decode_codes_body<E>(codes, n, base, step, dst);
}

template <typename E>
void decode_codes(const std::uint32_t* codes, std::size_t n, std::int64_t base, double step,
                  std::byte* out) {
  using Bits = typename E::Bits;
  Bits dst[kBlockElems];
  if (have_avx2()) {
    decode_codes_avx2<E>(codes, n, base, step, dst);
  } else {
    decode_codes_body<E>(codes, n, base, step, dst);
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

common::Status bound_block_bytes(DataType type,
                                 std::span<const std::byte, kBlockHeaderBytes> header,
                                 std::size_t n, std::size_t& bytes) {
  const auto kind = std::to_integer<unsigned>(header[0]);
  const auto bits = std::to_integer<unsigned>(header[1]);
  const auto shift = std::to_integer<int>(header[2]);
  if (kind == kRaw) {
    bytes = kBlockHeaderBytes + round8(n * size_of(type));
    return common::Status::ok();
  }
  if (kind != kQuantised || bits > kMaxBits || shift > kMaxShift) {
    return common::invalid_argument("compressed stream: bad block header (kind " +
                                    std::to_string(kind) + ", bits " + std::to_string(bits) + ")");
  }
  bytes = kBlockHeaderBytes + packed_bytes(n, bits);
  return common::Status::ok();
}

common::Status bound_decode_block(DataType type, std::span<const std::byte> in, std::size_t n,
                                  double bound, std::byte* out, std::size_t& used) {
  if (in.size() < kBlockHeaderBytes) {
    return common::invalid_argument("compressed stream: block header truncated");
  }
  common::Status st = bound_block_bytes(type, in.first<kBlockHeaderBytes>(), n, used);
  if (!st.is_ok()) return st;
  if (in.size() < used) return common::invalid_argument("compressed stream: block truncated");
  const std::size_t es = size_of(type);
  if (std::to_integer<unsigned>(in[0]) == kRaw) {
    std::memcpy(out, in.data() + kBlockHeaderBytes, n * es);
    return common::Status::ok();
  }
  const auto bits = std::to_integer<unsigned>(in[1]);
  const auto shift = std::to_integer<int>(in[2]);
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
