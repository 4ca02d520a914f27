// A field of /proc/PID/status, for the offload tests that watch the
// daemon's memory.
#pragma once

#include <sys/types.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace mccl::offload {

// The number after `field` ("VmPeak:", "VmSize:" in KiB, "Threads:"); -1 if absent.
inline long proc_status_kib(pid_t pid, const char* field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  }
  return -1;
}

}  // namespace mccl::offload
