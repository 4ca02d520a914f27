// The pair of transports a communicator runs on, built by the kind the
// ranks agreed on: the datagram side (multicast) and the reliable side
// (repairs, control, fallbacks). Each step ends with every rank's outcome
// (checks.h), so a step that fails on one rank fails creation on all of
// them at once, named.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "mccl/options.h"
#include "transport/datagram.h"
#include "transport/oob.h"
#include "transport/reliable.h"

namespace mccl::transport::sim {
class Fabric;
}

namespace mccl::setup {

struct Transports {
  std::unique_ptr<transport::DatagramTransport> dgram;
  std::unique_ptr<transport::ReliableTransport> reliable;
  std::string iface;        // network interface, for placing the progress thread
  std::string description;  // for logs: "udp 239.1.2.3:40000 on lo, tcp"
};

struct TransportRequest {
  int rank = 0;
  int size = 1;
  std::uint32_t tag = 0;   // Agreement::tag
  std::uint64_t salt = 0;  // Agreement::salt
  // Each oob exchange's deadline, and the one for later connections.
  std::chrono::milliseconds timeout{0};
  // The reliable side's connections and the multicast probe.
  std::chrono::milliseconds setup_timeout{0};
  // An in-process world's fabric (ranks as threads); needed by kSim only.
  transport::sim::Fabric* fabric = nullptr;
  // This rank's node on that fabric (its rank in the world); -1: `rank`.
  int sim_node = -1;
  // Stands in for MCCL_UDP_IFACE (the offload daemon passes its client's).
  std::optional<std::string> udp_iface;
};

// Blocking and collective over `oob`; never throws. `kind` is resolved
// (not kAuto). kUnavailable when the kind is not built in or the network
// cannot carry it, kTransportError when a socket fails, kInvalidArgument
// for a malformed setting; every message names the rank.
common::Status make_transports(TransportKind kind, const TransportRequest& req,
                               const transport::OobAllgather& oob, Transports& out);

// Whether this rank has an active InfiniBand port for the UD transport;
// `why` says why not (or which port).
bool ib_usable(std::string& why);

}  // namespace mccl::setup
