#include "coll/chain_broadcast.h"

#include <algorithm>
#include <cstring>

#include "protocol/context.h"

namespace mccl::coll {

using protocol::ControlHeader;
using protocol::ControlKind;

ChainBroadcast::ChainBroadcast(protocol::Context& ctx, std::byte* buffer, std::size_t bytes,
                               int root, std::uint64_t signature, std::size_t segment_bytes)
    : P2pOperation(ctx, signature, bytes),
      buffer_(buffer),
      bytes_(bytes),
      root_(root),
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
  ControlHeader h = p2p_header(0, segment);
  h.root = static_cast<std::uint32_t>(root_);
  send_p2p(ctx_.right(), h, data);
}

void ChainBroadcast::on_start(common::TimePoint) {
  if (ctx_.rank() != root_) return;
  received_ = bytes_;
  std::uint32_t seg = 0;
  for (std::size_t off = 0; off < bytes_; off += segment_bytes_, ++seg) {
    forward(seg, {buffer_ + off, std::min(segment_bytes_, bytes_ - off)});
  }
}

void ChainBroadcast::on_control(int peer, const ControlHeader& h, std::span<const std::byte> body,
                                common::TimePoint) {
  if (!signature_matches(peer, h, "every rank must pass the same size and root")) return;
  const std::size_t off = std::size_t{h.arg1} * segment_bytes_;
  if (h.kind != ControlKind::kP2pData || peer != ctx_.left() || ctx_.rank() == root_ ||
      off >= bytes_ || body.size() != std::min(segment_bytes_, bytes_ - off)) {
    drop_invalid();
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
