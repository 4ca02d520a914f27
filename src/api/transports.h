// Builds the pair of transports a communicator runs on: the datagram side
// (multicast) and the reliable side (repair, control, fallbacks), by the
// kind the ranks agreed on.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "mccl/bootstrap.h"
#include "mccl/options.h"
#include "transport/datagram.h"
#include "transport/reliable.h"

namespace mccl::detail {

struct Transports {
  std::unique_ptr<transport::DatagramTransport> dgram;
  std::unique_ptr<transport::ReliableTransport> reliable;
  std::string iface;        // network interface, for placing the progress thread
  std::string description;  // for logs: "udp 239.1.2.3:40000 on lo, tcp"
};

// Blocking and collective (the reliable side exchanges addresses through
// `bootstrap`). `kind` is resolved (not kAuto). Throws mccl::Error naming
// the rank: kUnavailable when the kind is not built in or the network
// cannot carry it, kTransportError when a socket fails.
// Whether this rank has an active InfiniBand port for the UD transport;
// `why` says why not (or which port).
bool ib_usable(std::string& why);

// `timeout`: each bootstrap exchange; `setup_timeout`: the reliable mesh's
// connections and the multicast probe (ResolvedOptions::setup_timeout).
Transports make_transports(TransportKind kind, Bootstrap& bootstrap, std::uint32_t tag,
                           std::uint64_t salt, std::chrono::milliseconds timeout,
                           std::chrono::milliseconds setup_timeout);

}  // namespace mccl::detail
