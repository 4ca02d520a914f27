// The socket helpers of the TCP transport, all common's: the owning
// descriptor and the errno text (common/fd.h), addresses as text and the
// TCP sockets themselves (common/ipv4.h), which the bootstrap shares.
#pragma once

#include "common/fd.h"
#include "common/ipv4.h"

namespace mccl::transport::tcp {

using common::errno_text;
using common::Fd;
using common::listen_on;
using common::open_tcp_socket;
using common::set_nodelay;
using common::to_string;  // "10.0.0.1:41234"

}  // namespace mccl::transport::tcp
