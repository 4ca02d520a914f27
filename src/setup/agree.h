// Communicator creation's agreements, one implementation for the
// application (src/api) and the offload daemon (src/offload/daemon): the
// hello exchange (tag, salt, transport, checksum, authentication and the
// key agreement of protocol/group_key.h, one more exchange when
// authenticating more than two ranks), the network interface and the chunk
// size. Each is collective over `oob` (Bootstrap::allgather, or the
// daemon's relay of it) and blocking; each returns a Status whose message
// starts with `who` ("rank 3: ") and lets what `oob` throws (a bootstrap
// timeout) and what a malformed setting throws (mccl::Error,
// kInvalidArgument) pass.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/coll_config.h"
#include "common/status.h"
#include "mccl/options.h"
#include "protocol/auth.h"
#include "transport/datagram.h"
#include "transport/oob.h"

namespace mccl::setup {

// What this rank brings.
struct Proposal {
  TransportKind transport = TransportKind::kAuto;  // as resolved from options; may be kAuto
  bool ib_usable = false;
  bool offloaded = false;
  std::uint64_t machine = 0;
  std::optional<bool> authenticate;  // CommOptions::authenticate; unset: MCCL_PROTO_AUTH
  // The communicator's membership epoch as this rank knows it: 0 for a
  // first creation or a joiner, the old one's plus 1 for a shrink or grow.
  std::uint32_t epoch = 0;
  std::uint32_t cores = 0;  // common::usable_cores(); 0 unknown
};

// What every rank agreed on.
struct Agreement {
  std::uint32_t tag = 0;                           // rank 0's
  std::uint64_t salt = 0;                          // rank 0's
  TransportKind transport = TransportKind::kAuto;  // resolved: never kAuto
  bool auth = false;
  // Every rank left MCCL_PROTO_AUTH to auto and it resolved on: agree_on_link
  // may still turn it off for a fast link.
  bool auth_auto = false;
  // Agreed by every rank through protocol/group_key.h, never sent; used
  // when `auth`. agree_on_link checks that every rank holds the same.
  protocol::AuthKey key{};
  // The slowest link rate any rank knows (agree_on_link), 0 when none
  // does: the incast budget follows it (protocol/incast.h).
  std::uint32_t slowest_link_mbit = 0;
  int local_index = 0;  // lower ranks on this rank's machine
  int local_ranks = 1;  // ranks on this rank's machine (one kernel, shared CPUs), itself included
  std::uint32_t epoch = 0;  // the largest any rank proposed
  // The fewest cores any rank has to itself: its cores over the ranks on its
  // machine, rounded down; 0 when a rank did not say. Picks the crossover
  // table (coll/tuning.h), so every rank must see the same number.
  std::int32_t cores_per_rank = 0;
  // The same, not rounded: 0.25 for 8 ranks on 2 cores. How much of a core
  // a compressed collective's codec can count on (coll/compress_choice.h).
  double core_share = 0;
  // Every rank's datagrams go over a loopback interface (agree_on_link): the
  // team is on one host and one network namespace. Picks the crossover
  // table with cores_per_rank.
  bool one_host = false;

  // What the collectives' algorithm table reads (common/coll_config.h).
  common::Placement placement() const {
    return {cores_per_rank, one_host, core_share > 0 && core_share < 1};
  }
};

// kMismatch when ranks chose different transports or engines, or disagree
// on MCCL_PROTO_CHECKSUM or on authentication; kInvalidArgument for a bad
// MCCL_PROTO_AUTH.
common::Status agree_on_hello(int rank, int size, const Proposal& mine,
                              const transport::OobAllgather& oob, const std::string& who,
                              Agreement& out);

// The UDP multicast interface: every rank takes part in the discovery
// exchange (transport/udp/discovery.h), also one that names its interface
// in MCCL_UDP_IFACE. `configured` stands in for MCCL_UDP_IFACE when given
// (the offload daemon passes its client's). `iface` is what to pass to the
// UDP transport and `because` why, for logs.
common::Status choose_udp_interface(int rank, const transport::OobAllgather& oob,
                                    std::string& iface, std::string& because,
                                    const std::optional<std::string>& configured = std::nullopt);

// What this rank's network is, once its transports exist.
struct LinkFacts {
  std::uint32_t mtu = 0;        // largest datagram, header included
  std::uint32_t rate_mbit = 0;  // link rate the sender paces to; 0 unknown (lo, veth, not UDP)
  bool loopback = false;        // UDP over a loopback interface
};

// This rank's facts from its datagram transport (the rate only for UDP).
LinkFacts link_facts(const transport::DatagramTransport& dgram);

// The chunk size, the slowest known link rate, whether every rank is on one
// host (Agreement::one_host) and, where every rank left it to auto,
// authentication;
// when authenticating, kMismatch unless every rank agreed on the same key.
//
// Every rank must cut streams the same way, so the smallest datagram any
// rank's network carries wins (kUnavailable when it leaves no room for
// data). `agreed.auth` turns off when `agreed.auth_auto` and some rank's
// known link rate exceeds MCCL_PROTO_AUTH_AUTO_MAX_MBIT where that is set
// (not by default: docs/security.md), and every rank sees the same rates,
// so every rank decides the same.
common::Status agree_on_link(int rank, int size, LinkFacts mine, const transport::OobAllgather& oob,
                             const std::string& who, Agreement& agreed, std::uint32_t& mtu);

// The rule agree_on_link applies, apart for tests: whether `auto`
// authenticates when the fastest known link runs at `fastest_mbit`
// (`max_mbit` 0: at any rate).
bool auto_auth_at_rate(std::uint32_t fastest_mbit, std::uint32_t max_mbit);

}  // namespace mccl::setup
