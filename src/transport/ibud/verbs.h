// The seam between the ibud transport and rdma-core: every libibverbs and
// librdmacm call the transport makes goes through the abstract class Verbs.
// Two implementations exist:
//  - make_real_verbs() (real_verbs.cc, real_cm.cc): libibverbs/librdmacm;
//  - FakeFabric::add_host() (fake_verbs.h): in memory, for tests on
//    machines without an HCA, with the hardware's behaviour on the points
//    the transport depends on (see fake_verbs.h).
//
// Objects. Every verbs resource is an owned object (std::unique_ptr);
// destroying it releases the resource (ibv_destroy_qp, ibv_dereg_mr,
// ibv_detach_mcast, rdma_leave_multicast, ...). An object must be
// destroyed before the objects it was made from (an MR before its PD, a QP
// before its CQs, a CQ before its completion channel, everything before
// its device): declare them in that order and the compiler does the rest.
// A Verbs implementation only ever receives objects it made itself.
//
// Data-path calls (post_send, post_recv, poll_cq, req_notify_cq,
// get_cq_event) never block. Control-path calls may; join_multicast waits
// for the subnet manager up to its timeout.
#pragma once

#include <infiniband/verbs.h>  // enum values only: ibv_wc_status, ibv_port_state

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/status.h"

