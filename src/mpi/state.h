// libmccl_mpi's process-wide state: whether MCCL may serve calls at all,
// the agreed settings, the attribute key that caches per-communicator state,
// and the counters printed at MPI_Finalize (MCCL_MPI_STATS=1).
//
// Threading: MCCL serves every thread level, MPI_THREAD_MULTIPLE included,
// where threads may call collectives on different communicators at once,
// complete nonblocking ones from any thread and free communicators while
// other threads use others (MPI leaves the order of collectives on one
// communicator to the program). Three kinds of state, three rules:
//  - what MPI_Init agreed (`Global` but `counters`): written once, before
//    any other thread may call MPI, then only read;
//  - the tables shared by all communicators (the entries, the retired MCCL
//    communicators, the tracked requests, the log's memory): guarded by
//    tables_lock(), never held across a blocking call (a collective's wait,
//    a communicator's creation, an MPI barrier);
//  - one MCCL communicator and its requests: McclComm::mu (comm_cache.h),
//    taken after tables_lock() when both are needed, never before.
// MPI's callbacks into libmccl_mpi (the attribute's delete function, the
// generalized requests' functions) take neither: MPI may run them holding a
// lock of its own that a holder of tables_lock() waits for.
// The counters are atomics.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "mccl/stats.h"
#include "mpi/settings.h"

namespace mccl::mpi {

// The call sites libmccl_mpi intercepts.
enum class Kind {
  kBcast,
  kAllgather,
  kAllgatherv,
  kIbcast,
  kIallgather,
  kIallgatherv,
  kAllreduce,
  kReduceScatterBlock,
  kReduceScatter,
  kCount
};
constexpr int kKinds = static_cast<int>(Kind::kCount);
const char* kind_name(Kind k);  // "MPI_Bcast", ...
// Nonblocking calls never create MCCL state: creation is a blocking
// collective, which an MPI_I* call may not be.
bool is_nonblocking(Kind k);

struct Counters {
  std::array<std::atomic<std::uint64_t>, kKinds> served{};
  std::array<std::atomic<std::uint64_t>, kKinds> fallback{};
  std::atomic<std::uint64_t> served_bytes{0};  // message bytes of the calls MCCL served
  std::atomic<std::uint64_t> failed_calls{0};  // served calls that ended in an MPI error
  std::atomic<std::uint64_t> comms_created{0};
  std::atomic<std::uint64_t> comms_failed{0};  // creation failed on some rank: MPI forever
  // Every counter of mccl::Stats (kStatCounters, in its order), summed
  // over the MCCL communicators of this rank as each is destroyed.
  std::array<std::atomic<std::uint64_t>, std::size(kStatCounters)> stats{};
};

struct Global {
  bool initialized = false;  // MPI_Init(_thread) went through this library
  bool active = false;       // MCCL may serve calls (agreed by every rank)
  const char* inactive_reason = "MPI was not initialised through libmccl_mpi";
  int world_rank = -1;
  Settings settings;  // enable and min_bytes agreed at MPI_Init
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm self =
      MPI_COMM_NULL;             // private MPI_COMM_SELF dup: MPI progress while MCCL is waited for
  bool thread_multiple = false;  // MPI_Init_thread provided MPI_THREAD_MULTIPLE
  Counters counters;
};

Global& global();

// Guards the tables shared by every communicator (see the top of this file).
// Recursive: MPI may run libmccl_mpi's attribute callback inside a call
// made with it held.
std::recursive_mutex& tables_lock();
using TablesGuard = std::lock_guard<std::recursive_mutex>;

}  // namespace mccl::mpi
