#include "coll/bruck_allgather.h"

#include <algorithm>
#include <cstring>

#include "protocol/context.h"

namespace mccl::coll {

BruckAllgather::BruckAllgather(protocol::Context& ctx, BlockLayout layout, std::uint64_t signature,
                               std::size_t segment_bytes)
    : P2pOperation(ctx, signature, total_bytes(layout)),
      layout_(std::move(layout)),
      segment_bytes_(std::max<std::size_t>(1, segment_bytes)) {
  const int n = ctx.size();
  const int r = ctx.rank();
  for (int d = 1; d < n; d *= 2) {
    Round round{(r - d + n) % n, (r + d) % n, (r + d) % n, std::min(d, n - d), 0};
    for (int i = 0; i < round.blocks; ++i)
      round.bytes += layout_.counts[(round.first_block + i) % n];
    rounds_.push_back(round);
  }
}

std::string BruckAllgather::describe() const {
  return "Bruck allgather of " + std::to_string(layout_.counts[ctx_.rank()]) +
         " bytes on this rank";
}

std::string BruckAllgather::describe_wait() const {
  for (const Round& round : rounds_) {
    if (round.received < round.bytes) {
      return std::to_string(round.bytes - round.received) + " bytes from rank " +
             std::to_string(round.from);
    }
  }
  return "nothing";
}

void BruckAllgather::send_round(std::size_t k) {
  // This round's outgoing stream: the blocks r, r+1, ... that the previous
  // rounds gathered, as many as rank r-d lacks.
  const int n = ctx_.size();
  const Round& round = rounds_[k];
  std::uint32_t seg = 0;
  std::size_t filled = 0;  // bytes of the current segment gathered so far
  std::vector<std::byte> segment;
  for (int i = 0; i < round.blocks; ++i) {
    const int block = (ctx_.rank() + i) % n;
    const std::byte* data = layout_.recv + layout_.displacements[block];
    std::size_t left = layout_.counts[block];
    while (left > 0) {
      const std::size_t take = std::min(left, segment_bytes_ - filled);
      segment.insert(segment.end(), data, data + take);
      data += take;
      left -= take;
      filled += take;
      if (filled == segment_bytes_) {
        if (!send_p2p(round.to, p2p_header(static_cast<std::uint32_t>(k), seg++), segment)) return;
        segment.clear();
        filled = 0;
      }
    }
  }
  if (filled > 0) send_p2p(round.to, p2p_header(static_cast<std::uint32_t>(k), seg), segment);
}

void BruckAllgather::place(const Round& round, std::size_t offset,
                           std::span<const std::byte> data) {
  const int n = ctx_.size();
  std::size_t start = 0;  // the stream offset where block i begins
  for (int i = 0; i < round.blocks && !data.empty(); ++i) {
    const int block = (round.first_block + i) % n;
    const std::size_t count = layout_.counts[block];
    if (offset < start + count) {
      const std::size_t at = offset - start;
      const std::size_t take = std::min(count - at, data.size());
      std::memcpy(layout_.recv + layout_.displacements[block] + at, data.data(), take);
      data = data.subspan(take);
      offset += take;
    }
    start += count;
  }
}

std::span<std::byte> BruckAllgather::within_one_block(const Round& round, std::size_t offset,
                                                      std::size_t bytes) const {
  const int n = ctx_.size();
  std::size_t start = 0;
  for (int i = 0; i < round.blocks; ++i) {
    const int block = (round.first_block + i) % n;
    const std::size_t count = layout_.counts[block];
    if (offset < start + count) {
      const std::size_t at = offset - start;
      if (bytes > count - at) return {};
      return {layout_.recv + layout_.displacements[block] + at, bytes};
    }
    start += count;
  }
  return {};
}

BruckAllgather::Round* BruckAllgather::round_of(int peer, const protocol::ControlHeader& h,
                                                std::size_t body_bytes) {
  if (h.kind != protocol::ControlKind::kP2pData || h.arg0 >= rounds_.size()) return nullptr;
  Round& round = rounds_[h.arg0];
  const std::size_t off = std::size_t{h.arg1} * segment_bytes_;
  if (peer != round.from || off >= round.bytes ||
      body_bytes != std::min(segment_bytes_, round.bytes - off) ||
      round.received + body_bytes > round.bytes) {
    return nullptr;
  }
  return &round;
}

std::span<std::byte> BruckAllgather::landing(int peer, const protocol::ControlHeader& h,
                                             std::size_t body_bytes) {
  if (h.signature != signature()) return {};  // on_control says why
  const Round* round = round_of(peer, h, body_bytes);
  if (round == nullptr) return {};
  return within_one_block(*round, std::size_t{h.arg1} * segment_bytes_, body_bytes);
}

void BruckAllgather::on_start(common::TimePoint) {
  if (!rounds_.empty()) {
    send_round(0);
    sent_ = 1;
  }
}

void BruckAllgather::on_control(int peer, const protocol::ControlHeader& h,
                                std::span<const std::byte> body, common::TimePoint) {
  if (!signature_matches(peer, h, "every rank must pass the same counts")) return;
  Round* round = round_of(peer, h, body.size());
  if (round == nullptr) {
    drop_invalid();
    return;
  }
  const std::size_t off = std::size_t{h.arg1} * segment_bytes_;
  if (body.data() != within_one_block(*round, off, body.size()).data()) {
    place(*round, off, body);
  }  // else it landed there
  round->received += body.size();
}

bool BruckAllgather::needs(int peer) const {
  for (const Round& round : rounds_) {
    if (round.from == peer && round.received < round.bytes) return true;
  }
  return false;
}

void BruckAllgather::progress(common::TimePoint) {
  // Round k's blocks are ours to send once rounds 0..k-1 have arrived.
  while (sent_ < rounds_.size() && rounds_[sent_ - 1].received == rounds_[sent_ - 1].bytes) {
    send_round(sent_);
    ++sent_;
  }
  const bool all = std::all_of(rounds_.begin(), rounds_.end(),
                               [](const Round& r) { return r.received == r.bytes; });
  if (all && sent_ == rounds_.size()) finish(common::Status::ok());
}

}  // namespace mccl::coll
