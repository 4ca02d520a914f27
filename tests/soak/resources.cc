#include "resources.h"

#include <dirent.h>

#include <fstream>
#include <sstream>

namespace mccl::soak {

namespace {

std::int64_t status_field(const std::string& text, const std::string& key) {
  const auto at = text.find("\n" + key + ":");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + key.size() + 2));
}

}  // namespace

Resources sample() {
  Resources r;
  std::ifstream status("/proc/self/status");
  std::stringstream text;
  text << "\n" << status.rdbuf();
  r.rss_kib = status_field(text.str(), "VmRSS");
  r.threads = status_field(text.str(), "Threads");
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++r.fds;
    }
    ::closedir(d);
    --r.fds;  // the descriptor of the listing itself
  }
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) ++r.mappings;
  return r;
}

std::string to_string(const Resources& r) {
  return "rss=" + std::to_string(r.rss_kib / 1024) + "MiB fds=" + std::to_string(r.fds) +
         " threads=" + std::to_string(r.threads) + " mappings=" + std::to_string(r.mappings);
}

}  // namespace mccl::soak
