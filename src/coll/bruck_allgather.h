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

#include <cstdint>
#include <string>
#include <vector>

#include "coll/p2p_operation.h"
#include "coll/ring_allgather.h"

namespace mccl::coll {

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
  // Copies `data`, found at `offset` of round k's stream, to its blocks.
  void place(const Round& round, std::size_t offset, std::span<const std::byte> data);
  // The round that segment `h.arg1` of round `h.arg0` from `peer`,
  // `body_bytes` long, belongs to; nullptr when this rank expects no such
  // segment.
  Round* round_of(int peer, const protocol::ControlHeader& h, std::size_t body_bytes);
  // Where `bytes` at `offset` of the round's stream go, when they all fall
  // within one block; empty otherwise.
  std::span<std::byte> within_one_block(const Round& round, std::size_t offset,
                                        std::size_t bytes) const;

  BlockLayout layout_;
  std::size_t segment_bytes_;
  std::vector<Round> rounds_;
  std::size_t sent_ = 0;  // rounds whose sends are out
};

}  // namespace mccl::coll
