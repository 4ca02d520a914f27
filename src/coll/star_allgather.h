// The star allgather(v) over the reliable transport: every rank other than
// 0 sends its block to rank 0, and rank 0, once it holds them all, sends
// every rank the whole result. A rank other than 0 runs twice (to send, and
// to take the result), which is what counts where ranks share cores: each
// of Bruck's ceil(log2 N) rounds waits for its receiver to be scheduled,
// and every rank runs in every round (the algorithm table, algorithm.h,
// takes the star there for small blocks; docs/algorithms.md).
//
// Messages: kP2pData, arg0 = kUp (a block towards rank 0, arg1 = its
// segment) or kDown (the result from rank 0, arg1 = its segment). The result
// travels as one stream, the blocks in rank order, the receiver's own
// among them (the stream is the same for every rank, and where the blocks
// lie in rank order without gaps it is the output itself: sent from there,
// and landed there). Segments are kWholeMessageMaxBytes long: nothing is
// forwarded before it has all arrived.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "coll/p2p_operation.h"
#include "coll/ring_allgather.h"

namespace mccl::coll {

class StarAllgather final : public P2pOperation {
 public:
  StarAllgather(protocol::Context& ctx, BlockLayout layout, std::uint64_t signature);

  std::string describe() const override;
  MCCL_OPERATION_HANDLERS;
  // A block's segment lands at its place at rank 0; the result's, at the
  // other ranks, where the output has the blocks in rank order.
  std::span<std::byte> landing(int peer, const protocol::ControlHeader& h,
                               std::size_t body_bytes) override;

 private:
  static constexpr std::uint32_t kUp = 0;
  static constexpr std::uint32_t kDown = 1;
  static constexpr std::size_t kSegment = kWholeMessageMaxBytes;

  // Where segment `h.arg1` of `body_bytes` from `peer` goes in the stream
  // it belongs to (a block's at rank 0, the result's elsewhere), as an
  // offset; false when this rank expects no such segment.
  bool expected(int peer, const protocol::ControlHeader& h, std::size_t body_bytes,
                std::size_t& offset) const;
  // The place in the output of `bytes` at `offset` of the segment's stream
  // when it is one piece of memory; empty otherwise (the result of blocks
  // that do not lie in rank order without gaps).
  std::span<std::byte> destination(int peer, std::size_t offset, std::size_t bytes) const;
  void send_result();

  BlockLayout layout_;
  std::size_t total_ = 0;                 // the result's bytes: every block
  bool in_order_ = false;                 // the blocks lie in rank order without gaps
  std::vector<std::size_t> up_received_;  // rank 0: bytes of each block arrived
  std::size_t up_missing_ = 0;            // rank 0: bytes of blocks still to come
  std::size_t down_received_ = 0;         // others: bytes of the result arrived
};

}  // namespace mccl::coll
