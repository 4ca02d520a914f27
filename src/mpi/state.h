// libmccl_mpi's process-wide state: whether MCCL may serve calls at all,
// the agreed settings, the attribute key that caches per-communicator state,
// and the counters printed at MPI_Finalize (MCCL_MPI_STATS=1).
//
// Threading: MCCL serves only programs initialised below
// MPI_THREAD_MULTIPLE, so at most one thread is inside MPI at a time and
// none of this needs a lock. Under MPI_THREAD_MULTIPLE `active` is false and
// every wrapper passes straight to PMPI_ without touching this state.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>

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
  kCount
};
constexpr int kKinds = static_cast<int>(Kind::kCount);
const char* kind_name(Kind k);  // "MPI_Bcast", ...
// Nonblocking calls never create MCCL state: creation is a blocking
// collective, which an MPI_I* call may not be.
bool is_nonblocking(Kind k);

struct Counters {
  std::array<std::uint64_t, kKinds> served{};
  std::array<std::uint64_t, kKinds> fallback{};
  std::uint64_t served_bytes = 0;  // message bytes of the calls MCCL served
  std::uint64_t failed_calls = 0;  // served calls that ended in an MPI error
  std::uint64_t comms_created = 0;
  std::uint64_t comms_failed = 0;  // creation failed on some rank: MPI forever
  // Summed from mccl::Stats of every MCCL communicator when it is destroyed.
  std::uint64_t mcast_bytes_sent = 0;
  std::uint64_t mcast_datagrams_sent = 0;
  std::uint64_t mcast_bytes_received = 0;
  std::uint64_t repair_bytes_requested = 0;
  std::uint64_t p2p_bytes_sent = 0;
  // Why repairs were needed: datagrams of collectives not started yet that
  // the early store could not keep, and chunks that arrived twice (a repair
  // asked for what was only late).
  std::uint64_t early_arrivals_dropped = 0;
  std::uint64_t dropped_duplicate = 0;
};

struct Global {
  bool initialized = false;  // MPI_Init(_thread) went through this library
  bool active = false;       // MCCL may serve calls (agreed by every rank)
  const char* inactive_reason = "MPI was not initialised through libmccl_mpi";
  int world_rank = -1;
  Settings settings;  // enable and min_bytes agreed at MPI_Init
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm self = MPI_COMM_NULL;  // private MPI_COMM_SELF dup for local typed copies
  Counters counters;
};

Global& global();

}  // namespace mccl::mpi
