#include "protocol/membership.h"

#include <algorithm>
#include <utility>

#include "protocol/context.h"

namespace mccl::protocol {

namespace {

constexpr std::uint32_t kDecided = 1;  // arg1 of an agreement message

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s.empty() ? "none" : s;
}

}  // namespace

bool MembershipOp::send_to(int peer, std::uint32_t round, std::uint32_t flags,
                           std::span<const std::byte> body) {
  ControlHeader h{.kind = ControlKind::kMembership, .seq = exchange_, .arg0 = round, .arg1 = flags};
  return ctx_.send_control(peer, h, body).is_ok();
}

void Revoke::on_start(common::TimePoint) {
  const std::string me = std::to_string(ctx_.rank());
  ctx_.revoke(common::peer_failure("rank " + me + ": the communicator was revoked by rank " + me));
  finish(common::Status::ok());
}

// ---- AgreeOnFailed ----------------------------------------------------------

AgreeOnFailed::AgreeOnFailed(Context& ctx, std::uint32_t attempt, std::vector<int>& failed)
    : MembershipOp(ctx, attempt),
      out_(failed),
      size_(ctx.size()),
      rank_(ctx.rank()),
      failed_(static_cast<std::size_t>((ctx.size() + 7) / 8), 0) {}

std::string AgreeOnFailed::describe_wait() const {
  std::vector<int> silent;
  const auto it = heard_.find(round_);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || has(failed_, p)) continue;
    if (it == heard_.end() || !it->second.contains(p)) silent.push_back(p);
  }
  return "round " + std::to_string(round_) + " from rank(s) " + ranks_text(silent) +
         " (every survivor must call shrink)";
}

void AgreeOnFailed::on_start(common::TimePoint) {
  for (int p : ctx_.failed_peer_ranks()) add(failed_, p);
  round_ = 1;
  send_round(0);
}

void AgreeOnFailed::send_round(std::uint32_t flags) {
  const Set mine = failed_;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || has(mine, p)) continue;
    if (!send_to(p, round_, flags, std::as_bytes(std::span(mine)))) {
      add(failed_, p);
      changed_ = true;
    }
  }
}

void AgreeOnFailed::decide(const Set& s) {
  if (has(s, rank_)) {
    finish(common::peer_failure("rank " + std::to_string(rank_) +
                                ": the other survivors count this rank as failed (its "
                                "connections to them broke); it is not in the shrunk "
                                "communicator"));
    return;
  }
  failed_ = s;
  ++round_;
  // Whoever has not decided yet adopts this set: tell every survivor, so a
  // decision survives this rank dying halfway through telling them.
  for (int p = 0; p < size_; ++p) {
    if (p != rank_ && !has(s, p)) (void)send_to(p, round_, kDecided, std::as_bytes(std::span(s)));
  }
  out_.clear();
  for (int p = 0; p < size_; ++p) {
    if (has(s, p)) out_.push_back(p);
  }
  finish(common::Status::ok());
}

void AgreeOnFailed::on_member_message(int peer, const ControlHeader& h,
                                      std::span<const std::byte> body) {
  if (done() || body.size() != failed_.size()) return;
  Set theirs(failed_.size());
  std::transform(body.begin(), body.end(), theirs.begin(),
                 [](std::byte b) { return std::to_integer<std::uint8_t>(b); });
  if (h.arg1 & kDecided) {
    decide(theirs);
    return;
  }
  if (h.arg0 < round_ || has(failed_, peer)) return;
  heard_[h.arg0][peer] = std::move(theirs);
}

void AgreeOnFailed::on_peer_failure(int peer) {
  if (done() || has(failed_, peer)) return;
  add(failed_, peer);
  changed_ = true;
}

void AgreeOnFailed::progress(common::TimePoint) {
  while (!done()) {
    auto& heard = heard_[round_];
    for (int p = 0; p < size_; ++p) {
      if (p != rank_ && !has(failed_, p) && !heard.contains(p)) return;  // still waiting
    }
    bool same = !changed_;
    Set all = failed_;
    for (const auto& [peer, theirs] : heard) {
      if (has(failed_, peer)) continue;  // failed during the round: its word no longer counts
      same = same && theirs == failed_;
      for (std::size_t i = 0; i < all.size(); ++i) all[i] |= theirs[i];
    }
    if (same) {
      decide(failed_);
      return;
    }
    failed_ = std::move(all);
    if (has(failed_, rank_)) {
      decide(failed_);  // fails: the others count this rank out
      return;
    }
    changed_ = false;
    heard_.erase(heard_.begin(), heard_.upper_bound(round_));
    ++round_;
    send_round(0);
  }
}

