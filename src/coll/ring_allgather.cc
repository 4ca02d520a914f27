#include "coll/ring_allgather.h"

#include <algorithm>
#include <cstring>

#include "protocol/context.h"

namespace mccl::coll {

using protocol::ControlHeader;
using protocol::ControlKind;

RingAllgather::RingAllgather(protocol::Context& ctx, BlockLayout layout, std::uint64_t signature,
                             std::size_t segment_bytes, RingDirection direction)
    : P2pOperation(ctx, signature, total_bytes(layout)),
      layout_(std::move(layout)),
      segment_bytes_(std::max<std::size_t>(1, segment_bytes)),
      to_(direction == RingDirection::kRightward ? ctx.right() : ctx.left()),
      from_(direction == RingDirection::kRightward ? ctx.left() : ctx.right()),
      received_(layout_.counts.size(), 0) {
  for (int r = 0; r < ctx.size(); ++r) {
    if (r != ctx.rank()) expected_ += layout_.counts[r];
  }
}

std::string RingAllgather::describe() const {
  return "ring allgather of " + std::to_string(layout_.counts[ctx_.rank()]) + " bytes on this rank";
}

std::string RingAllgather::describe_wait() const {
  return std::to_string(expected_) + " bytes from rank " + std::to_string(from_);
}

std::size_t RingAllgather::segments(int block) const {
  return (layout_.counts[block] + segment_bytes_ - 1) / segment_bytes_;
}

void RingAllgather::send_block(int block) {
  const std::size_t count = layout_.counts[block];
  const std::byte* base = layout_.recv + layout_.displacements[block];
  for (std::size_t seg = 0, off = 0; off < count; ++seg, off += segment_bytes_) {
    std::size_t len = std::min(segment_bytes_, count - off);
    const ControlHeader h =
        p2p_header(static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(seg));
    if (!send_p2p_lent(to_, h, {base + off, len})) return;  // final: lent
  }
}

void RingAllgather::on_start(common::TimePoint) {
  // Our own block goes first; every block received is forwarded unless the
  // next neighbour is its owner, so each block makes N-1 hops.
  if (ctx_.size() > 1) send_block(ctx_.rank());
}

std::span<std::byte> RingAllgather::segment_at(int peer, const ControlHeader& h,
                                               std::size_t body_bytes) const {
  if (h.kind != ControlKind::kP2pData || peer != from_ ||
      h.arg0 >= static_cast<std::uint32_t>(ctx_.size()) ||
      h.arg0 == static_cast<std::uint32_t>(ctx_.rank())) {
    return {};
  }
  const auto block = static_cast<std::size_t>(h.arg0);
  const std::size_t off = std::size_t{h.arg1} * segment_bytes_;
  const std::size_t count = layout_.counts[block];
  if (off >= count || body_bytes != std::min(segment_bytes_, count - off)) return {};
  return {layout_.recv + layout_.displacements[block] + off, body_bytes};
}

std::span<std::byte> RingAllgather::landing(int peer, const ControlHeader& h,
                                            std::size_t body_bytes) {
  if (h.signature != signature()) return {};  // on_control says why
  return segment_at(peer, h, body_bytes);
}

void RingAllgather::on_control(int peer, const ControlHeader& h, std::span<const std::byte> body,
                               common::TimePoint) {
  if (!signature_matches(peer, h, "every rank must pass the same counts")) return;
  const std::span<std::byte> at = segment_at(peer, h, body.size());
  if (at.empty()) {
    drop_invalid();
    return;
  }
  const auto block = static_cast<int>(h.arg0);
  if (body.data() != at.data()) std::memcpy(at.data(), body.data(), body.size());  // else landed
  received_[block] += body.size();
  expected_ -= body.size();
  if (block != to_) {
    send_p2p_lent(to_, h, at);  // final in the output now: lent
  }
}

bool RingAllgather::needs(int peer) const { return peer == from_ && expected_ > 0; }

void RingAllgather::progress(common::TimePoint) {
  if (expected_ == 0) finish(common::Status::ok());
}

}  // namespace mccl::coll
