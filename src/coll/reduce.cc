// The reducing collectives: which operations carry out a reduce-scatter and
// an allreduce (collectives.h declares the factories).
//
// allreduce, by algorithm (algorithm.h chooses):
//   rs_mcast            Schedule[ring reduce-scatter, multicast allgather]
//   ring                Schedule[ring reduce-scatter, ring allgather]
//   recursive_doubling  one RecursiveDoublingAllreduce
// The vector is cut into N blocks of count/N elements (the first count%N
// blocks one more); rank r reduces block r, then every block is gathered.
#include <algorithm>
#include <string>
#include <vector>

#include "coll/algorithm.h"
#include "coll/collectives.h"
#include "coll/recursive_doubling.h"
#include "coll/reduce_args.h"
#include "coll/ring_allgather.h"
#include "coll/ring_reduce_scatter.h"
#include "coll/schedule.h"
#include "coll/signature.h"
#include "protocol/context.h"

namespace mccl::coll {

namespace {

// The segment size in bytes, a whole number of elements (at least one).
std::size_t element_segment(std::size_t segment_bytes, DataType type) {
  const std::size_t es = size_of(type);
  return std::max<std::size_t>(1, segment_bytes / es) * es;
}

}  // namespace

std::size_t rs_send_budget(const protocol::Context& ctx, double share) {
  if (share >= 1.0) return 0;
  const double batch =
      static_cast<double>(ctx.config().send_batch) * static_cast<double>(ctx.config().chunk_bytes);
  return std::max<std::size_t>(1, static_cast<std::size_t>(batch * share / (1.0 - share)));
}

std::shared_ptr<protocol::Operation> make_reduce_scatterv(protocol::Context& ctx,
                                                          const CollConfig& cfg, const void* send,
                                                          void* recv,
                                                          std::span<const std::size_t> counts,
                                                          DataType type, ReduceOp op) {
  const std::size_t es = size_of(type);
  const std::size_t segment = element_segment(cfg.reduce_segment_bytes, type);
  ReduceLayout layout;
  layout.type = type;
  layout.op = op;
  layout.send = static_cast<const std::byte*>(send);
  layout.result = static_cast<std::byte*>(recv);
  std::size_t off = 0;
  for (auto c : counts) {
    layout.bytes.push_back(c * es);
    layout.displs.push_back(off);
    off += c * es;
  }
  Signature signature(CollKind::kReduceScatter);
  signature.mix(static_cast<std::uint64_t>(type)).mix(static_cast<std::uint64_t>(op));
  signature.mix(counts).mix(segment);
  const std::string what = "reduce-scatter of " + std::to_string(counts[ctx.rank()]) + " " +
                           to_string(type) + " (" + to_string(op) + ") on this rank";
  return std::make_shared<RingReduceScatter>(ctx, std::move(layout), signature.value(),
                                             encode_reduce_args(type, op, 0), segment,
                                             rs_send_budget(ctx, cfg.rs_share), what);
}

std::shared_ptr<protocol::Operation> make_allreduce(protocol::Context& ctx, const CollConfig& cfg,
                                                    const void* send, bool in_place, void* recv,
                                                    std::size_t count, DataType type, ReduceOp op) {
  const int n = ctx.size();
  const std::size_t es = size_of(type);
  const std::size_t bytes = count * es;
  const std::size_t segment = element_segment(cfg.reduce_segment_bytes, type);
  const AllreduceAlgorithm algo =
      choose_allreduce(cfg.allreduce, cfg.multicast, n, bytes, cfg.allreduce_small_bytes);
  auto* out = static_cast<std::byte*>(recv);
  const auto* in = in_place ? out : static_cast<const std::byte*>(send);

  Signature signature(CollKind::kAllreduce);
  signature.mix(static_cast<std::uint64_t>(type)).mix(static_cast<std::uint64_t>(op));
  signature.mix(count).mix(static_cast<std::uint64_t>(algo)).mix(segment);
  if (algo == AllreduceAlgorithm::kRing) signature.mix(cfg.segment_bytes);
  const std::uint64_t sig = signature.value();
  const std::uint32_t args = encode_reduce_args(type, op, 1 + static_cast<std::uint32_t>(algo));
  const std::string what = "allreduce of " + std::to_string(count) + " " + to_string(type) + " (" +
                           to_string(op) + ", " + algorithm_name(algo) + ")";

  if (algo == AllreduceAlgorithm::kRecursiveDoubling) {
    return std::make_shared<RecursiveDoublingAllreduce>(ctx, type, op, in, out, bytes, sig, args,
                                                        segment, what);
  }
  // Blocks of whole elements, as even as they go.
  std::vector<std::size_t> block_bytes(n), displs(n);
  std::size_t off = 0;
  for (int r = 0; r < n; ++r) {
    const std::size_t elems = count / n + (static_cast<std::size_t>(r) < count % n ? 1 : 0);
    block_bytes[r] = elems * es;
    displs[r] = off;
    off += block_bytes[r];
  }
  const int me = ctx.rank();
  // Partials are staged in the receive buffer: block b of it is free until
  // block b's final value arrives, which can only happen after this rank
  // forwarded its partial of b.
  ReduceLayout layout{type, op, in, out + displs[me], out, block_bytes, displs};
  auto rs = std::make_shared<RingReduceScatter>(ctx, std::move(layout), sig, args, segment,
                                                rs_send_budget(ctx, cfg.rs_share),
                                                what + ", reduce-scatter step");
  std::shared_ptr<protocol::Operation> ag;
  if (algo == AllreduceAlgorithm::kRing) {
    ag = std::make_shared<RingAllgather>(ctx, BlockLayout{out, block_bytes, displs}, sig,
                                         cfg.segment_bytes);
  } else {
    ag = make_mcast_allgatherv(ctx, cfg, out, block_bytes, displs, sig, what + ", allgather step");
  }
  // Reduce-scatter messages carry kReduceScatterFlag in arg0; everything
  // else (multicast control, or ring allgather segments) is the second step.
  auto route = [](const protocol::ControlHeader& h) -> std::size_t {
    return h.kind == protocol::ControlKind::kP2pData && (h.arg0 & kReduceScatterFlag) != 0 ? 0 : 1;
  };
  const int datagram_step = algo == AllreduceAlgorithm::kRsMulticast ? 1 : -1;
  return std::make_shared<Schedule>(
      ctx, what, std::vector<std::shared_ptr<protocol::Operation>>{rs, ag}, route, datagram_step);
}

}  // namespace mccl::coll
