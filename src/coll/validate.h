// Argument checks of the collectives, done on the calling rank before
// anything starts. Messages name the rank and the argument.
#pragma once

#include <cstddef>
#include <span>

#include "common/status.h"
#include "mccl/types.h"

namespace mccl::coll {

// The most bytes one rank's stream may hold: the wire format numbers chunks
// with 32 bits (docs/wire-protocol.md), so 2^32 chunks of `chunk_bytes`.
// Larger sizes are refused up front; a chunk count computed for them would
// wrap (to 0 near SIZE_MAX, so nothing would move and the call succeed).
std::size_t max_stream_bytes(std::size_t chunk_bytes);

// `max_bytes` is max_stream_bytes() of the communicator's chunk size.
common::Status validate_broadcast(int rank, int size, const void* buffer, std::size_t bytes,
                                  int root, std::size_t max_bytes);

// `send` may be the in-place marker (already resolved by the caller into
// in_place = true). Each count is bounded by `max_bytes`; every
// displs[i] + counts[i], and the receive buffer's end, must not overflow.
common::Status validate_allgatherv(int rank, int size, const void* send, bool in_place,
                                   const void* recv, std::span<const std::size_t> counts,
                                   std::span<const std::size_t> displacements,
                                   std::size_t max_bytes);

// allgather's displacements are r * bytes_per_rank: that product must fit,
// and bytes_per_rank must fit one stream.
common::Status validate_allgather_size(int rank, int size, std::size_t bytes_per_rank,
                                       std::size_t max_bytes);

// Counts are in elements. Checks the datatype and op values, the buffers
// (null only with nothing to send or receive; send and receive must not
// overlap) and that the byte sizes fit a size_t.
common::Status validate_reduce_scatterv(int rank, int size, const void* send, bool in_place,
                                        const void* recv, std::span<const std::size_t> counts,
                                        DataType type, ReduceOp op);

// `send` may be in place; send == recv counts as in place too.
common::Status validate_allreduce(int rank, const void* send, bool in_place, const void* recv,
                                  std::size_t count, DataType type, ReduceOp op);

// alltoallv (validate_exchange.cc): four spans of one entry per rank, in
// bytes; buffers null only where their counts are all 0; every
// displacement + count must not overflow; a rank's own block must not
// overlap between send and receive (the others are read before any write
// only by this rank's peers, so send and receive must not overlap at all).
common::Status validate_alltoallv(int rank, int size, const void* send,
                                  std::span<const std::size_t> send_counts,
                                  std::span<const std::size_t> send_displs, const void* recv,
                                  std::span<const std::size_t> recv_counts,
                                  std::span<const std::size_t> recv_displs);

// send and receive (validate_exchange.cc): `peer` a rank of the group (a
// receive may name kAnySource, -1), `tag` not negative, the buffer null
// only for 0 bytes. `what` is "send" or "recv".
common::Status validate_point_to_point(int rank, int size, const char* what, const void* buffer,
                                       std::size_t bytes, int peer, int tag, bool any_source_ok);

}  // namespace mccl::coll
