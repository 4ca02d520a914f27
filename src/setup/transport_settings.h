// The transports' settings, read where a communicator is created: the
// MCCL_UDP_*, MCCL_TCP_* and MCCL_IB_* entries of the registry become each
// transport's config, and the launcher's address (which MCCL_UDP_IFACE=auto
// prefers the network of) is read from its environment here. The transports
// take these as given: they read no settings themselves.
#pragma once

#include <string>
#include <vector>

#include "transport/ibud/ibud_transport.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/udp/udp_transport.h"

namespace mccl::setup {

// Every MCCL_UDP_* setting but the interface, which the ranks agree on
// (choose_udp_interface, agree.h). The communicator's fields (tag, salt,
// rank) are the caller's.
transport::udp::UdpConfig udp_config_from_settings();

// MCCL_TCP_MAX_CONNECTIONS and MCCL_TCP_CONGESTION. The rank, size, address and deadlines are the
// caller's.
transport::tcp::TcpReliableConfig tcp_config_from_settings();

// MCCL_IB_DEV, MCCL_IB_MGID, MCCL_IB_IPOIB_IFACE, MCCL_IB_RX_DEPTH and
// MCCL_IB_SIGNAL_EVERY. The communicator's fields are the caller's.
transport::ibud::IbConfig ib_config_from_settings();

// Where each launcher leaves its own address, most specific first:
// MCCL_BOOTSTRAP_ADDR, Open MPI's PMIx server (PMIX_SERVER_URI*) and
// MPICH's PMI_PORT, as transport::udp::launcher_hint takes them.
std::vector<std::string> launcher_addresses_from_env();

}  // namespace mccl::setup
