#include "coll/bruck_allgather.h"

#include <algorithm>

#include "coll/block_stream.h"
#include "protocol/context.h"

namespace mccl::coll {

BruckAllgather::BruckAllgather(protocol::Context& ctx, BlockLayout layout, std::uint64_t signature,
                               std::size_t segment_bytes)
    : P2pOperation(ctx, signature, total_bytes(layout)),
      layout_(std::move(layout)),
      segment_bytes_(bruck_segment_bytes(layout_.counts, segment_bytes)) {
  const int n = ctx.size();
  const int r = ctx.rank();
  for (int d = 1; d < n; d *= 2) {
    Round round{(r - d + n) % n, (r + d) % n, (r + d) % n, std::min(d, n - d), 0};
    round.bytes = stream_bytes_from(round.first_block, round.blocks);
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
  // rounds gathered, as many as rank r-d lacks. A segment that lies in the
  // output as one run goes from there as it is; another is gathered first.
  const Round& round = rounds_[k];
  const std::size_t stream_bytes = stream_bytes_from(ctx_.rank(), round.blocks);
  std::vector<std::byte> gathered;
  std::uint32_t seg = 0;
  for (std::size_t off = 0; off < stream_bytes; off += segment_bytes_, ++seg) {
    const std::size_t bytes = std::min(segment_bytes_, stream_bytes - off);
    const protocol::ControlHeader h = p2p_header(static_cast<std::uint32_t>(k), seg);
    // Blocks gathered before this round are final: lent, not copied.
    std::span<const std::byte> body = one_run_in_output(ctx_.rank(), round.blocks, off, bytes);
    if (!body.empty()) {
      if (!send_p2p_lent(round.to, h, body)) return;
      continue;
    }
    gathered.resize(bytes);
    gather_from_blocks(layout_, ctx_.rank(), round.blocks, off, gathered);
    if (!send_p2p(round.to, h, gathered)) return;
  }
}

std::size_t BruckAllgather::stream_bytes_from(int first_block, int blocks) const {
  const int n = ctx_.size();
  std::size_t bytes = 0;
  for (int i = 0; i < blocks; ++i) bytes += layout_.counts[(first_block + i) % n];
  return bytes;
}

std::span<std::byte> BruckAllgather::one_run_in_output(int first_block, int blocks,
                                                       std::size_t offset,
                                                       std::size_t bytes) const {
  // Segments are at least MCCL_COLL_CHAIN_SEGMENT_BYTES long, so below that
  // a segment spans blocks: at 4 ranks and 64 KiB, round 2's two blocks.
  // Where they follow each other in the output (every run but one that
  // wraps past the last block) they go and land as they lie.
  std::byte* begin = nullptr;
  std::size_t run = 0;
  bool one_run = true;
  for_each_stream_piece(layout_, first_block, blocks, offset, bytes,
                        [&](std::span<std::byte> piece, std::size_t) {
                          if (begin == nullptr) begin = piece.data();
                          one_run = one_run && piece.data() == begin + run;
                          run += piece.size();
                        });
  if (!one_run || run != bytes) return {};
  return {begin, run};
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
  return one_run_in_output(round->first_block, round->blocks, std::size_t{h.arg1} * segment_bytes_,
                           body_bytes);
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
  place_in_blocks(layout_, round->first_block, round->blocks, std::size_t{h.arg1} * segment_bytes_,
                  body);
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
