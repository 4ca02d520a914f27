// The daemon's "DMA" into and out of a client process: the bytes of a
// staged collective move with process_vm_readv/process_vm_writev.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace mccl::offload::daemon {

// Reads (write false) or writes `n` bytes at the client's address `remote`
// from or into `local`. Blocks for the copy. Fails, naming the direction
// and errno, when the client's range is not mapped or the client is gone.
common::Status client_io(pid_t pid, bool write, std::uint64_t remote, std::byte* local,
                         std::size_t n);

}  // namespace mccl::offload::daemon
