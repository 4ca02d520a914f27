#include "api/offload_api.h"

#include <string>

#include "common/log.h"
#include "common/settings.h"
#include "mccl/error.h"

namespace mccl::detail {

namespace {

offload::CollChoices choices_from(const ResolvedOptions& opt) {
  offload::CollChoices c;
  c.allgather_algo = static_cast<std::uint32_t>(opt.allgather);
  c.broadcast_algo = static_cast<std::uint32_t>(opt.broadcast);
  c.concurrent_roots = opt.concurrent_roots;
  c.allreduce_algo = static_cast<std::uint32_t>(opt.allreduce);
  c.segment_bytes = opt.segment_bytes;
  c.reduce_segment_bytes = opt.reduce_segment_bytes;
  c.allreduce_small_bytes = opt.allreduce_small_bytes;
  c.rs_share = opt.rs_share;
  c.authenticate = opt.authenticate ? (*opt.authenticate ? 1 : 0) : -1;
  return c;
}

std::shared_ptr<Operation> wrap(std::shared_ptr<offload::OffloadOp> op) {
  return std::make_shared<Operation>(std::move(op));
}

}  // namespace

void create_offloaded(CommState& st, Bootstrap& bootstrap, const ResolvedOptions& opt) {
  // The daemon runs UDP multicast and TCP only: refuse other choices
  // rather than quietly ignore them.
  const std::string who = "rank " + std::to_string(st.rank) + ": ";
  if (opt.transport == TransportKind::kIb || opt.transport == TransportKind::kSim) {
    throw Error(ErrorCode::kInvalidArgument,
                who +
                    "MCCL_PROGRESS=offload runs over UDP multicast only; unset MCCL_TRANSPORT "
                    "(or set udp/auto), or choose another progress engine");
  }
  if (common::settings::kReliable.get() != "tcp") {
    throw Error(ErrorCode::kInvalidArgument,
                who +
                    "MCCL_PROGRESS=offload uses the TCP reliable transport only; unset "
                    "MCCL_RELIABLE (or set tcp), or choose another progress engine");
  }
  offload::OffloadOptions o;
  o.timeout = opt.timeout;
  o.coll = choices_from(opt);
  std::unique_ptr<offload::OffloadComm> comm;
  auto s = offload::OffloadComm::create(bootstrap, o, comm);
  if (!s) {
    const bool named = s.message().rfind("rank ", 0) == 0;
    throw Error(s.code(), (named ? "" : who) + "MCCL_PROGRESS=offload: " + s.message());
  }
  common::logf(common::LogLevel::kInfo, st.rank,
               "communicator of %d ranks offloaded to mccl_offloadd (pid %d)", st.size,
               static_cast<int>(comm->daemon_pid()));
  st.offload = std::move(comm);
}

std::shared_ptr<Operation> offload_broadcast(CommState& st, void* buffer, std::size_t bytes,
                                             int root) {
  return wrap(st.offload->broadcast(buffer, bytes, root));
}

std::shared_ptr<Operation> offload_allgatherv(CommState& st, const void* send, bool in_place,
                                              void* recv, std::span<const std::size_t> counts,
                                              std::span<const std::size_t> displacements) {
  return wrap(st.offload->allgatherv(send, in_place, recv, counts, displacements));
}

std::shared_ptr<Operation> offload_reduce_scatterv(CommState& st, const void* send, void* recv,
                                                   std::span<const std::size_t> counts,
                                                   DataType type, ReduceOp op) {
  return wrap(st.offload->reduce_scatterv(send, recv, counts, type, op));
}

std::shared_ptr<Operation> offload_allreduce(CommState& st, const void* send, bool in_place,
                                             void* recv, std::size_t count, DataType type,
                                             ReduceOp op) {
  return wrap(st.offload->allreduce(send, in_place, recv, count, type, op));
}

std::shared_ptr<Operation> offload_barrier(CommState& st) { return wrap(st.offload->barrier()); }

Stats offload_stats(CommState& st) {
  Stats out;
  auto s = st.offload->stats(out, common::Deadline::after(st.timeout));
  if (!s) throw Error(s.code(), "rank " + std::to_string(st.rank) + ": stats: " + s.message());
  return out;
}

bool offload_test(CommState& st, const offload::OffloadOp& op) {
  if (!op.done()) st.offload->poll();
  if (!op.done()) return false;
  op.status().throw_if_error();
  return true;
}

void offload_wait(CommState& st, const offload::OffloadOp& op, std::chrono::milliseconds timeout) {
  auto s = st.offload->wait(op, common::Deadline::after(timeout));
  if (!s) {
    throw Error(ErrorCode::kTimeout, "rank " + std::to_string(st.rank) + ": wait for " +
                                         op.describe() + " timed out after " +
                                         std::to_string(timeout.count()) +
                                         " ms; it is still in flight in mccl_offloadd (pid " +
                                         std::to_string(st.offload->daemon_pid()) + ")");
  }
  op.status().throw_if_error();
}

}  // namespace mccl::detail
