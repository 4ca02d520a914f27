// A staged broadcast's or allgather's blocks, moved between the client and
// the daemon's staging buffer while the collective runs (coll::StagingHooks)
// instead of all before and after it. This rank's block (a broadcast root's
// buffer, an allgather's own block) is read from the client just ahead of
// its injection. A received block's bytes, once final,
// are written back while the session has nothing else to do, in steps, so
// the copy fills the time the daemon would wait on the wire and never holds
// back a datagram; what is left is written once the collective is done.
// Copying the whole before and after held a 16 MiB broadcast through
// ordinary memory to a third of the inline engine's rate; writing back as
// soon as bytes arrived, idle or not, made an allgather slower where the
// daemon had no idle time (docs/benchmarks.md, "Pipelined staging").
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
  // allgather in place), so it is never written back. `source`: the
  // client's address of this rank's block as fill() reads it (an
  // allgather's send buffer where not in place); 0: nothing to read.
  StagedBlocks(pid_t pid, std::byte* local, std::uint64_t remote, std::vector<std::size_t> counts,
               std::vector<std::size_t> displs, int rank, bool in_client, std::uint64_t source);

  // Reads bytes [begin, end) of this rank's block from the client's
  // `source`, as the collective sends them. Blocks for the copy.
  common::Status fill(std::uint64_t begin, std::uint64_t end);
  // Bytes [0, bytes) of `root`'s block are final here. Copies nothing.
  void arrived(int root, std::uint64_t bytes);
  // For a session with nothing else to do: writes back, for each block but
  // this rank's, final bytes not yet in the client, where a step of them
  // (kStepBytes) or the block's end is there, at most kMostPerCall bytes in
  // all. True when it wrote something. Blocks for the copy. A failed write
  // ends the writing; deliver_rest() reports it.
  bool write_held();
  // After the collective: writes every block's bytes not yet in the client
  // (this rank's too, unless `in_client`), or reports write_held()'s failure.
  common::Status deliver_rest();

  // The hooks for coll::make_broadcast and make_allgatherv; they keep
  // `blocks` alive as long as the collective holds them.
  static coll::StagingHooks hooks(const std::shared_ptr<StagedBlocks>& blocks);

  // Written back in steps at least this long: one process_vm_writev each.
  static constexpr std::uint64_t kStepBytes = 256 * 1024;
  // What one write_held() call writes at most: 0.25 to 0.5 ms away from
  // the sockets at the 2 to 4 GB/s process_vm_writev measured on a 2-core
  // machine (docs/benchmarks.md, "Pipelined staging").
  static constexpr std::uint64_t kMostPerCall = 1024 * 1024;

 private:
  common::Status write_back(std::size_t rank, std::uint64_t to);

  pid_t pid_;
  std::byte* local_;
  std::uint64_t remote_;
  std::vector<std::size_t> counts_, displs_;
  std::vector<std::uint64_t> held_;     // by rank: bytes of its block final here
  std::vector<std::uint64_t> written_;  // by rank: bytes of its block in the client
  int rank_;
  bool in_client_;
  std::uint64_t source_;
  common::Status failed_;  // write_held()'s first failure
};

}  // namespace mccl::offload::daemon
