// IPv4 for the bootstrap and the socket transports: the text forms of
// addresses for logs and error messages, and the TCP sockets that the
// bootstrap's store and the TCP transport both open.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>

#include "common/fd.h"
#include "common/status.h"

namespace mccl::common {

// "127.0.0.1" from a host-byte-order address.
std::string ipv4_text(std::uint32_t addr);

// "10.0.0.1:29500".
std::string to_string(const sockaddr_in& addr);

// A non-blocking, close-on-exec IPv4 TCP socket.
Status open_tcp_socket(Fd& out);

// TCP_NODELAY: MCCL's TCP messages are small control messages as often as
// bulk data, and their writers already hand over whole messages at once.
void set_nodelay(int fd);

// A non-blocking TCP socket bound to `addr` (port 0: an ephemeral one) and
// listening, with SO_REUSEADDR (a restarted server takes its port back
// while connections of the last one linger in TIME_WAIT). `bound`, when
// given, gets the address actually bound. Errors (kTransportError) name the
// call, the address and the errno; callers prefix who they are.
Status listen_on(const sockaddr_in& addr, int backlog, Fd& out, sockaddr_in* bound = nullptr);

}  // namespace mccl::common
