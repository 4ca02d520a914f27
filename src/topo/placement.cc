#include "topo/placement.h"

#include <hwloc.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <vector>

namespace mccl::topo {

namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::atomic<int> g_loads{0};
std::atomic<int> g_io_loads{0};

// `with_io`: with the important I/O devices, so that a NIC's locality can be
// found. Reading them costs most of a load: hwloc reads every PCI device's
// configuration space, which under a hypervisor traps on every access (about
// 7% of all CPU samples of an 8-rank run's 1.7 s on the 2-core Xeon).
Topology load_topology(bool with_io) {
  g_loads.fetch_add(1, std::memory_order_relaxed);
  if (with_io) g_io_loads.fetch_add(1, std::memory_order_relaxed);
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) return nullptr;
  hwloc_topology_set_io_types_filter(
      t, with_io ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT : HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(t) != 0) {
    hwloc_topology_destroy(t);
    return nullptr;
  }
  return Topology(t);
}

// The machine's shape does not change while a process runs, and loading it
// costs up to 250 ms (hwloc reads sysfs and leaks a little each time), so
// each kind is loaded once per process, on first use; a function-local
// static makes that thread-safe. A loaded topology is only read afterwards,
// which hwloc allows from several threads at once. Null when hwloc could
// not load it.
hwloc_topology_t machine_topology() {
  static const Topology topology = load_topology(false);
  return topology.get();
}
hwloc_topology_t topology_with_io() {
  static const Topology topology = load_topology(true);
  return topology.get();
}

// Whether `iface` is a device on a bus (a NIC), not a virtual interface
// (loopback, a veth, a bridge), which has no locality to find.
bool has_device(const std::string& iface) {
  std::error_code ec;
  return std::filesystem::exists("/sys/class/net/" + iface + "/device", ec);
}

// The first PU of the `from_end`-th core from the end inside `set` (modulo
// the number of cores there), or -1.
int pu_from_end_in(hwloc_topology_t t, hwloc_const_cpuset_t set, int from_end) {
  std::vector<hwloc_obj_t> cores;
  hwloc_obj_t core = nullptr;
  while ((core = hwloc_get_next_obj_inside_cpuset_by_type(t, set, HWLOC_OBJ_CORE, core)))
    cores.push_back(core);
  if (cores.empty()) return hwloc_bitmap_last(set);
  const auto n = static_cast<int>(cores.size());
  return hwloc_bitmap_first(cores[n - 1 - from_end % n]->cpuset);
}

std::string nth_last_core(int local_index) {
  if (local_index == 0) return "last core";
  return "core " + std::to_string(local_index) + " from the end (local rank " +
         std::to_string(local_index) + ")";
}

}  // namespace

Placement choose_progress_cpu(int requested, const std::string& iface, int local_index) {
  local_index = std::max(local_index, 0);
  if (requested >= 0) return {requested, "MCCL_PROGRESS_CPU=" + std::to_string(requested)};
  const bool near_device = !iface.empty() && has_device(iface);
  hwloc_topology_t t = near_device ? topology_with_io() : machine_topology();
  if (t == nullptr) return {-1, "hwloc could not load the topology; thread not pinned"};
  if (near_device) {
    hwloc_obj_t dev = nullptr;
    while ((dev = hwloc_get_next_osdev(t, dev))) {
      if (dev->name == nullptr || iface != dev->name) continue;
      hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(t, dev);
      if (near != nullptr && near->cpuset != nullptr) {
        int pu = pu_from_end_in(t, near->cpuset, local_index);
        if (pu >= 0) return {pu, nth_last_core(local_index) + " near " + iface};
      }
    }
  }
  int pu = pu_from_end_in(t, hwloc_topology_get_topology_cpuset(t), local_index);
  std::string why = nth_last_core(local_index);
  return {pu, iface.empty() ? why : why + " (" + iface + " has no locality)"};
}

std::uint64_t machine_id() {
  // The boot id is shared by every namespace of one kernel, unlike the
  // hostname or addresses, and ranks in sibling namespaces share its CPUs.
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!std::getline(in, id) || id.empty()) return 0;
  return std::hash<std::string>{}(id) | 1;
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
  hwloc_topology_t t = machine_topology();
  if (t == nullptr) return "hwloc could not load the topology";
  int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  int pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  int numa = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  return std::to_string(cores) + " cores, " + std::to_string(pus) + " PUs, " +
         std::to_string(numa) + " NUMA nodes (hwloc " + HWLOC_VERSION + ")";
}

int topology_loads() { return g_loads.load(std::memory_order_relaxed); }

int topology_loads_with_io() { return g_io_loads.load(std::memory_order_relaxed); }

}  // namespace mccl::topo
