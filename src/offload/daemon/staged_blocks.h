// A staged broadcast's or allgather's blocks, moved between the client and
// the daemon's staging buffer. A broadcast's move while it runs
// (coll::StagingHooks) instead of all before and after it: the root's bytes
// are read from the client just ahead of their injection, and a receiver's
// block is written back as the part of it held from its start grows by a
// step, while those bytes are still in the daemon's cache. What is left,
// and an allgather's blocks, are written once the collective is done.
// Copying the whole before and after held a 16 MiB broadcast through
// ordinary memory to a third of the inline engine's rate
// (docs/benchmarks.md, "pipelined staging").
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "coll/collectives.h"
#include "common/status.h"

namespace mccl::offload::daemon {

class StagedBlocks {
 public:
  // Rank r's block: counts[r] bytes at displs[r] of `local` (the staging
  // buffer) and of the client's `remote`. `rank` is this rank; `in_client`:
  // the client's buffer holds its block already (a broadcast's root, an
  // allgather in place), so it is never written back.
  StagedBlocks(pid_t pid, std::byte* local, std::uint64_t remote, std::vector<std::size_t> counts,
               std::vector<std::size_t> displs, int rank, bool in_client);

  // Reads bytes [begin, end) of this rank's block from the client (a
  // broadcast's root, as it sends them). Blocks for the copy.
  common::Status fill(std::uint64_t begin, std::uint64_t end);
  // Bytes [0, bytes) of `root`'s block are final here: writes what is not
  // yet in the client once kStepBytes of it or the whole block are. Blocks
  // for the copy. This rank's own block waits for deliver_rest(): written
  // at the start, it would hold back the injection.
  common::Status arrived(int root, std::uint64_t bytes);
  // After the collective: writes every block's bytes not yet in the client.
  common::Status deliver_rest();

  // The hooks for coll::make_broadcast; they keep `blocks` alive as long
  // as the collective holds them.
  static coll::StagingHooks hooks(const std::shared_ptr<StagedBlocks>& blocks);

  // Written back in steps at least this long: one process_vm_writev per
  // step, the step's bytes still in the cache.
  static constexpr std::uint64_t kStepBytes = 256 * 1024;

 private:
  common::Status write_back(std::size_t rank, std::uint64_t to);

  pid_t pid_;
  std::byte* local_;
  std::uint64_t remote_;
  std::vector<std::size_t> counts_, displs_;
  std::vector<std::uint64_t> written_;  // by rank: bytes of its block in the client
  int rank_;
  bool in_client_;
};

}  // namespace mccl::offload::daemon
