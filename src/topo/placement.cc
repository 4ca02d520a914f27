#include "topo/placement.h"

#include <hwloc.h>
#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <memory>

namespace mccl::topo {

namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;

Topology load_topology(bool with_io) {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) return nullptr;
  if (with_io) hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(t) != 0) {
    hwloc_topology_destroy(t);
    return nullptr;
  }
  return Topology(t);
}

// The last PU of the last core inside `set`, or -1.
int last_pu_in(hwloc_topology_t t, hwloc_const_cpuset_t set) {
  hwloc_obj_t core = nullptr, last = nullptr;
  while ((core = hwloc_get_next_obj_inside_cpuset_by_type(t, set, HWLOC_OBJ_CORE, core)))
    last = core;
  if (last == nullptr) return hwloc_bitmap_last(set);
  return hwloc_bitmap_first(last->cpuset);
}

}  // namespace

Placement choose_progress_cpu(int requested, const std::string& iface) {
  if (requested >= 0) return {requested, "MCCL_PROGRESS_CPU=" + std::to_string(requested)};
  Topology topo = load_topology(!iface.empty());
  if (!topo) return {-1, "hwloc could not load the topology; thread not pinned"};
  hwloc_topology_t t = topo.get();
  if (!iface.empty()) {
    hwloc_obj_t dev = nullptr;
    while ((dev = hwloc_get_next_osdev(t, dev))) {
      if (dev->name == nullptr || iface != dev->name) continue;
      hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(t, dev);
      if (near != nullptr && near->cpuset != nullptr) {
        int pu = last_pu_in(t, near->cpuset);
        if (pu >= 0) return {pu, "last core near " + iface};
      }
    }
  }
  int pu = last_pu_in(t, hwloc_topology_get_topology_cpuset(t));
  return {pu, iface.empty() ? "last core" : "last core (" + iface + " has no locality)"};
}

common::Status bind_current_thread(int cpu) {
  if (cpu < 0) return common::Status::ok();
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0) {
    return common::invalid_argument("cannot pin the progress thread to CPU " + std::to_string(cpu) +
                                    ": " + std::strerror(rc) + " (check MCCL_PROGRESS_CPU)");
  }
  return common::Status::ok();
}

std::string describe_machine() {
  Topology topo = load_topology(false);
  if (!topo) return "hwloc could not load the topology";
  int cores = hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_CORE);
  int pus = hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_PU);
  int numa = hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_NUMANODE);
  return std::to_string(cores) + " cores, " + std::to_string(pus) + " PUs, " +
         std::to_string(numa) + " NUMA nodes (hwloc " + HWLOC_VERSION + ")";
}

}  // namespace mccl::topo
