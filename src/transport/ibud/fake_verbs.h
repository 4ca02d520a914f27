// An in-memory InfiniBand fabric behind the Verbs seam, so the ibud
// transport (and the whole protocol over it) runs where there is no HCA.
// Each add_host() is one node with its HCA(s); every host's Verbs shares
// the fabric's multicast groups.
//
// What it does as the hardware does (each point is tested in
// tests/unit/ibud_fake_verbs_test.cc):
//  - a UD datagram that reaches a QP with no receive posted is dropped and
//    counted (no_recv_dropped), as is one whose Q_Key differs from the
//    receiving QP's (qkey_dropped); a remote_qkey with the high bit set
//    means "use the sender QP's Q_Key";
//  - a receive holds a 40-byte GRH (source GID, destination MGID, payload
//    length) and then the payload; byte_len counts both; a receive buffer
//    too small for them completes with IBV_WC_LOC_LEN_ERR;
//  - a send longer than the port MTU completes with IBV_WC_LOC_LEN_ERR
//    (always, even unsignaled) and the QP stops: later sends complete with
//    IBV_WC_WR_FLUSH_ERR;
//  - sends execute later than they are posted (at the host's next post or
//    poll), so a send buffer reused before its completion shows up as
//    wrong bytes at the receivers; inline sends copy at post time and fail
//    to post (EINVAL) above the QP's max_inline;
//  - selective signaling: an unsignaled WR holds its send-queue slot until
//    a later signaled one completes; posting to a full queue fails (ENOMEM);
//  - completions arrive in order per queue; a CQ that overflows fails;
//  - a multicast send reaches every QP attached to the MGID on a port that
//    joined it, the sender's own QP included (src_qp and slid tell);
//  - non-inline SGEs must lie in a memory region of the QP's PD with that
//    lkey (else IBV_WC_LOC_PROT_ERR);
//  - completion channels: req_notify arms a CQ for one event, the channel's
//    fd (an eventfd) is readable while an event is pending;
//  - no devices: ibv_get_device_list fails with ENOSYS (host option).
// Plus what hardware cannot do on demand: seeded random loss per
// (datagram, receiver), injected failures of named calls, counts of live
// objects and of objects destroyed before their children.
//
// Thread-safe (one mutex): hosts may be driven from different threads.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/ibud/verbs.h"

namespace mccl::transport::ibud {

struct FakePort {
  ibv_port_state state = IBV_PORT_ACTIVE;
  std::size_t mtu = 4096;  // active MTU
  bool infiniband = true;  // false: Ethernet link layer (RoCE)
};

struct FakeDevice {
  std::string name = "mlx5_0";
  std::vector<FakePort> ports{FakePort{}};  // port 1, 2, ...
};

struct FakeHost {
  std::vector<FakeDevice> devices{FakeDevice{}};
  bool no_kernel_support = false;  // ibv_get_device_list: NULL, ENOSYS
  // The IPoIB interface (on ipoib_device, port ipoib_port); "" = none.
  std::string ipoib_iface = "ib0";
  std::string ipoib_addr;  // "" = 10.202.<host>.1
  std::string ipoib_device = "mlx5_0";
  int ipoib_port = 1;
  int ipoib_mtu = 4092;
  bool ipoib_datagram = true;
};

struct FakeFabricConfig {
  double loss = 0.0;  // probability a datagram is lost on its way to one receiver QP
  std::uint64_t seed = 1;
  std::uint32_t max_inline = 220;  // create_qp fails (EINVAL) when more is asked
  std::uint32_t max_qp_wr = 32768;
  int max_sge = 30;
  int max_cqe = 4194303;
  int max_mcast_grp = 131072;
  int max_mcast_qp_attach = 240;
  // Injected failure: this call fails (kTransportError, "injected") on
  // every host: open_device, alloc_pd, reg_mr, create_comp_channel,
  // create_cq, create_qp, modify_qp, create_ah, attach_mcast, find_ipoib,
  // join_multicast. "" = none.
  std::string fail_call;
  bool join_refused = false;  // the SA refuses every join (RDMA_CM_EVENT_MULTICAST_ERROR)
};

struct FakeCounters {
  std::uint64_t sends_posted = 0;    // WRs accepted by post_send
  std::uint64_t sends_executed = 0;  // WRs the HCA put on the wire (or failed)
  std::uint64_t signaled = 0;        // send completions generated
  std::uint64_t inline_sends = 0;
  std::uint64_t delivered = 0;        // receive completions (success)
  std::uint64_t self_delivered = 0;   // ... of which to the sending QP itself
  std::uint64_t no_recv_dropped = 0;  // no receive posted at the QP
  std::uint64_t qkey_dropped = 0;
  std::uint64_t lost = 0;             // the random loss model
  std::uint64_t unrouted = 0;         // sent to an MGID nobody joined
  std::uint64_t send_len_errors = 0;  // longer than the MTU
  std::uint64_t recv_len_errors = 0;  // receive buffer too small
  std::uint64_t prot_errors = 0;      // SGE outside a registered region
  std::uint64_t cq_events = 0;        // completion-channel events raised
  std::uint64_t destroy_errors = 0;   // destroyed before its children (EBUSY on hardware)
};

class FakeFabricImpl;

class FakeFabric {
 public:
  explicit FakeFabric(const FakeFabricConfig& config = {});
  ~FakeFabric();
  FakeFabric(const FakeFabric&) = delete;
  FakeFabric& operator=(const FakeFabric&) = delete;

  // A new node. Each host's ports get their own LIDs; QPNs are numbered per
  // host from the same base, as HCAs do. The Verbs may outlive the
  // FakeFabric object.
  std::shared_ptr<Verbs> add_host(const FakeHost& host = {});

  FakeCounters counters() const;
  // Verbs objects (devices, PDs, MRs, CQs, QPs, AHs, attachments, joins,
  // channels) created and not yet destroyed, over all hosts.
  std::size_t live_objects() const;
  // QPs attached to `mgid` (0 when there is no such group).
  std::size_t attached(const Gid& mgid) const;
  void set_loss(double loss);
  void set_fail_call(const std::string& call);

 private:
  std::shared_ptr<FakeFabricImpl> impl_;
};

}  // namespace mccl::transport::ibud
