#include "transport/tcp/handshake_io.h"

#include <sys/socket.h>

#include <cerrno>

#include "transport/tcp/socket.h"

namespace mccl::transport::tcp {

bool read_handshake(int fd, HandshakeBuf& buf, std::size_t& got, std::string& why) {
  while (got < buf.size()) {
    ssize_t n = ::recv(fd, buf.data() + got, buf.size() - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (n == 0) {
      why = "closed by the peer during the handshake";
      return false;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return true;
    } else {
      why = errno_text(errno);
      return false;
    }
  }
  return true;
}

bool write_handshake(int fd, const HandshakeBuf& buf, std::size_t& off, std::string& why) {
  while (off < buf.size()) {
    ssize_t n = ::send(fd, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
    if (n >= 0) {
      off += static_cast<std::size_t>(n);
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return true;
    } else {
      why = errno_text(errno);
      return false;
    }
  }
  return true;
}

}  // namespace mccl::transport::tcp
