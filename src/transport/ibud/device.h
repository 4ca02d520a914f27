// Choosing the HCA port: by name (MCCL_IB_DEV "mlx5_0:1" or "mlx5_0") or
// the first ACTIVE InfiniBand port of any device. Also what mccl_info and
// automatic transport selection ask (probe_ib, describe_ib_devices in
// ibud_transport.h; defined in device.cc and describe.cc).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "transport/ibud/verbs.h"

namespace mccl::transport::ibud {

struct PortChoice {
  std::unique_ptr<Device> device;  // opened
  int port = 0;
  DeviceAttr device_attr;
  PortAttr port_attr;
};

// `spec`: "" (the first active InfiniBand port anywhere), "mlx5_0" (that
// device's first active InfiniBand port) or "mlx5_0:2". Errors:
// kUnavailable (no device, "no InfiniBand device: <why>"; no such device;
// port not active; Ethernet link layer), kInvalidArgument (malformed spec,
// no such port number).
common::Status choose_port(Verbs& verbs, const std::string& spec, PortChoice& out);

// "ACTIVE", "DOWN", ...
const char* port_state_text(ibv_port_state state);

}  // namespace mccl::transport::ibud
