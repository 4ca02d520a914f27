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
  // find_ipoib and join_multicast in real_cm.cc.
  MCCL_VERBS_OVERRIDES;
};

}  // namespace mccl::transport::ibud
