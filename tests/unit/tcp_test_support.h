// The TCP transport as the unit tests run it: ranks as threads of one
// process on 127.0.0.1.
#pragma once

#include <chrono>

#include "transport/tcp/tcp_transport.h"

namespace mccl::transport::tcp::test {

// Rank `rank` of `size` bound to 127.0.0.1, 10 s to connect.
inline TcpReliableConfig loopback_config(int rank, int size) {
  return {.rank = rank,
          .size = size,
          .bind_address = "127.0.0.1",
          .connect_timeout = std::chrono::seconds(10)};
}

}  // namespace mccl::transport::tcp::test
