// Which ranks share a network stack: a rank's identity as a host on the
// network, as opposed to topo::machine_id() (one kernel, shared CPUs); and
// how many cores this process may use.
#pragma once

#include <cstdint>

namespace mccl::common {

// Equal for two processes exactly when they run on one kernel in one
// network namespace, so that each reaches the other over loopback; ranks
// in sibling namespaces (the fabric test's "hosts") differ. Never 0. Cheap
// after the first call; thread-safe.
std::uint64_t network_host_id();

// The cores this process may run on (its affinity mask), at least 1.
int usable_cores();

}  // namespace mccl::common