// ---- SurvivorExchange -------------------------------------------------------

SurvivorExchange::SurvivorExchange(Context& ctx, std::uint32_t attempt, std::vector<int> members,
                                   std::span<const std::byte> mine, std::vector<std::byte>& out)
    : MembershipOp(ctx, attempt),
      members_(std::move(members)),
      mine_(mine.begin(), mine.end()),
      out_(out) {}

std::string SurvivorExchange::describe_wait() const {
  std::vector<int> missing;
  for (int m : members_) {
    if (!got_.contains(m)) missing.push_back(m);
  }
  return "the contributions of rank(s) " + ranks_text(missing);
}

void SurvivorExchange::on_start(common::TimePoint) {
  const int me = ctx_.rank();
  got_[me] = mine_;
  const auto failed = ctx_.failed_peer_ranks();
  for (int m : members_) {
    if (m == me) continue;
    if (std::find(failed.begin(), failed.end(), m) != failed.end() || !send_to(m, 0, 0, mine_)) {
      on_peer_failure(m);
      return;
    }
  }
}

void SurvivorExchange::on_member_message(int peer, const ControlHeader&,
                                         std::span<const std::byte> body) {
  if (done() || std::find(members_.begin(), members_.end(), peer) == members_.end()) return;
  if (body.size() != mine_.size()) {
    finish(common::mismatch_error("rank " + std::to_string(ctx_.rank()) + ": rank " +
                                  std::to_string(peer) + " contributed " +
                                  std::to_string(body.size()) + " bytes to " + describe() +
                                  ", this rank " + std::to_string(mine_.size())));
    return;
  }
  got_[peer].assign(body.begin(), body.end());
}

void SurvivorExchange::on_peer_failure(int peer) {
  if (done() || got_.contains(peer)) return;
  if (std::find(members_.begin(), members_.end(), peer) == members_.end()) return;
  finish(common::peer_failure("rank " + std::to_string(ctx_.rank()) + ": rank " +
                              std::to_string(peer) + " failed during " + describe()));
}

void SurvivorExchange::progress(common::TimePoint) {
  if (done() || got_.size() < members_.size()) return;
  out_.clear();
  for (int m : members_) out_.insert(out_.end(), got_[m].begin(), got_[m].end());
  finish(common::Status::ok());
}

// ---- Membership -------------------------------------------------------------

void Membership::start(const std::shared_ptr<MembershipOp>& op, common::TimePoint now) {
  if (!op->numbered()) {
    op->on_start(now);
    return;
  }
  const std::uint32_t first = op->attempt_ << 16 | 1;
  if (next_ < first) {  // the first exchange of a new attempt: the earlier ones are over
    next_ = first;
    for (auto it = early_.begin(); it != early_.end() && it->first < first;) {
      early_count_ -= it->second.size();
      it = early_.erase(it);
    }
  }
  op->exchange_ = next_++;
  op->due_ = common::saturating_add(now, ctx_.config().op_timeout);
  ops_[op->exchange_] = op;
  op->on_start(now);
  const auto it = early_.find(op->exchange_);
  if (it == early_.end()) return;
  for (const Early& e : it->second) {
    if (!op->done()) op->on_member_message(e.peer, e.h, e.body);
  }
  early_count_ -= it->second.size();
  early_.erase(it);
}

void Membership::on_message(int peer, const ControlHeader& h, std::span<const std::byte> body) {
  const auto it = ops_.find(h.seq);
  if (it != ops_.end()) {
    if (!it->second->done()) it->second->on_member_message(peer, h, body);
    return;
  }
  if (h.seq < next_ || early_count_ >= kMaxEarly) return;  // finished here, or too far ahead
  early_[h.seq].push_back({peer, h, std::vector<std::byte>(body.begin(), body.end())});
  ++early_count_;
}

void Membership::on_peer_failure(int peer) {
  for (auto& [exchange, op] : ops_) {
    if (!op->done()) op->on_peer_failure(peer);
  }
}

void Membership::progress(common::TimePoint now) {
  for (auto it = ops_.begin(); it != ops_.end();) {
    MembershipOp& op = *it->second;
    if (!op.done()) op.progress(now);
    if (!op.done() && now >= op.due_) {
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(ctx_.config().op_timeout).count();
      op.finish(common::timeout_error("rank " + std::to_string(ctx_.rank()) + ": " + op.describe() +
                                      " timed out after " + std::to_string(ms) +
                                      " ms waiting for " + op.describe_wait()));
    }
    it = op.done() ? ops_.erase(it) : std::next(it);
  }
}

}  // namespace mccl::protocol
