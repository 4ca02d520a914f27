#include "coll/collectives.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "coll/algorithm.h"
#include "coll/alltoall.h"
#include "coll/barrier.h"
#include "coll/bruck_allgather.h"
#include "coll/refused_call.h"
#include "coll/ring_allgather.h"
#include "coll/signature.h"
#include "coll/star_allgather.h"
#include "coll/tree_broadcast.h"
#include "common/option_names.h"
#include "protocol/context.h"
#include "protocol/mcast_collective.h"

namespace mccl::coll {

namespace {

// What an algorithm without multicast, which reads this rank's block in any
// order, needs of a stager: the whole block filled when it is made.
common::Status fill_whole(const StagingHooks& staging, std::uint64_t bytes) {
  return staging.fill && bytes > 0 ? staging.fill(0, bytes) : common::Status::ok();
}

}  // namespace

std::shared_ptr<protocol::Operation> make_broadcast(protocol::Context& ctx, const CollConfig& cfg,
                                                    void* buffer, std::size_t bytes, int root,
                                                    const StagingHooks& staging) {
  // The algorithm (and its segmenting) is part of what ranks must agree on:
  // a rank running another algorithm would otherwise just drop the others'
  // messages and time out instead of reporting the disagreement.
  const BroadcastAlgorithm algo = choose_broadcast(cfg.broadcast, cfg.multicast, ctx.size(), bytes,
                                                   cfg.multicast_from, cfg.placement);
  Signature signature(CollKind::kBroadcast);
  signature.mix(static_cast<std::uint64_t>(root)).mix(bytes).mix(static_cast<std::uint64_t>(algo));
  if (algo != BroadcastAlgorithm::kMulticast) signature.mix(cfg.segment_bytes);
  const std::uint64_t sig = signature.value();
  auto* buf = static_cast<std::byte*>(buffer);
  if (algo != BroadcastAlgorithm::kMulticast)
    protocol::Counters::add(ctx.counters().p2p_collectives);
  if (algo != BroadcastAlgorithm::kMulticast) {
    if (ctx.rank() == root) {
      common::Status st = fill_whole(staging, bytes);
      if (!st.is_ok()) return std::make_shared<RefusedCall>(ctx, std::move(st));
    }
    const TreeShape shape = algo == BroadcastAlgorithm::kChain  ? TreeShape::kChain
                            : algo == BroadcastAlgorithm::kFlat ? TreeShape::kFlat
                                                                : TreeShape::kBinomial;
    return std::make_shared<TreeBroadcast>(ctx, shape, buf, bytes, root, sig, cfg.segment_bytes);
  }
  protocol::McastSpec spec;
  spec.what = "broadcast of " + std::to_string(bytes) + " bytes from root " + std::to_string(root);
  spec.signature = sig;
  spec.streams.push_back({root, buf, bytes});
  spec.fill_own = staging.fill;
  spec.on_stream_prefix = staging.arrived;
  return std::make_shared<protocol::McastCollective>(ctx, std::move(spec));
}

std::shared_ptr<protocol::Operation> make_allgatherv(protocol::Context& ctx, const CollConfig& cfg,
                                                     const void* send, bool in_place, void* recv,
                                                     std::span<const std::size_t> counts,
                                                     std::span<const std::size_t> displacements,
                                                     const StagingHooks& staging) {
  auto* out = static_cast<std::byte*>(recv);
  const int me = ctx.rank();
  std::byte* own_block = out == nullptr ? nullptr : out + displacements[me];
  if (!in_place && counts[me] > 0 && send != own_block) {
    std::memmove(own_block, send, counts[me]);
  }
  const std::size_t largest = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  const AllgatherAlgorithm algo = choose_allgather(cfg.allgather, cfg.multicast, ctx.size(),
                                                   largest, cfg.multicast_from, cfg.placement);
  Signature signature(CollKind::kAllgather);
  signature.mix(counts).mix(static_cast<std::uint64_t>(algo));
  if (algo != AllgatherAlgorithm::kMulticast) signature.mix(cfg.segment_bytes);
  const std::uint64_t sig = signature.value();
  if (algo != AllgatherAlgorithm::kMulticast) {
    common::Status st = fill_whole(staging, counts[me]);
    if (!st.is_ok()) return std::make_shared<RefusedCall>(ctx, std::move(st));
    protocol::Counters::add(ctx.counters().p2p_collectives);
    BlockLayout layout{
        out, {counts.begin(), counts.end()}, {displacements.begin(), displacements.end()}};
    if (algo == AllgatherAlgorithm::kBruck) {
      return std::make_shared<BruckAllgather>(ctx, std::move(layout), sig, cfg.segment_bytes);
    }
    if (algo == AllgatherAlgorithm::kStar) {
      return std::make_shared<StarAllgather>(ctx, std::move(layout), sig);
    }
    return std::make_shared<RingAllgather>(ctx, std::move(layout), sig, cfg.segment_bytes);
  }
  return make_mcast_allgatherv(
      ctx, cfg, out, counts, displacements, sig,
      "allgather of " + std::to_string(counts[me]) + " bytes from each rank (this one)", staging);
}

std::shared_ptr<protocol::Operation> make_mcast_allgatherv(
    protocol::Context& ctx, const CollConfig& cfg, std::byte* recv,
    std::span<const std::size_t> counts, std::span<const std::size_t> displacements,
    std::uint64_t signature, std::string what, const StagingHooks& staging) {
  protocol::McastSpec spec;
  spec.what = std::move(what);
  spec.signature = signature;
  spec.concurrent_roots = cfg.concurrent_roots;
  for (int r = 0; r < ctx.size(); ++r) {
    spec.streams.push_back({r, recv == nullptr ? nullptr : recv + displacements[r], counts[r]});
  }
  spec.fill_own = staging.fill;
  spec.on_stream_prefix = staging.arrived;
  return std::make_shared<protocol::McastCollective>(ctx, std::move(spec));
}

std::shared_ptr<protocol::Operation> make_alltoallv(
    protocol::Context& ctx, const CollConfig& cfg, const void* send,
    std::span<const std::size_t> send_counts, std::span<const std::size_t> send_displs, void* recv,
    std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs) {
  // Counts differ between ranks by nature: each block's size is checked by
  // its receiver instead (coll/alltoall.h).
  const std::uint64_t sig = Signature(CollKind::kAlltoall).mix(cfg.segment_bytes).value();
  ExchangeLayout layout{
      static_cast<const std::byte*>(send),      {send_counts.begin(), send_counts.end()},
      {send_displs.begin(), send_displs.end()}, static_cast<std::byte*>(recv),
      {recv_counts.begin(), recv_counts.end()}, {recv_displs.begin(), recv_displs.end()}};
  return std::make_shared<Alltoall>(ctx, std::move(layout), sig, cfg.segment_bytes);
}

const char* algorithm_name(BroadcastAlgorithm a) {
  return common::name_of(a, common::kBroadcastNames);
}
const char* algorithm_name(AllgatherAlgorithm a) {
  return common::name_of(a, common::kAllgatherNames);
}
const char* algorithm_name(AllreduceAlgorithm a) {
  return common::name_of(a, common::kAllreduceNames);
}

const char* algorithm_name(BarrierAlgorithm a) { return common::name_of(a, common::kBarrierNames); }

std::shared_ptr<protocol::Operation> make_barrier(protocol::Context& ctx, const CollConfig& cfg) {
  const BarrierAlgorithm algo = choose_barrier(cfg.barrier, ctx.size(), cfg.placement);
  // Ranks that chose differently fail on the first signal, not by a hang.
  const std::uint64_t sig =
      Signature(CollKind::kBarrier).mix(static_cast<std::uint64_t>(algo)).value();
  if (algo == BarrierAlgorithm::kStar) return std::make_shared<StarBarrier>(ctx, sig);
  return std::make_shared<Barrier>(ctx, sig);
}

}  // namespace mccl::coll
