// The communicator and its requests: MPI-style broadcast, allgather(v),
// reduce-scatter(v), allreduce and barrier over network multicast.
//
// Threading: a Communicator and its Requests are used from one thread at a
// time (like MPI_THREAD_SERIALIZED): a program whose threads share one
// serialises its calls itself (libmccl_mpi holds a lock per communicator).
// Different Communicators may be used from different threads at once, under
// every progress engine. Collectives must be called in the same order on
// every rank, as in MPI.
//
// Buffers: the caller owns every buffer. A buffer handed to a nonblocking
// call must stay valid and untouched until its Request completes.
//
// Errors: every call throws mccl::Error (never another exception: running
// out of memory is kUnavailable); nothing fails silently. A bad argument
// throws kInvalidArgument on its rank before any data moves; the call still
// counts as that rank's part of the collective, so its peers' calls of the
// same collective fail with kInvalidArgument too, naming that rank and its
// reason, and the communicator stays usable and in step. (Under the offload
// engine the error stays on its rank.) Sizes are bounded by what the wire
// format carries: 2^32 chunks per rank's block (docs/wire-protocol.md). Any
// method of a moved-from Communicator throws kInvalidArgument. A collective
// that ranks called with disagreeing arguments fails with kMismatch on the
// ranks still inside it, and the communicator is then broken: every later
// call on it, on every rank, throws the same error.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "mccl/bootstrap.h"
#include "mccl/error.h"
#include "mccl/export.h"
#include "mccl/options.h"
#include "mccl/stats.h"
#include "mccl/types.h"

namespace mccl {

namespace detail {
class CommState;
class InFlight;
}  // namespace detail

// Pass as the send buffer of allgather/allgatherv/allreduce to mean "my
// contribution is already in place in the receive buffer" (MPI_IN_PLACE).
inline const void* const kInPlace = reinterpret_cast<const void*>(std::uintptr_t{1});

// Pass as the source of recv/irecv to take a message from any rank.
inline constexpr int kAnySource = -1;

// A nonblocking collective in flight. Move-only.
class MCCL_API Request {
 public:
  Request() = default;
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  // Destroying a request that has not completed waits for it (with the
  // communicator's timeout) so that its buffers are never written after the
  // caller thinks they are free; an error there is logged, not thrown.
  ~Request();

  // Never blocks: advances progress once (inline engine) and reports whether
  // the collective finished. Throws the collective's error if it failed.
  bool test();
  // Blocks until done. Throws kTimeout when `timeout` passes first; the
  // collective itself is then still in flight (call wait again or destroy).
  void wait();  // until the collective ends; it fails by itself after the communicator's timeout
  void wait(std::chrono::milliseconds timeout);
  bool valid() const noexcept { return op_ != nullptr; }
  // For a completed receive: the rank whose message it took (the answer to
  // kAnySource). -1 for other requests and before completion.
  int source() const;

 private:
  friend class Communicator;
  Request(std::shared_ptr<detail::CommState> comm, std::shared_ptr<detail::InFlight> op);
  std::shared_ptr<detail::CommState> comm_;
  std::shared_ptr<detail::InFlight> op_;
};

class MCCL_API Communicator {
 public:
  // Collective and blocking over the bootstrap's ranks: agrees on a tag and
  // sets up the transports. Throws kTimeout when a rank does not arrive,
  // kUnavailable when the chosen transport is absent.
  explicit Communicator(Bootstrap& bootstrap, const CommOptions& options = {});
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  // Not collective, and needs no barrier before it. Pending requests must
  // be completed or destroyed first. Does not block: a rank that completed
  // small collectives eagerly (MCCL_PROTO_EAGER_BYTES, thread and offload
  // engines) is still the repair source of its right neighbour; its engine
  // keeps serving that neighbour in the background until released, until
  // the neighbour fails or until the collective's timeout, and then closes.
  // At process exit the library waits for those, each within its timeout.
  ~Communicator();

