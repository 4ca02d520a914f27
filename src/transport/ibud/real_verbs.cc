#include "transport/ibud/real_verbs.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "transport/ibud/group.h"

namespace mccl::transport::ibud {

using common::Status;

namespace {

Status fail(const std::string& call, int err) {
  return common::transport_error(call + ": " + errno_text(err));
}

// Runs `fn` over the device list; a NULL list is kUnavailable (no kernel
// support: ibv_get_device_list sets ENOSYS).
template <typename Fn>
Status with_device_list(Fn fn) {
  int n = 0;
  errno = 0;
  ibv_device** list = ::ibv_get_device_list(&n);
  if (list == nullptr) {
    return common::unavailable_error("ibv_get_device_list: " +
                                     errno_text(errno != 0 ? errno : ENODEV));
  }
  Status st = fn(list, n);
  ::ibv_free_device_list(list);
  return st;
}

}  // namespace

std::string wc_status_text(ibv_wc_status status) {
  static constexpr const char* kNames[] = {"IBV_WC_SUCCESS",           "IBV_WC_LOC_LEN_ERR",
                                           "IBV_WC_LOC_QP_OP_ERR",     "IBV_WC_LOC_EEC_OP_ERR",
                                           "IBV_WC_LOC_PROT_ERR",      "IBV_WC_WR_FLUSH_ERR",
                                           "IBV_WC_MW_BIND_ERR",       "IBV_WC_BAD_RESP_ERR",
                                           "IBV_WC_LOC_ACCESS_ERR",    "IBV_WC_REM_INV_REQ_ERR",
                                           "IBV_WC_REM_ACCESS_ERR",    "IBV_WC_REM_OP_ERR",
                                           "IBV_WC_RETRY_EXC_ERR",     "IBV_WC_RNR_RETRY_EXC_ERR",
                                           "IBV_WC_LOC_RDD_VIOL_ERR",  "IBV_WC_REM_INV_RD_REQ_ERR",
                                           "IBV_WC_REM_ABORT_ERR",     "IBV_WC_INV_EECN_ERR",
                                           "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
                                           "IBV_WC_RESP_TIMEOUT_ERR",  "IBV_WC_GENERAL_ERR"};
  const auto i = static_cast<std::size_t>(status);
  std::string name = i < std::size(kNames) ? kNames[i] : "status " + std::to_string(i);
  return name + " (" + ::ibv_wc_status_str(status) + ")";
}

void log_release_failure(const char* call, int err) {
  common::logf(common::LogLevel::kWarn, -1, "ibud transport: %s failed: %s", call,
               errno_text(err).c_str());
}

RealDevice::~RealDevice() {
  if (ctx != nullptr && ::ibv_close_device(ctx) != 0)
    log_release_failure("ibv_close_device", errno);
}
RealPd::~RealPd() {
  if (int rc = pd != nullptr ? ::ibv_dealloc_pd(pd) : 0) log_release_failure("ibv_dealloc_pd", rc);
}
RealMr::~RealMr() {
  if (int rc = mr != nullptr ? ::ibv_dereg_mr(mr) : 0) log_release_failure("ibv_dereg_mr", rc);
}
RealChannel::~RealChannel() {
  if (ch != nullptr && ::ibv_destroy_comp_channel(ch) != 0) {
    log_release_failure("ibv_destroy_comp_channel", errno);
  }
}
RealCq::~RealCq() {
  if (int rc = cq != nullptr ? ::ibv_destroy_cq(cq) : 0) log_release_failure("ibv_destroy_cq", rc);
}
RealQp::~RealQp() {
  if (int rc = qp != nullptr ? ::ibv_destroy_qp(qp) : 0) log_release_failure("ibv_destroy_qp", rc);
}
RealAh::~RealAh() {
  if (int rc = ah != nullptr ? ::ibv_destroy_ah(ah) : 0) log_release_failure("ibv_destroy_ah", rc);
}
RealAttachment::~RealAttachment() {
  if (qp == nullptr) return;
  if (int rc = ::ibv_detach_mcast(qp, &gid, lid)) log_release_failure("ibv_detach_mcast", rc);
}

std::shared_ptr<Verbs> make_real_verbs() { return std::make_shared<RealVerbs>(); }

Status RealVerbs::device_names(std::vector<std::string>& out) {
  out.clear();
  return with_device_list([&](ibv_device** list, int n) {
    for (int i = 0; i < n; ++i) out.emplace_back(::ibv_get_device_name(list[i]));
    return Status::ok();
  });
}

Status RealVerbs::open_device(const std::string& name, std::unique_ptr<Device>& out) {
  return with_device_list([&](ibv_device** list, int n) {
    for (int i = 0; i < n; ++i) {
      if (name != ::ibv_get_device_name(list[i])) continue;
      auto dev = std::make_unique<RealDevice>();
      dev->name = name;
      dev->ctx = ::ibv_open_device(list[i]);
      if (dev->ctx == nullptr) return fail("ibv_open_device(" + name + ")", errno);
      out = std::move(dev);
      return Status::ok();
    }
    return common::unavailable_error("no RDMA device named " + name);
  });
}

Status RealVerbs::query_device(Device& dev, DeviceAttr& out) {
  ibv_device_attr a{};
  if (int rc = ::ibv_query_device(static_cast<RealDevice&>(dev).ctx, &a)) {
    return fail("ibv_query_device", rc);
  }
  out = DeviceAttr{a.phys_port_cnt, a.max_qp_wr,     a.max_sge,
                   a.max_cqe,       a.max_mcast_grp, a.max_mcast_qp_attach};
  return Status::ok();
}

Status RealVerbs::query_port(Device& dev, int port, PortAttr& out) {
  ibv_context* ctx = static_cast<RealDevice&>(dev).ctx;
  ibv_port_attr a{};
  if (int rc = ::ibv_query_port(ctx, static_cast<std::uint8_t>(port), &a)) {
    return fail("ibv_query_port(" + std::to_string(port) + ")", rc);
  }
  out.state = a.state;
  out.active_mtu = mtu_bytes(a.active_mtu);
  out.infiniband = a.link_layer != IBV_LINK_LAYER_ETHERNET;
  out.lid = a.lid;
  ibv_gid gid{};
  if (::ibv_query_gid(ctx, static_cast<std::uint8_t>(port), 0, &gid) == 0) {
    std::memcpy(out.gid.data(), gid.raw, out.gid.size());
  }
  return Status::ok();
}

Status RealVerbs::alloc_pd(Device& dev, std::unique_ptr<Pd>& out) {
  auto pd = std::make_unique<RealPd>();
  pd->pd = ::ibv_alloc_pd(static_cast<RealDevice&>(dev).ctx);
  if (pd->pd == nullptr) return fail("ibv_alloc_pd", errno);
  out = std::move(pd);
  return Status::ok();
}

Status RealVerbs::reg_mr(Pd& pd, void* addr, std::size_t length, std::unique_ptr<Mr>& out) {
  auto mr = std::make_unique<RealMr>();
  // Local write: receives land here. Nothing is read remotely (UD has no
  // RDMA), so no remote access is granted.
  const int access = IBV_ACCESS_LOCAL_WRITE;
  mr->mr = ::ibv_reg_mr(static_cast<RealPd&>(pd).pd, addr, length, access);
  if (mr->mr == nullptr) {
    const int err = errno;
    const char* hint = err == ENOMEM || err == EPERM || err == EAGAIN
                           ? "; the locked-memory limit may be too low: `ulimit -l unlimited` (or "
                             "LimitMEMLOCK=infinity for the service that starts the job)"
                           : "";
    return common::transport_error("ibv_reg_mr(" + std::to_string(length) +
                                   " bytes): " + errno_text(err) + hint);
  }
  mr->addr = static_cast<std::byte*>(addr);
  mr->length = length;
  mr->lkey = mr->mr->lkey;
  mr->rkey = mr->mr->rkey;
  out = std::move(mr);
  return Status::ok();
}

Status RealVerbs::create_comp_channel(Device& dev, std::unique_ptr<CompChannel>& out) {
  auto ch = std::make_unique<RealChannel>();
  ch->ch = ::ibv_create_comp_channel(static_cast<RealDevice&>(dev).ctx);
  if (ch->ch == nullptr) return fail("ibv_create_comp_channel", errno);
  // get_cq_event must never block.
  const int flags = ::fcntl(ch->ch->fd, F_GETFL);
  if (flags < 0 || ::fcntl(ch->ch->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return fail("fcntl(O_NONBLOCK) on the completion channel", errno);
  }
  ch->fd = ch->ch->fd;
  out = std::move(ch);
  return Status::ok();
}

Status RealVerbs::create_cq(Device& dev, int cqe, CompChannel* channel, std::unique_ptr<Cq>& out) {
  auto cq = std::make_unique<RealCq>();
  ibv_comp_channel* ch = channel != nullptr ? static_cast<RealChannel*>(channel)->ch : nullptr;
  // cq_context = the object, so get_cq_event can name it.
  cq->cq = ::ibv_create_cq(static_cast<RealDevice&>(dev).ctx, cqe, cq.get(), ch, 0);
  if (cq->cq == nullptr) return fail("ibv_create_cq(" + std::to_string(cqe) + ")", errno);
  out = std::move(cq);
  return Status::ok();
}

Status RealVerbs::create_qp(Pd& pd, Cq& send_cq, Cq& recv_cq, const QpInit& init,
                            std::unique_ptr<Qp>& out) {
  ibv_qp_init_attr a{};
  a.send_cq = static_cast<RealCq&>(send_cq).cq;
  a.recv_cq = static_cast<RealCq&>(recv_cq).cq;
  a.cap.max_send_wr = init.max_send_wr;
  a.cap.max_recv_wr = init.max_recv_wr;
  a.cap.max_send_sge = init.max_send_sge;
  a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = init.max_inline;
  a.qp_type = IBV_QPT_UD;
  a.sq_sig_all = 0;  // selective signaling
  auto qp = std::make_unique<RealQp>();
  qp->qp = ::ibv_create_qp(static_cast<RealPd&>(pd).pd, &a);
  if (qp->qp == nullptr) return fail("ibv_create_qp(UD)", errno);
  qp->qp_num = qp->qp->qp_num;
  qp->max_inline = a.cap.max_inline_data;  // what the provider granted
  out = std::move(qp);
  return Status::ok();
}

Status RealVerbs::modify_qp(Qp& qp, const QpModify& to) {
  ibv_qp_attr a{};
  int mask = IBV_QP_STATE;
  const char* name = "INIT";
  switch (to.state) {
    case QpState::kInit:
      a.qp_state = IBV_QPS_INIT;
      a.pkey_index = to.pkey_index;
      a.port_num = to.port;
      a.qkey = to.qkey;
      mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
      break;
    case QpState::kRtr:
      a.qp_state = IBV_QPS_RTR;
      name = "RTR";
      break;
    case QpState::kRts:
      a.qp_state = IBV_QPS_RTS;
      a.sq_psn = to.sq_psn;
      mask |= IBV_QP_SQ_PSN;
      name = "RTS";
      break;
  }
  if (int rc = ::ibv_modify_qp(static_cast<RealQp&>(qp).qp, &a, mask)) {
    return fail(std::string("ibv_modify_qp(") + name + ")", rc);
  }
  return Status::ok();
}

Status RealVerbs::create_ah(Pd& pd, const McastAddress& to, std::unique_ptr<Ah>& out) {
  ibv_ah_attr a{};
  a.is_global = 1;
  std::memcpy(a.grh.dgid.raw, to.mgid.data(), to.mgid.size());
  a.grh.flow_label = to.flow_label;
  a.grh.sgid_index = to.sgid_index;
  a.grh.hop_limit = to.hop_limit;
  a.grh.traffic_class = to.traffic_class;
  a.dlid = to.mlid;
  a.sl = to.sl;
  a.static_rate = to.static_rate;
  a.port_num = to.port;
  auto ah = std::make_unique<RealAh>();
  ah->ah = ::ibv_create_ah(static_cast<RealPd&>(pd).pd, &a);
  if (ah->ah == nullptr) return fail("ibv_create_ah(" + gid_text(to.mgid) + ")", errno);
  out = std::move(ah);
  return Status::ok();
}

Status RealVerbs::attach_mcast(Qp& qp, const Gid& mgid, std::uint16_t mlid,
                               std::unique_ptr<McastAttachment>& out) {
  auto at = std::make_unique<RealAttachment>();
  std::memcpy(at->gid.raw, mgid.data(), mgid.size());
  at->lid = mlid;
  if (int rc = ::ibv_attach_mcast(static_cast<RealQp&>(qp).qp, &at->gid, mlid)) {
    return fail("ibv_attach_mcast(" + gid_text(mgid) + ")", rc);
  }
  at->qp = static_cast<RealQp&>(qp).qp;  // set only once attached: the destructor detaches
  out = std::move(at);
  return Status::ok();
}

}  // namespace mccl::transport::ibud