namespace mccl::transport::ibud {

using Gid = std::array<std::uint8_t, 16>;

// A UD receive buffer starts with the 40-byte Global Route Header the HCA
// writes in front of the payload of every datagram that carries one (all
// multicast datagrams do). It is not part of the MTU.
inline constexpr std::size_t kGrhBytes = 40;
// Destination QPN of every multicast send.
inline constexpr std::uint32_t kMulticastQpn = 0xFFFFFF;

struct DeviceAttr {
  int ports = 0;  // phys_port_cnt; ports are numbered from 1
  int max_qp_wr = 0;
  int max_sge = 0;
  int max_cqe = 0;
  int max_mcast_grp = 0;        // multicast groups the HCA can attach
  int max_mcast_qp_attach = 0;  // QPs per group
};

struct PortAttr {
  ibv_port_state state = IBV_PORT_NOP;
  std::size_t active_mtu = 0;  // bytes: 256 .. 4096
  bool infiniband = true;      // link layer InfiniBand (false: Ethernet, RoCE)
  std::uint16_t lid = 0;
  Gid gid{};  // GID index 0
};

// A joined multicast group, as the subnet administrator answered: what an
// address handle for sending to it needs.
struct McastAddress {
  Gid mgid{};
  std::uint16_t mlid = 0;
  std::uint8_t port = 0;
  std::uint8_t sl = 0;
  std::uint8_t sgid_index = 0;
  std::uint8_t hop_limit = 0;
  std::uint8_t traffic_class = 0;
  std::uint8_t static_rate = 0;
  std::uint32_t flow_label = 0;
};

// The IPv4 interface an rdma_cm id is bound to (IPoIB).
struct IpoibIface {
  std::string name;  // "ib0"
  std::string addr;  // "10.1.2.3"
  int mtu = 0;       // netdev MTU; in datagram mode the broadcast group's MTU - 4
  bool datagram_mode = true;
};

struct JoinRequest {
  std::string device;            // the cm id must land on this device and port,
  int port = 0;                  // else the join fails naming where it landed
  std::string bind_addr;         // IPv4 of the IPoIB interface
  std::uint32_t group_ipv4 = 0;  // host order; rdma_cm maps it to an MGID, or
  std::optional<Gid> mgid;       // exactly this MGID (given to rdma_cm as AF_IB)
  std::chrono::milliseconds timeout{10000};
};

struct QpInit {
  std::uint32_t max_send_wr = 0;
  std::uint32_t max_recv_wr = 0;
  std::uint32_t max_send_sge = 2;
  std::uint32_t max_inline = 0;  // asked for; Qp::max_inline is what was granted
};

enum class QpState { kInit, kRtr, kRts };

struct QpModify {
  QpState state = QpState::kInit;
  std::uint8_t port = 1;         // kInit only
  std::uint16_t pkey_index = 0;  // kInit only
  std::uint32_t qkey = 0;        // kInit only
  std::uint32_t sq_psn = 0;      // kRts only
};

struct Sge {
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;  // ignored for inline sends
};

class Ah;

struct SendWr {
  std::uint64_t wr_id = 0;
  std::array<Sge, 2> sge{};
  std::uint32_t num_sge = 0;
  bool signaled = false;     // IBV_SEND_SIGNALED; errors always complete
  bool inline_data = false;  // IBV_SEND_INLINE: data copied at post time
  const Ah* ah = nullptr;
  std::uint32_t remote_qpn = kMulticastQpn;
  std::uint32_t remote_qkey = 0;
};

struct RecvWr {
  std::uint64_t wr_id = 0;
  Sge sge;
};

struct Wc {
  std::uint64_t wr_id = 0;
  ibv_wc_status status = IBV_WC_SUCCESS;
  bool recv = false;           // IBV_WC_RECV, else a send
  std::uint32_t byte_len = 0;  // receives: GRH included
  std::uint32_t src_qp = 0;
  std::uint16_t slid = 0;
  bool grh = false;  // IBV_WC_GRH
  std::uint32_t vendor_err = 0;
};

// ---- owned objects ---------------------------------------------------------
class Device {
 public:
  virtual ~Device() = default;
  std::string name;
};
class Pd {
 public:
  virtual ~Pd() = default;
};
class Mr {
 public:
  virtual ~Mr() = default;
  std::byte* addr = nullptr;
  std::size_t length = 0;
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
};
class CompChannel {
 public:
  virtual ~CompChannel() = default;
  int fd = -1;  // non-blocking; readable while a CQ event is pending
};
class Cq {
 public:
  virtual ~Cq() = default;
};
class Qp {
 public:
  virtual ~Qp() = default;
  std::uint32_t qp_num = 0;
  std::uint32_t max_inline = 0;
};
class Ah {
 public:
  virtual ~Ah() = default;
};
class McastAttachment {  // ibv_attach_mcast; detaches when destroyed
 public:
  virtual ~McastAttachment() = default;
};
class McastJoin {  // rdma_join_multicast; leaves when destroyed
 public:
  virtual ~McastJoin() = default;
  McastAddress address;
};

// Declares, in an implementation of Verbs, every call it overrides, so that
// the list is written once here (RealVerbs and the test's FakeVerbs).
#define MCCL_VERBS_OVERRIDES                                                                       \
  common::Status device_names(std::vector<std::string>& out) override;                             \
  common::Status open_device(const std::string& name, std::unique_ptr<Device>& out) override;      \
  common::Status query_device(Device& dev, DeviceAttr& out) override;                              \
  common::Status query_port(Device& dev, int port, PortAttr& out) override;                        \
  common::Status alloc_pd(Device& dev, std::unique_ptr<Pd>& out) override;                         \
  common::Status reg_mr(Pd& pd, void* addr, std::size_t length, std::unique_ptr<Mr>& out)          \
      override;                                                                                    \
  common::Status create_comp_channel(Device& dev, std::unique_ptr<CompChannel>& out) override;     \
  common::Status create_cq(Device& dev, int cqe, CompChannel* channel, std::unique_ptr<Cq>& out)   \
      override;                                                                                    \
  common::Status create_qp(Pd& pd, Cq& send_cq, Cq& recv_cq, const QpInit& init,                   \
                           std::unique_ptr<Qp>& out) override;                                     \
  common::Status modify_qp(Qp& qp, const QpModify& to) override;                                   \
  common::Status create_ah(Pd& pd, const McastAddress& to, std::unique_ptr<Ah>& out) override;     \
  common::Status attach_mcast(Qp& qp, const Gid& mgid, std::uint16_t mlid,                         \
                              std::unique_ptr<McastAttachment>& out) override;                     \
  common::Status find_ipoib(const std::string& device, int port, const std::string& iface,         \
                            IpoibIface& out) override;                                             \
  common::Status join_multicast(const JoinRequest& req, std::unique_ptr<McastJoin>& out) override; \
  common::Status post_send(Qp& qp, std::span<const SendWr> wrs, std::size_t& posted) override;     \
  common::Status post_recv(Qp& qp, std::span<const RecvWr> wrs, std::size_t& posted) override;     \
  common::Status poll_cq(Cq& cq, std::span<Wc> out, std::size_t& n) override;                      \
  common::Status req_notify_cq(Cq& cq) override;                                                   \
  common::Status get_cq_event(CompChannel& channel, Cq*& cq) override

class Verbs {
 public:
  virtual ~Verbs() = default;

