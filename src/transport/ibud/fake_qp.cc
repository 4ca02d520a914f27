// FakeVerbs: QPs and their states, address handles, IPoIB lookup and the
// multicast groups (joins through the "subnet administrator", attaches).
#include <cerrno>

#include "transport/ibud/fake_state.h"
#include "transport/ibud/group.h"

namespace mccl::transport::ibud {

using common::Status;
using Lock = std::lock_guard<std::mutex>;

Status FakeVerbs::create_qp(Pd& pd, Cq& send_cq, Cq& recv_cq, const QpInit& init,
                            std::unique_ptr<Qp>& out) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("create_qp"); !st) return st;
  const auto& c = fab_->cfg;
  // As providers do: a request above the device's limits fails.
  if (init.max_inline > c.max_inline || init.max_send_wr > c.max_qp_wr ||
      init.max_recv_wr > c.max_qp_wr || init.max_send_sge > static_cast<std::uint32_t>(c.max_sge) ||
      init.max_send_wr == 0 || init.max_recv_wr == 0) {
    return einval("ibv_create_qp(UD)");
  }
  const auto& p = static_cast<FPd&>(pd);
  auto qp = std::make_unique<FQp>();
  qp->host = host_;
  qp->dev = p.dev;
  qp->pd = p.b.id;
  qp->send_cq = static_cast<FCq&>(send_cq).b.id;
  qp->recv_cq = static_cast<FCq&>(recv_cq).b.id;
  qp->max_send_wr = init.max_send_wr;
  qp->max_recv_wr = init.max_recv_wr;
  qp->max_send_sge = init.max_send_sge;
  qp->max_inline = init.max_inline;
  qp->qp_num = host().next_qpn++;
  qp->b = base({qp->pd, qp->send_cq, qp->recv_cq});
  fab_->qps[qp->b.id] = qp.get();
  out = std::move(qp);
  return Status::ok();
}

Status FakeVerbs::modify_qp(Qp& qp, const QpModify& to) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("modify_qp"); !st) return st;
  auto& q = static_cast<FQp&>(qp);
  const auto& ports = host().cfg.devices[static_cast<std::size_t>(q.dev)].ports;
  switch (to.state) {
    case QpState::kInit:
      if (q.state != 0 || to.port < 1 || to.port > ports.size() || to.pkey_index != 0) {
        return einval("ibv_modify_qp(INIT)");
      }
      q.port = to.port;
      q.lid = host().lids[static_cast<std::size_t>(q.dev)][to.port - 1u];
      q.qkey = to.qkey;
      q.state = 1;
      break;
    case QpState::kRtr:
      if (q.state != 1) return einval("ibv_modify_qp(RTR)");
      q.state = 2;
      break;
    case QpState::kRts:
      if (q.state != 2) return einval("ibv_modify_qp(RTS)");
      q.state = 3;
      break;
  }
  return Status::ok();
}

Status FakeVerbs::create_ah(Pd& pd, const McastAddress& to, std::unique_ptr<Ah>& out) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("create_ah"); !st) return st;
  auto ah = std::make_unique<FAh>();
  ah->to = to;
  ah->b = base({static_cast<FPd&>(pd).b.id});
  out = std::move(ah);
  return Status::ok();
}

Status FakeVerbs::attach_mcast(Qp& qp, const Gid& mgid, std::uint16_t mlid,
                               std::unique_ptr<McastAttachment>& out) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("attach_mcast"); !st) return st;
  auto& q = static_cast<FQp&>(qp);
  FGroup& g = fab_->groups[mgid];
  if (g.mlid == 0) g.mlid = mlid;
  if (g.attached.size() >= static_cast<std::size_t>(fab_->cfg.max_mcast_qp_attach) ||
      q.groups.count(mgid) != 0) {
    return common::transport_error("ibv_attach_mcast(" + gid_text(mgid) +
                                   "): " + errno_text(ENOMEM));
  }
  g.attached.push_back(q.b.id);
  q.groups.insert(mgid);
  auto at = std::make_unique<FAttachment>();
  at->qp = q.b.id;
  at->mgid = mgid;
  at->b = base({q.b.id});  // ibv_destroy_qp is EBUSY while attached
  out = std::move(at);
  return Status::ok();
}

