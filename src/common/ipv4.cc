#include "common/ipv4.h"

#include <arpa/inet.h>

namespace mccl::common {

std::string ipv4_text(std::uint32_t addr) {
  in_addr a{htonl(addr)};
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

std::string to_string(const sockaddr_in& addr) {
  return ipv4_text(ntohl(addr.sin_addr.s_addr)) + ":" + std::to_string(ntohs(addr.sin_port));
}

}  // namespace mccl::common
