#include "coll/star_allgather.h"

#include <algorithm>
#include <cstring>

#include "coll/block_stream.h"
#include "protocol/context.h"

namespace mccl::coll {

namespace {

// Whether block b begins where block b - 1 ends, for every b.
bool blocks_in_rank_order(const BlockLayout& layout) {
  std::size_t at = layout.displacements.empty() ? 0 : layout.displacements[0];
  for (std::size_t b = 0; b < layout.counts.size(); ++b) {
    if (layout.displacements[b] != at) return false;
    at += layout.counts[b];
  }
  return true;
}

std::uint32_t segments_of(std::size_t bytes, std::size_t segment) {
  return static_cast<std::uint32_t>((bytes + segment - 1) / segment);
}

}  // namespace

StarAllgather::StarAllgather(protocol::Context& ctx, BlockLayout layout, std::uint64_t signature)
    : P2pOperation(ctx, signature, total_bytes(layout)),
      layout_(std::move(layout)),
      total_(total_bytes(layout_)),
      in_order_(blocks_in_rank_order(layout_)) {
  if (ctx.rank() == 0) {
    up_received_.assign(layout_.counts.size(), 0);
    up_missing_ = total_ - layout_.counts[0];
  }
}

std::string StarAllgather::describe() const {
  return "star allgather of " + std::to_string(layout_.counts[ctx_.rank()]) + " bytes on this rank";
}

std::string StarAllgather::describe_wait() const {
  if (ctx_.rank() != 0) {
    return std::to_string(total_ - down_received_) + " bytes of the result from rank 0";
  }
  for (std::size_t r = 1; r < up_received_.size(); ++r) {
    if (up_received_[r] < layout_.counts[r]) {
      return std::to_string(up_missing_) + " bytes of blocks, " +
             std::to_string(layout_.counts[r] - up_received_[r]) + " from rank " +
             std::to_string(r) + " among them";
    }
  }
  return "nothing";
}

void StarAllgather::on_start(common::TimePoint) {
  const int me = ctx_.rank();
  if (me == 0) return;
  const std::size_t bytes = layout_.counts[me];
  const std::byte* block = layout_.recv + layout_.displacements[me];
  for (std::uint32_t s = 0; s < segments_of(bytes, kSegment); ++s) {
    const std::size_t off = std::size_t{s} * kSegment;
    const std::span<const std::byte> body(block + off, std::min(kSegment, bytes - off));
    if (!send_p2p(0, p2p_header(kUp, s), body)) return;
  }
}

void StarAllgather::send_result() {
  // Where the blocks lie in rank order the output is the stream; elsewhere
  // it is gathered once, for every rank.
  std::vector<std::byte> gathered;
  std::span<const std::byte> stream;
  if (in_order_) {
    stream = {layout_.recv + (layout_.displacements.empty() ? 0 : layout_.displacements[0]),
              total_};
  } else {
    gathered.resize(total_);
    gather_from_blocks(layout_, 0, ctx_.size(), 0, gathered);
    stream = gathered;
  }
  for (int r = 1; r < ctx_.size(); ++r) {
    for (std::uint32_t s = 0; s < segments_of(total_, kSegment); ++s) {
      const std::size_t off = std::size_t{s} * kSegment;
      if (!send_p2p(r, p2p_header(kDown, s), stream.subspan(off, std::min(kSegment, total_ - off))))
        return;
    }
  }
}

bool StarAllgather::expected(int peer, const protocol::ControlHeader& h, std::size_t body_bytes,
                             std::size_t& offset) const {
  if (h.kind != protocol::ControlKind::kP2pData) return false;
  offset = std::size_t{h.arg1} * kSegment;
  const bool root = ctx_.rank() == 0;
  if (root && h.arg0 == kUp && peer > 0 && peer < ctx_.size()) {
    const std::size_t count = layout_.counts[peer];
    return offset < count && body_bytes == std::min(kSegment, count - offset) &&
           up_received_[peer] + body_bytes <= count;
  }
  if (!root && h.arg0 == kDown && peer == 0) {
    return offset < total_ && body_bytes == std::min(kSegment, total_ - offset) &&
           down_received_ + body_bytes <= total_;
  }
  return false;
}

std::span<std::byte> StarAllgather::destination(int peer, std::size_t offset,
                                                std::size_t bytes) const {
  if (ctx_.rank() == 0) return {layout_.recv + layout_.displacements[peer] + offset, bytes};
  if (!in_order_) return {};
  return {layout_.recv + layout_.displacements[0] + offset, bytes};
}

std::span<std::byte> StarAllgather::landing(int peer, const protocol::ControlHeader& h,
                                            std::size_t body_bytes) {
  std::size_t offset = 0;
  if (h.signature != signature() || !expected(peer, h, body_bytes, offset)) return {};
  return destination(peer, offset, body_bytes);
}

void StarAllgather::on_control(int peer, const protocol::ControlHeader& h,
                               std::span<const std::byte> body, common::TimePoint) {
  if (!signature_matches(peer, h, "every rank must pass the same counts")) return;
  std::size_t offset = 0;
  if (!expected(peer, h, body.size(), offset)) {
    drop_invalid();
    return;
  }
  const std::span<std::byte> to = destination(peer, offset, body.size());
  if (to.empty()) {
    place_in_blocks(layout_, 0, ctx_.size(), offset, body);  // the result, blocks out of order
  } else if (to.data() != body.data()) {  // a segment that landed lies there already
    std::memcpy(to.data(), body.data(), body.size());
  }
  if (ctx_.rank() == 0) {
    up_received_[peer] += body.size();
    up_missing_ -= body.size();
  } else {
    down_received_ += body.size();
  }
}

bool StarAllgather::needs(int peer) const {
  if (ctx_.rank() != 0) return peer == 0 && down_received_ < total_;
  return peer > 0 && up_received_[peer] < layout_.counts[peer];
}

void StarAllgather::progress(common::TimePoint) {
  if (ctx_.rank() == 0) {
    if (up_missing_ > 0) return;
    send_result();
  } else if (down_received_ < total_) {
    return;
  }
  finish(common::Status::ok());
}

}  // namespace mccl::coll
