#include "common/ipv4.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

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

Status open_tcp_socket(Fd& out) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return transport_error("socket(): " + errno_text(errno));
  out.reset(fd);
  return Status::ok();
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Status listen_on(const sockaddr_in& addr, int backlog, Fd& out, sockaddr_in* bound) {
  Fd fd;
  if (auto st = open_tcp_socket(fd); !st) return st;
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return transport_error("cannot bind " + to_string(addr) + ": " + errno_text(errno));
  }
  if (::listen(fd.get(), backlog) != 0) {
    return transport_error("cannot listen on " + to_string(addr) + ": " + errno_text(errno));
  }
  if (bound != nullptr) {
    socklen_t len = sizeof *bound;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(bound), &len) != 0) {
      return transport_error("getsockname() of " + to_string(addr) + ": " + errno_text(errno));
    }
  }
  out = std::move(fd);
  return Status::ok();
}

}  // namespace mccl::common
