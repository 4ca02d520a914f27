#include "transport/sim/sim_transport.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/log.h"
#include "transport/sim/fabric_impl.h"
#include "transport/sim/fault_model.h"

namespace mccl::transport::sim {

// ---- FabricImpl ------------------------------------------------------------

std::shared_ptr<Group> FabricImpl::group(std::uint64_t id) {
  std::lock_guard lock(mu_);
  auto& g = groups_[id];
  if (!g) g = std::make_shared<Group>(id);
  return g;
}

std::shared_ptr<RankState> FabricImpl::rank_state_locked(int rank) {
  auto& s = ranks_[rank];
  if (!s) s = std::make_shared<RankState>(rank);
  return s;
}

std::shared_ptr<RankState> FabricImpl::rank_state(int rank) {
  std::lock_guard lock(mu_);
  return rank_state_locked(rank);
}

std::shared_ptr<Mesh> FabricImpl::mesh(std::uint64_t id, int size, int rank, int node,
                                       common::Status& why) {
  std::lock_guard lock(mu_);
  auto& m = meshes_[id];
  if (!m) {
    m = std::make_shared<Mesh>();
    m->size = size;
    for (int r = 0; r < size; ++r) {
      m->mailboxes.push_back(std::make_shared<Mailbox>());
      m->states.push_back(rank_state_locked(r));
    }
  } else if (m->size != size) {
    why = common::invalid_argument("sim fabric: reliable group " + std::to_string(id) + " has " +
                                   std::to_string(m->size) + " ranks, joined with size " +
                                   std::to_string(size));
    return nullptr;
  }
  // Peers read the states only once every member has joined (creation's
  // exchanges come after the joins, under the exchanges' locks).
  if (node != rank) m->states[static_cast<std::size_t>(rank)] = rank_state_locked(node);
  return m;
}

void FabricImpl::kill(int rank) {
  auto state = rank_state(rank);
  if (!state->dead.exchange(true)) kill_epoch.fetch_add(1);
}

namespace {

// The receiver's port serialises what all senders send it; what would wait
// behind a full buffer is dropped (false), as a switch does. Otherwise `at`
// becomes the time the datagram has left the port. port_mu held.
bool through_port(RankState& receiver, const Outgoing& o, double ns_per_byte,
                  std::chrono::nanoseconds port_buffer, common::TimePoint& at) {
  const common::TimePoint start = std::max(o.at, receiver.port_free_at);
  if (start - o.at > port_buffer) return false;
  receiver.port_free_at =
      start + std::chrono::nanoseconds(std::llround(static_cast<double>(o.size) * ns_per_byte));
  at = receiver.port_free_at;
  const auto queued = static_cast<std::uint64_t>(
      static_cast<double>(std::chrono::nanoseconds(at - o.at).count()) / ns_per_byte);
  receiver.port_peak_bytes = std::max(receiver.port_peak_bytes, queued);
  return true;
}

// Only the receiver of `key` sees the damage, so it gets its own copy, one
// byte changed where the fault model says.
std::shared_ptr<const std::byte[]> corrupted_copy(const FaultKey& key, const Outgoing& o) {
  auto copy = std::make_shared_for_overwrite<std::byte[]>(o.size);
  std::memcpy(copy.get(), o.data.get(), o.size);
  std::size_t pos = fault_hash(key, FaultKind::kCorruptPosition) % o.size;
  auto mask = static_cast<unsigned>(1 + fault_hash(key, FaultKind::kCorruptMask) % 255);
  copy[pos] ^= static_cast<std::byte>(mask);  // mask is never 0: the byte changes
  return copy;
}

}  // namespace

void FabricImpl::fan_out(Group& g, int sender, std::span<const Outgoing> batch) {
  if (batch.empty()) return;
  // Summed locally and published once: many threads fanning out at once
  // would otherwise fight over the counters' cache lines.
  std::uint64_t lost = 0, duplicated = 0, reordered = 0, corrupted = 0, overrun = 0, port_drops = 0;
  const bool ports = config.port_buffer_bytes > 0 && config.link_gbit_per_s > 0;
  const double ns_per_byte = ports ? 8.0 / config.link_gbit_per_s : 0.0;
  const auto port_buffer = std::chrono::nanoseconds(
      std::llround(static_cast<double>(config.port_buffer_bytes) * ns_per_byte));
  FaultKey key{config.seed, g.id, sender, 0, 0};

  std::shared_lock members_lock(g.mu);
  for (const GroupMember& m : g.members) {
    if (m.rank == sender || m.state->is_dead()) continue;
    key.receiver = m.rank;
    std::uint64_t rank_lost = 0, rank_lost_bytes = 0, rank_drops = 0, rank_drop_bytes = 0;
    std::unique_lock<std::mutex> port_lock;
    if (ports) port_lock = std::unique_lock(m.state->port_mu);
    std::lock_guard inbox_lock(m.inbox->mutex());
    for (const Outgoing& o : batch) {
      key.counter = o.counter;
      if (fault_happens(key, FaultKind::kLoss, config.loss)) {
        ++rank_lost;
        rank_lost_bytes += o.size;
        continue;
      }
      common::TimePoint at = o.at;
      if (ports && !through_port(*m.state, o, ns_per_byte, port_buffer, at)) {
        ++rank_drops;
        rank_drop_bytes += o.size;
        continue;
      }
      if (fault_happens(key, FaultKind::kReorder, config.reorder)) {
        at += reorder_delay(key);
        ++reordered;
      }
      const std::shared_ptr<const std::byte[]>* data = &o.data;
      std::shared_ptr<const std::byte[]> private_copy;
      if (o.size > 0 && fault_happens(key, FaultKind::kCorrupt, config.corrupt)) {
        private_copy = corrupted_copy(key, o);
        data = &private_copy;
        ++corrupted;
      }
      if (!m.inbox->push(at, *data, o.size)) ++overrun;
      if (fault_happens(key, FaultKind::kDuplicate, config.duplicate)) {
        ++duplicated;
        if (!m.inbox->push(at, *data, o.size)) ++overrun;
      }
    }
    lost += rank_lost;
    port_drops += rank_drops;
    if (rank_lost) {
      m.state->lost.fetch_add(rank_lost, std::memory_order_relaxed);
      m.state->lost_bytes.fetch_add(rank_lost_bytes, std::memory_order_relaxed);
    }
    if (rank_drops) {
      m.state->port_drops.fetch_add(rank_drops, std::memory_order_relaxed);
      m.state->port_drop_bytes.fetch_add(rank_drop_bytes, std::memory_order_relaxed);
    }
  }
  members_lock.unlock();

  auto add = [](std::atomic<std::uint64_t>& c, std::uint64_t v) {
    if (v) c.fetch_add(v, std::memory_order_relaxed);
  };
  add(counters.lost, lost);
  add(counters.duplicated, duplicated);
  add(counters.reordered, reordered);
  add(counters.corrupted, corrupted);
  add(counters.overrun, overrun);
  add(counters.port_drops, port_drops);
}

common::TimePoint RankState::book_port(common::TimePoint at, std::size_t bytes,
                                       double ns_per_byte) {
  std::lock_guard lock(port_mu);
  const common::TimePoint start = std::max(at, port_free_at);
  port_free_at =
      start + std::chrono::nanoseconds(std::llround(static_cast<double>(bytes) * ns_per_byte));
  return port_free_at;
}

std::optional<common::TimePoint> Mailbox::earliest() const {
  std::optional<common::TimePoint> t;
  for (const Message& m : queue) {
    if (!t || m.at < *t) t = m.at;
  }
  return t;
}

RankCounters FabricImpl::rank_counters(int rank) {
  std::shared_ptr<RankState> s;
  {
    std::lock_guard lock(mu_);
    auto it = ranks_.find(rank);
    if (it == ranks_.end()) return {};
    s = it->second;
  }
  RankCounters c;
  c.port_drops = s->port_drops.load();
  c.port_drop_bytes = s->port_drop_bytes.load();
  c.lost = s->lost.load();
  c.lost_bytes = s->lost_bytes.load();
  {
    std::lock_guard lock(s->port_mu);
    c.port_peak_bytes = s->port_peak_bytes;
  }
  std::lock_guard lock(s->peers_mu);
  c.reliable_peers = s->peers.size();
  return c;
}

std::optional<common::TimePoint> FabricImpl::next_arrival() {
  std::vector<std::shared_ptr<Group>> groups;
  std::vector<std::shared_ptr<Mesh>> meshes;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, g] : groups_) groups.push_back(g);
    for (auto& [id, m] : meshes_) meshes.push_back(m);
  }
  std::optional<common::TimePoint> t;
  auto consider = [&t](std::optional<common::TimePoint> c) {
    if (c && (!t || *c < *t)) t = c;
  };
  for (auto& g : groups) {
    std::shared_lock lock(g->mu);
    for (const GroupMember& m : g->members) {
      if (!m.inbox->maybe_empty()) consider(m.inbox->earliest());
    }
  }
  for (auto& m : meshes) {
    for (auto& box : m->mailboxes) {
      std::lock_guard lock(box->mu);
      consider(box->earliest());
    }
  }
  return t;
}

