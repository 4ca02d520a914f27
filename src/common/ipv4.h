// Text forms of IPv4 addresses for logs and error messages, shared by the
// bootstrap and the socket transports.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>

namespace mccl::common {

// "127.0.0.1" from a host-byte-order address.
std::string ipv4_text(std::uint32_t addr);

// "10.0.0.1:29500".
std::string to_string(const sockaddr_in& addr);

}  // namespace mccl::common
