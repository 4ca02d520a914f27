#include "common/host.h"

#include <unistd.h>

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

}  // namespace mccl::common
