// The rdma_cm half of RealVerbs: finding the IPoIB interface of a port and
// joining a multicast group through the subnet administrator.
//
// rdma_join_multicast needs an rdma_cm id bound to an IP address of the
// port (that is how rdma_cm finds the port and the P_Key). The group is an
// IPv4 address (rdma_cm maps it to an MGID) or, for MCCL_IB_MGID, an AF_IB
// address holding the MGID itself. The id is not given a QP: the transport
// attaches its own QP with ibv_attach_mcast. The group's Q_Key in the SA
// record stays rdma_cm's; the HCA only checks the Q_Key of the receiving
// QP, which is the communicator's.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <infiniband/ib.h>
#include <net/if.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "transport/ibud/group.h"
#include "transport/ibud/real_verbs.h"

namespace mccl::transport::ibud {

using common::Status;

namespace {

struct RealJoin final : McastJoin {
  ~RealJoin() override {
    if (joined && ::rdma_leave_multicast(id, reinterpret_cast<sockaddr*>(&group)) != 0) {
      log_release_failure("rdma_leave_multicast", errno);
    }
    if (id != nullptr && ::rdma_destroy_id(id) != 0) log_release_failure("rdma_destroy_id", errno);
    if (channel != nullptr) ::rdma_destroy_event_channel(channel);
  }
  rdma_event_channel* channel = nullptr;
  rdma_cm_id* id = nullptr;
  sockaddr_storage group{};
  bool joined = false;
};

Status cm_fail(const std::string& call, int err) {
  std::string hint;
  if (err == ENODEV || err == ENOENT) {
    hint = "; is the rdma_ucm kernel module loaded (`modprobe rdma_ucm`, /dev/infiniband/rdma_cm)?";
  }
  return common::unavailable_error(call + ": " + errno_text(err) + hint);
}

// Binds `id` to `addr` (IPv4 text); the device and port it lands on are
// then in id->verbs and id->port_num (no device: id->verbs == nullptr).
Status bind_to(rdma_cm_id* id, const std::string& addr) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    return common::invalid_argument("\"" + addr + "\" is not an IPv4 address");
  }
  if (::rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&sa)) != 0) {
    return cm_fail("rdma_bind_addr(" + addr + ")", errno);
  }
  return Status::ok();
}

std::string landed(const rdma_cm_id* id) {
  if (id->verbs == nullptr) return "no RDMA device";
  return std::string(::ibv_get_device_name(id->verbs->device)) + ":" + std::to_string(id->port_num);
}

// Where an rdma_cm binding to `addr` lands: "mlx5_0:1", or an error.
Status probe_binding(const std::string& addr, std::string& where) {
  rdma_cm_id* id = nullptr;
  if (::rdma_create_id(nullptr, &id, nullptr, RDMA_PS_UDP) != 0) {
    return cm_fail("rdma_create_id", errno);
  }
  Status st = bind_to(id, addr);
  if (st) where = landed(id);
  ::rdma_destroy_id(id);
  return st;
}

std::string read_sys(const std::string& path) {
  std::ifstream in(path);
  std::string v;
  in >> v;
  return v;
}

}  // namespace

Status RealVerbs::find_ipoib(const std::string& device, int port, const std::string& iface,
                             IpoibIface& out) {
  const std::string want = device + ":" + std::to_string(port);
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return common::transport_error("getifaddrs: " + errno_text(errno));
  Status result = common::unavailable_error(
      "no IPv4 interface of " + want +
      " found (rdma_cm joins multicast through the port's IPoIB interface): give the IPoIB "
      "interface an address, or name it with MCCL_IB_IPOIB_IFACE");
  bool named_seen = false;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if (!iface.empty() && iface != a->ifa_name) continue;
    if (iface.empty() && ((a->ifa_flags & IFF_LOOPBACK) != 0 || (a->ifa_flags & IFF_UP) == 0)) {
      continue;
    }
    named_seen = true;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    std::string where;
    Status st = probe_binding(text, where);
    if (st && where == want) {
      out.name = a->ifa_name;
      out.addr = text;
      const std::string sys = std::string("/sys/class/net/") + a->ifa_name;
      out.mtu = std::atoi(read_sys(sys + "/mtu").c_str());
      const std::string mode = read_sys(sys + "/mode");  // IPoIB only
      out.datagram_mode = mode != "connected";
      result = Status::ok();
      break;
    }
    if (!iface.empty()) {
      result = common::unavailable_error("interface " + iface + " (" + text + ") is on " +
                                         (st ? where : st.message()) + ", not on " + want +
                                         " (MCCL_IB_IPOIB_IFACE and MCCL_IB_DEV disagree)");
    }
  }
  ::freeifaddrs(list);
  if (!iface.empty() && !named_seen) {
    return common::unavailable_error(
        "interface " + iface + " has no IPv4 address or does not exist (MCCL_IB_IPOIB_IFACE)");
  }
  return result;
}

