// Which congestion control a connection's socket runs.
//
// A kernel may make a congestion control that paces every connection the
// default (net.ipv4.tcp_congestion_control=bbr: each burst leaves at the
// path rate it last measured). Between two ranks of one host there is no
// path rate: the copies are the limit. A collective's connection carries
// bursts (a 1 MiB message) between small control messages, and BBR holds
// each burst to the rate it last measured (20-36 Gbit/s there, `ss -ti`),
// below what the copies allow. Measured on one host
// (2-core Zen 3, kernel 6.18, docs/benchmarks.md): a 2-rank 1 MiB binomial
// broadcast took 342 us paced by BBR and 155 us unpaced (cubic).
//
// So by default ("auto") a connection whose two ends share a host runs a
// congestion control that does not pace (cubic, the kernel's own default,
// else reno, which every kernel has); one between hosts keeps the system's, which whoever
// configured the fabric chose for it. "system" keeps the system's
// everywhere; any other value is an algorithm every connection runs.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace mccl::transport::tcp {

inline constexpr std::string_view kCongestionAuto = "auto";
inline constexpr std::string_view kCongestionSystem = "system";

// kInvalidArgument, naming the value and why, when `setting` names an
// algorithm this process may not choose (not built into the kernel, or
// not in net.ipv4.tcp_allowed_congestion_control for an unprivileged
// process); ok for "auto", "system" and any algorithm it may choose. Opens
// and closes one socket to ask the kernel.
common::Status check_congestion(const std::string& setting);

// True when the connected socket's two ends have one address, or the peer's
// is a loopback one: its traffic never leaves this host.
bool same_host(int fd);

// Applies `setting` to the connected socket `fd` (see above). Failing to
// set an algorithm the caller did not name leaves the system's; it never
// fails the connection.
void apply_congestion(int fd, const std::string& setting);

// The algorithm `fd` runs ("cubic"), or "" when it cannot be read.
std::string congestion_of(int fd);

}  // namespace mccl::transport::tcp
