// The pipelined point-to-point chain broadcast: the root sends segments to
// its right neighbour, each rank forwards them on, the last rank (the
// root's left neighbour) keeps them. The fallback when multicast is absent.
#pragma once

#include <cstdint>
#include <string>

#include "coll/p2p_operation.h"

namespace mccl::coll {

class ChainBroadcast final : public P2pOperation {
 public:
  ChainBroadcast(protocol::Context& ctx, std::byte* buffer, std::size_t bytes, int root,
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
  std::size_t received_ = 0;
};

}  // namespace mccl::coll
