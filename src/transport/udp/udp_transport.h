// The UDP/IP multicast datagram transport: one communicator = one IPv4
// multicast group in 239.0.0.0/8 on one interface.
//
// Sockets. Each transport owns two UDP sockets:
//  - the receive socket, bound to group:port (not INADDR_ANY, and with
//    IP_MULTICAST_ALL off, so no other group's traffic reaches it) with
//    SO_REUSEADDR/SO_REUSEPORT so every rank of a host can bind the same
//    pair, joined to the group on the chosen interface (IP_ADD_MEMBERSHIP);
//  - the send socket, bound to the interface address and an ephemeral
//    port, connected to group:port, with IP_MULTICAST_IF = the interface,
//    IP_MULTICAST_TTL 1 (the group never leaves the subnet) and
//    IP_MULTICAST_LOOP on (ranks on the same host must hear each other).
// The send socket's ephemeral port is unique on the host, so the sender's
// own looped-back datagrams are recognisable by their source address:port
// and are dropped in the kernel by a BPF filter on the receive socket (and
// again in poll() should a kernel refuse the filter): caps().loopback is
// false, like the sim fabric's. One shared socket could not tell itself
// apart from another rank of the same host, which uses the same source
// address and port.
//
// Threads: send() and poll() use separate sockets and buffers, so one
// thread may send while another polls; two concurrent send() (or poll())
// calls are not allowed. Neither ever blocks (MSG_DONTWAIT).
//
// Multicast on the loopback interface (what MCCL_UDP_IFACE=auto picks when
// every rank shares one host):
// Linux delivers it without the MULTICAST link flag and without a
// 224.0.0.0/4 route, because this transport names the interface with
// IP_MULTICAST_IF; lo must only be up (in a fresh network namespace:
// `ip link set lo up`). Other interfaces need the MULTICAST flag
// (`ip link set <if> multicast on`); creation fails with kUnavailable
// naming the interface and the command otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/datagram.h"
#include "transport/udp/group.h"
#include "transport/udp/link_cost.h"

