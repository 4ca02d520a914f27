// Where the progress thread runs. A thread that polls the network should
// sit on a core close to the NIC (same NUMA node / PCI root) and away from
// the application's busiest cores; hwloc knows the machine's shape.
#pragma once

#include <string>

#include "common/status.h"

namespace mccl::topo {

struct Placement {
  int cpu = -1;        // OS index of the chosen processing unit; -1 = do not pin
  std::string reason;  // for logs and mccl_info: why this CPU
};

// `requested` >= 0 wins (MCCL_PROGRESS_CPU); otherwise the last core close
// to network interface `iface` when hwloc can tell, otherwise the machine's
// last core.
Placement choose_progress_cpu(int requested, const std::string& iface);

// Binds the calling thread to `cpu`.
common::Status bind_current_thread(int cpu);

// One line describing the topology, for mccl_info ("2 cores, 2 PUs, hwloc 2.9").
std::string describe_machine();

}  // namespace mccl::topo
