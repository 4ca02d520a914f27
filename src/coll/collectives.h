// Builds the operation that carries out a collective, choosing its
// algorithm from the table in algorithm.h. Arguments must have passed
// validate.h's checks; the operation is started by protocol::Context::start.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "mccl/options.h"
#include "protocol/operation.h"

namespace mccl::protocol {
class Context;
}

namespace mccl::coll {

struct CollConfig {
  AllgatherAlgorithm allgather = AllgatherAlgorithm::kAuto;
  BroadcastAlgorithm broadcast = BroadcastAlgorithm::kAuto;
  int concurrent_roots = 0;               // 0: every root at once
  std::size_t segment_bytes = 128 << 10;  // point-to-point pipelining
  bool multicast = true;                  // the datagram transport can multicast
};

std::shared_ptr<protocol::Operation> make_broadcast(protocol::Context& ctx, const CollConfig& cfg,
                                                    void* buffer, std::size_t bytes, int root);

// Copies this rank's block into place first unless `in_place`.
std::shared_ptr<protocol::Operation> make_allgatherv(protocol::Context& ctx, const CollConfig& cfg,
                                                     const void* send, bool in_place, void* recv,
                                                     std::span<const std::size_t> counts,
                                                     std::span<const std::size_t> displacements);

std::shared_ptr<protocol::Operation> make_barrier(protocol::Context& ctx);

}  // namespace mccl::coll