  int rank() const;
  int size() const;

  // Broadcast `bytes` bytes of `buffer` from `root` to every rank.
  void broadcast(void* buffer, std::size_t bytes, int root);
  Request ibroadcast(void* buffer, std::size_t bytes, int root);

  // Every rank contributes `bytes_per_rank` bytes; rank r's block lands at
  // recv + r * bytes_per_rank on every rank. `send` may be kInPlace.
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank);
  Request iallgather(const void* send, void* recv, std::size_t bytes_per_rank);

  // counts[r] bytes from rank r land at recv + displacements[r]. Every rank
  // passes the same counts (checked: a disagreement is kMismatch).
  // Displacements only place blocks in this rank's own buffer, so they may
  // differ between ranks and are not compared; each displacement + count
  // must not overflow, and blocks must not overlap (checked, locally).
  // `send` may be kInPlace (rank r's block already at recv + displacements[r]).
  void allgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                  std::span<const std::size_t> displacements);
  Request iallgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                      std::span<const std::size_t> displacements);

  // ---- typed data movement, which may compress (docs/compression.md) ----
  // As the byte calls above, with counts (and displacements) in elements
  // of `type`. Where the call's or else the communicator's Compression
  // (CollOptions, CommOptions, MCCL_COLL_COMPRESS) is on and `type` is a
  // float type, the data travels compressed and is lossy as that mode says:
  // kBound keeps every element within the bound of the sender's original,
  // and every rank, the sending root included (its own block is replaced by
  // its decoded copy), ends with the same bits. Integer types and kOff move
  // the bytes exactly. Every rank must pass the same compression
  // (kMismatch otherwise); an invalid one (kBound without a positive bound,
  // kZfp in a build without libzfp) throws kInvalidArgument/kUnavailable.
  // Under the offload engine the data always moves exactly.
  void broadcast(void* buffer, std::size_t count, DataType type, int root,
                 const CollOptions& options = {});
  Request ibroadcast(void* buffer, std::size_t count, DataType type, int root,
                     const CollOptions& options = {});
  void allgather(const void* send, void* recv, std::size_t count_per_rank, DataType type,
                 const CollOptions& options = {});
  Request iallgather(const void* send, void* recv, std::size_t count_per_rank, DataType type,
                     const CollOptions& options = {});
  void allgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                  std::span<const std::size_t> displacements, DataType type,
                  const CollOptions& options = {});
  Request iallgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                      std::span<const std::size_t> displacements, DataType type,
                      const CollOptions& options = {});

  // ---- reductions ----
  // Counts are in elements of `type`. Every rank passes the same counts,
  // type and op (checked: kMismatch on every rank otherwise). An unknown
  // type or op value, a null buffer that is given elements, or send and
  // receive buffers that overlap (other than in place, where allowed)
  // throw kInvalidArgument. float16 and bfloat16 are reduced in float32
  // and rounded to nearest even at every step; integers wrap around.
  //
  // Determinism: every element is reduced in one fixed order, the same on
  // every rank and in every run with the same N, algorithm and settings
  // (see docs/wire-protocol.md), so the results are bitwise reproducible
  // and, for allreduce, bitwise identical on every rank. The order is not
  // rank order 0..N-1, so a float result may differ in its last bits from a
  // sequential sum.

  // `send` holds N blocks of `count_per_rank` elements, block r for rank r;
  // the reduction of every rank's block `rank()` lands in `recv`
  // (count_per_rank elements). Not in place: `send` may not be kInPlace.
  void reduce_scatter(const void* send, void* recv, std::size_t count_per_rank, DataType type,
                      ReduceOp op, const CollOptions& options = {});
  Request ireduce_scatter(const void* send, void* recv, std::size_t count_per_rank, DataType type,
                          ReduceOp op, const CollOptions& options = {});

  // Block r of `send` has counts[r] elements (blocks back to back); `recv`
  // receives counts[rank()] elements. `counts` has one entry per rank and
  // need not outlive the call.
  void reduce_scatterv(const void* send, void* recv, std::span<const std::size_t> counts,
                       DataType type, ReduceOp op, const CollOptions& options = {});
  Request ireduce_scatterv(const void* send, void* recv, std::span<const std::size_t> counts,
                           DataType type, ReduceOp op, const CollOptions& options = {});

  // The element-wise reduction of every rank's `count` elements lands in
  // `recv` on every rank. `send` may be kInPlace (the vector is in `recv`).
  // The algorithm is CommOptions::allreduce_algorithm
  // (MCCL_COLL_ALLREDUCE_ALGO): by default the ring reduce-scatter followed
  // by the multicast allgather, which injects about `count` elements' worth
  // of bytes per rank in all; recursive doubling for small vectors.
  //
  // Compression (CollOptions, CommOptions, MCCL_COLL_COMPRESS): sums of
  // float types under kBound are compressed (docs/compression.md): every
  // rank quantises its input once and the ring adds integer codes exactly,
  // so |result - exact sum| <= bound + ulp(result)/2 whatever N is, and the
  // allreduce's result is bit-identical on every rank. Other ops and modes
  // reduce exactly.
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                 const CollOptions& options = {});
  Request iallreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                     const CollOptions& options = {});

  void barrier();
  Request ibarrier();

  // ---- exchanges over the reliable transport (no multicast) ----
  // alltoallv, in bytes: send_counts[r] bytes at send + send_displs[r] go
  // to rank r, which receives them at its recv + recv_displs[this rank];
  // recv_counts[r] is what rank r sends here, and each receiver checks it
  // (kMismatch, naming both ranks, when a sender disagrees). Collective.
  // Each span has one entry per rank and need not outlive the call. Not in
  // place: send and receive must not overlap. Every rank sends only its
  // own blocks, directly to their owners (gather and scatter are the
  // cases where all counts but one rank's are 0). Under the offload
  // engine: kUnavailable.
  void alltoallv(const void* send, std::span<const std::size_t> send_counts,
                 std::span<const std::size_t> send_displs, void* recv,
                 std::span<const std::size_t> recv_counts,
                 std::span<const std::size_t> recv_displs);
  Request ialltoallv(const void* send, std::span<const std::size_t> send_counts,
                     std::span<const std::size_t> send_displs, void* recv,
                     std::span<const std::size_t> recv_counts,
                     std::span<const std::size_t> recv_displs);
  // Blocks of `bytes_per_rank`, block r for (and from) rank r.
  void alltoall(const void* send, void* recv, std::size_t bytes_per_rank);
  Request ialltoall(const void* send, void* recv, std::size_t bytes_per_rank);

  // Point-to-point, between this rank and one peer; not collective (the
  // other ranks take no part, and the calls do not count in the order of
  // collectives). A message goes to the first receive posted on `peer` that
  // names this rank (or kAnySource) and the same `tag` (>= 0); messages
  // between two ranks with one tag are taken in the order they were sent.
  // A receive's `bytes` must equal the message's (else kInvalidArgument on
  // the receiver). A send is buffered: it completes once its bytes are
  // copied to the transport, whether or not a receive is posted, so a send
  // never waits for its receive (ranks may send to each other and then
  // receive without deadlock). A receive that no message matches within
  // the communicator's timeout fails with kTimeout and the communicator
  // stays usable. Under the offload engine: kUnavailable.
  void send(const void* buffer, std::size_t bytes, int peer, int tag = 0);
  Request isend(const void* buffer, std::size_t bytes, int peer, int tag = 0);
  // Returns the rank the message came from (Request::source for irecv).
  int recv(void* buffer, std::size_t bytes, int source, int tag = 0);
  Request irecv(void* buffer, std::size_t bytes, int source, int tag = 0);

  // Advances the protocol without blocking (inline engine); harmless with
  // the others. Useful to overlap computation with a request in flight.
  // Inline engine: a collective can be complete on this rank while the last
  // messages it owes a peer still sit in the reliable transport's send queue
  // (UCX queues them in user space); they leave on this communicator's next
  // progress(), test(), wait() or collective, or at its destruction. A rank
  // that stops calling in while its peers still wait delays them.
  void progress();

  Stats stats() const;

  // ---- Elastic membership (docs/elastic.md) ----
  // Makes every collective in flight and every later one on this
  // communicator fail with kPeerFailure ("revoked by rank R"), here and on
  // every rank this one still reaches, which hears it directly. Not
  // collective; does not block for long (at most until this rank's engine
  // takes the request). What remains to do with a revoked communicator is
  // shrink() it or destroy it.
  void revoke();
  // Collective over the ranks still alive, each of which must call it
  // (typically after a collective failed with kPeerFailure); blocking.
  // Revokes this communicator, agrees with every survivor on the ranks
  // that failed, and returns a communicator of the survivors: their ranks
  // keep their order (a survivor's new rank is its old rank minus the
  // failed ranks below it), its options are this one's, and its transports
  // and multicast group are new. `failed`, when given, receives the failed
  // ranks (ranks of this communicator, ascending), the same on every
  // survivor. No rank coordinates: any ranks may have died, rank 0
  // included, and a survivor that dies during the shrink is agreed on
  // again. Under the offload engine the daemon runs it, and the survivors'
  // communicator takes over this one's daemon session. Throws kTimeout
  // (after the communicator's timeout) when a rank neither answers nor
  // fails, naming it. This communicator stays revoked (every call on it
  // fails with kPeerFailure); destroy it when done.
  Communicator shrink(std::vector<int>* failed = nullptr);
  // Collective over this communicator's members and the processes that
  // join it, all on `bootstrap` (a new rendezvous, e.g. a TCP store at an
  // address the launcher gives the joiners, which this communicator's rank
  // 0 serves); blocking. Returns the grown communicator, created with this
  // one's options: the members keep their ranks (`bootstrap` must give each
  // its rank here; kInvalidArgument otherwise), the joiners take the ranks
  // after them. A joiner creates its communicator as any process does:
  // Communicator(bootstrap, options) on the same bootstrap. This
  // communicator stays usable. A process that dies during grow fails it on
  // every rank (kPeerFailure or kTimeout naming it), and the members still
  // hold this communicator to shrink or grow again. Hand the joiners
  // state with a broadcast on the grown communicator.
  Communicator grow(Bootstrap& bootstrap);
  // The membership epoch, the same on every rank: 0 for a communicator
  // created from scratch, the old one's plus 1 for the communicator a
  // shrink or a grow returns (a joiner gets the members' epoch plus 1).
  // Tells an application which membership a checkpoint or a message
  // belongs to. Not blocking.
  std::uint32_t epoch() const;

  // The algorithm a broadcast of `bytes` runs on this communicator (an
  // allgather(v) whose largest block has `block_bytes`): the one the
  // options or settings pinned, else the algorithm table's choice for this
  // size and team size (docs/algorithms.md). Never kAuto; not blocking.
  BroadcastAlgorithm broadcast_algorithm(std::size_t bytes) const;
  AllgatherAlgorithm allgather_algorithm(std::size_t block_bytes) const;
  // The barrier's, likewise (it depends on the team size and on whether
  // ranks share cores).
  BarrierAlgorithm barrier_algorithm() const;

  // Memory for collective buffers. Under the offload engine it is shared
  // with mccl_offloadd, which then runs collectives whose buffers lie wholly
  // inside such blocks in place (zero copy); under the other engines it is
  // ordinary memory (64-byte aligned). Free it with deallocate() on the same
  // communicator once no collective uses it.
  void* allocate(std::size_t bytes);
  void deallocate(void* p);

 private:
  explicit Communicator(std::shared_ptr<detail::CommState> state);
  std::shared_ptr<detail::CommState> state_;
};

}  // namespace mccl
