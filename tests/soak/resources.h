// What the soak watches for growth: this process's resident memory, open
// descriptors, threads and memory mappings, read from /proc/self.
#pragma once

#include <cstdint>
#include <string>

namespace mccl::soak {

struct Resources {
  std::int64_t rss_kib = 0;   // VmRSS of /proc/self/status
  std::int64_t threads = 0;   // Threads of /proc/self/status
  std::int64_t fds = 0;       // entries of /proc/self/fd
  std::int64_t mappings = 0;  // lines of /proc/self/maps
};

Resources sample();
std::string to_string(const Resources& r);

}  // namespace mccl::soak