  // Names of the RDMA devices. A NULL list (no kernel support: ENOSYS) is
  // kUnavailable with the reason; no device at all is ok and empty.
  virtual common::Status device_names(std::vector<std::string>& out) = 0;
  virtual common::Status open_device(const std::string& name, std::unique_ptr<Device>& out) = 0;
  virtual common::Status query_device(Device& dev, DeviceAttr& out) = 0;
  virtual common::Status query_port(Device& dev, int port, PortAttr& out) = 0;
  virtual common::Status alloc_pd(Device& dev, std::unique_ptr<Pd>& out) = 0;
  virtual common::Status reg_mr(Pd& pd, void* addr, std::size_t length,
                                std::unique_ptr<Mr>& out) = 0;
  virtual common::Status create_comp_channel(Device& dev, std::unique_ptr<CompChannel>& out) = 0;
  virtual common::Status create_cq(Device& dev, int cqe, CompChannel* channel,
                                   std::unique_ptr<Cq>& out) = 0;
  virtual common::Status create_qp(Pd& pd, Cq& send_cq, Cq& recv_cq, const QpInit& init,
                                   std::unique_ptr<Qp>& out) = 0;
  virtual common::Status modify_qp(Qp& qp, const QpModify& to) = 0;
  virtual common::Status create_ah(Pd& pd, const McastAddress& to, std::unique_ptr<Ah>& out) = 0;
  virtual common::Status attach_mcast(Qp& qp, const Gid& mgid, std::uint16_t mlid,
                                      std::unique_ptr<McastAttachment>& out) = 0;

  // The IPoIB interface of device:port: `iface` by name, or ("") the first
  // interface with an IPv4 address whose rdma_cm binding lands there.
  virtual common::Status find_ipoib(const std::string& device, int port, const std::string& iface,
                                    IpoibIface& out) = 0;
  // Joins (full member) through rdma_cm and waits for the answer.
  virtual common::Status join_multicast(const JoinRequest& req,
                                        std::unique_ptr<McastJoin>& out) = 0;

  // ---- data path: never blocks ----
  // Posts `wrs` as one chain; `posted` = how many were accepted before the
  // first one that failed (the status says why).
  virtual common::Status post_send(Qp& qp, std::span<const SendWr> wrs, std::size_t& posted) = 0;
  virtual common::Status post_recv(Qp& qp, std::span<const RecvWr> wrs, std::size_t& posted) = 0;
  virtual common::Status poll_cq(Cq& cq, std::span<Wc> out, std::size_t& n) = 0;
  // ibv_req_notify_cq(cq, 0): the channel gets one event at the next
  // completion added to `cq`.
  virtual common::Status req_notify_cq(Cq& cq) = 0;
  // Takes one pending event off the channel and acknowledges it; `cq` is
  // the CQ it was for, nullptr when none was pending.
  virtual common::Status get_cq_event(CompChannel& channel, Cq*& cq) = 0;
};

// libibverbs and librdmacm.
std::shared_ptr<Verbs> make_real_verbs();

using common::errno_text;  // "ENOSYS (Function not implemented)"
// "IBV_WC_LOC_LEN_ERR (local length error)".
std::string wc_status_text(ibv_wc_status status);

}  // namespace mccl::transport::ibud
