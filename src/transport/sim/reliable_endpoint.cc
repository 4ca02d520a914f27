// One rank's end of a group's reliable mesh on the simulated fabric.
// Messages are delivered exactly once, at once or (FabricConfig::
// timed_reliable) after their time on the sender's link and the receiver's
// port: the mesh models the repair channel's guarantees and, if asked, its
// speed, never its loss.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "transport/sim/fabric_impl.h"

namespace mccl::transport::sim {
namespace {

// Messages taken out of the mailbox per lock; the handler runs unlocked
// because it may send, and a send to self takes the same lock.
constexpr std::size_t kPollChunk = 16;

// The end a rank gets when it joined a group with the wrong size: every
// call fails with why, so that the error reaches the caller as a Status at
// its first exchange.
class FailedReliable final : public ReliableTransport {
 public:
  FailedReliable(int rank, int size, common::Status why)
      : rank_(rank), size_(size), why_(std::move(why)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  common::Status send(int, std::span<const std::span<const std::byte>>) override { return why_; }
  common::Status poll(ReliableHandler&, std::size_t, std::size_t& delivered) override {
    delivered = 0;
    return why_;
  }

 private:
  int rank_, size_;
  common::Status why_;
};

class ReliableEndpoint final : public ReliableTransport {
 public:
  ReliableEndpoint(std::shared_ptr<FabricImpl> fabric, std::shared_ptr<Mesh> mesh, int rank)
      : fabric_(std::move(fabric)),
        mesh_(std::move(mesh)),
        self_(mesh_->states[static_cast<std::size_t>(rank)]),
        mailbox_(mesh_->mailboxes[static_cast<std::size_t>(rank)]),
        rank_(rank),
        reported_(static_cast<std::size_t>(mesh_->size), false),
        talked_to_(static_cast<std::size_t>(mesh_->size), false) {}

  int rank() const override { return rank_; }
  int size() const override { return mesh_->size; }

  common::Status send(int peer, std::span<const std::span<const std::byte>> parts) override;
  common::Status poll(ReliableHandler& handler, std::size_t max, std::size_t& delivered) override;

 private:
  // When a message of `bytes` sent now reaches `peer` (the epoch: at once).
  common::TimePoint arrival(std::size_t peer, std::size_t bytes);
  // Reports peers that died and whose last messages have been handed over.
  void report_failures(ReliableHandler& handler);
  bool has_pending_from(int peer);

