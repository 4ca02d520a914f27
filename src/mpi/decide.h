// The serve-or-fall-back decision of every intercepted call.
//
// All ranks of a communicator must decide alike, or some would wait in
// MCCL for ranks waiting in MPI. So the decision depends only on what every
// rank knows identically: libmccl_mpi being active (agreed at MPI_Init), the
// communicator (inter or intra, its size), the type signature (its size
// and, for reductions, its basic element type: what MPI requires to match,
// never a rank's own datatype layout, datatype.h), the agreed
// MCCL_MPI_MIN_BYTES (under auto, with the communicator's size) and
// the MCCL state of the communicator, which changes only inside collective
// calls that every rank makes in the same order.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>

#include "mpi/comm_cache.h"
#include "mpi/state.h"

namespace mccl::mpi {

// What serves a call: MCCL on every rank (`flat`), the leaders scheme
// (`hier`, hierarchy.h; only for blocking MPI_Bcast and MPI_Allgather(v)),
// or MPI (neither).
struct Route {
  std::shared_ptr<McclComm> flat;
  std::shared_ptr<Hierarchy> hier;
  explicit operator bool() const { return flat || hier; }
};

// Step 1: the communicator. Returns its entry, or nullptr with `reason` set
// (libmccl_mpi inactive, MPI_COMM_NULL, intercommunicator, one rank).
CommEntry* decide_comm(Kind kind, MPI_Comm comm, const char*& reason);

// From which size MCCL serves `kind` on `e`: the agreed MCCL_MPI_MIN_BYTES,
// or under auto the crossover measured for its collective and team size
// (min_bytes.h). The same on every rank of `e`.
std::size_t min_bytes(Kind kind, const CommEntry& e);

// Step 3: threshold and MCCL state; creates the MCCL communicator when a
// blocking call is the first eligible one (collective). `reason` non-null
// means the caller's argument checks already chose MPI. Counts the call
// and logs the decision once per (communicator, kind, reason) under
// MCCL_MPI_DEBUG. Returns what serves the call.
Route decide_finish(Kind kind, MPI_Comm comm, CommEntry* e, std::size_t bytes, const char* reason);

// The whole decision. `check(entry, bytes)` inspects the call's own
// arguments, sets `bytes` (the message size compared to the threshold) and
// returns a reason to fall back, or nullptr when MCCL can carry them.
template <typename Check>
Route decide(Kind kind, MPI_Comm comm, Check&& check) {
  const char* reason = nullptr;
  CommEntry* e = decide_comm(kind, comm, reason);
  std::size_t bytes = 0;
  if (e != nullptr) {
    // Run even when the communicator already decided, for the size in the
    // log line; the first reason found is the one reported.
    const char* why = check(*e, bytes);
    if (reason == nullptr) reason = why;
  }
  return decide_finish(kind, comm, e, bytes, reason);
}

}  // namespace mccl::mpi
