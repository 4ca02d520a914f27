#include "common/host.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <functional>
#include <string>

namespace mccl::common {

namespace {

std::uint64_t compute() {
  // The boot id names the kernel (every namespace shares it); the link
  // /proc/self/ns/net ("net:[4026531840]") names the network namespace.
  std::string id;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, id);
  char ns[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/ns/net", ns, sizeof ns - 1);
  if (n > 0) id += std::string(ns, static_cast<std::size_t>(n));
  // Neither readable (no /proc): the host name is the best guess left.
  if (id.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    id = host;
  }
  return std::hash<std::string>{}(id) | 1;
}

}  // namespace

std::uint64_t network_host_id() {
  static const std::uint64_t id = compute();
  return id;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace mccl::common
