#include "mccl/communicator.h"

#include <string>
#include <vector>

#include "api/backend.h"
#include "api/bootstrap.h"
#include "api/boundary.h"
#include "api/comm_checks.h"
#include "api/options.h"
#include "coll/validate.h"
#include "common/test_kill.h"
#include "progress/engine.h"

namespace mccl {

namespace {

std::shared_ptr<detail::CommState> create(Bootstrap& bootstrap, const CommOptions& options) {
  return detail::create_comm_state(bootstrap, detail::resolve_options(options, bootstrap.rank()));
}

}  // namespace

namespace detail {

std::shared_ptr<CommState> create_comm_state(Bootstrap& bootstrap, const ResolvedOptions& opt) {
  auto st = std::make_shared<detail::CommState>();
  st->rank = bootstrap.rank();
  st->size = bootstrap.size();
  st->options = opt;
  st->backend = opt.progress == ProgressKind::kOffload
                    ? detail::make_offload_backend(bootstrap, opt)
                    : detail::make_engine_backend(bootstrap, opt);
  // Creation's exchanges are over: the store at rank 0 need not hold a
  // connection per rank while the communicator runs.
  if (bootstrap::Rendezvous* r = rendezvous_of(bootstrap)) bootstrap::release_between_exchanges(*r);
  common::kill_here_if_asked("created");
  return st;
}

}  // namespace detail

Communicator::Communicator(Bootstrap& bootstrap, const CommOptions& options)
    : state_(detail::at_boundary(bootstrap.rank(), "communicator creation",
                                 [&] { return create(bootstrap, options); })) {}

Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

using detail::check_usable;
using detail::refuse_if_invalid;

int Communicator::rank() const {
  check_usable(state_);
  return state_->rank;
}
int Communicator::size() const {
  check_usable(state_);
  return state_->size;
}

Request Communicator::ibroadcast(void* buffer, std::size_t bytes, int root) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "broadcast", [&] {
    refuse_if_invalid(*state_, coll::validate_broadcast(state_->rank, state_->size, buffer, bytes,
                                                        root, state_->backend->max_bytes()));
    return Request(state_, state_->backend->broadcast(buffer, bytes, root));
  });
}

void Communicator::broadcast(void* buffer, std::size_t bytes, int root) {
  const progress::CallerWaits caller_waits;
  ibroadcast(buffer, bytes, root).wait();
}

Request Communicator::iallgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                                  std::span<const std::size_t> displacements) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "allgatherv", [&] {
    const bool in_place = send == kInPlace;
    refuse_if_invalid(
        *state_, coll::validate_allgatherv(state_->rank, state_->size, send, in_place, recv, counts,
                                           displacements, state_->backend->max_bytes()));
    return Request(state_,
                   state_->backend->allgatherv(send, in_place, recv, counts, displacements));
  });
}

void Communicator::allgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                              std::span<const std::size_t> displacements) {
  const progress::CallerWaits caller_waits;
  iallgatherv(send, recv, counts, displacements).wait();
}

Request Communicator::iallgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "allgather", [&] {
    // Checked before the displacements r * bytes_per_rank are computed: a
    // product that wraps would be reported as overlapping buffers.
    refuse_if_invalid(*state_,
                      coll::validate_allgather_size(state_->rank, state_->size, bytes_per_rank,
                                                    state_->backend->max_bytes()));
    std::vector<std::size_t> counts(state_->size, bytes_per_rank), displs(state_->size);
    for (int r = 0; r < state_->size; ++r) {
      displs[r] = static_cast<std::size_t>(r) * bytes_per_rank;
    }
    return iallgatherv(send, recv, counts, displs);
  });
}

void Communicator::allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  const progress::CallerWaits caller_waits;
  iallgather(send, recv, bytes_per_rank).wait();
}

Request Communicator::ireduce_scatterv(const void* send, void* recv,
                                       std::span<const std::size_t> counts, DataType type,
                                       ReduceOp op, const CollOptions& options) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "reduce_scatterv", [&] {
    refuse_if_invalid(
        *state_, coll::validate_reduce_scatterv(state_->rank, state_->size, send, send == kInPlace,
                                                recv, counts, type, op));
    const codec::Settings s = detail::compression_for(*state_, type, options);
    return Request(state_, state_->backend->reduce_scatterv(send, recv, counts, type, op, s));
  });
}

void Communicator::reduce_scatterv(const void* send, void* recv,
                                   std::span<const std::size_t> counts, DataType type, ReduceOp op,
                                   const CollOptions& options) {
  const progress::CallerWaits caller_waits;
  ireduce_scatterv(send, recv, counts, type, op, options).wait();
}

Request Communicator::ireduce_scatter(const void* send, void* recv, std::size_t count_per_rank,
                                      DataType type, ReduceOp op, const CollOptions& options) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "reduce_scatter", [&] {
    std::vector<std::size_t> counts(state_->size, count_per_rank);
    return ireduce_scatterv(send, recv, counts, type, op, options);
  });
}

void Communicator::reduce_scatter(const void* send, void* recv, std::size_t count_per_rank,
                                  DataType type, ReduceOp op, const CollOptions& options) {
  const progress::CallerWaits caller_waits;
  ireduce_scatter(send, recv, count_per_rank, type, op, options).wait();
}

Request Communicator::iallreduce(const void* send, void* recv, std::size_t count, DataType type,
                                 ReduceOp op, const CollOptions& options) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "allreduce", [&] {
    const bool in_place = send == kInPlace;
    refuse_if_invalid(
        *state_, coll::validate_allreduce(state_->rank, send, in_place, recv, count, type, op));
    const codec::Settings s = detail::compression_for(*state_, type, options);
    return Request(state_, state_->backend->allreduce(send, in_place || send == recv, recv, count,
                                                      type, op, s));
  });
}

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type,
                             ReduceOp op, const CollOptions& options) {
  const progress::CallerWaits caller_waits;
  iallreduce(send, recv, count, type, op, options).wait();
}

Request Communicator::ibarrier() {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "barrier",
                             [&] { return Request(state_, state_->backend->barrier()); });
}

void Communicator::barrier() {
  const progress::CallerWaits caller_waits;
  ibarrier().wait();
}

void Communicator::progress() {
  check_usable(state_);
  state_->backend->progress();
}

Stats Communicator::stats() const {
  check_usable(state_);
  return state_->backend->stats(state_->options.timeout);
}

BroadcastAlgorithm Communicator::broadcast_algorithm(std::size_t bytes) const {
  check_usable(state_);
  return coll::choose_broadcast(state_->options.coll.broadcast, true, state_->size, bytes,
                                state_->options.coll.multicast_from, state_->backend->placement());
}

AllgatherAlgorithm Communicator::allgather_algorithm(std::size_t block_bytes) const {
  check_usable(state_);
  return coll::choose_allgather(state_->options.coll.allgather, true, state_->size, block_bytes,
                                state_->options.coll.multicast_from, state_->backend->placement());
}

BarrierAlgorithm Communicator::barrier_algorithm() const {
  check_usable(state_);
  return coll::choose_barrier(state_->options.coll.barrier, state_->size,
                              state_->backend->placement());
}

const char* to_string(AllgatherAlgorithm a) { return coll::algorithm_name(a); }
const char* to_string(BarrierAlgorithm a) { return coll::algorithm_name(a); }
const char* to_string(BroadcastAlgorithm a) { return coll::algorithm_name(a); }

}  // namespace mccl
