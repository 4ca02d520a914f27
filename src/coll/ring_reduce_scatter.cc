#include "coll/ring_reduce_scatter.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "coll/reduce_args.h"
#include "coll/reduce_kernels.h"
#include "protocol/context.h"

namespace mccl::coll {

using protocol::ControlHeader;
using protocol::ControlKind;
using protocol::Counters;

namespace {

// The whole vector: a reduce-scatter of at most P2pOperation's latency
// bound is a few message latencies.
std::size_t total_bytes(const ReduceLayout& layout) {
  return std::accumulate(layout.bytes.begin(), layout.bytes.end(), std::size_t{0});
}

}  // namespace

RingReduceScatter::RingReduceScatter(protocol::Context& ctx, ReduceLayout layout,
                                     std::uint64_t signature, std::uint32_t args,
                                     std::size_t segment_bytes, std::size_t send_budget,
                                     std::string what)
    : P2pOperation(ctx, signature, total_bytes(layout)),
      layout_(std::move(layout)),
      args_(args),
      segment_bytes_(std::max(segment_bytes, size_of(layout_.type))),
      send_budget_(send_budget),
      what_(std::move(what)) {
  if (ctx.size() > 1) {
    for (int b = 0; b < ctx.size(); ++b) {
      if (b != ctx.left()) expected_ += layout_.bytes[b];
    }
  }
}

std::string RingReduceScatter::describe_wait() const {
  std::string out;
  if (expected_ > 0) {
    out = std::to_string(expected_) + " bytes of partial sums from rank " +
          std::to_string(ctx_.left());
  }
  if (!queue_.empty()) {
    if (!out.empty()) out += ", ";
    out +=
        std::to_string(queue_.size()) + " segments to send to rank " + std::to_string(ctx_.right());
  }
  return out.empty() ? "nothing (internal error)" : out;
}

void RingReduceScatter::enqueue(std::uint32_t block, std::uint32_t segment, const std::byte* data,
                                std::size_t len, int slot) {
  queue_.push_back({block, segment, data, len, slot});
}

int RingReduceScatter::take_slot() {
  if (free_slots_.empty()) {
    // A compressed sum's slot grows to the packed size it is given.
    pool_.emplace_back(layout_.coded ? 0 : segment_bytes_);
    return static_cast<int>(pool_.size() - 1);
  }
  int slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void RingReduceScatter::on_start(common::TimePoint) {
  const int n = ctx_.size();
  if (n == 1) {
    // Reducing one contribution is the identity.
    const std::byte* mine = layout_.send + layout_.displs[0];
    if (layout_.bytes[0] > 0 && mine != layout_.result) {
      std::memmove(layout_.result, mine, layout_.bytes[0]);
    }
    return;
  }
  // Step one: this rank starts the chain of the block its left neighbour
  // keeps, with its own contribution, straight from the send buffer.
  const int first = ctx_.left();
  const std::size_t bytes = layout_.bytes[first];
  if (bytes == 0) {
    enqueue(kReduceScatterMarker, 0, nullptr, 0, -1);
  } else {
    // A compressed sum packs each segment when it leaves (wire_of).
    const std::byte* base = layout_.coded ? nullptr : layout_.send + layout_.displs[first];
    std::uint32_t seg = 0;
    for (std::size_t off = 0; off < bytes; off += segment_bytes_, ++seg) {
      enqueue(static_cast<std::uint32_t>(first), seg, base == nullptr ? nullptr : base + off,
              std::min(segment_bytes_, bytes - off), -1);
    }
  }
}

void RingReduceScatter::on_control(int peer, const ControlHeader& h,
                                   std::span<const std::byte> body, common::TimePoint) {
  if (h.signature != signature()) {
    fail_mismatch(reduce_mismatch_text(peer, args_, h.root));
    return;
  }
  if (h.kind != ControlKind::kP2pData || peer != ctx_.left() ||
      (h.arg0 & kReduceScatterFlag) == 0) {
    Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  const std::uint32_t tag = h.arg0 & ~kReduceScatterFlag;
  if (tag == kReduceScatterMarker && body.empty()) return;  // "my first step is empty"
  if (tag >= static_cast<std::uint32_t>(ctx_.size()) ||
      tag == static_cast<std::uint32_t>(ctx_.left())) {
    Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  const auto block = static_cast<int>(tag);
  const std::size_t total = layout_.bytes[block];
  const std::size_t off = std::size_t{h.arg1} * segment_bytes_;
  if (off >= total || (!layout_.coded && body.size() != std::min(segment_bytes_, total - off)) ||
      std::min(segment_bytes_, total - off) > expected_) {
    Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  if (layout_.coded) {
    add_coded(block, h.arg1, off, std::min(segment_bytes_, total - off), body);
    return;
  }
  expected_ -= body.size();
  const std::size_t count = body.size() / size_of(layout_.type);
  const std::byte* mine = layout_.send + layout_.displs[block] + off;
  // The partial from the left (earlier in the ring) is always the first
  // operand: the expression, and so its bits, are the same on every run.
  if (block == ctx_.rank()) {
    reduce(layout_.type, layout_.op, layout_.result + off, body.data(), mine, count);
    return;
  }
  std::byte* out = nullptr;
  int slot = -1;
  if (layout_.staging != nullptr) {
    out = layout_.staging + layout_.displs[block] + off;
  } else {
    slot = take_slot();
    out = pool_[slot].data();
  }
  reduce(layout_.type, layout_.op, out, body.data(), mine, count);
  enqueue(tag, h.arg1, out, body.size(), slot);
}

void RingReduceScatter::drain() {
  const std::size_t budget =
      send_budget_ == 0 ? std::numeric_limits<std::size_t>::max() : send_budget_;
  std::size_t sent = 0;
  while (!queue_.empty() && (sent == 0 || sent < budget)) {
    Pending p = queue_.front();
    queue_.pop_front();
    ControlHeader h = p2p_header(kReduceScatterFlag | p.block, p.segment);
    h.root = args_;
    const std::span<const std::byte> wire = wire_of(p);
    const bool delivered = send_p2p(ctx_.right(), h, wire);
    if (p.slot >= 0) free_slots_.push_back(p.slot);
    if (!delivered) return;
    sent += p.len;
    if (p.len == 0) sent = 1;  // a marker still counts as a message sent
  }
}

void RingReduceScatter::add_coded(int block, std::uint32_t segment, std::size_t offset,
                                  std::size_t raw_bytes, std::span<const std::byte> body) {
  const CodedSum& coded = *layout_.coded;
  const std::size_t first = offset / sizeof(std::int64_t);
  const std::size_t count = raw_bytes / sizeof(std::int64_t);
  int slot = -1;
  common::Status st = common::Status::ok();
  if (block == ctx_.rank()) {
    st = coded.keep(first, count, body);
  } else {
    slot = take_slot();
    st = coded.add(block, first, count, body, pool_[slot]);
  }
  if (!st.is_ok()) {
    if (slot >= 0) free_slots_.push_back(slot);
    Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  expected_ -= raw_bytes;
  if (slot >= 0) enqueue(static_cast<std::uint32_t>(block), segment, nullptr, raw_bytes, slot);
}

std::span<const std::byte> RingReduceScatter::wire_of(const Pending& p) {
  if (!layout_.coded || p.len == 0) return {p.data, p.len};
  const std::size_t count = p.len / sizeof(std::int64_t);
  if (p.slot < 0) {
    layout_.coded->pack_own(static_cast<int>(p.block), p.segment * segment_bytes_ / 8, count,
                            packed_);
  }
  std::span<const std::byte> wire = p.slot < 0 ? packed_ : pool_[p.slot];
  Counters::add(ctx_.counters().compress_bytes_in, count * layout_.coded->value_bytes);
  Counters::add(ctx_.counters().compress_bytes_out, wire.size());
  return wire;
}

bool RingReduceScatter::needs(int peer) const {
  return (peer == ctx_.left() && expected_ > 0) || (peer == ctx_.right() && !queue_.empty());
}

void RingReduceScatter::progress(common::TimePoint) {
  drain();
  if (expected_ == 0 && queue_.empty()) finish(common::Status::ok());
}

}  // namespace mccl::coll
