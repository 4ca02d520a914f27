// The daemon's view of the application's shared buffers (zero copy): memory
// the client allocated from a memfd (OffloadComm::allocate) and passed over
// the socket, mapped here too. A submission whose buffers lie wholly inside
// such regions runs on them directly: no staging, no process_vm_* copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "common/status.h"

namespace mccl::offload::daemon {

class Regions {
 public:
  Regions() = default;
  ~Regions();
  Regions(const Regions&) = delete;
  Regions& operator=(const Regions&) = delete;

  // Maps `fd` (closed in every case) as the client's [client_addr,
  // client_addr + bytes).
  common::Status add(int fd, std::uint64_t client_addr, std::uint64_t bytes);
  void remove(std::uint64_t client_addr);
  // This process's address of the client's [addr, addr + bytes), or null
  // when the range is not wholly inside one region. Null for bytes == 0.
  std::byte* find(std::uint64_t addr, std::uint64_t bytes) const;

 private:
  struct Region {
    std::uint64_t bytes;
    std::byte* local;
  };
  std::map<std::uint64_t, Region> by_addr_;  // keyed by the client's address
};

}  // namespace mccl::offload::daemon
