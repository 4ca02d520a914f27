// Small POSIX socket helpers of the TCP transport (the owning descriptor
// and the errno text are common/fd.h's): the few socket calls setup needs, each turning a failure
// into a Status that names the call and the errno.
#pragma once

#include <netinet/in.h>

#include <string>

#include "common/fd.h"
#include "common/ipv4.h"
#include "common/status.h"

namespace mccl::transport::tcp {

using common::errno_text;
using common::Fd;

using common::to_string;  // "10.0.0.1:41234"

// A non-blocking, close-on-exec TCP socket.
common::Status open_tcp_socket(Fd& out);

// TCP_NODELAY: messages are small control messages as often as bulk data,
// and the transport already writes whole messages at once.
void set_nodelay(int fd);

// Binds `addr` (port 0 = ephemeral) and listens; `bound` gets the address
// actually bound.
common::Status listen_on(const sockaddr_in& addr, int backlog, Fd& out, sockaddr_in& bound);

}  // namespace mccl::transport::tcp
