// Argument checks of the collectives, done on the calling rank before
// anything starts. Messages name the rank and the argument.
#pragma once

#include <cstddef>
#include <span>

#include "common/status.h"

namespace mccl::coll {

common::Status validate_broadcast(int rank, int size, const void* buffer, std::size_t bytes,
                                  int root);

// `send` may be the in-place marker (already resolved by the caller into
// in_place = true).
common::Status validate_allgatherv(int rank, int size, const void* send, bool in_place,
                                   const void* recv, std::span<const std::size_t> counts,
                                   std::span<const std::size_t> displacements);

}  // namespace mccl::coll
