// The InfiniBand UD-multicast datagram transport: one communicator = one
// multicast group on one HCA port, one UD QP.
//
// Setup (create_ib_transport): the port is the config's device (MCCL_IB_DEV:
// "mlx5_0:1", or "mlx5_0" for its first active port) or the first active
// InfiniBand port of any device. The group is joined through rdma_cm on the
// port's IPoIB address (MCCL_IB_IPOIB_IFACE, or the interface whose rdma_cm
// binding lands on the port): either the IPv4 group derived from the tag
// (rdma_cm maps it to an MGID and the SM creates the group) or the MGID in
// MCCL_IB_MGID (for subnets whose SM pre-creates groups). The QP is then
// attached to the group with ibv_attach_mcast. Its Q_Key is derived from
// the tag, so communicators sharing an MGID never see each other's data.
//
// MTU: caps().mtu is the port's active MTU (up to 4096), capped by the
// IPoIB interface's MTU + 4 in datagram mode (that is the group's MTU when
// rdma_cm created it). The 40-byte GRH the HCA writes in front of every
// received datagram is not counted: it is not on the wire.
//
// Receives: a ring of rx_depth (MCCL_IB_RX_DEPTH) posted buffers (GRH + MTU
// each), each reposted as soon as its datagram has been handed to the
// handler. A datagram that finds no buffer posted is dropped by the HCA;
// the protocol repairs it. The sender's own datagrams come back (the HCA
// loops them to every attached QP, its own included); poll() drops them by
// source QPN and LID: caps().loopback is false.
//
// Sends: each datagram is copied (header, then payload) into a slot of a
// registered staging ring with one slot per send-queue entry and posted
// with two SGEs; datagrams up to the QP's max_inline_data go inline
// instead (no copy, no slot). A send() posts its datagrams as one chain;
// one in signal_every (MCCL_IB_SIGNAL_EVERY) is signaled, and its
// completion frees the slots of every send before it. A full ring is
// "busy".
//
// Sleeping: wait_fd() is the completion channel. poll() takes the pending
// events off it and, when it found the receive queue empty, arms the
// receive CQ (ibv_req_notify_cq) and polls once more (a completion that
// came between the last poll and the arming raises no event). send()
// arms the send CQ when it returns busy, so a sleeping engine wakes when
// slots free up. Events are acknowledged at once.
//
// Threads: send() and poll() are called by one thread at a time (the
// context's progress thread); counters() from any.
//
// Limits (see docs/infiniband.md): InfiniBand link layer only (RoCE ports
// are refused); P_Key index 0; a group the SM drops after a subnet event
// is not rejoined.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "transport/datagram.h"

namespace mccl::transport::ibud {

class Verbs;  // verbs.h: the seam over libibverbs and librdmacm

// Every knob as a value: the transport reads no setting. Communicator
// creation fills it from the MCCL_IB_* settings (setup/transport_settings.h);
// the defaults are theirs.
struct IbConfig {
  std::uint32_t comm_tag = 0;     // communicator tag (agreed by all ranks)
  std::uint64_t job_salt = 0;     // keeps two jobs' groups and Q_Keys apart
  std::string device;             // "mlx5_0:1" or "mlx5_0"; "" = the first active port
  std::string mgid;               // "" = the group derived from the tag
  std::string ipoib_iface;        // "" = found from the port
  std::size_t rx_depth = 4096;    // posted receive buffers (the device's limits cap it)
  std::size_t sq_depth = 1024;    // send-queue entries = staging slots
  std::size_t signal_every = 64;  // one signaled send in this many
  std::size_t max_mtu = 0;        // 0 = the port's (and the group's) MTU; else at most this
  std::chrono::milliseconds join_timeout{10000};
  int rank = -1;                 // for log lines only
  std::shared_ptr<Verbs> verbs;  // null = libibverbs/librdmacm; tests pass a FakeFabric host
};

// What the transport resolved at creation, for logs and tests.
struct IbInfo {
  std::string device;
  int port = 0;
  std::uint16_t lid = 0;
  std::uint32_t qp_num = 0;
  std::uint32_t qkey = 0;
  std::string mgid;  // as joined
  std::uint16_t mlid = 0;
  std::string group;  // "239.1.2.3" (derived) or "" (MGID given)
  std::string ipoib_iface;
  std::string ipoib_addr;
  std::size_t port_mtu = 0;
  std::size_t mtu = 0;  // caps().mtu
  std::size_t rx_depth = 0;
  std::size_t sq_depth = 0;
  std::size_t signal_every = 0;
  std::size_t max_inline = 0;  // granted by the provider
};

// Monotonic counters since creation.
struct IbCounters {
  std::uint64_t datagrams_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t inline_sent = 0;         // ... of which inline
  std::uint64_t datagrams_received = 0;  // handed to a handler
  std::uint64_t bytes_received = 0;
  std::uint64_t own_dropped = 0;    // our own datagrams, looped back
  std::uint64_t short_dropped = 0;  // shorter than the GRH: malformed
  std::uint64_t send_busy = 0;      // send() calls that accepted less than the batch
  std::uint64_t send_completions = 0;
  std::uint64_t cq_events = 0;  // completion-channel events consumed
};

class IbTransport : public DatagramTransport {
 public:
  virtual IbCounters counters() const = 0;
  virtual const IbInfo& info() const = 0;
};

// Opens the port, creates every verbs resource and joins the group;
// blocking (the join waits for the subnet manager). On failure everything
// made so far is released. Errors: kUnavailable (no device: "no
// InfiniBand device: ibv_get_device_list: ENOSYS ..."; no active port, no
// IPoIB address, join refused or unanswered), kInvalidArgument (bad
// setting or config), kTransportError (a verbs call failed).
common::Status create_ib_transport(const IbConfig& config, std::unique_ptr<DatagramTransport>& out);

// The ibud-specific view of a transport made by create_ib_transport, or
// nullptr for any other transport.
inline IbTransport* as_ib(DatagramTransport* t) { return dynamic_cast<IbTransport*>(t); }
inline const IbTransport* as_ib(const DatagramTransport* t) {
  return dynamic_cast<const IbTransport*>(t);
}

// ok when this node has an InfiniBand port in state ACTIVE (what automatic
// transport selection asks): the port `device` names as IbConfig::device
// does, or any; else kUnavailable. `reason` says which port, or why not
// ("no InfiniBand device: ibv_get_device_list: ENOSYS ...").
common::Status probe_ib(const std::string& device, std::string& reason);
common::Status probe_ib(Verbs& verbs, const std::string& device, std::string& reason);

// For mccl_info: every device and port (link layer, state, LID, active
// MTU, multicast limits), the IPoIB interface rdma_cm would use, and
// whether a multicast group can be joined there (a test join of a private
// group when `try_join`). "no InfiniBand device (reason)" without one.
std::string describe_ib_devices(bool try_join = true);
std::string describe_ib_devices(Verbs& verbs, bool try_join = true);

}  // namespace mccl::transport::ibud
