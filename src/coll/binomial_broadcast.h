// Binomial-tree broadcast over the reliable transport: ceil(log2 N) hops
// from the root to the farthest rank instead of the chain's N-1, for
// messages too small for multicast to pay (the algorithm table, algorithm.h,
// picks it). Ranks are numbered relative to the root (v = rank - root mod
// N); v's parent is v without its lowest set bit, its children are v + 2^k
// for every 2^k below that bit (the root: below N), the largest subtree
// first. Segments are forwarded as they arrive, so a long message pipelines
// down the tree. Messages: kP2pData, arg1 = segment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coll/p2p_operation.h"

namespace mccl::coll {

class BinomialBroadcast final : public P2pOperation {
 public:
  BinomialBroadcast(protocol::Context& ctx, std::byte* buffer, std::size_t bytes, int root,
                    std::uint64_t signature, std::size_t segment_bytes);

  std::string describe() const override;
  std::string describe_wait() const override;
  void on_start(common::TimePoint now) override;
  void on_control(int peer, const protocol::ControlHeader& h, std::span<const std::byte> body,
                  common::TimePoint now) override;
  void progress(common::TimePoint now) override;
  bool needs(int peer) const override;

 private:
  void forward(std::uint32_t segment, std::span<const std::byte> data);

  std::byte* buffer_;
  std::size_t bytes_;
  int root_;
  std::size_t segment_bytes_;
  int parent_ = -1;            // -1 at the root
  std::vector<int> children_;  // largest subtree first
  std::size_t received_ = 0;
};

}  // namespace mccl::coll
