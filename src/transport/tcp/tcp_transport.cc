// The TCP reliable transport's factory: checks the config, publishes the
// addresses (directory.h) and has the endpoint (endpoint.h) connect the
// ring neighbours.
#include "transport/tcp/tcp_transport.h"

#include <arpa/inet.h>

#include "common/log.h"
#include "transport/tcp/congestion.h"
#include "transport/tcp/directory.h"
#include "transport/tcp/endpoint.h"

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
  if (auto st = check_congestion(c.congestion); !st) return st;
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
  Directory dir;
  Fd listen;
  if (config.size > 1) {
    if (!oob) return common::invalid_argument("tcp: no out-of-band allgather given");
    if (auto st = publish_addresses(config, oob, dir, listen); !st) return st;
  }
  auto endpoint = std::make_unique<TcpEndpoint>(config, std::move(dir), std::move(listen));
  if (auto st = endpoint->init(); !st) return st;
  common::logf(common::LogLevel::kDebug, config.rank,
               "tcp: ring neighbours of %d ranks connected; others on demand", config.size);
  out = std::move(endpoint);
  return common::Status::ok();
}

}  // namespace mccl::transport::tcp
