// The shared state behind Fabric and its endpoints. Endpoints hold a
// shared_ptr to it, so the Fabric object may go before they do.
//
// Locking: FabricImpl::mu_ guards the maps and is taken only when joining
// or killing; a group's member list has its own reader-writer lock (senders
// read it, joins and leaves write it); each inbox and mailbox has its own
// mutex. Nothing is locked in the other direction, so there is no cycle.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "transport/sim/inbox.h"
#include "transport/sim/sim_transport.h"

namespace mccl::transport::sim {

// One rank's life and its injection link, shared by all its groups: a rank
// has one NIC whatever number of communicators it is in.
struct RankState {
  explicit RankState(int r) : rank(r) {}
  bool is_dead() const { return dead.load(std::memory_order_relaxed); }

  const int rank;
  std::atomic<bool> dead{false};
  std::mutex link_mu;
  common::TimePoint link_free_at{};  // guarded by link_mu
  // The switch port towards this rank (FabricConfig::port_buffer_bytes).
  std::mutex port_mu;
  common::TimePoint port_free_at{};   // guarded by port_mu
  std::uint64_t port_peak_bytes = 0;  // guarded by port_mu
  // What the fabric took from this rank (Fabric::rank_counters).
  std::atomic<std::uint64_t> port_drops{0}, port_drop_bytes{0}, lost{0}, lost_bytes{0};
  // The peers it exchanged reliable messages with.
  std::mutex peers_mu;
  std::unordered_set<int> peers;  // guarded by peers_mu

  void note_peer(int peer) {
    std::lock_guard lock(peers_mu);
    peers.insert(peer);
  }
  // Books this rank's port for `bytes` arriving at `at` without dropping
  // (reliable traffic); returns when the last byte has left the port.
  common::TimePoint book_port(common::TimePoint at, std::size_t bytes, double ns_per_byte);
};

struct GroupMember {
  int rank;
  std::shared_ptr<Inbox> inbox;
  std::shared_ptr<RankState> state;
};

struct Group {
  explicit Group(std::uint64_t i) : id(i) {}
  const std::uint64_t id;
  std::shared_mutex mu;
  std::vector<GroupMember> members;                // guarded by mu
  std::atomic<std::uint64_t> stranger_counter{0};  // numbers injected datagrams
};

// A datagram after send() has accepted it, before fan-out.
struct Outgoing {
  std::shared_ptr<const std::byte[]> data;
  std::uint32_t size = 0;
  std::uint64_t counter = 0;  // the sender's datagram number, a fault-hash input
  common::TimePoint at{};     // arrival time before any reorder delay
};

struct Message {
  int from = -1;
  std::vector<std::byte> data;
  // When the receiver may see it (FabricConfig::timed_reliable; else the
  // epoch: at once). A sender's messages arrive in the order it sent them,
  // so delivering every ready message in queue order keeps that order.
  common::TimePoint at{};
};

struct Mailbox {
  std::mutex mu;
  std::deque<Message> queue;  // guarded by mu; one FIFO keeps every sender's order
  // The earliest `at` queued, for FabricImpl::next_arrival; caller holds mu.
  std::optional<common::TimePoint> earliest() const;
};

// The reliable mesh of one group: fixed size, built whole at first join so
// a message to a rank that has not joined yet waits in its mailbox.
struct Mesh {
  int size = 0;
  std::vector<std::shared_ptr<Mailbox>> mailboxes;
  std::vector<std::shared_ptr<RankState>> states;
};

struct AtomicCounters {
  std::atomic<std::uint64_t> sent{0};
  std::atomic<std::uint64_t> delivered{0};
  std::atomic<std::uint64_t> lost{0};
  std::atomic<std::uint64_t> duplicated{0};
  std::atomic<std::uint64_t> reordered{0};
  std::atomic<std::uint64_t> corrupted{0};
  std::atomic<std::uint64_t> overrun{0};
  std::atomic<std::uint64_t> port_drops{0};
  std::atomic<std::uint64_t> reliable_messages{0};
  std::atomic<std::uint64_t> reliable_bytes{0};
};

class FabricImpl {
 public:
  explicit FabricImpl(const FabricConfig& c)
      : config(c), virtual_now_(common::now().time_since_epoch().count()) {}

  const FabricConfig config;
  AtomicCounters counters;
  // Bumped by every kill, so reliable endpoints look for dead peers only
  // when something died.
  std::atomic<std::uint64_t> kill_epoch{0};

  std::shared_ptr<Group> group(std::uint64_t id);
  // Null, with `why` set, when `size` disagrees with the size the mesh was
  // created with. Member `rank` runs on `node`'s state (the others on their
  // rank's until they join).
  std::shared_ptr<Mesh> mesh(std::uint64_t id, int size, int rank, int node, common::Status& why);
  std::shared_ptr<RankState> rank_state(int rank);
  void kill(int rank);

  // The fabric's time: the steady clock, or the virtual one.
  common::TimePoint now() const {
    if (!config.virtual_time) return common::now();
    return common::TimePoint(common::TimePoint::duration(virtual_now_.load()));
  }
  void advance(std::chrono::nanoseconds by) {
    virtual_now_.fetch_add(std::chrono::duration_cast<common::TimePoint::duration>(by).count());
  }

  // Hands every datagram of `batch` from `sender` to every other live
  // member of `g`, through the fault model.
  void fan_out(Group& g, int sender, std::span<const Outgoing> batch);

  RankCounters rank_counters(int rank);
  std::optional<common::TimePoint> next_arrival();
  // ns per byte of the whole link (0: no link model).
  double link_ns_per_byte() const {
    return config.link_gbit_per_s > 0 ? 8.0 / config.link_gbit_per_s : 0.0;
  }

 private:
  std::shared_ptr<RankState> rank_state_locked(int rank);

  std::mutex mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Group>> groups_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Mesh>> meshes_;
  std::unordered_map<int, std::shared_ptr<RankState>> ranks_;
  std::atomic<common::TimePoint::rep> virtual_now_;  // FabricConfig::virtual_time
};

inline std::string killed_message(int rank) {
  return "rank " + std::to_string(rank) + " was killed";
}
inline std::string dead_peer_message(int rank) {
  return "peer rank " + std::to_string(rank) + " is dead";
}

// `node`: the RankState the member runs on (Fabric::join_datagram).
std::unique_ptr<DatagramTransport> make_datagram_endpoint(std::shared_ptr<FabricImpl> fabric,
                                                          std::uint64_t group, int rank, int node);
std::unique_ptr<ReliableTransport> make_reliable_endpoint(std::shared_ptr<FabricImpl> fabric,
                                                          std::uint64_t group, int rank, int size,
                                                          int node);

}  // namespace mccl::transport::sim
