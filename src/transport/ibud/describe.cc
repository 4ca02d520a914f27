// describe_ib_devices (ibud_transport.h): what mccl_info prints about the
// node's InfiniBand hardware, port by port, with a test join of a private
// multicast group where an IPoIB interface makes one possible.
#include <unistd.h>

#include <cstdio>

#include "transport/ibud/device.h"
#include "transport/ibud/group.h"
#include "transport/ibud/ibud_transport.h"

namespace mccl::transport::ibud {

namespace {

std::string hex(unsigned v, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", width, v);
  return buf;
}

// "ok (MGID ..., MLID ...)" or why not; joins a group of its own (derived
// from the process id) and leaves it at once.
std::string try_join(Verbs& verbs, const std::string& device, int port, const IpoibIface& ipoib) {
  JoinRequest req;
  req.device = device;
  req.port = port;
  req.bind_addr = ipoib.addr;
  req.group_ipv4 = derive_group_ipv4(static_cast<std::uint32_t>(::getpid()), 0x1BF0);
  req.timeout = std::chrono::milliseconds(5000);
  std::unique_ptr<McastJoin> join;
  common::Status st = verbs.join_multicast(req, join);
  if (!st) return "FAILED: " + st.message();
  return "ok (test group MGID " + gid_text(join->address.mgid) + ", MLID " +
         hex(join->address.mlid, 4) + ", left again)";
}

}  // namespace

std::string describe_ib_devices(Verbs& verbs, bool join) {
  std::vector<std::string> names;
  if (common::Status st = verbs.device_names(names); !st) {
    return "no InfiniBand device (" + st.message() + ")\n";
  }
  if (names.empty()) return "no InfiniBand device (ibv_get_device_list found none)\n";
  std::string out;
  for (const auto& name : names) {
    std::unique_ptr<Device> dev;
    DeviceAttr da;
    common::Status st = verbs.open_device(name, dev);
    if (st) st = verbs.query_device(*dev, da);
    if (!st) {
      out += name + ": cannot open: " + st.message() + "\n";
      continue;
    }
    out += name + ": " + std::to_string(da.ports) + " port(s), up to " +
           std::to_string(da.max_mcast_grp) + " multicast groups, " +
           std::to_string(da.max_mcast_qp_attach) + " QPs per group, " +
           std::to_string(da.max_qp_wr) + " WRs per queue\n";
    for (int p = 1; p <= da.ports; ++p) {
      PortAttr pa;
      if (st = verbs.query_port(*dev, p, pa); !st) {
        out += "  port " + std::to_string(p) + ": " + st.message() + "\n";
        continue;
      }
      out += "  port " + std::to_string(p) + ": " + (pa.infiniband ? "InfiniBand" : "Ethernet") +
             ", " + port_state_text(pa.state) + ", LID " + hex(pa.lid, 4) + ", active MTU " +
             std::to_string(pa.active_mtu) + ", GID " + gid_text(pa.gid) + "\n";
      if (!pa.infiniband) {
        out += "    not usable: RoCE ports are not supported by the ibud transport\n";
        continue;
      }
      IpoibIface ipoib;
      if (st = verbs.find_ipoib(name, p, "", ipoib); !st) {
        out += "    IPoIB: none (" + st.message() + ")\n    multicast join: not possible\n";
        continue;
      }
      out += "    IPoIB: " + ipoib.name + " " + ipoib.addr + ", MTU " + std::to_string(ipoib.mtu) +
             (ipoib.datagram_mode ? " (datagram mode)" : " (connected mode)") + "\n";
      if (pa.state != IBV_PORT_ACTIVE) {
        out += "    multicast join: not tried (port not ACTIVE)\n";
      } else if (join) {
        out += "    multicast join: " + try_join(verbs, name, p, ipoib) + "\n";
      } else {
        out += "    multicast join: not tried\n";
      }
    }
  }
  return out;
}

std::string describe_ib_devices(bool join) {
  auto verbs = make_real_verbs();
  return describe_ib_devices(*verbs, join);
}

}  // namespace mccl::transport::ibud
