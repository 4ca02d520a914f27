// Broadcast over the reliable transport along a tree, for messages too small
// for multicast to pay or where multicast is absent (the algorithm table,
// algorithm.h, picks the shape). Segments are forwarded as they arrive, so a
// long message pipelines down the tree; where no rank forwards (the flat
// tree, 2 ranks) a message up to 4 MiB goes whole. Messages: kP2pData,
// root = the root, arg1 = segment.
//
// Shapes, with ranks numbered relative to the root (v = rank - root mod N):
//  - kChain: v sends to v + 1, and the last rank (the root's left neighbour)
//    keeps what it gets: N - 1 hops, each rank sends the message once.
//  - kLeftwardChain: the same chain the other way (v = root - rank mod N, so
//    the root's left neighbour first), for a small message that may run
//    beside a data ring, which flows rightward (RingDirection, ring_allgather.h).
//  - kBinomial: v's parent is v without its lowest set bit, its children are
//    v + 2^k for every 2^k below that bit (the root: below N), the largest
//    subtree first: ceil(log2 N) hops.
//  - kFlat: the root sends to every other rank, v = 1 first: one hop, and no
//    rank but the root needs the CPU to pass anything on, which is what
//    matters where ranks share cores (the algorithm table).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coll/p2p_operation.h"

namespace mccl::coll {

enum class TreeShape { kChain, kLeftwardChain, kBinomial, kFlat };

// Segments let a rank forward the head of a long message while the rest
// arrives. Where no rank forwards (the flat tree, any tree of 2 ranks) they
// only cut the message into more messages: it goes whole there, up to
// kWholeMessageMaxBytes (p2p_operation.h). A 2-rank broadcast on one host,
// OSU average, medians of 5 alternating runs: 512 KiB 86.7 us whole against
// 103.3 us in 128 KiB segments, 768 KiB 114.5 against 197.4, 256 KiB level
// (docs/benchmarks.md).
// The segment a tree of `ranks` cuts a `bytes` message into, `configured`
// (MCCL_COLL_CHAIN_SEGMENT_BYTES) where a rank forwards.
inline std::size_t tree_segment_bytes(TreeShape shape, int ranks, std::size_t bytes,
                                      std::size_t configured) {
  configured = std::max<std::size_t>(1, configured);
  const bool nobody_forwards = shape == TreeShape::kFlat || ranks <= 2;
  if (!nobody_forwards) return configured;
  return std::max(configured, std::min(bytes, kWholeMessageMaxBytes));
}

class TreeBroadcast final : public P2pOperation {
 public:
  TreeBroadcast(protocol::Context& ctx, TreeShape shape, std::byte* buffer, std::size_t bytes,
                int root, std::uint64_t signature, std::size_t segment_bytes);

  std::string describe() const override;
  MCCL_OPERATION_HANDLERS;
  // A segment from the parent lands at its place in the buffer.
  std::span<std::byte> landing(int peer, const protocol::ControlHeader& h,
                               std::size_t body_bytes) override;

 private:
  // Where segment `h.arg1` from `peer` belongs, if it is one this rank
  // expects and `body_bytes` is its length; empty otherwise.
  std::span<std::byte> segment_at(int peer, const protocol::ControlHeader& h,
                                  std::size_t body_bytes) const;
  void forward(std::uint32_t segment, std::span<const std::byte> data);

  TreeShape shape_;
  std::byte* buffer_;
  std::size_t bytes_;
  int root_;
  std::size_t segment_bytes_;
  int parent_ = -1;            // -1 at the root
  std::vector<int> children_;  // largest subtree first
  std::size_t received_ = 0;
};

}  // namespace mccl::coll
