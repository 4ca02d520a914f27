// An in-memory network: the fabric that unit and in-process tests run the
// real protocol on. It models what matters to a reliable multicast protocol
// (loss, duplication, reordering, delay, corruption, a finite injection
// rate, a finite receive queue) and is reproducible: every fault decision is
// a pure function of (seed, group, sender, sender's datagram number,
// receiver), so the same seed gives the same faults whatever the thread
// interleaving.
//
// Thread-safe: endpoints of different ranks may be used from different
// threads at once; one endpoint is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "transport/datagram.h"
#include "transport/reliable.h"

namespace mccl::transport::sim {

struct FabricConfig {
  double loss = 0.0;
  double duplicate = 0.0;
  double reorder = 0.0;
  double corrupt = 0.0;
  std::chrono::nanoseconds latency{0};
  double link_gbit_per_s = 0.0;  // per-sender injection rate; 0 = unlimited
  // The receivers' switch ports: with a link rate and a buffer here, each
  // receiver's link also drains at link_gbit_per_s, and a datagram that
  // would queue behind more than this many bytes is dropped (incast: roots
  // that together send faster than one receiver's link). 0 = no port model.
  // With it, a sender's queue holds at most half a buffer's drain time.
  std::size_t port_buffer_bytes = 0;
  // The senders' token bucket (needs a link rate): a root may send this
  // many bytes at the whole link rate before its share of the rate
  // (share_link) paces it, as a host's pacer with a bucket does (the UDP
  // transport's). The bucket is sized by transport::root_burst_bytes from
  // this, the roots injecting at once and the incast budget the protocol
  // sets (set_incast_budget). 0: every datagram is paced at the share, no
  // burst at all.
  std::size_t sender_burst_bytes = 0;
  // Reliable messages take time too: they queue on the sender's link
  // behind its datagrams and on the receiver's port (never dropped, as
  // TCP's own flow control would keep them), and arrive after the latency.
  // Needs a link rate. Off: delivered at once.
  bool timed_reliable = false;
  // The endpoints cannot tell the link rate (link_rate_unknown), as a NIC
  // that reports no speed: a root then sends at the whole link rate
  // whatever share_link() says, unless the protocol hands it an estimate
  // (set_link_estimate), which paces it below the link. Needs a link rate.
  bool hide_link_rate = false;
  // The link, port and latency model run on a clock that stands still
  // until Fabric::advance() moves it, so what they do follows from the
  // order of sends, not from how fast the machine happens to drive the
  // ranks (a loaded test machine would otherwise form a different incast).
  // The protocol's loss deadlines belong on the same clock
  // (ProtocolConfig::clock). Off: the steady clock.
  bool virtual_time = false;
  std::size_t mtu = 1500;
  std::size_t receive_depth = 16384;  // datagrams queued per receiver
  std::uint64_t seed = 1;
};

// What the fabric did, summed over all groups.
struct FabricCounters {
  std::uint64_t sent = 0;       // datagrams handed to send()
  std::uint64_t delivered = 0;  // datagrams handed to a receiver's poll()
  std::uint64_t lost = 0;       // dropped by the loss model
  std::uint64_t duplicated = 0;
  std::uint64_t reordered = 0;
  std::uint64_t corrupted = 0;
  std::uint64_t overrun = 0;     // dropped because a receive queue was full
  std::uint64_t port_drops = 0;  // dropped by a receiver's full switch port
  std::uint64_t reliable_messages = 0;
  std::uint64_t reliable_bytes = 0;
};

// One rank's view of the fabric, summed over its groups: what its switch
// port dropped, what the loss model took from it, and the peers it
// exchanged reliable messages with (the connections a real transport would
// have had to hold).
struct RankCounters {
  std::uint64_t port_drops = 0;  // datagrams its port dropped (full queue)
  std::uint64_t port_drop_bytes = 0;
  std::uint64_t lost = 0;  // datagrams the loss model dropped on the way to it
  std::uint64_t lost_bytes = 0;
  std::uint64_t port_peak_bytes = 0;  // the most its port queue ever held
  std::size_t reliable_peers = 0;     // distinct peers it sent to or received from
};

class FabricImpl;

class Fabric {
 public:
  explicit Fabric(const FabricConfig& config);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  const FabricConfig& config() const;

  // Joins `rank` to multicast group `group` (a communicator's tag). The
  // endpoint receives every datagram any member sends to the group, its own
  // excluded (caps().loopback is false). Endpoints may outlive the Fabric
  // object only if they are not used after it is gone. `node`: the process
  // (NIC) the member runs in, which kill_rank() and the link model name;
  // -1 for `rank` itself. They differ in a communicator made by a shrink,
  // whose ranks are renumbered.
  std::unique_ptr<DatagramTransport> join_datagram(std::uint64_t group, int rank, int node = -1);

  // The reliable mesh of `size` ranks named by `group`; `node` as above.
  std::unique_ptr<ReliableTransport> join_reliable(std::uint64_t group, int rank, int size,
                                                   int node = -1);

  // Node `rank` dies in every group: its sends and polls fail, its
  // datagrams stop, and every other member's reliable poll reports it once
  // through on_peer_failure.
  void kill_rank(int rank);

  // Test hook: delivers `datagram` to every member of `group` as if sent by
  // a stranger (subject to the same fault model).
  void inject(std::uint64_t group, std::span<const std::byte> datagram);

  FabricCounters counters() const;
  // Zeros for a rank that never joined.
  RankCounters rank_counters(int rank) const;

  // The earliest time at which a datagram or message queued now becomes
  // visible to its receiver; nullopt when nothing is queued. A driver of
  // ranks in virtual time skips ahead to it when no rank has work.
  std::optional<std::chrono::steady_clock::time_point> next_arrival() const;

  // The fabric's clock: the steady clock, or the virtual one
  // (FabricConfig::virtual_time), which advance() moves forward and which
  // is ignored on the steady clock.
  std::chrono::steady_clock::time_point now() const;
  void advance(std::chrono::nanoseconds by);

 private:
  std::shared_ptr<FabricImpl> impl_;
};

}  // namespace mccl::transport::sim
