#include "coll/alltoall.h"

#include <algorithm>
#include <cstring>

#include "protocol/context.h"

namespace mccl::coll {

using protocol::ControlHeader;
using protocol::ControlKind;

namespace {
// The block's total size, which every segment's header carries.
std::uint64_t announced_bytes(const ControlHeader& h) {
  return (std::uint64_t{h.root} << 32) | h.arg1;
}

std::size_t bytes_sent(const ExchangeLayout& layout) {
  std::size_t total = 0;
  for (std::size_t c : layout.send_counts) total += c;
  return total;
}
}  // namespace

Alltoall::Alltoall(protocol::Context& ctx, ExchangeLayout layout, std::uint64_t signature,
                   std::size_t segment_bytes)
    : P2pOperation(ctx, signature, bytes_sent(layout)),
      layout_(std::move(layout)),
      segment_bytes_(std::max<std::size_t>(1, segment_bytes)),
      received_(static_cast<std::size_t>(ctx.size()), 0),
      heard_(static_cast<std::size_t>(ctx.size()), false),
      missing_(ctx.size() - 1) {}

std::string Alltoall::describe() const {
  std::size_t in = 0;
  for (auto c : layout_.recv_counts) in += c;
  return "alltoall sending " + std::to_string(bytes_sent(layout_)) + " and receiving " +
         std::to_string(in) + " bytes on this rank";
}

std::string Alltoall::describe_wait() const {
  std::string who;
  for (int r = 0; r < ctx_.size(); ++r) {
    if (!needs(r)) continue;
    who += (who.empty() ? "" : ", ") + std::to_string(r);
  }
  return "the blocks of rank(s) " + who;
}

void Alltoall::send_block(int peer) {
  const std::size_t count = layout_.send_counts[peer];
  const std::byte* base = layout_.send + layout_.send_displs[peer];
  ControlHeader h = p2p_header(0, static_cast<std::uint32_t>(count));
  h.root = static_cast<std::uint32_t>(std::uint64_t{count} >> 32);
  std::size_t off = 0;
  do {  // an empty block is one empty segment: the receiver learns its size
    const std::size_t len = std::min(segment_bytes_, count - off);
    // The send buffer stays as it is until the exchange completes: lent.
    if (!send_p2p_lent(peer, h, {base + off, len})) return;
    off += len;
    ++h.arg0;
  } while (off < count);
}

void Alltoall::on_start(common::TimePoint) {
  const int me = ctx_.rank(), n = ctx_.size();
  if (layout_.recv_counts[me] > 0) {
    std::memcpy(layout_.recv + layout_.recv_displs[me], layout_.send + layout_.send_displs[me],
                layout_.recv_counts[me]);
  }
  // Rank r + 1 first, then r + 2, ...: at any moment the ranks send to
  // different peers instead of all to rank 0.
  for (int step = 1; step < n; ++step) send_block((me + step) % n);
}

bool Alltoall::announced_matches(int peer, const ControlHeader& h) const {
  return announced_bytes(h) == layout_.recv_counts[peer];
}

bool Alltoall::next_segment(int peer, const ControlHeader& h, std::size_t bytes) const {
  const std::size_t total = layout_.recv_counts[peer];
  const std::size_t off = std::size_t{h.arg0} * segment_bytes_;
  return h.kind == ControlKind::kP2pData && peer != ctx_.rank() && off == received_[peer] &&
         bytes == std::min(segment_bytes_, total - off) &&
         (total == 0 ? !heard_[peer] : off < total);
}

std::byte* Alltoall::segment_dest(int peer, const ControlHeader& h) const {
  return layout_.recv + layout_.recv_displs[peer] + std::size_t{h.arg0} * segment_bytes_;
}

std::span<std::byte> Alltoall::landing(int peer, const ControlHeader& h, std::size_t body_bytes) {
  // on_control says what is wrong with a message that does not fit.
  if (h.signature != signature() || !announced_matches(peer, h) ||
      !next_segment(peer, h, body_bytes) || body_bytes == 0) {
    return {};
  }
  return {segment_dest(peer, h), body_bytes};
}

void Alltoall::on_control(int peer, const ControlHeader& h, std::span<const std::byte> body,
                          common::TimePoint) {
  if (h.signature != signature()) {
    ctx_.poison(common::mismatch_error(
        "rank " + std::to_string(ctx_.rank()) + ": collective #" + std::to_string(seq()) + " (" +
        describe() + ") was called as another collective on rank " + std::to_string(peer)));
    return;
  }
  if (!announced_matches(peer, h)) {
    ctx_.poison(common::mismatch_error(
        "rank " + std::to_string(ctx_.rank()) + ": collective #" + std::to_string(seq()) + " (" +
        describe() + ") expects " + std::to_string(layout_.recv_counts[peer]) +
        " bytes from rank " + std::to_string(peer) + ", which sends " +
        std::to_string(announced_bytes(h)) +
        ": a rank's send count for a peer must equal that peer's receive count from it"));
    return;
  }
  if (!next_segment(peer, h, body.size())) {
    drop_invalid();
    return;
  }
  std::byte* dest = segment_dest(peer, h);
  if (!body.empty() && body.data() != dest) {  // else it landed there
    std::memcpy(dest, body.data(), body.size());
  }
  received_[peer] += body.size();
  heard_[peer] = true;
  if (received_[peer] == layout_.recv_counts[peer]) --missing_;
}

bool Alltoall::needs(int peer) const {
  return peer != ctx_.rank() && (!heard_[peer] || received_[peer] < layout_.recv_counts[peer]);
}

void Alltoall::progress(common::TimePoint) {
  if (missing_ == 0) finish(common::Status::ok());
}

}  // namespace mccl::coll
