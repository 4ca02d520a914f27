// The soak's collectives: a sequence that every rank derives from the same
// seed (so all ranks post the same collectives in the same order), the
// buffers of one collective on one rank, and the check of its result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mccl/mccl.hpp"

namespace mccl::soak {

enum class Kind { kBroadcast, kAllgather, kAllgatherv, kReduceScatter, kAllreduce, kBarrier };
const char* to_string(Kind k);

struct Step {
  Kind kind = Kind::kBarrier;
  int comm = 0;           // which of the two communicators
  int root = 0;           // broadcast
  std::size_t bytes = 0;  // broadcast bytes; per-rank bytes of allgather; elements otherwise
  std::vector<std::size_t> counts;  // allgatherv (bytes) and reduce-scatter (elements) per rank
  std::uint64_t salt = 0;           // what the data of this step looks like
};

// Step `index` of the sequence of `seed`, for `ranks` ranks; no collective
// moves more than `max_bytes` into any rank's result buffer.
Step plan(std::uint64_t seed, std::uint64_t index, int ranks, std::size_t max_bytes);

// One rank's buffers of one step, filled with its contribution.
struct Buffers {
  std::vector<std::byte> send;
  std::vector<std::byte> recv;
  std::vector<std::size_t> displs;
};
Buffers prepare(const Step& s, int rank, int ranks);
// Posts the step on `comm`.
Request post(Communicator& comm, const Step& s, Buffers& b);
// Empty when the result is right, else what is wrong.
std::string check(const Step& s, const Buffers& b, int rank, int ranks);

}  // namespace mccl::soak
