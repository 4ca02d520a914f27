#include "coll/compress_choice.h"

#include <algorithm>

namespace mccl::coll {

namespace {

// Google Benchmark's G/s (2^30 bytes), the slower of the two machines,
// read as 10^9 bytes: 7% to spare. 2-core AMD EPYC (2026-11-27) and 2-core
// Intel Xeon (2026-11-26, docs/benchmarks/compression/codec-speed-*.txt;
// the sums and zfp measured on the EPYC only).
constexpr double kGB = 1e9;
constexpr CodecRate kBf16{6.1 * kGB, 11.3 * kGB};
constexpr CodecRate kBound{3.3 * kGB, 4.0 * kGB};
constexpr CodecRate kZfp{0.1 * kGB, 0.1 * kGB};  // rate 16: 0.145 encode, 0.109 decode
constexpr CodecRate kBoundSum{3.0 * kGB, 5.0 * kGB};

}  // namespace

CodecRate codec_rate(codec::Mode mode, CompressedShape shape) {
  // Only kBound compresses sums (compressed.h, compressible_sum).
  if (shape == CompressedShape::kSum) return mode == codec::Mode::kBound ? kBoundSum : CodecRate{};
  switch (mode) {
    case codec::Mode::kBf16:
      return kBf16;
    case codec::Mode::kBound:
      return kBound;
    case codec::Mode::kZfp:
      return kZfp;
    case codec::Mode::kOff:
      break;
  }
  return {};
}

double codec_bytes_per_second(codec::Mode mode, CompressedShape shape) {
  const CodecRate r = codec_rate(mode, shape);
  if (r.encode <= 0 || r.decode <= 0) return 0;
  if (shape == CompressedShape::kAllgather) return std::min(r.encode, r.decode);
  return 1.0 / (1.0 / r.encode + 1.0 / r.decode);
}

std::uint64_t compress_max_mbit(codec::Mode mode, CompressedShape shape, double core_share) {
  const double share = core_share > 0 ? std::min(core_share, 1.0) : 1.0;
  const double saved_per_byte = 1.0 - 1.0 / kAssumedCompressionRatio;
  const double link_bytes = codec_bytes_per_second(mode, shape) * share * saved_per_byte;
  return static_cast<std::uint64_t>(link_bytes * 8 / 1e6);
}

bool compression_pays(const codec::Settings& asked, CompressedShape shape, std::uint32_t link_mbit,
                      double core_share) {
  if (asked.mode == codec::Mode::kOff) return false;
  if (asked.max_link_mbit < 0 || link_mbit == 0) return true;
  const std::uint64_t limit = asked.max_link_mbit > 0
                                  ? static_cast<std::uint64_t>(asked.max_link_mbit)
                                  : compress_max_mbit(asked.mode, shape, core_share);
  return link_mbit <= limit;
}

}  // namespace mccl::coll