Status RealVerbs::join_multicast(const JoinRequest& req, std::unique_ptr<McastJoin>& out) {
  auto j = std::make_unique<RealJoin>();
  j->channel = ::rdma_create_event_channel();
  if (j->channel == nullptr) return cm_fail("rdma_create_event_channel", errno);
  if (::rdma_create_id(j->channel, &j->id, nullptr, RDMA_PS_UDP) != 0) {
    j->id = nullptr;
    return cm_fail("rdma_create_id", errno);
  }
  if (Status st = bind_to(j->id, req.bind_addr); !st) return st;
  const std::string want = req.device + ":" + std::to_string(req.port);
  if (landed(j->id) != want) {
    return common::unavailable_error("rdma_cm bound " + req.bind_addr + " to " + landed(j->id) +
                                     ", not to " + want);
  }
  std::string what;
  if (req.mgid) {
    // AF_IB: rdma_cm takes its address as the MGID verbatim (an AF_INET6
    // address would be mapped through IPoIB's IPv6 rule instead).
    auto* sib = reinterpret_cast<sockaddr_ib*>(&j->group);
    sib->sib_family = AF_IB;
    sib->sib_pkey = htobe16(0xFFFF);
    std::memcpy(sib->sib_addr.sib_raw, req.mgid->data(), req.mgid->size());
    what = "MGID " + gid_text(*req.mgid);
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&j->group);
    s4->sin_family = AF_INET;
    s4->sin_addr.s_addr = htonl(req.group_ipv4);
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &s4->sin_addr, text, sizeof text);
    what = std::string("group ") + text;
  }
  if (::rdma_join_multicast(j->id, reinterpret_cast<sockaddr*>(&j->group), nullptr) != 0) {
    return cm_fail("rdma_join_multicast(" + what + ")", errno);
  }
  j->joined = true;  // from here on the destructor leaves, even if the SA refuses

  pollfd p{j->channel->fd, POLLIN, 0};
  int ready;
  do {
    ready = ::poll(&p, 1, static_cast<int>(req.timeout.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) {
    return common::unavailable_error("rdma_join_multicast(" + what + "): no answer from the " +
                                     "subnet manager within " +
                                     std::to_string(req.timeout.count()) + " ms");
  }
  rdma_cm_event* ev = nullptr;
  if (ready < 0 || ::rdma_get_cm_event(j->channel, &ev) != 0) {
    return cm_fail("rdma_get_cm_event", errno);
  }
  const rdma_cm_event_type type = ev->event;
  const int status = ev->status;
  if (type == RDMA_CM_EVENT_MULTICAST_JOIN) {
    const ibv_ah_attr& ah = ev->param.ud.ah_attr;
    McastAddress& m = j->address;
    std::memcpy(m.mgid.data(), ah.grh.dgid.raw, m.mgid.size());
    m.mlid = ah.dlid;
    m.port = ah.port_num != 0 ? ah.port_num : static_cast<std::uint8_t>(req.port);
    m.sl = ah.sl;
    m.sgid_index = ah.grh.sgid_index;
    m.hop_limit = ah.grh.hop_limit;
    m.traffic_class = ah.grh.traffic_class;
    m.static_rate = ah.static_rate;
    m.flow_label = ah.grh.flow_label;
  }
  ::rdma_ack_cm_event(ev);
  if (type != RDMA_CM_EVENT_MULTICAST_JOIN) {
    return common::unavailable_error(
        "rdma_join_multicast(" + what + "): " + ::rdma_event_str(type) + " (status " +
        std::to_string(status) +
        "); the subnet manager refused the join: does it allow multicast joins on this "
        "partition, and is the group limit of the switches reached?");
  }
  out = std::move(j);
  return Status::ok();
}

}  // namespace mccl::transport::ibud
