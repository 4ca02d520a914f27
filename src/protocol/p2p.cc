#include "protocol/p2p.h"

#include <algorithm>
#include <cstring>

#include "protocol/context.h"

namespace mccl::protocol {

P2pSend::P2pSend(Context& ctx, const std::byte* data, std::size_t bytes, int peer,
                 std::uint32_t tag, std::size_t segment_bytes)
    : Operation(ctx),
      data_(data),
      bytes_(bytes),
      peer_(peer),
      tag_(tag),
      segment_bytes_(std::max<std::size_t>(1, segment_bytes)) {}

std::string P2pSend::describe() const {
  return "send of " + std::to_string(bytes_) + " bytes to rank " + std::to_string(peer_) +
         " (tag " + std::to_string(tag_) + ")";
}

void P2pSend::on_start(common::TimePoint) {
  finish(ctx_.send_p2p(peer_, tag_, {data_, bytes_}, segment_bytes_));
}

P2pRecv::P2pRecv(Context& ctx, std::byte* buffer, std::size_t bytes, int source, std::uint32_t tag)
    : Operation(ctx), buffer_(buffer), bytes_(bytes), source_(source), tag_(tag) {}

std::string P2pRecv::describe() const {
  return "receive of " + std::to_string(bytes_) + " bytes from " +
         (source_ == kAnySource ? std::string("any rank") : "rank " + std::to_string(source_)) +
         " (tag " + std::to_string(tag_) + ")";
}

std::string P2pRecv::describe_wait() const {
  if (matched_ == kAnySource) return "a matching message";
  return std::to_string(bytes_ - received_) + " more bytes from rank " + std::to_string(matched_);
}

void P2pRecv::on_start(common::TimePoint) {}  // the context posts it to its mailbox

bool P2pRecv::needs(int peer) const {
  if (done()) return false;
  return matched_ == kAnySource ? source_ == peer : matched_ == peer;
}

void P2pMailbox::post(const std::shared_ptr<P2pRecv>& recv, common::TimePoint deadline) {
  recv->expires_ = deadline;
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (!recv->accepts((*it)->source, (*it)->tag)) continue;
    std::shared_ptr<Inbound> in = *it;
    kept_.erase(it);
    attach(*in, recv);
    complete_if_full(*in);
    return;
  }
  posted_.push_back(recv);
}

void P2pMailbox::attach(Inbound& in, const std::shared_ptr<P2pRecv>& recv) {
  if (in.total != recv->bytes_) {
    recv->finish(common::invalid_argument(
        "rank " + std::to_string(rank_) + ": " + recv->describe() + " matched a message of " +
        std::to_string(in.total) + " bytes from rank " + std::to_string(in.source) +
        ": a receive's buffer must have the size of the message it takes"));
    in.dropped = true;
    in.kept = {};
    return;
  }
  recv->matched_ = in.source;
  in.recv = recv;
  if (in.received > 0) std::memcpy(recv->buffer_, in.kept.data(), in.received);
  recv->received_ = in.received;
  in.kept = {};
}

void P2pMailbox::complete_if_full(Inbound& in) {
  if (in.received != in.total) return;
  if (auto it = filling_.find(in.source); it != filling_.end() && it->second.get() == &in) {
    filling_.erase(it);
  }
  if (in.recv) in.recv->finish(common::Status::ok());
}

common::Status P2pMailbox::on_segment(int source, const ControlHeader& h,
                                      std::span<const std::byte> body) {
  const std::string from = "rank " + std::to_string(rank_) + ": point-to-point message #" +
                           std::to_string(h.seq) + " from rank " + std::to_string(source);
  if (h.arg0 == 0) {  // the first segment of a new message
    if (filling_.contains(source) || h.seq != next_from_[source]) {
      return common::internal_error(from + " arrived out of order (expected message #" +
                                    std::to_string(next_from_[source]) + ")");
    }
    ++next_from_[source];
    auto in = std::make_shared<Inbound>();
    in->source = source;
    in->tag = h.root;
    in->total = h.signature;
    filling_[source] = in;
    auto it = std::find_if(posted_.begin(), posted_.end(),
                           [&](const auto& r) { return r->accepts(source, in->tag); });
    if (it != posted_.end()) {
      std::shared_ptr<P2pRecv> recv = *it;
      posted_.erase(it);
      attach(*in, recv);
    } else {
      kept_.push_back(in);
    }
  }
  const auto found = filling_.find(source);
  const std::shared_ptr<Inbound> in = found == filling_.end() ? nullptr : found->second;
  if (!in || body.size() > in->total - in->received) {
    return common::internal_error(from + " carries more bytes than it announced");
  }
  if (in->recv) {
    std::memcpy(in->recv->buffer_ + in->received, body.data(), body.size());
    in->recv->received_ += body.size();
  } else if (!in->dropped) {
    in->kept.insert(in->kept.end(), body.begin(), body.end());
  }
  in->received += body.size();
  complete_if_full(*in);
  return common::Status::ok();
}

common::Status P2pMailbox::check_deadlines(common::TimePoint now,
                                           std::chrono::milliseconds timeout) {
  // Built only for a message: every progress pass comes through here, and
  // formatting the text each time cost an allocation per pass.
  const auto after = [timeout] {
    return " timed out after " + std::to_string(timeout.count()) + " ms";
  };
  for (auto it = posted_.begin(); it != posted_.end();) {
    if (now < (*it)->expires_) {
      ++it;
      continue;
    }
    (*it)->finish(common::timeout_error("rank " + std::to_string(rank_) + ": " + (*it)->describe() +
                                        after() +
                                        " with no matching message; raise MCCL_COLL_TIMEOUT_MS "
                                        "if the sender is just slow"));
    it = posted_.erase(it);
  }
  for (const auto& [source, in] : filling_) {
    if (in->recv && !in->recv->done() && now >= in->recv->expires_) {
      return common::timeout_error("rank " + std::to_string(rank_) + ": " + in->recv->describe() +
                                   after() + " waiting for " + in->recv->describe_wait());
    }
  }
  return common::Status::ok();
}

void P2pMailbox::fail_all(const common::Status& why) {
  for (auto& r : posted_) r->finish(why);
  posted_.clear();
  for (auto& [source, in] : filling_) {
    if (in->recv) in->recv->finish(why);
  }
}

std::size_t P2pMailbox::pending() const {
  std::size_t n = posted_.size();
  for (const auto& [source, in] : filling_) n += in->recv && !in->recv->done() ? 1 : 0;
  return n;
}

bool P2pMailbox::needs(int peer) const {
  for (const auto& r : posted_) {
    if (r->needs(peer)) return true;
  }
  const auto it = filling_.find(peer);
  return it != filling_.end() && it->second->recv && !it->second->recv->done();
}

}  // namespace mccl::protocol
