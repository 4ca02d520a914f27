#include "transport/tcp/socket.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mccl::transport::tcp {

common::Status open_tcp_socket(Fd& out) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return common::transport_error("tcp: socket(): " + errno_text(errno));
  out.reset(fd);
  return common::Status::ok();
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

common::Status listen_on(const sockaddr_in& addr, int backlog, Fd& out, sockaddr_in& bound) {
  Fd fd;
  if (auto st = open_tcp_socket(fd); !st) return st;
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return common::transport_error("tcp: cannot bind " + to_string(addr) + ": " +
                                   errno_text(errno));
  }
  if (::listen(fd.get(), backlog) != 0) {
    return common::transport_error("tcp: cannot listen on " + to_string(addr) + ": " +
                                   errno_text(errno));
  }
  socklen_t len = sizeof bound;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    return common::transport_error("tcp: getsockname(): " + errno_text(errno));
  }
  out = std::move(fd);
  return common::Status::ok();
}

}  // namespace mccl::transport::tcp