// ---- Fabric ----------------------------------------------------------------

Fabric::Fabric(const FabricConfig& config) : impl_(std::make_shared<FabricImpl>(config)) {}

Fabric::~Fabric() = default;

const FabricConfig& Fabric::config() const { return impl_->config; }

std::unique_ptr<DatagramTransport> Fabric::join_datagram(std::uint64_t group, int rank, int node) {
  if (rank < 0)
    common::contract_violated("sim fabric: rank " + std::to_string(rank) + " is negative");
  return make_datagram_endpoint(impl_, group, rank, node < 0 ? rank : node);
}

std::unique_ptr<ReliableTransport> Fabric::join_reliable(std::uint64_t group, int rank, int size,
                                                         int node) {
  if (size <= 0 || rank < 0 || rank >= size) {
    common::contract_violated("sim fabric: rank " + std::to_string(rank) +
                              " is outside a mesh of " + std::to_string(size) + " ranks");
  }
  return make_reliable_endpoint(impl_, group, rank, size, node < 0 ? rank : node);
}

void Fabric::kill_rank(int rank) { impl_->kill(rank); }

std::chrono::steady_clock::time_point Fabric::now() const { return impl_->now(); }
void Fabric::advance(std::chrono::nanoseconds by) { impl_->advance(by); }

