// mp_worker's reuse mode (its usage is in mp_worker.cc): ROUNDS rounds of
// an allgather, a broadcast, a reduce-scatter, an allreduce (out of place,
// then in place) and, but under the offload engine, an alltoall, each rank
// overwriting its buffers as soon as a call returns. A send still reading a
// returned buffer (a lent send not reclaimed, transport/reliable.h) shows
// as wrong bytes. Returns the worker's exit code (0, or 2 for wrong data).
#pragma once

#include <cstddef>

#include "mccl/mccl.hpp"

namespace mccl::mp {

int reuse(Communicator& c, std::size_t bytes, int rounds);

}  // namespace mccl::mp
