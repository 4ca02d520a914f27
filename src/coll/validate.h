// Argument checks of the collectives, done on the calling rank before
// anything starts. Messages name the rank and the argument.
#pragma once

#include <cstddef>
#include <span>

#include "common/status.h"
#include "mccl/types.h"

namespace mccl::coll {

common::Status validate_broadcast(int rank, int size, const void* buffer, std::size_t bytes,
                                  int root);

// `send` may be the in-place marker (already resolved by the caller into
// in_place = true).
common::Status validate_allgatherv(int rank, int size, const void* send, bool in_place,
                                   const void* recv, std::span<const std::size_t> counts,
                                   std::span<const std::size_t> displacements);

// Counts are in elements. Checks the datatype and op values, the buffers
// (null only with nothing to send or receive; send and receive must not
// overlap) and that the byte sizes fit a size_t.
common::Status validate_reduce_scatterv(int rank, int size, const void* send, bool in_place,
                                        const void* recv, std::span<const std::size_t> counts,
                                        DataType type, ReduceOp op);

// `send` may be in place; send == recv counts as in place too.
common::Status validate_allreduce(int rank, const void* send, bool in_place, const void* recv,
                                  std::size_t count, DataType type, ReduceOp op);

}  // namespace mccl::coll
