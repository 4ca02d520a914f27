// Bruck's allgather(v) over the reliable transport: ceil(log2 N) rounds
// instead of the ring's N-1, at any N, for blocks too small for multicast
// to pay (the algorithm table, algorithm.h, picks it).
//
// In round k (d = 2^k) a rank r sends the blocks r, r+1, ..., r+c-1 (mod N,
// c = min(d, N-d)) to rank r-d and receives blocks r+d, ..., r+d+c-1 from
// rank r+d; after the round it holds 2d consecutive blocks. The blocks of
// one round travel as one stream (their bytes concatenated, in that order)
// cut into segments. Every block reaches a rank exactly once, so it is
// written straight to its place in the output, even when it arrives before
// this rank has finished the previous round. Messages: kP2pData, arg0 =
// round, arg1 = segment.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "coll/p2p_operation.h"
#include "coll/ring_allgather.h"

namespace mccl::coll {

// A round's stream goes out only once the previous rounds have all arrived,
// so no rank forwards a segment while the rest comes: segments only cut the
// stream into messages. They are one block long (the largest, up to
// kWholeMessageMaxBytes), so that with equal counts every segment is a
// block and lands in place; never shorter than `configured`
// (MCCL_COLL_CHAIN_SEGMENT_BYTES), which keeps small blocks together.
// 2 ranks on one host, 4 MiB: 1207 us whole against 1779 us in 128 KiB
// segments (docs/benchmarks.md, "Bruck's segments").
inline std::size_t bruck_segment_bytes(std::span<const std::size_t> counts,
                                       std::size_t configured) {
  const std::size_t largest = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  return std::max({std::size_t{1}, configured, std::min(largest, kWholeMessageMaxBytes)});
}

class BruckAllgather final : public P2pOperation {
 public:
  BruckAllgather(protocol::Context& ctx, BlockLayout layout, std::uint64_t signature,
                 std::size_t segment_bytes);

  std::string describe() const override;
  MCCL_OPERATION_HANDLERS;
  // A segment that falls within one block lands at its place in the output.
  std::span<std::byte> landing(int peer, const protocol::ControlHeader& h,
                               std::size_t body_bytes) override;

 private:
  struct Round {
    int to;             // r - d
    int from;           // r + d
    int first_block;    // the first block received, r + d
    int blocks;         // c
    std::size_t bytes;  // received in this round
    std::size_t received = 0;
  };
  void send_round(std::size_t k);
  // The bytes of the stream of `blocks` blocks from `first_block`.
  std::size_t stream_bytes_from(int first_block, int blocks) const;
  // The round that segment `h.arg1` of round `h.arg0` from `peer`,
  // `body_bytes` long, belongs to; nullptr when this rank expects no such
  // segment.
  Round* round_of(int peer, const protocol::ControlHeader& h, std::size_t body_bytes);
  // Where `bytes` at `offset` of the stream of `blocks` blocks from
  // `first_block` are in the output, when they lie there as one run (within
  // one block, or across blocks that follow each other in the output);
  // empty otherwise.
  std::span<std::byte> one_run_in_output(int first_block, int blocks, std::size_t offset,
                                         std::size_t bytes) const;

  BlockLayout layout_;
  std::size_t segment_bytes_;
  std::vector<Round> rounds_;
  std::size_t sent_ = 0;  // rounds whose sends are out
};

}  // namespace mccl::coll