void Fabric::inject(std::uint64_t group, std::span<const std::byte> datagram) {
  // Delivered whatever its length: the hook exists to feed receivers
  // datagrams no well-behaved sender would produce.
  auto g = impl_->group(group);
  auto buf = std::make_shared_for_overwrite<std::byte[]>(datagram.size());
  if (!datagram.empty()) std::memcpy(buf.get(), datagram.data(), datagram.size());
  Outgoing o{std::move(buf), static_cast<std::uint32_t>(datagram.size()),
             g->stranger_counter.fetch_add(1), impl_->now() + impl_->config.latency};
  impl_->fan_out(*g, kStrangerRank, std::span<const Outgoing>(&o, 1));
}

FabricCounters Fabric::counters() const {
  const AtomicCounters& c = impl_->counters;
  FabricCounters out;
  out.sent = c.sent.load();
  out.delivered = c.delivered.load();
  out.lost = c.lost.load();
  out.duplicated = c.duplicated.load();
  out.reordered = c.reordered.load();
  out.corrupted = c.corrupted.load();
  out.overrun = c.overrun.load();
  out.port_drops = c.port_drops.load();
  out.reliable_messages = c.reliable_messages.load();
  out.reliable_bytes = c.reliable_bytes.load();
  return out;
}

RankCounters Fabric::rank_counters(int rank) const { return impl_->rank_counters(rank); }

std::optional<std::chrono::steady_clock::time_point> Fabric::next_arrival() const {
  return impl_->next_arrival();
}

}  // namespace mccl::transport::sim