Status FakeVerbs::find_ipoib(const std::string& device, int port, const std::string& iface,
                             IpoibIface& out) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("find_ipoib"); !st) return st;
  const FakeHost& h = host().cfg;
  const std::string want = device + ":" + std::to_string(port);
  if (!iface.empty() && iface != h.ipoib_iface) {
    return common::unavailable_error(
        "interface " + iface + " has no IPv4 address or does not exist (MCCL_IB_IPOIB_IFACE)");
  }
  const std::string where = h.ipoib_device + ":" + std::to_string(h.ipoib_port);
  if (h.ipoib_iface.empty() || (iface.empty() && where != want)) {
    return common::unavailable_error("no IPv4 interface of " + want +
                                     " found (rdma_cm joins multicast through the port's IPoIB "
                                     "interface): give the IPoIB interface an address, or name it "
                                     "with MCCL_IB_IPOIB_IFACE");
  }
  if (where != want) {
    return common::unavailable_error("interface " + iface + " (" + h.ipoib_addr + ") is on " +
                                     where + ", not on " + want +
                                     " (MCCL_IB_IPOIB_IFACE and MCCL_IB_DEV disagree)");
  }
  out = IpoibIface{h.ipoib_iface, h.ipoib_addr, h.ipoib_mtu, h.ipoib_datagram};
  return Status::ok();
}

Status FakeVerbs::join_multicast(const JoinRequest& req, std::unique_ptr<McastJoin>& out) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("join_multicast"); !st) return st;
  const FakeHost& h = host().cfg;
  if (h.ipoib_iface.empty() || req.bind_addr != h.ipoib_addr) {
    return common::unavailable_error("rdma_bind_addr(" + req.bind_addr +
                                     "): " + errno_text(EADDRNOTAVAIL));
  }
  const std::string landed = h.ipoib_device + ":" + std::to_string(h.ipoib_port);
  const std::string want = req.device + ":" + std::to_string(req.port);
  if (landed != want) {
    return common::unavailable_error("rdma_cm bound " + req.bind_addr + " to " + landed +
                                     ", not to " + want);
  }
  if (fab_->cfg.join_refused) {
    return common::unavailable_error(
        "rdma_join_multicast: RDMA_CM_EVENT_MULTICAST_ERROR (status -22); the subnet manager "
        "refused the join");
  }
  Gid mgid{0xff, 0x12, 0x40, 0x01, 0xff, 0xff};  // IPoIB's mapping, RDMA CM signature
  if (req.mgid) {
    mgid = *req.mgid;
  } else {
    const std::uint32_t low = req.group_ipv4 & 0x0FFFFFFFu;
    mgid[12] = static_cast<std::uint8_t>(low >> 24);
    mgid[13] = static_cast<std::uint8_t>(low >> 16);
    mgid[14] = static_cast<std::uint8_t>(low >> 8);
    mgid[15] = static_cast<std::uint8_t>(low);
  }
  FGroup& g = fab_->groups[mgid];
  if (g.mlid == 0) g.mlid = fab_->next_mlid++;
  auto j = std::make_unique<FJoin>();
  j->member = FakeFabricImpl::member(host_, req.device, req.port);
  g.members.insert(j->member);
  j->address.mgid = mgid;
  j->address.mlid = g.mlid;
  j->address.port = static_cast<std::uint8_t>(req.port);
  j->address.hop_limit = 1;
  j->b = base({});
  out = std::move(j);
  return Status::ok();
}

}  // namespace mccl::transport::ibud
