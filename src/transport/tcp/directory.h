// Where every rank of a TCP transport listens: each rank opens its
// listening socket (kept for the transport's life, so that any peer can
// connect when it first needs to) and the ranks exchange (address, port,
// random nonce) through the injected out-of-band allgather. The nonces
// authenticate the handshakes (wire.h): only a process that took part in
// the exchange knows them.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/oob.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wire.h"

namespace mccl::transport::tcp {

struct Directory {
  int rank = -1;
  int size = 0;
  std::uint64_t nonce = 0;           // this rank's
  std::vector<wire::Address> addrs;  // by rank: 24 bytes each, the only per-peer table
  std::uint16_t listen_port = 0;

  sockaddr_in address_of(int peer) const;
  std::string name(int peer) const { return to_string(address_of(peer)); }  // "ip:port"
};

// Blocking and collective (one `oob` call): listens on config.bind_address
// and fills `out` and `listen`. `config` must be valid (checked by
// create_tcp_reliable). A rank that cannot listen still takes part in the
// exchange (with an unusable address), so that no rank waits for it.
common::Status publish_addresses(const TcpReliableConfig& config, const OobAllgather& oob,
                                 Directory& out, Fd& listen);

}  // namespace mccl::transport::tcp
