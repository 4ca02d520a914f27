// create_ib_transport: picks the port the configuration names, builds the
// verbs resources of ibud_transport.h in order and joins the group. Every
// resource is owned by Resources from the moment it exists, so any
// failure releases everything made before it.
#include "transport/ibud/ibud_transport.h"

#include <algorithm>

#include "common/ipv4.h"
#include "common/log.h"
#include "mccl/error.h"
#include "transport/ibud/device.h"
#include "transport/ibud/endpoint.h"
#include "transport/ibud/group.h"

namespace mccl::transport::ibud {
namespace {

using common::Status;

constexpr std::uint32_t kInlineAsk[] = {256, 128, 64, 0};  // providers refuse too much
constexpr std::size_t kMaxMtu = 4096;

Status make_queues(Resources& r, const DeviceAttr& da, IbInfo& info) {
  Verbs& v = *r.verbs;
  if (Status st = v.alloc_pd(*r.device, r.pd); !st) return st;
  if (Status st = v.create_comp_channel(*r.device, r.channel); !st) return st;
  if (Status st =
          v.create_cq(*r.device, static_cast<int>(info.sq_depth), r.channel.get(), r.send_cq);
      !st) {
    return st;
  }
  if (Status st =
          v.create_cq(*r.device, static_cast<int>(info.rx_depth), r.channel.get(), r.recv_cq);
      !st) {
    return st;
  }
  r.recv_mem = AlignedBuffer::make(info.rx_depth * (kGrhBytes + info.mtu));
  r.send_mem = AlignedBuffer::make(info.sq_depth * info.mtu);
  if (r.recv_mem.data() == nullptr || r.send_mem.data() == nullptr) {
    return common::transport_error("out of memory for the receive and staging rings");
  }
  if (Status st = v.reg_mr(*r.pd, r.recv_mem.data(), r.recv_mem.size, r.recv_mr); !st) return st;
  if (Status st = v.reg_mr(*r.pd, r.send_mem.data(), r.send_mem.size, r.send_mr); !st) return st;

  QpInit init;
  init.max_send_wr = static_cast<std::uint32_t>(info.sq_depth);
  init.max_recv_wr = static_cast<std::uint32_t>(info.rx_depth);
  init.max_send_sge = static_cast<std::uint32_t>(std::min(2, std::max(da.max_sge, 1)));
  Status st;
  for (std::uint32_t ask : kInlineAsk) {
    init.max_inline = ask;
    st = v.create_qp(*r.pd, *r.send_cq, *r.recv_cq, init, r.qp);
    if (st) break;
  }
  if (!st) return st;
  info.qp_num = r.qp->qp_num;
  info.max_inline = r.qp->max_inline;
  QpModify m;
  m.state = QpState::kInit;
  m.port = static_cast<std::uint8_t>(info.port);
  m.qkey = info.qkey;
  if (st = v.modify_qp(*r.qp, m); !st) return st;
  // Receives may be posted from INIT on; all of them go before the join,
  // so the first datagram of the group already finds a buffer.
  std::vector<RecvWr> wrs(info.rx_depth);
  const std::size_t slot = kGrhBytes + info.mtu;
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const auto addr = reinterpret_cast<std::uintptr_t>(r.recv_mem.data() + i * slot);
    wrs[i] = RecvWr{i, Sge{addr, static_cast<std::uint32_t>(slot), r.recv_mr->lkey}};
  }
  std::size_t posted = 0;
  if (st = v.post_recv(*r.qp, wrs, posted); !st) return st;
  m.state = QpState::kRtr;
  if (st = v.modify_qp(*r.qp, m); !st) return st;
  m.state = QpState::kRts;
  return v.modify_qp(*r.qp, m);
}

// Joins the communicator's multicast group (`mgid`, else one derived from
// its tag through rdma_cm on the IPoIB interface), attaches the QP and
// makes the address handle; fills info's group, MGID and MLID.
Status join_group(const IbConfig& config, const std::optional<Gid>& mgid, const IpoibIface& ipoib,
                  Resources& r, IbInfo& info) {
  JoinRequest req;
  req.device = info.device;
  req.port = info.port;
  req.bind_addr = ipoib.addr;
  req.mgid = mgid;
  req.timeout = config.join_timeout;
  if (!mgid) {
    req.group_ipv4 = derive_group_ipv4(config.comm_tag, config.job_salt);
    info.group = common::ipv4_text(req.group_ipv4);
  }
  Status st = r.verbs->join_multicast(req, r.join);
  if (st)
    st = r.verbs->attach_mcast(*r.qp, r.join->address.mgid, r.join->address.mlid, r.attachment);
  if (st) st = r.verbs->create_ah(*r.pd, r.join->address, r.ah);
  if (!st) return st;
  info.mgid = gid_text(r.join->address.mgid);
  info.mlid = r.join->address.mlid;
  return st;
}

}  // namespace

