// Builds the operation that carries out a collective, choosing its
// algorithm from the table in algorithm.h. Arguments must have passed
// validate.h's checks; the operation is started by protocol::Context::start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "coll/algorithm.h"
#include "common/status.h"
#include "mccl/options.h"
#include "mccl/types.h"
#include "protocol/operation.h"

namespace mccl::protocol {
class Context;
}

namespace mccl::coll {

using CollConfig = common::CollConfig;  // common/coll_config.h

// What a stager, whose buffers are its copy of another process's (the
// offload daemon), gives a broadcast or an allgather so that its copies can
// run beside the collective instead of before and after all of it. Called
// on the engine's thread; an error fails the collective. Empty: not
// called.
struct StagingHooks {
  // This rank's block (a broadcast root's buffer, an allgather's own
  // block): makes bytes [begin, end) of it valid. Called with consecutive
  // ranges from byte 0, each before any byte of it is read
  // (protocol::McastSpec::fill_own), or, by an algorithm without multicast,
  // once for all of them when it is made.
  std::function<common::Status(std::uint64_t begin, std::uint64_t end)> fill;
  // Bytes [0, bytes) of `root`'s block are here and final
  // (protocol::McastSpec::on_stream_prefix). The multicast algorithms call
  // it; after any other the stager moves the blocks once it is done.
  std::function<common::Status(int root, std::uint64_t bytes)> arrived;
};

std::shared_ptr<protocol::Operation> make_broadcast(protocol::Context& ctx, const CollConfig& cfg,
                                                    void* buffer, std::size_t bytes, int root,
                                                    const StagingHooks& staging = {});

// Copies this rank's block into place first unless `in_place`; with
// `staging.fill`, `in_place` must be true (the fill puts the block there).
std::shared_ptr<protocol::Operation> make_allgatherv(protocol::Context& ctx, const CollConfig& cfg,
                                                     const void* send, bool in_place, void* recv,
                                                     std::span<const std::size_t> counts,
                                                     std::span<const std::size_t> displacements,
                                                     const StagingHooks& staging = {});

// The barrier the table (choose_barrier) or cfg.barrier picks; the
// default CollConfig gives the dissemination barrier.
std::shared_ptr<protocol::Operation> make_barrier(protocol::Context& ctx, const CollConfig& cfg);

// Block r of `send` (send_counts[r] bytes at send_displs[r]) goes to rank
// r, which receives it at recv + its recv_displs[this rank]; coll/alltoall.h.
std::shared_ptr<protocol::Operation> make_alltoallv(
    protocol::Context& ctx, const CollConfig& cfg, const void* send,
    std::span<const std::size_t> send_counts, std::span<const std::size_t> send_displs, void* recv,
    std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs);

// The multicast allgather(v) of counts[r] bytes at recv + displacements[r]
// under `signature`: make_allgatherv's, and the allreduce's second step.
std::shared_ptr<protocol::Operation> make_mcast_allgatherv(
    protocol::Context& ctx, const CollConfig& cfg, std::byte* recv,
    std::span<const std::size_t> counts, std::span<const std::size_t> displacements,
    std::uint64_t signature, std::string what, const StagingHooks& staging = {});

// Counts are in elements; arguments passed validate.h's checks. rank r's
// block of `send` starts after counts[0..r) elements. Not in place.
std::shared_ptr<protocol::Operation> make_reduce_scatterv(protocol::Context& ctx,
                                                          const CollConfig& cfg, const void* send,
                                                          void* recv,
                                                          std::span<const std::size_t> counts,
                                                          DataType type, ReduceOp op);

// `in_place`: the vector is already in `recv`.
std::shared_ptr<protocol::Operation> make_allreduce(protocol::Context& ctx, const CollConfig& cfg,
                                                    const void* send, bool in_place, void* recv,
                                                    std::size_t count, DataType type, ReduceOp op);

// Bytes of ring messages a reduce-scatter sends per progress call so that
// it takes `share` of the sending against one multicast injection batch
// (send_batch datagrams): share / (1 - share) batches' worth; 0 (no limit)
// for share >= 1.
std::size_t rs_send_budget(const protocol::Context& ctx, double share);

}  // namespace mccl::coll
