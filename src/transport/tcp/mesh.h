// Setup of the TCP transport's full mesh (the protocol is described in
// tcp_transport.h and wire.h): listen, exchange addresses out of band,
// connect to every higher rank, accept every lower one, handshake.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/oob.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/tcp_transport.h"

namespace mccl::transport::tcp {

struct Mesh {
  std::vector<Fd> fds;             // connected, handshaken sockets by rank; none for self
  std::vector<std::string> names;  // each rank's published "ip:port", for messages
  std::uint16_t listen_port = 0;
};

// Blocking: returns once every connection is up or config.connect_timeout
// has passed (kTimeout naming the ranks still missing). `config` must be
// valid (checked by create_tcp_reliable).
common::Status build_mesh(const TcpReliableConfig& config, const OobAllgather& oob, Mesh& out);

}  // namespace mccl::transport::tcp
