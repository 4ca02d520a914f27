// The point-to-point ring allgather(v): every block travels around the ring
// over the reliable transport, in segments so that forwarding pipelines.
// Each rank sends (N-1)/N of the total; the fallback when multicast is not
// available and the baseline multicast is measured against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coll/p2p_operation.h"

namespace mccl::coll {

struct BlockLayout {
  std::byte* recv = nullptr;
  std::vector<std::size_t> counts;
  std::vector<std::size_t> displacements;
};

// The bytes of every block together.
inline std::size_t total_bytes(const BlockLayout& layout) {
  std::size_t total = 0;
  for (std::size_t c : layout.counts) total += c;
  return total;
}

// Which way blocks travel. The data rings (this one, the reduce-scatter's)
// run rightward, so a small, latency-bound exchange that may run beside one
// of them (a compressed collective's sizes) goes leftward: over the same
// connections, but the other way, where it does not queue behind the bulk
// bytes another ring put in the socket first.
enum class RingDirection { kRightward, kLeftward };

class RingAllgather final : public P2pOperation {
 public:
  RingAllgather(protocol::Context& ctx, BlockLayout layout, std::uint64_t signature,
                std::size_t segment_bytes, RingDirection direction = RingDirection::kRightward);

  std::string describe() const override;
  MCCL_OPERATION_HANDLERS;
  // A segment from the neighbour it receives from lands at its place in
  // the output.
  std::span<std::byte> landing(int peer, const protocol::ControlHeader& h,
                               std::size_t body_bytes) override;

 private:
  // Where segment `h.arg1` of block `h.arg0` from `peer` belongs, if it is
  // one this rank expects and `body_bytes` is its length; empty otherwise.
  std::span<std::byte> segment_at(int peer, const protocol::ControlHeader& h,
                                  std::size_t body_bytes) const;
  void send_block(int block);
  std::size_t segments(int block) const;

  BlockLayout layout_;
  std::size_t segment_bytes_;
  int to_;                             // the neighbour blocks go to
  int from_;                           // the neighbour they come from
  std::vector<std::size_t> received_;  // bytes received per block
  std::size_t expected_ = 0;           // bytes still to receive
};

}  // namespace mccl::coll
