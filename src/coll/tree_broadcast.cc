#include "coll/tree_broadcast.h"

#include <algorithm>
#include <cstring>

#include "protocol/context.h"

namespace mccl::coll {

using protocol::ControlHeader;

namespace {

// v's lowest set bit; the root's (v = 0) children go up to n.
int lowest_bit(int v, int n) {
  int bit = 1;
  while (bit < n && (v & bit) == 0) bit <<= 1;
  return bit;
}

}  // namespace

TreeBroadcast::TreeBroadcast(protocol::Context& ctx, TreeShape shape, std::byte* buffer,
                             std::size_t bytes, int root, std::uint64_t signature,
                             std::size_t segment_bytes)
    : P2pOperation(ctx, signature, bytes),
      shape_(shape),
      buffer_(buffer),
      bytes_(bytes),
      root_(root),
      segment_bytes_(tree_segment_bytes(shape, ctx.size(), bytes, segment_bytes)) {
  const int n = ctx.size();
  const bool leftward = shape == TreeShape::kLeftwardChain;
  const int v = leftward ? (root - ctx.rank() + n) % n : (ctx.rank() - root + n) % n;
  const auto absolute = [&](int relative) {
    return leftward ? (root - relative + n) % n : (relative + root) % n;
  };
  if (shape == TreeShape::kFlat) {
    if (v != 0) parent_ = root;
    for (int k = 1; v == 0 && k < n; ++k) children_.push_back(absolute(k));
    return;
  }
  if (shape != TreeShape::kBinomial) {
    if (v != 0) parent_ = absolute(v - 1);
    if (v + 1 < n) children_.push_back(absolute(v + 1));
    return;
  }
  const int bit = lowest_bit(v, n);
  if (v != 0) parent_ = absolute(v - bit);
  for (int k = bit >> 1; k > 0; k >>= 1) {
    if (v + k < n) children_.push_back(absolute(v + k));
  }
}

std::string TreeBroadcast::describe() const {
  const char* shape = shape_ == TreeShape::kBinomial ? "binomial"
                      : shape_ == TreeShape::kFlat   ? "flat"
                                                     : "chain";
  return std::string(shape) + " broadcast of " + std::to_string(bytes_) + " bytes from root " +
         std::to_string(root_);
}

std::string TreeBroadcast::describe_wait() const {
  return std::to_string(bytes_ - received_) + " bytes from rank " + std::to_string(parent_);
}

void TreeBroadcast::forward(std::uint32_t segment, std::span<const std::byte> data) {
  ControlHeader h = p2p_header(0, segment);
  h.root = static_cast<std::uint32_t>(root_);
  for (int child : children_) {
    // A forwarder's segment is final in the buffer and leaves while the
    // rest arrives: lent. The root finishes once it has sent, so what it
    // lent would be copied at once anyway.
    const bool sent = parent_ >= 0 ? send_p2p_lent(child, h, data) : send_p2p(child, h, data);
    if (!sent) return;
  }
}

void TreeBroadcast::on_start(common::TimePoint) {
  if (parent_ >= 0) return;
  received_ = bytes_;
  std::uint32_t seg = 0;
  for (std::size_t off = 0; off < bytes_; off += segment_bytes_, ++seg) {
    forward(seg, {buffer_ + off, std::min(segment_bytes_, bytes_ - off)});
  }
}

std::span<std::byte> TreeBroadcast::segment_at(int peer, const ControlHeader& h,
                                               std::size_t body_bytes) const {
  const std::size_t off = std::size_t{h.arg1} * segment_bytes_;
  if (h.kind != protocol::ControlKind::kP2pData || peer != parent_ || off >= bytes_ ||
      body_bytes != std::min(segment_bytes_, bytes_ - off)) {
    return {};
  }
  return {buffer_ + off, body_bytes};
}

std::span<std::byte> TreeBroadcast::landing(int peer, const ControlHeader& h,
                                            std::size_t body_bytes) {
  if (h.signature != signature()) return {};  // on_control says why
  return segment_at(peer, h, body_bytes);
}

void TreeBroadcast::on_control(int peer, const ControlHeader& h, std::span<const std::byte> body,
                               common::TimePoint) {
  if (!signature_matches(peer, h, "every rank must pass the same size and root")) return;
  const std::span<std::byte> at = segment_at(peer, h, body.size());
  if (at.empty()) {
    drop_invalid();
    return;
  }
  if (body.data() != at.data()) std::memcpy(at.data(), body.data(), body.size());  // else landed
  received_ += body.size();
  forward(h.arg1, at);
}

bool TreeBroadcast::needs(int peer) const { return peer == parent_ && received_ < bytes_; }

void TreeBroadcast::progress(common::TimePoint) {
  if (received_ == bytes_) finish(common::Status::ok());
}

}  // namespace mccl::coll
