// The bootstrap store's protocol (store_server.h): what each frame means
// once read, who is admitted, when a round completes, and the deadlines.
#include <algorithm>
#include <string>

#include "bootstrap/store_state.h"
#include "common/log.h"

namespace mccl::bootstrap {

void StoreServer::Impl::on_frame(Conn& c) {
  if (c.rank < 0 && c.hdr.kind != wire::Kind::kHello) {
    c.closed = true;  // anonymous and not saying hello: not one of ours
    return;
  }
  switch (c.hdr.kind) {
    case wire::Kind::kHello:
      return on_hello(c);
    case wire::Kind::kContribute:
      return on_contribute(c);
    case wire::Kind::kBye:
      c.said_bye = true;
      return;
    case wire::Kind::kDetach:
      // Idle between rounds: the rank comes back (on_rejoin) for the next.
      detached_.insert(c.rank);
      by_rank_.erase(c.rank);
      c.rank = -1;
      c.closed = true;
      return;
    default:
      return protocol_error(
          c, "unexpected frame kind " + std::to_string(static_cast<int>(c.hdr.kind)));
  }
}

void StoreServer::Impl::on_hello(Conn& c) {
  if (c.rank >= 0) return protocol_error(c, "a second hello");
  auto hello = wire::decode_hello(*c.payload);
  const std::uint32_t r = c.hdr.rank;
  // A stranger learns only that it was refused; the job goes on. Checked
  // first: nothing below may be decided by someone outside the job.
  if (!wire::secrets_equal(secret_, hello.secret)) {
    common::logf(common::LogLevel::kInfo, 0,
                 "%srefused a connection claiming rank %u: wrong job secret", prefix().c_str(), r);
    send_error(c, common::mismatch_error(
                      prefix() + "refused rank " + std::to_string(r) +
                      ": its hello does not carry this job's secret (MCCL_BOOTSTRAP_SECRET must "
                      "be the same on every rank, or unset on every rank)"));
    c.close_when_flushed = true;
    c.hello_by = hello_due();
    return;
  }
  // A member's bad hello is answered and fails the job (the configuration is
  // wrong); the connection stays anonymous, taking no part in the world.
  auto reject = [&](common::Status st) {
    send_error(c, st);
    c.close_when_flushed = true;
    c.hello_by = common::saturating_add(now(), timeout_);  // room to flush the answer
    fail(std::move(st));
  };
  if (failed_) {
    c.close_when_flushed = true;
    return send_error(c, *failed_);
  }
  if (r >= static_cast<std::uint32_t>(size_)) {
    return reject(common::invalid_argument(prefix() + "a process claims rank " + std::to_string(r) +
                                           ", outside the world of " + std::to_string(size_) +
                                           " ranks: check MCCL_RANK and MCCL_WORLD_SIZE"));
  }
  if (hello.size != static_cast<std::uint32_t>(size_)) {
    return reject(common::mismatch_error(prefix() + "rank " + std::to_string(r) +
                                         " says the world has " + std::to_string(hello.size) +
                                         " ranks, rank 0 says " + std::to_string(size_) +
                                         ": check MCCL_WORLD_SIZE on every rank"));
  }
  if (c.hdr.aux == wire::kRejoin) return on_rejoin(c);
  if (arrived_.count(static_cast<int>(r)) != 0) {
    return reject(common::invalid_argument(prefix() + "two processes claim rank " +
                                           std::to_string(r) + ": check MCCL_RANK"));
  }
  c.rank = static_cast<int>(r);
  by_rank_[c.rank] = &c;
  arrived_.insert(c.rank);
  ++arrived_count_;
  accept_by_ = std::min(accept_by_, now() + std::chrono::milliseconds(hello.wait_ms));
  if (arrived_count_ == size_) {
    welcomed_ = true;
    for (auto& [q, rc] : by_rank_) send(*rc, wire::Kind::kWelcome, 0, 0, nullptr);
  }
}

void StoreServer::Impl::on_rejoin(Conn& c) {
  const int r = static_cast<int>(c.hdr.rank);
  if (detached_.count(r) == 0 || c.hdr.round != round_) {
    c.close_when_flushed = true;
    c.hello_by = common::saturating_add(now(), timeout_);
    send_error(
        c, common::invalid_argument(
               prefix() + "rank " + std::to_string(r) + " came back for allgather #" +
               std::to_string(c.hdr.round) + ", but the store is at #" + std::to_string(round_) +
               (detached_.count(r) == 0 ? " and that rank never let its connection go" : "")));
    return;
  }
  detached_.erase(r);
  c.rank = r;
  by_rank_[r] = &c;
  send(c, wire::Kind::kWelcome, 0, round_, nullptr);
}

void StoreServer::Impl::on_contribute(Conn& c) {
  if (failed_) return send_error(c, *failed_);
  if (!welcomed_) return protocol_error(c, "a contribution before every rank arrived");
  if (c.hdr.round != round_) {
    return protocol_error(c, "a contribution to allgather #" + std::to_string(c.hdr.round) +
                                 " while the store is at #" + std::to_string(round_));
  }
  const int r = c.rank;
  if (contributions_.count(r) != 0) return protocol_error(c, "two contributions to one round");
  const TimePoint t = now();
  const TimePoint by = t + std::chrono::milliseconds(c.hdr.aux);
  if (count_ == 0) round_opened_ = t;
  round_by_ = std::min(round_by_, by);
  contributions_[r] = std::move(c.payload);
  ++count_;
  // A rank that left can never contribute: fail now instead of at the deadline.
  std::vector<int> lost;
  for (const auto& [q, how] : gone_) {
    if (contributions_.count(q) == 0) lost.push_back(q);
  }
  std::sort(lost.begin(), lost.end());
  std::string why;
  for (int q : lost) why += "; rank " + std::to_string(q) + " " + gone_[q];
  if (!lost.empty()) {
    return fail(common::peer_failure(prefix() + "allgather #" + std::to_string(round_) +
                                     " cannot complete: ranks gone: " + rank_list(lost) + why));
  }
  if (count_ == size_) complete_round();
}

void StoreServer::Impl::complete_round() {
  const std::size_t len = contributions_.at(0)->size();
  std::string diff;
  for (int q = 0; q < size_; ++q) {
    auto n = contributions_.at(q)->size();
    if (n != len) diff += ", rank " + std::to_string(q) + " " + std::to_string(n);
  }
  if (!diff.empty()) {
    return fail(common::mismatch_error(prefix() + "allgather #" + std::to_string(round_) +
                                       ": contributions differ in length (bytes: rank 0 " +
                                       std::to_string(len) + diff + ")"));
  }
  auto all = std::make_shared<Bytes>();
  all->reserve(len * static_cast<std::size_t>(size_));
  for (int q = 0; q < size_; ++q) {
    const auto& part = contributions_.at(q);
    all->insert(all->end(), part->begin(), part->end());
  }
  contributions_.clear();
  for (auto& [q, rc] : by_rank_) send(*rc, wire::Kind::kResult, 0, round_, all);
  ++round_;
  count_ = 0;
  round_by_ = TimePoint::max();
}

void StoreServer::Impl::on_closed(Conn& c, const std::string& why) {
  if (c.closed) return;
  c.closed = true;
  c.out.clear();
  if (c.rank < 0) return;
  const int r = c.rank;
  by_rank_.erase(r);
  gone_[r] = c.said_bye ? "left (it destroyed its bootstrap)"
                        : "lost its connection to the store (" + why + ")";
  if (failed_) return;
  if (!welcomed_) {
    fail(common::peer_failure(prefix() + "rank " + std::to_string(c.rank) + " " + gone_[r] +
                              " before every rank arrived"));
  } else if (count_ > 0 && contributions_.count(r) == 0) {
    fail(common::peer_failure(prefix() + "allgather #" + std::to_string(round_) +
                              " cannot complete: rank " + std::to_string(c.rank) + " " + gone_[r]));
  }
}

void StoreServer::Impl::check_deadlines(TimePoint now) {
  if (!failed_ && !welcomed_ && now >= accept_by_) {
    std::vector<int> missing;
    for (int q = 0; q < size_; ++q) {
      if (arrived_.count(q) == 0) missing.push_back(q);
    }
    fail(common::timeout_error(prefix() + "ranks never arrived within the bootstrap timeout (" +
                               std::to_string(ms_between(start_, now)) +
                               " ms since the store started): " + rank_list(missing)));
  }
  if (!failed_ && count_ > 0 && now >= round_by_) {
    std::vector<int> missing;
    for (int q = 0; q < size_; ++q) {
      if (contributions_.count(q) == 0) missing.push_back(q);
    }
    fail(common::timeout_error(prefix() + "allgather #" + std::to_string(round_) +
                               " timed out after " +
                               std::to_string(ms_between(round_opened_, now)) +
                               " ms; ranks never arrived: " + rank_list(missing)));
  }
  for (auto& c : conns_) {
    if (c->rank < 0 && !c->closed && now >= c->hello_by) c->closed = true;
  }
}

}  // namespace mccl::bootstrap
