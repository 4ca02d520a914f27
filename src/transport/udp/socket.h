// Small POSIX socket helpers for the UDP transport (the owning descriptor
// and the errno text are common/fd.h's): option setters that turn failures into Status values
// naming the option and the errno, and the classic-BPF receive filters.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "common/fd.h"
#include "common/status.h"

namespace mccl::transport::udp {

using common::errno_text;
using common::Fd;

// A non-blocking, close-on-exec IPv4 UDP socket.
common::Status open_udp_socket(Fd& out);

// setsockopt with an int value; the error names `what` (e.g. "SO_RCVBUF").
common::Status set_int_option(int fd, int level, int name, int value, const char* what);
common::Status get_int_option(int fd, int level, int name, int& value, const char* what);

// Drops, in the kernel, every datagram whose IPv4 source is
// `src_addr`:`src_port` (both host byte order): the sender's own datagrams
// looped back by IP_MULTICAST_LOOP, before they take receive-buffer space.
common::Status attach_source_filter(int fd, std::uint32_t src_addr, std::uint16_t src_port);

// Drops every datagram delivered to `fd` (for a send-only socket).
common::Status attach_drop_all_filter(int fd);

}  // namespace mccl::transport::udp
