#include "offload/daemon/regions.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace mccl::offload::daemon {

Regions::~Regions() {
  for (auto& [addr, r] : by_addr_) ::munmap(r.local, r.bytes);
}

common::Status Regions::add(int fd, std::uint64_t client_addr, std::uint64_t bytes) {
  struct stat sb {};
  if (bytes == 0 || ::fstat(fd, &sb) != 0 || static_cast<std::uint64_t>(sb.st_size) < bytes) {
    ::close(fd);
    return common::invalid_argument("shared buffer: the memfd is smaller than announced");
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    return common::transport_error(std::string("shared buffer: mmap: ") + std::strerror(errno));
  }
  // Overlap means the client reused an address it never unregistered.
  remove(client_addr);
  by_addr_[client_addr] = Region{bytes, static_cast<std::byte*>(p)};
  return common::Status::ok();
}

void Regions::remove(std::uint64_t client_addr) {
  auto it = by_addr_.find(client_addr);
  if (it == by_addr_.end()) return;
  ::munmap(it->second.local, it->second.bytes);
  by_addr_.erase(it);
}

std::byte* Regions::find(std::uint64_t addr, std::uint64_t bytes) const {
  if (bytes == 0 || by_addr_.empty()) return nullptr;
  auto it = by_addr_.upper_bound(addr);
  if (it == by_addr_.begin()) return nullptr;
  --it;
  const std::uint64_t start = it->first, len = it->second.bytes;
  if (addr < start || addr - start > len || bytes > len - (addr - start)) return nullptr;
  return it->second.local + (addr - start);
}

}  // namespace mccl::offload::daemon
