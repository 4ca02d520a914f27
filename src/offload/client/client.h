// The application side of the offloaded progress engine: OffloadComm is a
// communicator whose protocol runs in mccl_offloadd. Creation connects to
// the daemon (starting it when none answers), hands it the shared rings and
// eventfds, and relays the daemon's bootstrap allgathers through the
// application's Bootstrap. Collectives are submissions on the ring; wait()
// sleeps on the completion eventfd and the socket, so a dead daemon fails
// every outstanding operation at once (kPeerFailure) instead of hanging.
//
// Threading: one thread at a time per OffloadComm (as for Communicator).
// Buffers must stay untouched until the operation is done, as usual.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "mccl/bootstrap.h"
#include "mccl/stats.h"
#include "mccl/types.h"
#include "offload/wire.h"

namespace mccl::offload::client {

struct OffloadOptions {
  std::string socket_path;  // "" = default_socket_path() (MCCL_OFFLOAD_SOCKET, ...)
  std::string daemon_path;  // "" = MCCL_OFFLOAD_DAEMON, else mccl_offloadd next to this binary
                            // or the library, else $PATH
  std::chrono::milliseconds timeout{60000};          // collectives and creation
  std::chrono::milliseconds connect_timeout{10000};  // reaching or starting the daemon
  std::uint32_t ring_slots = 256;                    // the most operations in flight
  CollChoices coll;                                  // the algorithms the daemon should pick
  // The membership epoch proposed at creation (a grow's members: theirs + 1).
  std::uint32_t epoch = 0;
  std::string udp_iface;  // MCCL_UDP_IFACE of this rank ("": the daemon chooses)
};

class OffloadComm;

// One collective in flight. done()/status() are valid after OffloadComm
// reported it done.
class OffloadOp {
 public:
  bool done() const { return done_; }
  const common::Status& status() const { return status_; }
  // "broadcast of 4096 bytes from root 2", for messages.
  const std::string& describe() const { return what_; }

 private:
  friend class OffloadComm;
  std::uint64_t id_ = 0;
  std::string what_;
  bool done_ = false;
  common::Status status_;
  std::vector<std::uint64_t> counts_, displs_;  // read by the daemon
};

class OffloadComm {
 public:
  // Blocking and collective over `bootstrap`'s ranks. Never throws.
  static common::Status create(Bootstrap& bootstrap, const OffloadOptions& options,
                               std::unique_ptr<OffloadComm>& out);
  ~OffloadComm();
  OffloadComm(const OffloadComm&) = delete;
  OffloadComm& operator=(const OffloadComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  pid_t daemon_pid() const { return daemon_pid_; }
  std::uint32_t epoch() const { return epoch_; }  // as the ranks agreed; a shrink adds 1
  // As the ranks agreed (setup::Agreement): picks the crossover table.
  common::Placement placement() const { return placement_; }

  // Start a collective; arguments must have passed coll/validate.h's checks.
  // Never null; a failure to submit shows as an op that is done and failed.
  std::shared_ptr<OffloadOp> broadcast(void* buffer, std::size_t bytes, int root);
  std::shared_ptr<OffloadOp> allgatherv(const void* send, bool in_place, void* recv,
                                        std::span<const std::size_t> counts,
                                        std::span<const std::size_t> displacements);
  std::shared_ptr<OffloadOp> barrier();
  // Counts in elements; rank r's block of `send` follows counts[0..r).
  std::shared_ptr<OffloadOp> reduce_scatterv(const void* send, void* recv,
                                             std::span<const std::size_t> counts, DataType type,
                                             ReduceOp op);
  // `in_place`: the vector is already in `recv`.
  std::shared_ptr<OffloadOp> allreduce(const void* send, bool in_place, void* recv,
                                       std::size_t count, DataType type, ReduceOp op);

  // Zero copy: `bytes` of memory shared with the daemon (a memfd both map),
  // so collectives whose buffers lie wholly inside such blocks run on them
  // in place, without process_vm_* copies. Blocks until the daemon has
  // mapped it. Null (and `why`) on failure.
  void* allocate(std::size_t bytes, common::Status& why);
  // Frees a block from allocate(); no collective may still use it. False
  // when `p` is not such a block.
  bool deallocate(void* p);

  // Revoke and shrink (docs/elastic.md), run by the daemon. revoke()
  // returns at once. shrink() blocks until the daemon has agreed with the
  // other survivors and created their communicator, which this OffloadComm
  // then is (rank() and size() change); `failed` gets the old ranks that
  // died, ascending. What was in flight fails (revoked) first. On failure
  // the old communicator stays, revoked.
  common::Status revoke();
  common::Status shrink(std::vector<int>& failed);

  // The protocol's counters, from the daemon. Blocks until `deadline`.
  common::Status stats(Stats& out, common::Deadline deadline);

  // Collects completions; never blocks.
  void poll();
  // Blocks until `op` is done (ok: see op.status()) or the deadline passes
  // (kTimeout; the operation stays in flight).
  common::Status wait(const OffloadOp& op, common::Deadline deadline);
  // Why the daemon connection broke; ok while it is healthy.
  const common::Status& failure() const { return failure_; }

 private:
  OffloadComm() = default;
  // Creation's steps (create.cc): the shared rings and eventfds; then, on
  // the socket to a daemon at `path`, the hello and the daemon's bootstrap
  // allgathers served until it is ready. `retry`: that daemon closed
  // before it said anything (it was exiting), so another may answer. Their
  // own failures name this rank (who()); the application's Bootstrap's and
  // the daemon's come as they were said.
  std::string who() const { return "rank " + std::to_string(rank_) + ": "; }
  common::Status map_rings(std::uint32_t slots);
  common::Status introduce(const std::string& path, Bootstrap& bootstrap,
                           const OffloadOptions& options, const HelloMsg& hello, bool& retry);
  common::Status relay_allgather(Bootstrap& bootstrap, const OffloadOptions& options,
                                 std::span<const std::byte> contribution);
  std::shared_ptr<OffloadOp> submit(std::shared_ptr<OffloadOp> op, Submission& s);
  void fail_all(const common::Status& why);
  bool sleep_once(int timeout_ms);  // false when the daemon is gone

  int rank_ = 0, size_ = 1;
  std::chrono::milliseconds timeout_{60000};
  int sock_ = -1, memfd_ = -1, sub_efd_ = -1, comp_efd_ = -1;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::unique_ptr<SharedRings> rings_;
  pid_t daemon_pid_ = -1;
  std::uint32_t epoch_ = 0;
  common::Placement placement_;
  std::uint64_t next_id_ = 1;
  std::vector<std::shared_ptr<OffloadOp>> inflight_;
  std::vector<std::pair<void*, std::size_t>> blocks_;  // from allocate()
  common::Status failure_;
};

}  // namespace mccl::offload::client
