// The Verbs seam over libibverbs and librdmacm (real_verbs.cc: devices,
// memory, queues and the data path; real_cm.cc: IPoIB and multicast joins
// through rdma_cm). Each object owns exactly one rdma-core resource and
// releases it in its destructor; a failed release is logged, not thrown.
#pragma once

#include <infiniband/verbs.h>

#include <vector>

#include "transport/ibud/verbs.h"

namespace mccl::transport::ibud {

struct RealDevice final : Device {
  ~RealDevice() override;
  ibv_context* ctx = nullptr;
};
struct RealPd final : Pd {
  ~RealPd() override;
  ibv_pd* pd = nullptr;
};
struct RealMr final : Mr {
  ~RealMr() override;
  ibv_mr* mr = nullptr;
};
struct RealChannel final : CompChannel {
  ~RealChannel() override;
  ibv_comp_channel* ch = nullptr;
};
struct RealCq final : Cq {
  ~RealCq() override;
  ibv_cq* cq = nullptr;
  std::vector<ibv_wc> wcs;  // poll space; a CQ is polled by one thread at a time
};
struct RealQp final : Qp {
  ~RealQp() override;
  ibv_qp* qp = nullptr;
  // Translation space for one post call; a QP is posted to by one thread.
  std::vector<ibv_send_wr> send_wrs;
  std::vector<ibv_sge> send_sges;
  std::vector<ibv_recv_wr> recv_wrs;
  std::vector<ibv_sge> recv_sges;
};
struct RealAh final : Ah {
  ~RealAh() override;
  ibv_ah* ah = nullptr;
};
struct RealAttachment final : McastAttachment {
  ~RealAttachment() override;
  ibv_qp* qp = nullptr;
  ibv_gid gid{};
  std::uint16_t lid = 0;
};

// Logs a release that failed (the destructors cannot report it otherwise).
void log_release_failure(const char* call, int err);

class RealVerbs final : public Verbs {
 public:
  common::Status device_names(std::vector<std::string>& out) override;
  common::Status open_device(const std::string& name, std::unique_ptr<Device>& out) override;
  common::Status query_device(Device& dev, DeviceAttr& out) override;
  common::Status query_port(Device& dev, int port, PortAttr& out) override;
  common::Status alloc_pd(Device& dev, std::unique_ptr<Pd>& out) override;
  common::Status reg_mr(Pd& pd, void* addr, std::size_t length, std::unique_ptr<Mr>& out) override;
  common::Status create_comp_channel(Device& dev, std::unique_ptr<CompChannel>& out) override;
  common::Status create_cq(Device& dev, int cqe, CompChannel* channel,
                           std::unique_ptr<Cq>& out) override;
  common::Status create_qp(Pd& pd, Cq& send_cq, Cq& recv_cq, const QpInit& init,
                           std::unique_ptr<Qp>& out) override;
  common::Status modify_qp(Qp& qp, const QpModify& to) override;
  common::Status create_ah(Pd& pd, const McastAddress& to, std::unique_ptr<Ah>& out) override;
  common::Status attach_mcast(Qp& qp, const Gid& mgid, std::uint16_t mlid,
                              std::unique_ptr<McastAttachment>& out) override;
  common::Status find_ipoib(const std::string& device, int port, const std::string& iface,
                            IpoibIface& out) override;  // real_cm.cc
  common::Status join_multicast(const JoinRequest& req,
                                std::unique_ptr<McastJoin>& out) override;  // real_cm.cc
  common::Status post_send(Qp& qp, std::span<const SendWr> wrs, std::size_t& posted) override;
  common::Status post_recv(Qp& qp, std::span<const RecvWr> wrs, std::size_t& posted) override;
  common::Status poll_cq(Cq& cq, std::span<Wc> out, std::size_t& n) override;
  common::Status req_notify_cq(Cq& cq) override;
  common::Status get_cq_event(CompChannel& channel, Cq*& cq) override;
};

}  // namespace mccl::transport::ibud
