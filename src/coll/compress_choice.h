// Whether a compressed collective pays on this link: the codec must turn
// bytes over faster than the link, or the wire time it saves goes to the
// CPU instead. Where it does not pay, the collective the user asked to
// compress runs exact (and the statistics say so: compress_fast_link_skips).
//
// The rule. A codec that handles R bytes of the original per second (R per
// core times the share of a core each rank has, at most one: one
// collective's codec runs on one thread) costs 1/R per byte; compressing
// by a ratio c saves (1 - 1/c)/L per byte on a link of L bytes per second.
// It pays while 1/R < (1 - 1/c)/L. The ratio is only known once the data
// are encoded, so the rule takes c = 2 (bf16's, and about the least at
// which the `bound` encoder keeps a stream compressed): compress while
//   L <= R * min(share, 1) / 2.
// R depends on how the collective runs its codec:
// - a broadcast encodes, sends, then decodes, in series: 1/R = 1/E + 1/D;
// - an allgather decodes one root's stream while others' arrive, and
//   encodes once: R = min(E, D);
// - a ring of compressed sums unpacks and packs each block it forwards on
//   one thread: 1/R = 1/U + 1/P (codec/sum_codes.h). The hop now does both
//   in one pass (codec::add_and_pack, about 1.7 times that R), but at
//   10 Gbit/s with a core per rank the compressed sums still measured
//   slower than exact (docs/compression.md), so the rule keeps the limit
//   the separate rates give.
// The inputs are agreed at creation (the slowest link any rank knows, the
// fewest cores any rank has to itself) or the same on every rank (the
// mode), so every rank decides alike, as the compressed sums need.
#pragma once

#include <cstdint>

#include "codec/codec.h"

namespace mccl::coll {

// The ratio the rule assumes (above); the compressed ring also sizes its
// segments by it (compressed_reduce.cc).
inline constexpr int kAssumedCompressionRatio = 2;

enum class CompressedShape : std::uint8_t {
  kBroadcast,  // encode, multicast, decode, in series
  kAllgather,  // allgather(v): decoding overlaps the other roots' streams
  kSum,        // reduce-scatter, allreduce: integer codes summed along a ring
};

// Per core, in bytes of float32 input per second, the slower of the two
// machines measured (bench/micro, docs/compression.md "When compression
// pays"):
//   build/bench/micro/mccl_micro --benchmark_repetitions=5
//     --benchmark_filter='BM_(En|De)code|BM_Sum'
// (compress_choice.cc holds the figures)
struct CodecRate {
  double encode = 0;  // data movement: encode; sums: pack
  double decode = 0;  // data movement: decode; sums: unpack
};
CodecRate codec_rate(codec::Mode mode, CompressedShape shape);

// R of the rule above: bytes of the original per second on one core.
double codec_bytes_per_second(codec::Mode mode, CompressedShape shape);

// The fastest link, in Mbit/s, on which `mode` pays for `shape` where each
// rank has `core_share` cores to itself (0: unknown, taken as one core).
// 0 for kOff.
std::uint64_t compress_max_mbit(codec::Mode mode, CompressedShape shape, double core_share);

// Whether to compress as `asked` on a link of `link_mbit` (the slowest any
// rank knows; 0: unknown, so as asked). `asked.max_link_mbit` overrides the
// rule: -1 compresses at any rate, > 0 up to that rate.
bool compression_pays(const codec::Settings& asked, CompressedShape shape, std::uint32_t link_mbit,
                      double core_share);

}  // namespace mccl::coll
