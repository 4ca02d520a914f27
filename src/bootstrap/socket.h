// Socket helpers of the bootstrap: IPv4 only, every call that waits takes a
// deadline and waits with poll(), never longer. Descriptors are
// non-blocking and close-on-exec.
//
// Errors come back as Status values with a short text ("timed out",
// "connection closed by the peer", strerror); callers prefix what they were
// doing and whom they were talking to.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <span>
#include <string>

#include "common/clock.h"
#include "common/fd.h"
#include "common/ipv4.h"
#include "common/status.h"

namespace mccl::bootstrap {

using common::errno_text;
using common::Fd;

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};

// Parses "host:port" (a name or a dotted quad, a port in 1..65535). `what`
// names the setting or field in the error (kInvalidArgument).
common::Status parse_host_port(const std::string& text, const std::string& what, HostPort& out);

// The first IPv4 address of `host` (a dotted quad or a name) with `port`.
common::Status resolve_ipv4(const std::string& host, std::uint16_t port, sockaddr_in& out);

using common::to_string;  // "10.0.0.1:29500"
bool is_loopback(const sockaddr_in& addr);

// A listening TCP socket bound to `addr` (common/ipv4.h).
using common::listen_on;

// Connects a non-blocking socket to `addr`, waiting until `deadline`.
// kTimeout when the deadline passes, kTransportError (with errno) when the
// connection is refused or fails.
common::Status connect_by(const sockaddr_in& addr, common::Deadline deadline, Fd& out);

// Writes all of `parts` (in order), waiting for room until `deadline`.
common::Status write_all(int fd, std::span<const std::span<const std::byte>> parts,
                         common::Deadline deadline);

// Reads exactly `buf.size()` bytes, waiting until `deadline`. A clean EOF is
// kPeerFailure "connection closed by the peer".
common::Status read_exact(int fd, std::span<std::byte> buf, common::Deadline deadline);

// Milliseconds for poll() until `deadline` (common/clock.h).
using common::poll_timeout_ms;

}  // namespace mccl::bootstrap
