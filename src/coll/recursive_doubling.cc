#include "coll/recursive_doubling.h"

#include <algorithm>
#include <cstring>

#include "coll/reduce_args.h"
#include "coll/reduce_kernels.h"
#include "protocol/context.h"

namespace mccl::coll {

using protocol::ControlHeader;
using protocol::ControlKind;
using protocol::Counters;

RecursiveDoublingAllreduce::RecursiveDoublingAllreduce(protocol::Context& ctx, DataType type,
                                                       ReduceOp op, const std::byte* send,
                                                       std::byte* recv, std::size_t bytes,
                                                       std::uint64_t signature, std::uint32_t args,
                                                       std::size_t segment_bytes, std::string what)
    : P2pOperation(ctx, signature, bytes),
      type_(type),
      op_(op),
      send_(send),
      recv_(recv),
      bytes_(bytes),
      args_(args),
      segment_bytes_(std::max(segment_bytes, size_of(type))),
      // An empty vector still exchanges one empty message per round, so a
      // disagreement is found whatever the size.
      segments_(bytes == 0
                    ? 1u
                    : static_cast<std::uint32_t>((bytes + segment_bytes_ - 1) / segment_bytes_)),
      what_(std::move(what)) {
  plan();
}

void RecursiveDoublingAllreduce::plan() {
  const int n = ctx_.size();
  const int me = ctx_.rank();
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int rem = n - p;
  std::uint32_t rounds = 0;
  while ((1 << rounds) < p) ++rounds;
  if (me >= p) {  // folded into rank me - p, which sends the result back
    steps_.push_back({0, me - p, true, Take::kNothing});
    steps_.push_back({rounds + 1, me - p, false, Take::kCopy});
    return;
  }
  if (me < rem) steps_.push_back({0, me + p, false, Take::kCombine});
  for (std::uint32_t k = 1; k <= rounds; ++k) {
    steps_.push_back({k, me ^ (1 << (k - 1)), true, Take::kCombine});
  }
  if (me < rem) steps_.push_back({rounds + 1, me + p, true, Take::kNothing});
}

std::size_t RecursiveDoublingAllreduce::seg_len(std::uint32_t segment) const {
  const std::size_t off = std::size_t{segment} * segment_bytes_;
  return off >= bytes_ ? 0 : std::min(segment_bytes_, bytes_ - off);
}

std::string RecursiveDoublingAllreduce::describe_wait() const {
  if (current_ >= steps_.size()) return "nothing (internal error)";
  const Step& s = steps_[current_];
  return "round " + std::to_string(s.round) + ": " + std::to_string(segments_ - received_) +
         " segments from rank " + std::to_string(s.peer);
}

void RecursiveDoublingAllreduce::on_start(common::TimePoint) {
  if (bytes_ > 0 && send_ != recv_) std::memmove(recv_, send_, bytes_);
  advance();
}

void RecursiveDoublingAllreduce::absorb(const Step& s, std::uint32_t segment,
                                        std::span<const std::byte> body) {
  std::byte* mine = recv_ + std::size_t{segment} * segment_bytes_;
  const std::size_t count = body.size() / size_of(type_);
  if (s.take == Take::kCopy) {
    if (!body.empty()) std::memcpy(mine, body.data(), body.size());
  } else if (s.peer < ctx_.rank()) {
    reduce(type_, op_, mine, body.data(), mine, count);  // lower rank's value first
  } else {
    reduce(type_, op_, mine, mine, body.data(), count);
  }
  ++received_;
}

// Moves through every step that can complete now: sends a step's vector
// when it begins, takes the messages held for it, and goes on once all its
// segments are in.
void RecursiveDoublingAllreduce::advance() {
  while (current_ < steps_.size()) {
    const Step& s = steps_[current_];
    if (!entered_) {
      entered_ = true;
      received_ = 0;
      if (s.send) {
        for (std::uint32_t seg = 0; seg < segments_; ++seg) {
          ControlHeader h = p2p_header(s.round, seg);
          h.root = args_;
          const std::size_t len = seg_len(seg);
          if (!send_p2p(s.peer, h, {recv_ + std::size_t{seg} * segment_bytes_, len})) return;
        }
      }
      auto it = held_.find(s.round);
      if (it != held_.end()) {
        for (auto& m : it->second) absorb(s, m.segment, m.body);
        held_.erase(it);
      }
    }
    if (s.take != Take::kNothing && received_ < segments_) return;
    ++current_;
    entered_ = false;
  }
}

void RecursiveDoublingAllreduce::on_control(int peer, const ControlHeader& h,
                                            std::span<const std::byte> body, common::TimePoint) {
  if (h.signature != signature()) {
    fail_mismatch(reduce_mismatch_text(peer, args_, h.root));
    return;
  }
  // Which of this rank's steps the message belongs to; it must come from
  // that step's peer, not be for a step already done, and fit the layout.
  std::size_t i = current_;
  while (i < steps_.size() && steps_[i].round != h.arg0) ++i;
  if (h.kind != ControlKind::kP2pData || i == steps_.size() || steps_[i].peer != peer ||
      steps_[i].take == Take::kNothing || h.arg1 >= segments_ || body.size() != seg_len(h.arg1)) {
    Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  if (i > current_ || !entered_) {
    held_[h.arg0].push_back({peer, h.arg1, std::vector<std::byte>(body.begin(), body.end())});
    return;
  }
  absorb(steps_[i], h.arg1, body);
  advance();
}

void RecursiveDoublingAllreduce::progress(common::TimePoint) {
  advance();
  if (current_ == steps_.size()) finish(common::Status::ok());
}

bool RecursiveDoublingAllreduce::needs(int peer) const {
  for (std::size_t i = current_; i < steps_.size(); ++i) {
    if (steps_[i].peer == peer && steps_[i].take != Take::kNothing) return true;
  }
  return false;
}

}  // namespace mccl::coll
