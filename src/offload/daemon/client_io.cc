#include "offload/daemon/client_io.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace mccl::offload::daemon {

// Looped: the kernel may move fewer bytes than asked.
common::Status client_io(pid_t pid, bool write, std::uint64_t remote, std::byte* local,
                         std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    iovec l{local + done, n - done};
    iovec r{reinterpret_cast<void*>(remote + done), n - done};
    ssize_t k = write ? ::process_vm_writev(pid, &l, 1, &r, 1, 0)
                      : ::process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (k <= 0) {
      return common::invalid_argument(std::string("the offload daemon could not ") +
                                      (write ? "write" : "read") + " the application's buffer (" +
                                      std::strerror(errno) + ")");
    }
    done += static_cast<std::size_t>(k);
  }
  return common::Status::ok();
}

}  // namespace mccl::offload::daemon
