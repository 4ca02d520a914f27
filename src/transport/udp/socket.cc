#include "transport/udp/socket.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>

namespace mccl::transport::udp {

common::Status open_udp_socket(Fd& out) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
  if (fd < 0) return common::transport_error("udp transport: socket(): " + errno_text(errno));
  out.reset(fd);
  return common::Status::ok();
}

common::Status set_int_option(int fd, int level, int name, int value, const char* what) {
  if (::setsockopt(fd, level, name, &value, sizeof value) != 0) {
    return common::transport_error(std::string("udp transport: setsockopt(") + what + ", " +
                                   std::to_string(value) + "): " + errno_text(errno));
  }
  return common::Status::ok();
}

common::Status get_int_option(int fd, int level, int name, int& value, const char* what) {
  socklen_t len = sizeof value;
  if (::getsockopt(fd, level, name, &value, &len) != 0) {
    return common::transport_error(std::string("udp transport: getsockopt(") + what +
                                   "): " + errno_text(errno));
  }
  return common::Status::ok();
}

namespace {

common::Status attach(int fd, sock_filter* code, unsigned short len, const char* what) {
  sock_fprog prog{len, code};
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0) {
    return common::transport_error(std::string("udp transport: SO_ATTACH_FILTER (") + what +
                                   "): " + errno_text(errno));
  }
  return common::Status::ok();
}

}  // namespace

common::Status attach_source_filter(int fd, std::uint32_t src_addr, std::uint16_t src_port) {
  // A UDP socket's filter sees the packet from the UDP header on: the
  // source port is the half-word at offset 0, the IPv4 source address is
  // 12 bytes into the network header (SKF_NET_OFF). Loads are big-endian,
  // so the constants are compared in host order.
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, src_port, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<std::uint32_t>(SKF_NET_OFF) + 12),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, src_addr, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, 0),            // our own datagram: drop
      BPF_STMT(BPF_RET | BPF_K, 0xFFFFFFFFu),  // anyone else's: keep whole
  };
  return attach(fd, code, static_cast<unsigned short>(std::size(code)), "own-source filter");
}

common::Status attach_drop_all_filter(int fd) {
  sock_filter code[] = {BPF_STMT(BPF_RET | BPF_K, 0)};
  return attach(fd, code, 1, "drop-all filter");
}

}  // namespace mccl::transport::udp
