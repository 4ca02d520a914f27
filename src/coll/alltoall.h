// The all-to-all exchange (alltoallv): every rank sends a block of its own
// to every other rank, directly over the reliable transport, in segments.
// Multicast has nothing to offer here (every block has one receiver), so
// each rank sends what it must and nothing more: the sum of its blocks for
// the others. Gather and scatter are the cases where one rank receives, or
// sends, everything.
//
// Messages are kP2pData to the block's owner: arg0 = segment index, and
// (root << 32 | arg1) = the block's total bytes, which the receiver checks
// against what it expects from that sender (a difference is kMismatch, as
// when ranks disagree on a collective's sizes). A block of 0 bytes is one
// empty segment, so every pair of ranks exchanges at least one message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coll/p2p_operation.h"

namespace mccl::coll {

struct ExchangeLayout {
  const std::byte* send = nullptr;
  std::vector<std::size_t> send_counts, send_displs;  // bytes, by destination
  std::byte* recv = nullptr;
  std::vector<std::size_t> recv_counts, recv_displs;  // bytes, by source
};

class Alltoall final : public P2pOperation {
 public:
  Alltoall(protocol::Context& ctx, ExchangeLayout layout, std::uint64_t signature,
           std::size_t segment_bytes);

  std::string describe() const override;
  // A long segment is read straight into the receive buffer.
  std::span<std::byte> landing(int peer, const protocol::ControlHeader& h,
                               std::size_t body_bytes) override;
  MCCL_OPERATION_HANDLERS;

 private:
  void send_block(int peer);
  // Whether the block size `h` announces is what this rank expects from
  // `peer`.
  bool announced_matches(int peer, const protocol::ControlHeader& h) const;
  // Whether `h` with `bytes` of body is the next segment of `peer`'s block.
  bool next_segment(int peer, const protocol::ControlHeader& h, std::size_t bytes) const;
  // Where that segment belongs in the receive buffer.
  std::byte* segment_dest(int peer, const protocol::ControlHeader& h) const;

  ExchangeLayout layout_;
  std::size_t segment_bytes_;
  std::vector<std::size_t> received_;  // bytes so far, by source
  std::vector<bool> heard_;            // a segment (maybe empty) came, by source
  int missing_ = 0;                    // sources whose block is not complete
};

}  // namespace mccl::coll
