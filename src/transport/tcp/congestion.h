// Which congestion control a connection's socket runs.
//
// A kernel may make a congestion control that paces every connection the
// default (net.ipv4.tcp_congestion_control=bbr: each burst leaves at the
// path rate it last measured). A collective's connection carries bursts (a
// block of an allgather, a segment of a tree) between waits for the other
// ranks, and BBR paces a burst that starts from idle at its estimate of the
// path's rate, so a connection that only ever sends such bursts never
// measures more than the estimate it settled on. Between two ranks of one
// host there is no path rate at all: the copies are the limit. Measured:
// - one host (2-core Zen 3, kernel 6.18): a 2-rank 1 MiB binomial broadcast
//   took 342 us paced by BBR and 155 us unpaced (cubic) (docs/benchmarks.md,
//   "Unpaced TCP between ranks of one host");
// - the namespace cluster at 10 Gbit/s (2-core Xeon; "TCP unpaced between
//   hosts too"): `ss -ti` showed a 2-rank allgather's connection paced at
//   1.3 Gbit/s, and its 64 KiB allgather took 430-532 us a cycle in 5 of 7
//   launches under BBR, 89-168 in all 7 unpaced (Open MPI's, paced by BBR
//   too, 75-350); a 4-rank 1 MiB allreduce 6.5 against 4.6 ms; nothing
//   measured slower unpaced, at 1 Gbit/s (the FSDP pair, the
//   reduce-scatter) neither.
//
// So by default ("auto") every connection runs a congestion control that
// does not pace (cubic, the kernel's own default, else reno, which every
// kernel has). "system" keeps the system's; any other value is an
// algorithm every connection runs.
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

// Applies `setting` to the connected socket `fd` (see above). Failing to
// set an algorithm the caller did not name leaves the system's; it never
// fails the connection.
void apply_congestion(int fd, const std::string& setting);

// The algorithm `fd` runs ("cubic"), or "" when it cannot be read.
std::string congestion_of(int fd);

}  // namespace mccl::transport::tcp