common::Status create_ib_transport(const IbConfig& config,
                                   std::unique_ptr<DatagramTransport>& out) {
  std::optional<Gid> mgid;
  if (!config.mgid.empty()) {
    Gid g;
    if (Status st = parse_mgid(config.mgid, g); !st) {
      return common::invalid_argument("MCCL_IB_MGID: " + st.message());
    }
    mgid = g;
  }
  Resources r;
  r.verbs = config.verbs ? config.verbs : make_real_verbs();
  PortChoice pc;
  if (Status st = choose_port(*r.verbs, config.device, pc); !st) return st;
  r.device = std::move(pc.device);

  IbInfo info;
  info.device = r.device->name;
  info.port = pc.port;
  info.lid = pc.port_attr.lid;
  info.qkey = derive_qkey(config.comm_tag, config.job_salt);
  info.port_mtu = pc.port_attr.active_mtu;
  info.mtu = std::min(info.port_mtu, kMaxMtu);
  if (config.max_mtu != 0) info.mtu = std::min(info.mtu, config.max_mtu);
  const std::size_t max_wr = static_cast<std::size_t>(std::max(pc.device_attr.max_qp_wr, 16));
  const std::size_t max_cqe = static_cast<std::size_t>(std::max(pc.device_attr.max_cqe, 16));
  info.rx_depth = std::min({config.rx_depth, max_wr, max_cqe});
  info.sq_depth = std::min({std::max<std::size_t>(config.sq_depth, 2), max_wr, max_cqe});
  // A signaled WR among any sq_depth consecutive ones, or the ring stalls.
  info.signal_every = std::clamp<std::size_t>(config.signal_every, 1, info.sq_depth / 2);
  const std::string where =
      "ibud transport (" + info.device + ":" + std::to_string(info.port) + ")";

  IpoibIface ipoib;
  if (Status st = r.verbs->find_ipoib(info.device, info.port, config.ipoib_iface, ipoib); !st) {
    return Status(st.code(), where + ": " + st.message());
  }
  info.ipoib_iface = ipoib.name;
  info.ipoib_addr = ipoib.addr;
  if (ipoib.datagram_mode && ipoib.mtu > 0 && !mgid) {
    // rdma_cm copies the MTU of the IPoIB broadcast group into the new
    // group; IPoIB's own MTU is that minus its 4-byte header.
    const std::size_t group_mtu = ib_mtu_at_most(static_cast<std::size_t>(ipoib.mtu) + 4);
    if (group_mtu != 0 && group_mtu < info.mtu) {
      common::logf(common::LogLevel::kInfo, config.rank,
                   "%s: MTU %zu (the IPoIB broadcast group's, from %s MTU %d), not the port's %zu",
                   where.c_str(), group_mtu, ipoib.name.c_str(), ipoib.mtu, info.mtu);
      info.mtu = group_mtu;
    }
  }
  if (Status st = make_queues(r, pc.device_attr, info); !st) {
    return Status(st.code(), where + ": " + st.message());
  }

  if (Status st = join_group(config, mgid, ipoib, r, info); !st) {
    return Status(st.code(),
                  where + " via " + ipoib.name + " (" + ipoib.addr + "): " + st.message());
  }

  common::logf(common::LogLevel::kInfo, config.rank,
               "%s: QPN 0x%x, Q_Key 0x%x, MGID %s (MLID 0x%x%s%s), mtu %zu, rx depth %zu, "
               "sq depth %zu, signal every %zu, inline up to %zu",
               where.c_str(), info.qp_num, info.qkey, info.mgid.c_str(), info.mlid,
               info.group.empty() ? "" : ", group ", info.group.c_str(), info.mtu, info.rx_depth,
               info.sq_depth, info.signal_every, info.max_inline);
  out = std::make_unique<IbEndpoint>(std::move(r), std::move(info), config.rank);
  return Status::ok();
}

}  // namespace mccl::transport::ibud
