#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

namespace mccl::bootstrap {

common::Status parse_host_port(const std::string& text, const std::string& what, HostPort& out) {
  auto bad = [&](const std::string& why) {
    return common::invalid_argument(what + "=\"" + text + "\" is not valid: " + why +
                                    " (expected host:port, e.g. node0:29500 or 10.0.0.1:29500)");
  };
  auto colon = text.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  std::string host = text.substr(0, colon);
  std::string port = text.substr(colon + 1);
  if (host.empty()) return bad("no host");
  if (host.find(':') != std::string::npos)
    return bad("only host names and IPv4 addresses are supported");
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad("the port is not a number");
  }
  int p = std::stoi(port);
  if (p < 1 || p > 65535) return bad("the port is not in 1..65535");
  out.host = std::move(host);
  out.port = static_cast<std::uint16_t>(p);
  return common::Status::ok();
}

common::Status resolve_ipv4(const std::string& host, std::uint16_t port, sockaddr_in& out) {
  std::memset(&out, 0, sizeof out);
  out.sin_family = AF_INET;
  out.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &out.sin_addr) == 1) return common::Status::ok();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return common::transport_error("cannot resolve host \"" + host + "\": " +
                                   (rc == EAI_SYSTEM ? errno_text(errno) : ::gai_strerror(rc)));
  }
  out.sin_addr = reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr;
  ::freeaddrinfo(res);
  return common::Status::ok();
}

bool is_loopback(const sockaddr_in& addr) { return (ntohl(addr.sin_addr.s_addr) >> 24) == 127; }

namespace {

// Waits for `events` on `fd` until `deadline`; false on timeout.
bool wait_for(int fd, short events, common::Deadline deadline, int& err) {
  err = 0;
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (rc > 0) return true;
    if (rc == 0) {
      if (deadline.expired()) return false;
      continue;
    }
    if (errno == EINTR) continue;
    err = errno;
    return true;
  }
}

}  // namespace

common::Status connect_by(const sockaddr_in& addr, common::Deadline deadline, Fd& out) {
  Fd fd;
  if (auto st = common::open_tcp_socket(fd); !st) return st;
  common::set_nodelay(fd.get());
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS && errno != EINTR) {
      return common::transport_error("connect to " + to_string(addr) + ": " + errno_text(errno));
    }
    int err = 0;
    if (!wait_for(fd.get(), POLLOUT, deadline, err)) {
      return common::timeout_error("connect to " + to_string(addr) + ": timed out");
    }
    socklen_t len = sizeof err;
    if (err == 0) ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0)
      return common::transport_error("connect to " + to_string(addr) + ": " + errno_text(err));
  }
  out = std::move(fd);
  return common::Status::ok();
}

common::Status write_all(int fd, std::span<const std::span<const std::byte>> parts,
                         common::Deadline deadline) {
  std::vector<iovec> iov;
  for (const auto& p : parts) {
    if (!p.empty()) iov.push_back({const_cast<std::byte*>(p.data()), p.size()});
  }
  std::size_t first = 0;
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = std::min<std::size_t>(iov.size() - first, IOV_MAX);
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        return common::peer_failure("write failed: " + errno_text(errno));
      }
      int err = 0;
      if (!wait_for(fd, POLLOUT, deadline, err)) return common::timeout_error("timed out writing");
      if (err != 0) return common::transport_error("poll(): " + errno_text(err));
      continue;
    }
    auto left = static_cast<std::size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return common::Status::ok();
}

common::Status read_exact(int fd, std::span<std::byte> buf, common::Deadline deadline) {
  std::size_t got = 0;
  while (got < buf.size()) {
    ssize_t n = ::recv(fd, buf.data() + got, buf.size() - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return common::peer_failure("connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return common::peer_failure("read failed: " + errno_text(errno));
    }
    int err = 0;
    if (!wait_for(fd, POLLIN, deadline, err)) return common::timeout_error("timed out reading");
    if (err != 0) return common::transport_error("poll(): " + errno_text(err));
  }
  return common::Status::ok();
}

}  // namespace mccl::bootstrap
