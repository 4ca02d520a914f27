// Where the progress thread runs. A thread that polls the network should
// sit on a core close to the NIC (same NUMA node / PCI root) and away from
// the application's busiest cores; hwloc knows the machine's shape.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace mccl::topo {

struct Placement {
  int cpu = -1;        // OS index of the chosen processing unit; -1 = do not pin
  std::string reason;  // for logs and mccl_info: why this CPU
};

// `requested` >= 0 wins (MCCL_PROGRESS_CPU); otherwise the last core close
// to network interface `iface` when hwloc can tell, otherwise the machine's
// last core. `local_index` is this rank's position among the ranks on the
// same machine: the i-th one takes the i-th core from the end (wrapping), so
// ranks sharing a host do not pile their progress threads onto one core.
Placement choose_progress_cpu(int requested, const std::string& iface, int local_index = 0);

// Identifies this machine (its boot id), the same in every network namespace
// and process on it; 0 when it cannot be read.
std::uint64_t machine_id();

// Binds the calling thread to `cpu`.
common::Status bind_current_thread(int cpu);

// One line describing the topology, for mccl_info ("2 cores, 2 PUs, hwloc 2.9").
std::string describe_machine();

// How many times this process has loaded the hardware topology: at most
// once without I/O devices and once with them (only for an interface that is
// a device on a bus), whatever the number of communicators (for tests).
int topology_loads();
int topology_loads_with_io();

}  // namespace mccl::topo
