#include "coll/chain_broadcast.h"

#include <algorithm>
#include <cstring>

#include "protocol/context.h"

namespace mccl::coll {

using protocol::ControlHeader;
using protocol::ControlKind;
using protocol::Counters;

ChainBroadcast::ChainBroadcast(protocol::Context& ctx, std::byte* buffer, std::size_t bytes,
                               int root, std::uint64_t signature, std::size_t segment_bytes)
    : Operation(ctx),
      buffer_(buffer),
      bytes_(bytes),
      root_(root),
      signature_(signature),
      segment_bytes_(std::max<std::size_t>(1, segment_bytes)) {}

std::string ChainBroadcast::describe() const {
  return "chain broadcast of " + std::to_string(bytes_) + " bytes from root " +
         std::to_string(root_);
}

std::string ChainBroadcast::describe_wait() const {
  return std::to_string(bytes_ - received_) + " bytes from rank " + std::to_string(ctx_.left());
}

void ChainBroadcast::forward(std::uint32_t segment, std::span<const std::byte> data) {
  if (ctx_.right() == root_) return;  // the chain ends at the root's left neighbour
  ControlHeader h;
  h.kind = ControlKind::kP2pData;
  h.seq = seq();
  h.root = static_cast<std::uint32_t>(root_);
  h.signature = signature_;
  h.arg1 = segment;
  common::Status st = ctx_.send_control(ctx_.right(), h, data);
  if (!st.is_ok()) ctx_.poison(st);
  Counters::add(ctx_.counters().p2p_bytes_sent, data.size());
}

void ChainBroadcast::on_start(common::TimePoint) {
  if (ctx_.rank() != root_) return;
  received_ = bytes_;
  std::uint32_t seg = 0;
  for (std::size_t off = 0; off < bytes_; off += segment_bytes_, ++seg) {
    forward(seg, {buffer_ + off, std::min(segment_bytes_, bytes_ - off)});
  }
}

void ChainBroadcast::on_datagram(const protocol::DataHeader&, std::span<const std::byte>,
                                 common::TimePoint) {
  Counters::add(ctx_.counters().dropped_invalid);
}

void ChainBroadcast::on_control(int peer, const ControlHeader& h, std::span<const std::byte> body,
                                common::TimePoint) {
  if (h.signature != signature_) {
    ctx_.poison(common::mismatch_error(
        "rank " + std::to_string(ctx_.rank()) + ": collective #" + std::to_string(seq()) + " (" +
        describe() + ") was called with other arguments on rank " + std::to_string(peer) +
        ": every rank must pass the same size and root"));
    return;
  }
  const std::size_t off = std::size_t{h.arg1} * segment_bytes_;
  if (h.kind != ControlKind::kP2pData || peer != ctx_.left() || ctx_.rank() == root_ ||
      off >= bytes_ || body.size() != std::min(segment_bytes_, bytes_ - off)) {
    Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  std::memcpy(buffer_ + off, body.data(), body.size());
  received_ += body.size();
  forward(h.arg1, body);
}

bool ChainBroadcast::needs(int peer) const { return peer == ctx_.left() && received_ < bytes_; }

void ChainBroadcast::progress(common::TimePoint) {
  if (received_ == bytes_) finish(common::Status::ok());
}

}  // namespace mccl::coll
