// What a Communicator is inside: a backend that runs its collectives, and
// the little the API itself needs (rank, size, timeout, the size bound).
// Two backends: the in-process engines (inline or host thread, driving a
// protocol context here; engine_backend.cc) and the offload daemon (the
// protocol runs in mccl_offloadd; offload_backend.cc). The API reads the
// same for both.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "api/options.h"
#include "codec/codec.h"
#include "coll/algorithm.h"
#include "coll/validate.h"
#include "common/status.h"
#include "mccl/bootstrap.h"
#include "mccl/options.h"
#include "mccl/stats.h"
#include "mccl/types.h"

namespace mccl::detail {

// A collective in flight: the public Request's handle on it.
class InFlight {
 public:
  virtual ~InFlight() = default;
  virtual bool done() const = 0;
  // Never blocks (it may advance progress once). True once done; then
  // throws mccl::Error with the collective's failure, if any.
  virtual bool test() = 0;
  // Blocks until done or `timeout` passes (mccl::Error kTimeout naming
  // what it waited for; the collective stays in flight), then as test().
  virtual void wait(std::chrono::milliseconds timeout) = 0;
  // The rank whose message a completed receive took; -1 for the others.
  virtual int source() const { return -1; }
};

// Runs the collectives of one communicator. Arguments have passed
// coll/validate.h's checks. Starting never blocks; it returns the handle.
// Errors are mccl::Error exceptions naming the rank.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::shared_ptr<InFlight> broadcast(void* buffer, std::size_t bytes, int root) = 0;
  virtual std::shared_ptr<InFlight> allgatherv(const void* send, bool in_place, void* recv,
                                               std::span<const std::size_t> counts,
                                               std::span<const std::size_t> displacements) = 0;
  // `compress`: the call's compression (kOff: exact); the engine backend
  // compresses sums under kBound (coll/compressed.h), the offload daemon
  // never does.
  virtual std::shared_ptr<InFlight> reduce_scatterv(const void* send, void* recv,
                                                    std::span<const std::size_t> counts,
                                                    DataType type, ReduceOp op,
                                                    const codec::Settings& compress) = 0;
  // `in_place`: the vector is already in `recv`.
  virtual std::shared_ptr<InFlight> allreduce(const void* send, bool in_place, void* recv,
                                              std::size_t count, DataType type, ReduceOp op,
                                              const codec::Settings& compress) = 0;
  virtual std::shared_ptr<InFlight> barrier() = 0;
  // Bytes; arguments passed validate_alltoallv.
  virtual std::shared_ptr<InFlight> alltoallv(const void* send,
                                              std::span<const std::size_t> send_counts,
                                              std::span<const std::size_t> send_displs, void* recv,
                                              std::span<const std::size_t> recv_counts,
                                              std::span<const std::size_t> recv_displs) = 0;
  // Point-to-point (protocol/p2p.h); not collective. `source` may be -1.
  virtual std::shared_ptr<InFlight> send(const void* buffer, std::size_t bytes, int peer,
                                         int tag) = 0;
  virtual std::shared_ptr<InFlight> recv(void* buffer, std::size_t bytes, int source, int tag) = 0;

  // Data movement of `count` elements of `type` (allgatherv: counts and
  // displacements in elements), compressed as `compress` says where the
  // backend can (docs/compression.md). These defaults move the bytes
  // exactly, as the calls above do: what the offload daemon does.
  virtual std::shared_ptr<InFlight> broadcast_typed(void* buffer, std::size_t count, DataType type,
                                                    int root, const codec::Settings& compress);
  virtual std::shared_ptr<InFlight> allgatherv_typed(const void* send, bool in_place, void* recv,
                                                     std::span<const std::size_t> counts,
                                                     std::span<const std::size_t> displacements,
                                                     DataType type,
                                                     const codec::Settings& compress);

  // A call refused for invalid arguments (`why`), which its peers have
  // started or will start: a backend that numbers collectives here takes
  // the call's sequence number and tells the peers why
  // (coll/refused_call.h), so they fail with this rank's reason instead
  // of a timeout. Never blocks.
  virtual void refuse(const common::Status& why) = 0;

  // Advances progress once where the caller drives it; never blocks.
  virtual void progress() = 0;
  // The protocol's counters. May block (the daemon answers) until `timeout`.
  virtual Stats stats(std::chrono::milliseconds timeout) = 0;

  // Communicator::allocate/deallocate: memory collectives may run on in
  // place. Null / false on failure, with `why` / nothing said.
  virtual void* allocate(std::size_t bytes, common::Status& why) = 0;
  virtual bool deallocate(void* p) = 0;

  // The largest per-rank size the wire carries (coll::max_stream_bytes of
  // the chunk size).
  virtual std::size_t max_bytes() const = 0;

  // Elastic membership (docs/elastic.md). revoke: every collective in
  // flight and later fails, here and on every rank it reaches; does not
  // block. shrink: revokes, agrees with every survivor on the failed ranks
  // (`failed`, ascending ranks of this communicator) and returns the
  // survivors' backend; blocking and collective over the survivors. epoch:
  // agreed at creation, 0 for a first one, plus 1 with each shrink or grow.
  virtual std::uint32_t epoch() const = 0;
  // As the ranks agreed at creation (setup::Agreement): with the team size
  // it picks the algorithm table's row (Communicator::broadcast_algorithm).
  virtual common::Placement placement() const = 0;
  virtual void revoke() = 0;
  virtual std::unique_ptr<Backend> shrink(std::vector<int>& failed) = 0;
};

// Blocking and collective over `bootstrap`; throw mccl::Error naming the
// rank when creation fails.
std::unique_ptr<Backend> make_engine_backend(Bootstrap& bootstrap, const ResolvedOptions& opt);
std::unique_ptr<Backend> make_offload_backend(Bootstrap& bootstrap, const ResolvedOptions& opt);

// Shared by the Communicator and its Requests, so that a request never
// outlives the backend it needs.
class CommState {
 public:
  int rank = 0;
  int size = 1;
  // What the communicator was created with: its timeout, compression and
  // algorithm choices, and the options of the ones shrink() and grow() make.
  ResolvedOptions options;
  std::unique_ptr<Backend> backend;
};

// Blocking and collective over `bootstrap`: a communicator's state with
// the backend `opt.progress` names (the creation of every Communicator).
std::shared_ptr<CommState> create_comm_state(Bootstrap& bootstrap, const ResolvedOptions& opt);

}  // namespace mccl::detail
