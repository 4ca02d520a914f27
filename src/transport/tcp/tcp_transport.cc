// The TCP reliable transport's factory: checks the config, connects the
// mesh (mesh.h) and hands it to an endpoint (endpoint.h).
#include "transport/tcp/tcp_transport.h"

#include <arpa/inet.h>

#include "common/log.h"
#include "transport/tcp/endpoint.h"
#include "transport/tcp/mesh.h"

namespace mccl::transport::tcp {
namespace {

common::Status validate(const TcpReliableConfig& c) {
  if (c.size < 1) {
    return common::invalid_argument("tcp: TcpReliableConfig::size = " + std::to_string(c.size) +
                                    ": must be at least 1");
  }
  if (c.rank < 0 || c.rank >= c.size) {
    return common::invalid_argument("tcp: TcpReliableConfig::rank = " + std::to_string(c.rank) +
                                    ": must be in [0, " + std::to_string(c.size) + ")");
  }
  if (c.connect_timeout.count() <= 0) {
    return common::invalid_argument("tcp: rank " + std::to_string(c.rank) +
                                    ": TcpReliableConfig::connect_timeout must be positive");
  }
  if (c.size == 1) return common::Status::ok();  // no socket, no address
  in_addr a{};
  if (::inet_pton(AF_INET, c.bind_address.c_str(), &a) != 1 || a.s_addr == htonl(INADDR_ANY)) {
    return common::invalid_argument(
        "tcp: rank " + std::to_string(c.rank) + ": TcpReliableConfig::bind_address \"" +
        c.bind_address +
        "\" is not valid: expected the IPv4 address peers reach this rank at "
        "(e.g. the interface's address, or 127.0.0.1 on one host)");
  }
  return common::Status::ok();
}

}  // namespace

common::Status create_tcp_reliable(const TcpReliableConfig& config, const OobAllgather& oob,
                                   std::unique_ptr<ReliableTransport>& out) {
  if (auto st = validate(config); !st) return st;
  Mesh mesh;
  if (config.size > 1) {
    if (!oob) return common::invalid_argument("tcp: no out-of-band allgather given");
    if (auto st = build_mesh(config, oob, mesh); !st) return st;
  }
  auto endpoint = std::make_unique<TcpEndpoint>(config.rank, config.size);
  if (auto st = endpoint->init(std::move(mesh)); !st) return st;
  common::logf(common::LogLevel::kDebug, config.rank, "tcp: mesh of %d ranks connected",
               config.size);
  out = std::move(endpoint);
  return common::Status::ok();
}

}  // namespace mccl::transport::tcp
