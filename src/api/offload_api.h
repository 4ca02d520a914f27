// The Communicator under MCCL_PROGRESS=offload: the collectives go to
// mccl_offloadd through offload::OffloadComm instead of to a protocol
// context in this process. Kept apart from communicator.cc so that file
// only branches once per call.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>

#include "api/comm_state.h"
#include "api/options.h"
#include "mccl/bootstrap.h"
#include "mccl/stats.h"
#include "mccl/types.h"

namespace mccl::detail {

// Connects to (or starts) the daemon and builds the communicator there.
// Throws mccl::Error naming the rank.
void create_offloaded(CommState& st, Bootstrap& bootstrap, const ResolvedOptions& opt);

// Arguments have passed coll/validate.h's checks.
std::shared_ptr<Operation> offload_broadcast(CommState& st, void* buffer, std::size_t bytes,
                                             int root);
std::shared_ptr<Operation> offload_allgatherv(CommState& st, const void* send, bool in_place,
                                              void* recv, std::span<const std::size_t> counts,
                                              std::span<const std::size_t> displacements);
std::shared_ptr<Operation> offload_reduce_scatterv(CommState& st, const void* send, void* recv,
                                                   std::span<const std::size_t> counts,
                                                   DataType type, ReduceOp op);
std::shared_ptr<Operation> offload_allreduce(CommState& st, const void* send, bool in_place,
                                             void* recv, std::size_t count, DataType type,
                                             ReduceOp op);
std::shared_ptr<Operation> offload_barrier(CommState& st);

// The daemon's counters for this communicator; throws on a dead daemon.
Stats offload_stats(CommState& st);

// Request::test() and wait() for an offloaded collective: the same
// contract (test never blocks; wait throws kTimeout or the op's error).
bool offload_test(CommState& st, const offload::OffloadOp& op);
void offload_wait(CommState& st, const offload::OffloadOp& op, std::chrono::milliseconds timeout);

}  // namespace mccl::detail
