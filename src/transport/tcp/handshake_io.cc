#include "transport/tcp/handshake_io.h"

#include <sys/socket.h>

#include <cerrno>

#include "transport/tcp/socket.h"

namespace mccl::transport::tcp {
namespace {

// Moves bytes [pos, size) with `move` (recv or send from/to offset `pos`)
// until all are through or the socket would block; false on an error or a
// closed connection (with its text in `why`).
template <typename Move>
bool move_handshake(Move move, std::size_t size, std::size_t& pos, std::string& why) {
  while (pos < size) {
    const ssize_t n = move(pos);
    if (n > 0) {
      pos += static_cast<std::size_t>(n);
    } else if (n == 0) {
      why = "closed by the peer during the handshake";
      return false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return true;
    } else if (errno != EINTR) {
      why = errno_text(errno);
      return false;
    }
  }
  return true;
}

}  // namespace

bool read_handshake(int fd, HandshakeBuf& buf, std::size_t& got, std::string& why) {
  return move_handshake(
      [&](std::size_t at) { return ::recv(fd, buf.data() + at, buf.size() - at, 0); }, buf.size(),
      got, why);
}

bool write_handshake(int fd, const HandshakeBuf& buf, std::size_t& off, std::string& why) {
  return move_handshake(
      [&](std::size_t at) { return ::send(fd, buf.data() + at, buf.size() - at, MSG_NOSIGNAL); },
      buf.size(), off, why);
}

}  // namespace mccl::transport::tcp
