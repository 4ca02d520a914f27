// The MCCL_MPI_* settings of libmccl_mpi, read through MCCL's settings
// registry (src/common/settings.*: declared and documented there, listed by
// mccl_info and docs/configuration.md).
//
// Every rank reads its own environment, but the values that decide whether
// a call is served (enable, min_bytes, single_host, host_scheme,
// leaders_bcast_max_bytes) are agreed at MPI_Init: rank 0's values win, and MCCL is
// enabled only when every rank enables it.
#pragma once

#include <cstdint>
#include <string>

namespace mccl::mpi {

// MCCL_MPI_HIERARCHY: how a communicator spanning hosts with several ranks
// on some host is served (hierarchy.h).
enum class HostScheme : std::int32_t { kFlat = 0, kLeaders = 1, kAuto = 2 };

inline constexpr std::int64_t kMinBytesAuto = -1;  // MCCL_MPI_MIN_BYTES=auto

struct Settings {
  bool enable = true;  // MCCL_MPI_ENABLE: 0 turns every call into its PMPI_ twin
  // MCCL_MPI_MIN_BYTES: smaller messages go to PMPI_; kMinBytesAuto: the
  // measured crossover of each collective and team size (min_bytes.h).
  std::int64_t min_bytes = kMinBytesAuto;
  bool debug = false;        // MCCL_MPI_DEBUG: log each decision once per comm and kind
  bool stats = false;        // MCCL_MPI_STATS: one summary line per rank at MPI_Finalize
  bool eager = true;         // MCCL_MPI_EAGER: create MPI_COMM_WORLD's state in MPI_Init
  bool single_host = false;  // MCCL_MPI_SINGLE_HOST: serve one-host communicators too
  HostScheme host_scheme = HostScheme::kAuto;      // MCCL_MPI_HIERARCHY
  std::int64_t leaders_bcast_max_bytes = 1 << 20;  // MCCL_MPI_LEADERS_BCAST_MAX_BYTES
  std::int64_t timeout_ms = 60000;  // MCCL_COLL_TIMEOUT_MS (MCCL's own), for the backstop
  // Empty when every variable parsed; else what was wrong (MCCL is then
  // disabled on this rank, and so on every rank).
  std::string error;
};

// Reads the environment. Never throws.
Settings read_settings();

}  // namespace mccl::mpi