namespace mccl::transport::udp {

// Every knob as a value: the transport reads no setting. Communicator
// creation fills it from the MCCL_UDP_* settings (setup/transport_settings.h);
// the defaults are theirs, so a test sets only what it is about.
struct UdpConfig {
  std::string iface;           // interface name or IPv4 address (required: MCCL_UDP_IFACE's
                               // "auto" is resolved by the ranks first, discovery.h)
  std::uint32_t comm_tag = 0;  // communicator tag (agreed by all ranks)
  std::uint64_t job_salt = 0;  // mixed into the group address so two jobs do not collide
  double rate_mbit = 0;        // link rate the sender paces to, wire bits (link_cost.h;
                               // share_link divides it); 0 = the interface's speed; < 0 = unpaced
  std::size_t frame_overhead = kEthernetFrameOverhead;  // link bytes per datagram beyond its IP
                                                        // packet (link_cost.h)
  std::size_t rcvbuf_bytes = 32u << 20;  // receive buffer asked for; 0 = the kernel's default
  std::size_t max_datagram = 8972;       // the interface MTU - 28 caps it
  std::string gso = "auto";              // "auto", "on" or "off" (see UdpEndpoint)
  std::string gro = "auto";              // "auto", "on" or "off" (see UdpEndpoint)
  // Test hook: drop this many of every 1000 received datagrams, chosen by a
  // generator seeded with test_drop_seed; 0 = off.
  int test_drop_permille = 0;
  // 0: from comm_tag, the process id and the rank (logged at info).
  std::uint64_t test_drop_seed = 0;
  int rank = -1;  // for log lines only
};

// What the transport resolved at creation, for logs and tests.
struct UdpInfo {
  std::string iface_name;
  std::string iface_addr;
  int iface_mtu = 0;
  bool iface_loopback = false;  // IFF_LOOPBACK: every peer shares this host's kernel
  GroupAddress group;
  std::uint16_t send_port = 0;       // the send socket's ephemeral port
  std::size_t rcvbuf_requested = 0;  // bytes asked for
  std::size_t rcvbuf_effective = 0;  // SO_RCVBUF read back, halved: the kernel doubles it
  bool rcvbuf_forced = false;        // SO_RCVBUFFORCE worked (CAP_NET_ADMIN)
  double rate_mbit = 0;              // link rate paced to; 0 = unpaced
  std::size_t frame_overhead = 0;    // UdpConfig::frame_overhead
  bool rate_unknown = false;         // none given, the interface reports none, not loopback:
                                     // the protocol's estimate paces (set_link_estimate)
  bool rate_reported = false;        // rate_mbit is the interface's speed (may be wrong)
  const char* rate_source = "";      // where rate_mbit came from, for logs
  int test_drop_permille = 0;
  std::uint64_t test_drop_seed = 0;
  bool kernel_self_filter = false;  // own datagrams are dropped by the BPF filter
  bool gso = false;                 // UDP_SEGMENT accepted at creation (counters().gso_off later
                                    // says whether a send failure turned it off since)
  bool gro = false;                 // UDP_GRO on the receive socket
};

// Monotonic counters since creation.
struct UdpCounters {
  std::uint64_t datagrams_sent = 0;
  std::uint64_t bytes_sent = 0;          // UDP payload bytes
  std::uint64_t link_bytes_sent = 0;     // what they occupy on the link, as the pacer charges
                                         // it (link_cost.h)
  std::uint64_t datagrams_received = 0;  // handed to a handler
  std::uint64_t bytes_received = 0;
  std::uint64_t send_busy = 0;        // send() calls that accepted less than the batch
  std::uint64_t pacer_busy = 0;       // ... of which because the pacer had no tokens
  std::uint64_t own_dropped = 0;      // own datagrams that got past the kernel filter
  std::uint64_t foreign_dropped = 0;  // from a source address no member has (accept_only_from)
  std::uint64_t test_dropped = 0;     // dropped by the test hook
  std::uint64_t truncated = 0;        // longer than caps().mtu: dropped
  std::uint64_t messages_sent = 0;    // sendmmsg messages: a GSO run counts once
  std::uint64_t gso_sends = 0;        // ... of which carried several datagrams (UDP_SEGMENT)
  std::uint64_t reads = 0;            // messages read (recvmmsg entries), coalesced or not
  std::uint64_t coalesced_reads = 0;  // ... of which carried several datagrams (UDP_GRO)
  // Landing (transport/datagram.h): datagrams whose payload the kernel
  // wrote where it belongs, and payload bytes copied back out of landings
  // that held another datagram than the one expected.
  std::uint64_t landed = 0;
  std::uint64_t copied_back_bytes = 0;
  bool gso_off = false;  // MCCL_UDP_GSO=auto fell back after the kernel refused it
};

class UdpTransport : public DatagramTransport {
 public:
  virtual UdpCounters counters() const = 0;
  virtual const UdpInfo& info() const = 0;
  // Drops received datagrams whose source IPv4 address is none of
  // `members` (the ranks' info().iface_addr), counted in foreign_dropped
  // and reported to the handler (on_foreign_datagrams). Where the members
  // share one address (one host) there is nothing to tell apart and no
  // filter: the MAC is the defence there. Source addresses can be forged
  // on a shared segment, so this only spares the MAC check for strangers
  // elsewhere. kInvalidArgument for an address that is not IPv4. Call
  // before the first poll().
  virtual common::Status accept_only_from(const std::vector<std::string>& members) = 0;
};

// Creates the sockets and joins the group. Errors: kInvalidArgument (bad
// config, unknown interface), kUnavailable (interface down or
// without multicast, no route), kTransportError (a socket call failed).
common::Status create_udp_transport(const UdpConfig& config,
                                    std::unique_ptr<DatagramTransport>& out);

// The UDP-specific view of a transport made by create_udp_transport, or
// nullptr for any other transport.
inline UdpTransport* as_udp(DatagramTransport* t) { return dynamic_cast<UdpTransport*>(t); }
inline const UdpTransport* as_udp(const DatagramTransport* t) {
  return dynamic_cast<const UdpTransport*>(t);
}

}  // namespace mccl::transport::udp