  std::shared_ptr<FabricImpl> fabric_;
  std::shared_ptr<Mesh> mesh_;
  std::shared_ptr<RankState> self_;
  std::shared_ptr<Mailbox> mailbox_;
  const int rank_;
  std::vector<bool> reported_;   // peers already reported through on_peer_failure
  std::vector<bool> talked_to_;  // peers sent to (RankState::peers knows already)
  std::uint64_t seen_kill_epoch_ = 0;
  bool recheck_failures_ = false;  // a dead peer still had messages queued
};

common::Status ReliableEndpoint::send(int peer, std::span<const std::span<const std::byte>> parts) {
  if (self_->is_dead()) return common::peer_failure(killed_message(rank_));
  if (peer < 0 || peer >= mesh_->size) {
    return common::invalid_argument("sim fabric: rank " + std::to_string(rank_) + " sent to peer " +
                                    std::to_string(peer) + " outside a mesh of " +
                                    std::to_string(mesh_->size));
  }
  auto p = static_cast<std::size_t>(peer);
  if (mesh_->states[p]->is_dead()) {
    return common::peer_failure(dead_peer_message(peer));
  }
  std::size_t total = 0;
  for (const auto& part : parts) total += part.size();
  Message m{rank_, std::vector<std::byte>(total), arrival(p, total)};
  std::size_t off = 0;
  for (const auto& part : parts) {
    if (!part.empty()) std::memcpy(m.data.data() + off, part.data(), part.size());
    off += part.size();
  }
  {
    std::lock_guard lock(mesh_->mailboxes[p]->mu);
    mesh_->mailboxes[p]->queue.push_back(std::move(m));
  }
  if (!talked_to_[p]) {
    talked_to_[p] = true;
    self_->note_peer(peer);
    mesh_->states[p]->note_peer(rank_);
  }
  fabric_->counters.reliable_messages.fetch_add(1, std::memory_order_relaxed);
  fabric_->counters.reliable_bytes.fetch_add(total, std::memory_order_relaxed);
  return common::Status::ok();
}

common::Status ReliableEndpoint::poll(ReliableHandler& handler, std::size_t max,
                                      std::size_t& delivered) {
  delivered = 0;
  if (self_->is_dead()) return common::peer_failure(killed_message(rank_));
  std::array<Message, kPollChunk> ready;
  const bool timed = fabric_->config.timed_reliable;
  const common::TimePoint now = timed ? fabric_->now() : common::TimePoint{};
  while (delivered < max) {
    std::size_t want = std::min(kPollChunk, max - delivered);
    std::size_t n = 0;
    {
      std::lock_guard lock(mailbox_->mu);
      auto& q = mailbox_->queue;
      // Every message that has arrived, in queue order: one sender's
      // arrive in the order it sent them, so its order is kept.
      for (auto it = q.begin(); n < want && it != q.end();) {
        if (timed && it->at > now) {
          ++it;
          continue;
        }
        ready[n++] = std::move(*it);
        it = q.erase(it);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      // A message that raced its sender's death into the mailbox after the
      // death was reported is dropped: nothing may follow on_peer_failure.
      if (reported_[static_cast<std::size_t>(ready[i].from)]) continue;
      handler.on_message(ready[i].from, ready[i].data);
      ++delivered;
    }
    if (n < want) break;
  }
  report_failures(handler);
  return common::Status::ok();
}

common::TimePoint ReliableEndpoint::arrival(std::size_t peer, std::size_t bytes) {
  const FabricConfig& config = fabric_->config;
  const double ns_per_byte = fabric_->link_ns_per_byte();
  if (!config.timed_reliable || ns_per_byte <= 0) return {};
  const auto wire =
      std::chrono::nanoseconds(std::llround(static_cast<double>(bytes) * ns_per_byte));
  common::TimePoint sent;
  {
    // Behind whatever the rank's datagrams have booked on its link.
    std::lock_guard lock(self_->link_mu);
    self_->link_free_at = std::max(fabric_->now(), self_->link_free_at) + wire;
    sent = self_->link_free_at;
  }
  // The message streams through the port as it leaves the link (packets,
  // not whole messages, are stored and forwarded): the port is busy for
  // its wire time from when the first byte arrives.
  const common::TimePoint out =
      config.port_buffer_bytes > 0 ? mesh_->states[peer]->book_port(sent - wire, bytes, ns_per_byte)
                                   : sent;
  return out + config.latency;
}

bool ReliableEndpoint::has_pending_from(int peer) {
  std::lock_guard lock(mailbox_->mu);
  return std::any_of(mailbox_->queue.begin(), mailbox_->queue.end(),
                     [&](const Message& m) { return m.from == peer; });
}

void ReliableEndpoint::report_failures(ReliableHandler& handler) {
  std::uint64_t epoch = fabric_->kill_epoch.load(std::memory_order_acquire);
  if (epoch == seen_kill_epoch_ && !recheck_failures_) return;
  seen_kill_epoch_ = epoch;
  recheck_failures_ = false;
  for (int peer = 0; peer < mesh_->size; ++peer) {
    auto p = static_cast<std::size_t>(peer);
    if (peer == rank_ || reported_[p] || !mesh_->states[p]->is_dead()) continue;
    // Messages the peer sent before it died are still delivered first, as a
    // real connection delivers its data before the reset.
    if (has_pending_from(peer)) {
      recheck_failures_ = true;
      continue;
    }
    reported_[p] = true;
    handler.on_peer_failure(peer, common::peer_failure(dead_peer_message(peer)));
  }
}

}  // namespace

std::unique_ptr<ReliableTransport> make_reliable_endpoint(std::shared_ptr<FabricImpl> fabric,
                                                          std::uint64_t group, int rank, int size,
                                                          int node) {
  common::Status why;
  auto mesh = fabric->mesh(group, size, rank, node, why);
  if (!mesh) return std::make_unique<FailedReliable>(rank, size, std::move(why));
  return std::make_unique<ReliableEndpoint>(std::move(fabric), std::move(mesh), rank);
}

}  // namespace mccl::transport::sim
