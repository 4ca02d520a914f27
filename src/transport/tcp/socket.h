// Small POSIX socket helpers of the TCP transport: an owning descriptor,
// errno text, and the few socket calls setup needs, each turning a failure
// into a Status that names the call and the errno.
#pragma once

#include <netinet/in.h>

#include <string>

#include "common/status.h"

namespace mccl::transport::tcp {

// Owns one file descriptor; closes it on destruction. Move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// "Connection reset by peer (errno 104)".
std::string errno_text(int err);

std::string to_string(const sockaddr_in& addr);  // "10.0.0.1:41234"

// A non-blocking, close-on-exec TCP socket.
common::Status open_tcp_socket(Fd& out);

// TCP_NODELAY: messages are small control messages as often as bulk data,
// and the transport already writes whole messages at once.
void set_nodelay(int fd);

// Binds `addr` (port 0 = ephemeral) and listens; `bound` gets the address
// actually bound.
common::Status listen_on(const sockaddr_in& addr, int backlog, Fd& out, sockaddr_in& bound);

}  // namespace mccl::transport::tcp
