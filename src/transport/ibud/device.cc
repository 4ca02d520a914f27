#include "transport/ibud/device.h"

#include <algorithm>
#include <cstdlib>

#include "transport/ibud/ibud_transport.h"

namespace mccl::transport::ibud {

using common::Status;

const char* port_state_text(ibv_port_state state) {
  switch (state) {
    case IBV_PORT_NOP:
      return "NOP";
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "ACTIVE_DEFER";
  }
  return "UNKNOWN";
}

namespace {

// Why port `p` of `dev` cannot carry the transport, or "" when it can.
std::string unusable(const std::string& dev, int p, const PortAttr& a) {
  const std::string name = dev + ":" + std::to_string(p);
  if (a.state != IBV_PORT_ACTIVE) {
    return name + " is " + port_state_text(a.state) +
           " (not ACTIVE: is the cable in and a subnet manager running? `ibstat`)";
  }
  if (!a.infiniband) {
    return name + " has an Ethernet link layer (RoCE): the ibud transport needs InfiniBand; " +
           "use MCCL_TRANSPORT=udp on that interface";
  }
  return "";
}

// Tries the ports of `name` (all, or only `only` when > 0); the first
// usable one wins. `why` collects the reasons of the others.
Status try_device(Verbs& verbs, const std::string& name, int only, PortChoice& out,
                  std::string& why) {
  std::unique_ptr<Device> dev;
  if (Status st = verbs.open_device(name, dev); !st) return st;
  DeviceAttr da;
  if (Status st = verbs.query_device(*dev, da); !st) return st;
  if (only > da.ports) {
    return common::invalid_argument("MCCL_IB_DEV: " + name + " has ports 1.." +
                                    std::to_string(da.ports) + ", not " + std::to_string(only));
  }
  for (int p = only > 0 ? only : 1; p <= (only > 0 ? only : da.ports); ++p) {
    PortAttr pa;
    if (Status st = verbs.query_port(*dev, p, pa); !st) return st;
    const std::string bad = unusable(name, p, pa);
    if (bad.empty()) {
      out.device = std::move(dev);
      out.port = p;
      out.device_attr = da;
      out.port_attr = pa;
      return Status::ok();
    }
    why += (why.empty() ? "" : "; ") + bad;
  }
  return common::unavailable_error(why);
}

}  // namespace

Status choose_port(Verbs& verbs, const std::string& spec, PortChoice& out) {
  std::vector<std::string> names;
  if (Status st = verbs.device_names(names); !st) {
    return common::unavailable_error("no InfiniBand device: " + st.message());
  }
  if (names.empty()) {
    return common::unavailable_error("no InfiniBand device: ibv_get_device_list found none");
  }
  std::string name = spec;
  int port = 0;
  if (auto colon = spec.rfind(':'); colon != std::string::npos) {
    name = spec.substr(0, colon);
    char* end = nullptr;
    const long p = std::strtol(spec.c_str() + colon + 1, &end, 10);
    if (end == spec.c_str() + colon + 1 || *end != '\0' || p < 1 || p > 255 || name.empty()) {
      return common::invalid_argument("MCCL_IB_DEV=\"" + spec +
                                      "\" is not a device or device:port (e.g. mlx5_0:1)");
    }
    port = static_cast<int>(p);
  }
  std::string why;
  if (!name.empty()) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      return common::unavailable_error("MCCL_IB_DEV: no device " + name +
                                       " here (devices: " + list + ")");
    }
    return try_device(verbs, name, port, out, why);
  }
  for (const auto& n : names) {
    Status st = try_device(verbs, n, 0, out, why);
    if (st || st.code() != ErrorCode::kUnavailable) return st;
  }
  return common::unavailable_error("no active InfiniBand port: " + why);
}

Status probe_ib(Verbs& verbs, const std::string& device, std::string& reason) {
  PortChoice pc;
  const Status st = choose_port(verbs, device, pc);
  if (!st) {
    reason = st.message();
    return st;
  }
  reason = pc.device->name + ":" + std::to_string(pc.port) + " is ACTIVE (InfiniBand, MTU " +
           std::to_string(pc.port_attr.active_mtu) + ")";
  return Status::ok();
}

Status probe_ib(const std::string& device, std::string& reason) {
  auto verbs = make_real_verbs();
  return probe_ib(*verbs, device, reason);
}

}  // namespace mccl::transport::ibud
